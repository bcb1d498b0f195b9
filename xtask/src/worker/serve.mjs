// Serves the worker of ./wrangler.toml on workerd through wrangler's own
// programmatic API (`unstable_startWorker`), the way `wrangler dev` does but
// without the DevTools inspector: the CLI always attaches an inspector proxy
// that enables the runtime's `Network` events, which make every request
// between Durable Objects cost milliseconds of CPU that Cloudflare does not
// spend (docs/BENCHMARKS.md). Started by xtask/src/worker/wrangler.rs
// (`Inspector::Off`, the benchmarks) with the same flags it gives
// `wrangler dev`, in the worker's directory, as its own process group:
//
//   node serve.mjs --config C --ip 127.0.0.1 --port N [--persist-to DIR] [--env-file F]...
//
// The scripts of one run find each other through the dev registry named by
// WRANGLER_REGISTRY_PATH, as `wrangler dev` does.
//
// Unlike `wrangler dev`, it does not watch the sources. wrangler's logger and
// workerd's console output go to stdout/stderr as with the CLI. SIGINT, SIGTERM or SIGHUP dispose the worker and exit.

import { parseArgs } from "node:util";
import { unstable_startWorker } from "wrangler";

const { values } = parseArgs({
  options: {
    config: { type: "string" },
    ip: { type: "string" },
    port: { type: "string" },
    "persist-to": { type: "string" },
    "env-file": { type: "string", multiple: true },
  },
  strict: true,
});
const port = Number(values.port);
if (!values.config || !values.ip || !Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`serve.mjs: --config, --ip and --port (1-65535) are required, got ${JSON.stringify(values)}`);
  process.exit(2);
}

let worker;
try {
  worker = await unstable_startWorker({
    config: values.config,
    envFiles: values["env-file"],
    dev: {
      remote: false,
      inspector: false,
      // The Worker is built before this starts; a rebuild on a source edit
      // would restart it and wipe every in-memory object in the middle of a
      // measurement (see also `build` below).
      watch: false,
      server: { hostname: values.ip, port },
      persist: values["persist-to"],
      registry: process.env.WRANGLER_REGISTRY_PATH,
    },
  });
  // Errors of the dev environment's controllers (runtime, bundler, proxy)
  // that it does not log itself: wrangler only writes them to its debug log.
  worker.raw.on("error", (event) => console.error("serve.mjs:", event.reason ?? event, event.cause ?? ""));
  await worker.ready;
  // wrangler logs "Ready on" once workerd serves the worker.
  console.log(`serve.mjs: proxy on ${await worker.url}, inspector off`);
} catch (error) {
  console.error("serve.mjs: starting the worker failed:", error);
  await worker?.dispose().catch(() => {});
  process.exit(1);
}

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    await worker.dispose().catch((error) => console.error("serve.mjs: stopping:", error));
    process.exit(0);
  });
}
