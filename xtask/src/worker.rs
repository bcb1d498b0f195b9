//! `cargo xtask dev | deploy | test` support for the Cloudflare Worker in
//! `crates/do-worker`.
//!
//! The worker is built by worker-build (Rust → wasm32 → wasm-bindgen →
//! esbuild) and run by wrangler on workerd, the real Workers runtime, locally.
//! [`ensure_tools`] installs the pinned versions on first use (crates.io,
//! npm); worker-build also fetches esbuild from npm once into
//! ~/.cache/worker-build. After that, build, dev, dry-run and smoke work
//! offline.

mod bundle;
pub(crate) mod cluster;
pub(crate) mod http;
pub(crate) mod roll;
pub(crate) mod schemathesis;
pub(crate) mod scripts;
mod tools;
mod wrangler;

pub use tools::{Tools, ensure_tools};

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

pub(crate) use cluster::Cluster;
pub(crate) use wrangler::Inspector;

/// worker-build flags; keep in sync with `[build] command` in
/// crates/do-worker/wrangler.toml, which wrangler runs again (a fast no-op
/// after this build) before serving or bundling. --no-opt: wasm-opt cannot
/// be fetched here.
const WORKER_BUILD_ARGS: &[&str] = &["--release", "--no-opt"];
/// Default `--outdir` for `deploy --dry-run`, relative to the root.
const DEFAULT_BUNDLE_DIR: &str = "target/worker-bundle";

/// Builds the worker into `crates/do-worker/build/`.
pub fn build(root: &Path) -> Result<()> {
    build_with(&ensure_tools(root)?)
}

pub fn build_with(tools: &Tools) -> Result<()> {
    println!("worker: building {} for wasm32 (worker-build {})", tools::WORKER_DIR, WORKER_BUILD_ARGS.join(" "));
    let mut cmd = tools.command(&tools.worker_build)?;
    cmd.args(WORKER_BUILD_ARGS);
    run(cmd, "worker-build")
}

/// Serves the worker on 127.0.0.1:`port` until Ctrl-C, with the dev-only
/// variables from `.dev.vars` (HANDOFF_TEST_HOOKS=1) and a fresh admin
/// token, printed on the ready line and written to `target/worker-dev/token`.
pub fn dev(root: &Path, port: u16) -> Result<()> {
    // Fail before building, with a clearer message than workerd's bind error.
    TcpListener::bind(("127.0.0.1", port))
        .with_context(|| format!("127.0.0.1:{port} is not free; pick another port"))?;
    let tools = ensure_tools(root)?;
    build_with(&tools)?;
    let dir = dev_dir(root, port);
    let (env_files, token) = dev_env_files(&tools, &dir, &[])?;
    let token_file = dir.join("token");
    write_secret_file(&token_file, &format!("{token}\n"))?;
    // The default port's token also where the README says.
    if port == DEFAULT_DEV_PORT {
        let legacy = root.join("target/worker-dev");
        fs::create_dir_all(&legacy)?;
        write_secret_file(&legacy.join("token"), &format!("{token}\n"))?;
    }
    println!(
        "worker: starting the four scripts (front, r0, r1, r2), each its own wrangler dev; logs in {}",
        dir.display()
    );
    let cluster = Cluster::start(cluster::Options {
        dir: dir.clone(),
        port: Some(port),
        inspector: Inspector::On,
        env_files,
        token: token.clone(),
        logs: true,
        tools: &tools,
    })?;
    let base = cluster.base.clone();
    println!(
        "worker: ready on {base}, admin token {token} (also in {}); HANDOFF_TEST_HOOKS=1 from .dev.vars; \
         Ctrl-C stops it; `cargo xtask dev restart r1 --port {port}` restarts one role, `cargo xtask dev roll --port {port}` all of them in turn",
        token_file.display()
    );
    println!("worker: try  TOKEN=$(cat {})", token_file.display());
    println!("worker:      curl -s -X PUT -H \"Authorization: Bearer $TOKEN\" {base}/v1/demo");
    println!(
        "worker:      curl -s -X PUT -H \"Authorization: Bearer $TOKEN\" --data-binary 'hello' {base}/v1/demo/kv/greeting"
    );
    println!("worker:      curl -si -H \"Authorization: Bearer $TOKEN\" {base}/v1/demo/kv/greeting");
    cluster.wait()
}

/// `cargo xtask dev restart <role>`: restarts one role of the dev server on
/// `port` (its own process: fresh memory), or kills it at once (`crash`)
/// and starts it again; returns once it answers and its namespaces' replicas
/// of that role are ready again.
pub fn dev_restart(root: &Path, port: u16, role: &str, crash: bool, timeout: Duration) -> Result<()> {
    let role = scripts::Role::parse(role)?;
    let tools = ensure_tools(root)?;
    let mut cluster = Cluster::attach(&dev_dir(root, port))?;
    let base = cluster.base.clone();
    let token = cluster.token.clone();
    let steps = roll::roll_one(&base, &token, timeout, scripts::Script::Role(role), |script| {
        cluster.restart(&tools, script, crash).map(|_| ())
    })?;
    cluster.detach();
    println!(
        "worker: {role} restarted in {:.1} s; its replicas of {} namespaces ready again {:.1} s later",
        steps.replaced_in.as_secs_f64(),
        steps.namespaces,
        steps.recovered_in.as_secs_f64()
    );
    Ok(())
}

/// `cargo xtask dev roll`: what a deploy does, locally: rebuilds the
/// Worker, then restarts r1, r2, r0 and the front of the dev server on
/// `port` on the new build, each once the previous one recovered.
pub fn dev_roll(root: &Path, port: u16, timeout: Duration) -> Result<()> {
    let tools = ensure_tools(root)?;
    let mut cluster = Cluster::attach(&dev_dir(root, port))?;
    build_with(&tools)?;
    let generation = cluster.new_generation(&tools)?;
    println!("worker: rolling the dev server on {port} onto build {generation}");
    let (base, token) = (cluster.base.clone(), cluster.token.clone());
    let (live, writes) = roll::live_versions(&base)?;
    let mut steps = Vec::new();
    for wire in roll::wire_phases(live, writes)? {
        announce_phase(live, wire);
        cluster.set_wire_version(wire)?;
        steps.extend(roll::roll(&base, &token, timeout, |script| cluster.restart(&tools, script, false).map(|_| ()))?);
    }
    cluster.detach();
    let total: Duration = steps.iter().map(|s| s.replaced_in + s.recovered_in).sum();
    println!("worker: roll done in {:.1} s", total.as_secs_f64());
    Ok(())
}

/// `cargo xtask dev`'s default port.
pub const DEFAULT_DEV_PORT: u16 = 8787;

/// The directory of the dev server on `port`.
pub fn dev_dir(root: &Path, port: u16) -> PathBuf {
    root.join(format!("target/worker-dev/{port}"))
}

/// The `--env-file`s for wrangler (either [`Inspector`]): the worker's `.dev.vars` (test
/// hooks on), then a fresh file in `dir` holding a random
/// `HANDOFF_INTERNAL_KEY` and a random `HANDOFF_ADMIN_TOKEN` for this run
/// only, and `extra` variables (0600; never in a command line, which other
/// users of the machine could read in `ps`). Also returns the admin token.
pub(crate) fn dev_env_files(tools: &Tools, dir: &Path, extra: &[(&str, &str)]) -> Result<(Vec<PathBuf>, String)> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let key_file = dir.join("secrets.env");
    let token = random_key()?;
    let mut vars = format!("{INTERNAL_KEY_VAR}={}\n{ADMIN_TOKEN_VAR}={token}\n", random_key()?);
    for (name, value) in extra {
        vars.push_str(&format!("{name}={value}\n"));
    }
    write_secret_file(&key_file, &vars)?;
    Ok((vec![tools.worker_dir.join(".dev.vars"), key_file], token))
}

/// The Worker secret that authenticates Worker → object and replica →
/// replica requests (crates/do-worker/src/auth.rs).
const INTERNAL_KEY_VAR: &str = "HANDOFF_INTERNAL_KEY";
/// The Worker secret that is the deployment's admin token
/// (crates/do-worker/src/tokens.rs); set once per deployment, by hand.
pub(crate) const ADMIN_TOKEN_VAR: &str = "HANDOFF_ADMIN_TOKEN";
/// The limit on namespaces in the Worker the tests run: low enough that the
/// limit test reaches it quickly, far above what the other tests create.
const TEST_MAX_NAMESPACES: &str = "300";

/// 256 random bits as 64 hex digits.
fn random_key() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| anyhow::anyhow!("no OS randomness for the internal key: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `contents` readable by the owner only.
fn write_secret_file(path: &Path, contents: &str) -> Result<()> {
    use std::io::Write;
    let _ = fs::remove_file(path);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(contents.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

/// Runs `wrangler deploy`; with `dry_run`, only bundles into `outdir`
/// (default `target/worker-bundle`) and reports what was written.
pub fn deploy(root: &Path, args: &DeployArgs) -> Result<()> {
    let tools = ensure_tools(root)?;
    build_with(&tools)?;
    let wrangler_toml = tools.worker_dir.join("wrangler.toml");
    let front = scripts::Front::load(&wrangler_toml)?;
    // wrangler runs in crates/do-worker: a relative --outdir must not move.
    let outdir = std::path::absolute(args.outdir.clone().unwrap_or_else(|| root.join(DEFAULT_BUNDLE_DIR)))?;
    // The role scripts' configurations, derived from wrangler.toml, on the
    // bundle just built (the front deploys from wrangler.toml itself).
    let main = tools.worker_dir.join("build/index.js");
    let main = main.to_str().context("the bundle's path is not UTF-8")?;
    let configs = front.write_all(&outdir.join("scripts"), main, true)?;
    let config_of = |script: scripts::Script| -> Result<PathBuf> {
        match script {
            scripts::Script::Front => Ok(wrangler_toml.clone()),
            role => configs.iter().find(|(s, _)| *s == role).map(|(_, p)| p.clone()).context("no configuration"),
        }
    };
    println!("worker: the deployment is four scripts, deployed in this order (a rolling deploy):");
    for script in roll::PLAN {
        println!(
            "worker:   {} ({}), then wait until every live namespace's replica of it is ready again",
            script.name(&front.name),
            config_of(script)?.display()
        );
    }
    println!(
        "worker: if the live build reads an older replica wire version than this one ({}), the roll runs twice: \
         first every script writing the old version, then every script writing the new one (`{}`)",
        protocol::handoff::PROTOCOL_VERSION,
        cluster::WIRE_VERSION_VAR
    );
    if args.dry_run {
        for script in roll::PLAN {
            let dir = outdir.join(script.label());
            let started = SystemTime::now();
            let mut cmd = tools.command(&tools.wrangler)?;
            cmd.arg("deploy").arg("--dry-run").arg("--config").arg(config_of(script)?).arg("--outdir").arg(&dir);
            println!("worker: wrangler deploy --dry-run {} (bundle in {})", script.name(&front.name), dir.display());
            run(cmd, "wrangler deploy --dry-run")?;
            let files = report_bundle(&dir, started)?;
            bundle::check(root, &config_of(script)?, &dir, &files, script == scripts::Script::Front)?;
        }
        bundle::explain();
        return Ok(());
    }
    let url = args.url.as_deref().context("a deploy needs --url https://<your worker>: it waits on its namespaces")?;
    let token = std::env::var(ADMIN_TOKEN_VAR)
        .with_context(|| format!("a deploy needs the deployment's admin token in {ADMIN_TOKEN_VAR}"))?;
    // One internal key for every script, kept across deploys: during a
    // roll the new scripts and the old ones must accept each other.
    let dir = root.join("target/worker-deploy");
    fs::create_dir_all(&dir)?;
    let key_file = dir.join("internal.key");
    if !key_file.exists() {
        write_secret_file(&key_file, &random_key()?)?;
    }
    let key = fs::read_to_string(&key_file).context("reading the internal key")?;
    let secrets = dir.join("secrets.json");
    write_secret_file(&secrets, &json!({ INTERNAL_KEY_VAR: key.trim() }).to_string())?;
    let replace = |script: scripts::Script, wire: Option<u16>| -> Result<()> {
        let mut cmd = tools.command(&tools.wrangler)?;
        cmd.arg("deploy").arg("--config").arg(config_of(script)?).arg("--secrets-file").arg(&secrets);
        if let Some(v) = wire {
            cmd.arg("--var").arg(format!("{}:{v}", cluster::WIRE_VERSION_VAR));
        }
        run(cmd, "wrangler deploy")
    };
    let result = if http::get(&format!("{url}/health"), None).is_ok_and(|(status, _)| status == 200) {
        roll::live_versions(url).and_then(|(live, writes)| {
            for wire in roll::wire_phases(live, writes)? {
                announce_phase(live, wire);
                roll::roll(url, &token, Duration::from_secs(args.timeout), |script| replace(script, wire))?;
            }
            Ok(())
        })
    } else {
        println!("worker: {url} does not answer yet: a first deploy, nothing to wait for");
        roll::PLAN.into_iter().try_for_each(|script| replace(script, None))
    };
    let _ = fs::remove_file(&secrets);
    result
}

/// Says which roll of an upgrade from a build reading `live` runs next.
fn announce_phase(live: u16, wire: Option<u16>) {
    let new = protocol::handoff::PROTOCOL_VERSION;
    match wire {
        Some(old) => println!(
            "worker: the live build reads wire version {live}, this one {new}: a first roll still writing {old}, then a second writing {new}"
        ),
        None if live < new => println!("worker: every replica reads wire version {new} now: the second roll writes it"),
        None => println!("worker: wire version {new} on both builds: one roll"),
    }
}

/// `cargo xtask deploy`'s arguments.
#[derive(clap::Args, Debug)]
pub struct DeployArgs {
    /// Only write and check the four scripts' bundles, and print the plan.
    #[arg(long)]
    pub dry_run: bool,
    /// Where the dry run writes the bundles (default: target/worker-bundle).
    #[arg(long)]
    pub outdir: Option<PathBuf>,
    /// The deployment's URL (`https://handoff.<subdomain>.workers.dev`): a
    /// deploy waits on its namespaces between scripts (admin token in
    /// HANDOFF_ADMIN_TOKEN).
    #[arg(long)]
    pub url: Option<String>,
    /// Seconds a role's replicas get to be ready again before the deploy
    /// stops.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
}

/// Prints the files the dry run wrote, and returns them with their sizes;
/// fails if there is no bundle.
fn report_bundle(outdir: &Path, since: SystemTime) -> Result<Vec<(String, u64)>> {
    // Only files written by this run count (the directory may hold older
    // ones); two seconds of slack for coarse file-system timestamps.
    let since = since - Duration::from_secs(2);
    let entries =
        fs::read_dir(outdir).with_context(|| format!("wrangler wrote no bundle directory {}", outdir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file() && meta.modified()? >= since {
            files.push((entry.file_name().to_string_lossy().into_owned(), meta.len()));
        }
    }
    files.sort();
    let has = |pred: &dyn Fn(&str) -> bool| files.iter().any(|(name, _)| pred(name));
    ensure!(
        has(&|n| n == "index.js") && has(&|n| n.ends_with(".wasm")),
        "wrangler deploy --dry-run wrote no index.js + .wasm bundle to {} (fresh files: {files:?})",
        outdir.display()
    );
    let total: u64 = files.iter().map(|(_, len)| len).sum();
    println!("worker: bundle {} ({} files, {})", outdir.display(), files.len(), bundle::kib(total));
    for (name, len) in &files {
        println!("worker:   {name}  {}", bundle::kib(*len));
    }
    Ok(files)
}

/// `cargo xtask test`'s worker check: serves the worker on a free port and
/// checks its HTTP contract, then stops wrangler and everything it started.
pub fn smoke(root: &Path) -> Result<()> {
    let mut server = serve_for_tests(root, "worker-smoke", "smoke test", Inspector::On)?;
    for check in SMOKE_CHECKS {
        check.run(&server).map_err(|e| e.context(server.log_tail()))?;
    }
    server.stop()?;
    ensure!(!wrangler::interrupted(), "interrupted");
    println!("worker: smoke test passed ({} checks)", SMOKE_CHECKS.len());
    Ok(())
}

/// Builds the worker and serves its four scripts on workerd, the front on
/// a free port, with fresh local state and logs under `target/<name>/`,
/// test hooks on, a fresh internal key and admin token
/// (`Cluster::token`), a limit of [`TEST_MAX_NAMESPACES`] namespaces and an
/// isolate cap of [`TEST_ISOLATE_CAP_BYTES`]. For `smoke`, `e2e` and
/// the test stages ([`Inspector::On`]: `wrangler dev` as developers run it)
/// and `bench` ([`Inspector::Off`]: DevTools' `Network` events make every
/// request between objects cost CPU that Cloudflare does not spend).
pub(crate) fn serve_for_tests(root: &Path, name: &str, what: &str, inspector: Inspector) -> Result<Cluster> {
    serve_for_tests_with(root, name, what, inspector, &[])
}

/// [`serve_for_tests`] with more variables.
pub(crate) fn serve_for_tests_with(
    root: &Path,
    name: &str,
    what: &str,
    inspector: Inspector,
    vars: &[(&str, &str)],
) -> Result<Cluster> {
    let tools = ensure_tools(root)?;
    build_with(&tools)?;
    let dir = root.join("target").join(name);
    fs::create_dir_all(&dir)?;
    let vars: Vec<(&str, &str)> =
        [("HANDOFF_MAX_NAMESPACES", TEST_MAX_NAMESPACES), ("HANDOFF_ISOLATE_CAP_BYTES", TEST_ISOLATE_CAP_BYTES)]
            .into_iter()
            .filter(|(name, _)| !vars.iter().any(|(given, _)| given == name))
            .chain(vars.iter().copied())
            .collect();
    let (env_files, token) = dev_env_files(&tools, &dir, &vars)?;
    let how = match inspector {
        Inspector::On => "wrangler dev",
        Inspector::Off => "wrangler's API without the inspector (serve.mjs)",
    };
    println!("worker: {what}: the four scripts, each by {how} (logs {}/*.log)", dir.display());
    let cluster =
        Cluster::start(cluster::Options { dir, port: None, inspector, env_files, token, logs: true, tools: &tools })?;
    println!("worker: {what}: front on {}", cluster.base);
    Ok(cluster)
}

/// `cargo xtask test`'s end-to-end stage: serves the worker on workerd and
/// runs `cargo test -p e2e` against it (HANDOFF_URL), then stops wrangler.
/// Also fails if the worker log shows a Rust panic, even if every test
/// passed (a panic wipes every replica in the isolate).
pub fn e2e(root: &Path) -> Result<bool> {
    // The worker's pure logic (routing, names, wire, auth, errors) on the host.
    println!("worker: cargo test -p do-worker --lib (host unit tests)");
    let unit = crate::cargo::command().current_dir(root).args(["test", "-p", "do-worker", "--lib"]).status();
    if !unit.context("running cargo test -p do-worker")?.success() {
        println!("worker: do-worker unit tests FAILED");
        return Ok(false);
    }
    // The replicas record their steps; the eviction and burst tests save
    // their namespaces' traces here, validated after the suites.
    let traces = root.join(crate::validate::TRACE_DIR);
    if traces.exists() {
        fs::remove_dir_all(&traces).with_context(|| format!("removing {}", traces.display()))?;
    }
    let mut server =
        serve_for_tests_with(root, "worker-e2e", "end-to-end tests", Inspector::On, &[("HANDOFF_TRACE", "1")])?;
    let run_suites = |filter: &[&str], threads: &str| -> Result<bool> {
        let mut cmd = crate::cargo::command();
        cmd.current_dir(root).args(["test", "-p", "e2e", "--no-fail-fast", "--test", E2E_BINARY, "--"]);
        cmd.args(filter);
        println!(
            "worker: cargo test -p e2e --test {E2E_BINARY} -- {} with HANDOFF_URL={}",
            filter.join(" "),
            server.base
        );
        let status = cmd
            .args(["--test-threads", threads])
            .env("HANDOFF_URL", &server.base)
            .env("HANDOFF_TOKEN", &server.token)
            .env("HANDOFF_TRACE_DIR", &traces)
            .status()
            .context("running cargo test -p e2e")?;
        Ok(status.success())
    };
    // The serial suite runs after the others, alone and one test at a time.
    let status = run_suites(&["--skip", SERIAL_SUITE, "--skip", MEMORY_SUITE, "--skip", FAULTS_SUITE], E2E_THREADS)
        .and_then(|passed| Ok(run_suites(&[SERIAL_SUITE], "1")? && passed));
    let panics = server.log_matches(&["panicked at", "RuntimeError: unreachable"]);
    server.stop()?;
    ensure!(!wrangler::interrupted(), "interrupted");
    let passed = status? & faults_stage(root, &traces)? & memory_stage(root)?;
    if !panics.is_empty() {
        eprintln!("worker: the worker panicked during the end-to-end tests:\n{}", panics.join("\n"));
    }
    println!("worker: end-to-end tests {}", if passed && panics.is_empty() { "passed" } else { "FAILED" });
    let validated = crate::validate::run(root, Some(&traces), true)?;
    Ok(passed && panics.is_empty() && validated)
}

/// The one end-to-end test binary (crates/e2e/tests/it).
const E2E_BINARY: &str = "it";

/// Its module of tests that must run alone (crates/e2e/tests/it/serial): it
/// fills the deployment's namespace limit and measures latencies.
const SERIAL_SUITE: &str = "serial::";

/// Its module of tests of the platform's faults, run on a server of their
/// own while xtask applies them (`faults_stage`).
const FAULTS_SUITE: &str = "faults::";

/// The faults test (crates/e2e/tests/it/faults) on a fresh server: once its
/// clients run, r1's process is killed without warning and started again,
/// then the deployment rolls onto a new build (r1, r2, r0, the front, each
/// after the previous recovered), as `cargo xtask dev roll` does; the test
/// then checks what the clients saw. The replicas record their steps, for
/// trace validation.
fn faults_stage(root: &Path, traces: &Path) -> Result<bool> {
    let tools = ensure_tools(root)?;
    let mut server =
        serve_for_tests_with(root, "worker-faults", "faults test", Inspector::On, &[("HANDOFF_TRACE", "1")])?;
    let signals = server.dir.join("signals");
    if signals.exists() {
        fs::remove_dir_all(&signals)?;
    }
    fs::create_dir_all(&signals)?;
    println!("worker: cargo test -p e2e --test {E2E_BINARY} -- {FAULTS_SUITE} with HANDOFF_URL={}", server.base);
    let mut test = crate::cargo::command()
        .current_dir(root)
        .args(["test", "-p", "e2e", "--test", E2E_BINARY, "--", FAULTS_SUITE, "--test-threads", "1", "--nocapture"])
        .env("HANDOFF_URL", &server.base)
        .env("HANDOFF_TOKEN", &server.token)
        .env("HANDOFF_TRACE_DIR", traces)
        .env("HANDOFF_FAULTS_DIR", &signals)
        .spawn()
        .context("running cargo test -p e2e (faults)")?;
    let faults = apply_faults(&tools, &mut server, &signals, &mut test);
    // Whatever happened, the test learns that the faults are over.
    fs::write(signals.join("done"), b"")?;
    let status = test.wait().context("waiting for the faults test")?;
    let panics = server.log_matches(&["panicked at", "RuntimeError: unreachable"]);
    server.stop()?;
    if let Err(e) = &faults {
        eprintln!("worker: applying the faults failed: {e:#}");
    }
    if !panics.is_empty() {
        eprintln!("worker: the worker panicked during the faults test:\n{}", panics.join("\n"));
    }
    Ok(faults.is_ok() && status.success() && panics.is_empty())
}

/// Waits for the faults test's clients, then kills r1 and rolls.
fn apply_faults(tools: &Tools, server: &mut Cluster, signals: &Path, test: &mut std::process::Child) -> Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while !signals.join("started").exists() {
        ensure!(test.try_wait()?.is_none(), "the faults test ended before its clients started");
        ensure!(std::time::Instant::now() < deadline, "the faults test's clients did not start");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (base, token) = (server.base.clone(), server.token.clone());
    let timeout = Duration::from_secs(60);
    std::thread::sleep(Duration::from_secs(2));
    let r1 = scripts::Script::Role(scripts::Role::R1);
    let crash = roll::roll_one(&base, &token, timeout, r1, |script| server.restart(tools, script, true).map(|_| ()))?;
    println!(
        "worker: faults: r1 killed and back in {:.1} s, its replicas ready {:.1} s later",
        crash.replaced_in.as_secs_f64(),
        crash.recovered_in.as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(2));
    build_with(tools)?;
    server.new_generation(tools)?;
    roll::roll(&base, &token, timeout, |script| server.restart(tools, script, false).map(|_| ()))?;
    println!("worker: faults: rolled onto a new build");
    Ok(())
}

/// Its module of tests of the isolate's memory, run on a server of their
/// own (`memory_stage`).
const MEMORY_SUITE: &str = "memory::";
/// That server's isolate cap (crates/e2e/tests/it/memory: `CAP`).
const MEMORY_CAP_BYTES: &str = "1048576";

/// The memory tests (bounded bodies, the isolate cap) on a fresh server
/// with a small isolate cap, one test at a time, in name order.
fn memory_stage(root: &Path) -> Result<bool> {
    let mut server = serve_for_tests_with(
        root,
        "worker-memory",
        "memory tests",
        Inspector::On,
        &[("HANDOFF_ISOLATE_CAP_BYTES", MEMORY_CAP_BYTES)],
    )?;
    println!("worker: cargo test -p e2e --test {E2E_BINARY} -- {MEMORY_SUITE} with HANDOFF_URL={}", server.base);
    let status = crate::cargo::command()
        .current_dir(root)
        .args(["test", "-p", "e2e", "--test", E2E_BINARY, "--", MEMORY_SUITE, "--test-threads", "1"])
        .env("HANDOFF_URL", &server.base)
        .env("HANDOFF_TOKEN", &server.token)
        .status()
        .context("running cargo test -p e2e (memory)");
    let panics = server.log_matches(&["panicked at", "RuntimeError: unreachable"]);
    server.stop()?;
    if !panics.is_empty() {
        eprintln!("worker: the worker panicked during the memory tests:\n{}", panics.join("\n"));
    }
    Ok(status?.success() && panics.is_empty())
}

/// The isolate cap of the test servers: the suites fill dozens of
/// namespaces at once, several to their budget, and locally each replica
/// role's objects share one isolate, so the default cap (64 MiB) would
/// refuse their writes; the cap itself is tested on a server of its own
/// with a small one (`memory_stage`). workerd does not enforce 128 MB.
const TEST_ISOLATE_CAP_BYTES: &str = "1073741824";

/// Tests run in parallel (each in its own namespace); the idle test sleeps
/// 25 s, so more threads than cores keeps the stage short.
const E2E_THREADS: &str = "6";

/// One request and what its JSON answer must contain.
struct Check {
    method: &'static str,
    path: &'static str,
    /// Whether the request carries the admin token.
    token: bool,
    status: u16,
    /// (JSON pointer, expected value) pairs.
    expect: fn() -> Vec<(&'static str, Value)>,
}

const SMOKE_CHECKS: &[Check] = &[
    Check {
        method: "GET",
        path: "/health",
        token: false,
        status: 200,
        // test_hooks: proves .dev.vars reached the worker; the keys, the
        // env file.
        expect: || {
            vec![
                ("/ok", json!(true)),
                ("/service", json!("handoff")),
                ("/test_hooks", json!(true)),
                ("/internal_key", json!(true)),
                ("/admin_token", json!(true)),
            ]
        },
    },
    Check {
        method: "GET",
        path: "/health?deep=1",
        token: true,
        status: 200,
        // Worker → Durable Object stub → Replica and back.
        expect: || vec![("/ok", json!(true)), ("/replica/ok", json!(true)), ("/replica/object", json!("Replica"))],
    },
    Check {
        method: "GET",
        path: "/health?deep=1",
        token: false,
        status: 401,
        expect: || vec![("/error/code", json!("unauthorized"))],
    },
    Check {
        method: "GET",
        path: "/no-such-route",
        token: true,
        status: 404,
        expect: || vec![("/error/code", json!("not_found"))],
    },
    Check {
        method: "GET",
        path: "/no-such-route",
        token: false,
        status: 401,
        expect: || vec![("/error/code", json!("unauthorized"))],
    },
    Check {
        method: "POST",
        path: "/health",
        token: true,
        status: 405,
        expect: || vec![("/error/code", json!("method_not_allowed"))],
    },
    Check {
        method: "GET",
        path: "/v1/openapi.json",
        token: true,
        status: 200,
        expect: || vec![("/openapi", json!("3.1.0"))],
    },
];

impl Check {
    fn run(&self, server: &Cluster) -> Result<()> {
        let url = format!("{}{}", server.base, self.path);
        let token = self.token.then_some(server.token.as_str());
        let (status, body) = match self.method {
            "POST" => http::post(&url, token)?,
            _ => http::get(&url, token)?,
        };
        let what = format!("{} {}{}", self.method, self.path, if self.token { "" } else { " (no token)" });
        ensure!(status == self.status, "{what}: expected {}, got {status}: {body}", self.status);
        let json: Value = serde_json::from_str(&body).with_context(|| format!("{what}: body is not JSON: {body}"))?;
        for (pointer, want) in (self.expect)() {
            let got = json.pointer(pointer);
            ensure!(got == Some(&want), "{what}: expected {pointer} = {want}, got {got:?} in {body}");
        }
        let shown: String = body.chars().take(200).collect();
        println!("worker: ok  {what} -> {status} {shown}");
        Ok(())
    }
}

/// Runs `cmd` with inherited output; fails on a non-zero exit.
fn run(mut cmd: Command, what: &str) -> Result<()> {
    let status = cmd.status().with_context(|| format!("starting {what}"))?;
    ensure!(status.success(), "{what} failed ({status})");
    Ok(())
}
