//! `cargo xtask dev | deploy | test` support for the Cloudflare Worker in
//! `crates/do-worker`.
//!
//! The worker is built by worker-build (Rust → wasm32 → wasm-bindgen →
//! esbuild) and run by wrangler on workerd, the real Workers runtime, locally.
//! [`ensure_tools`] installs the pinned versions on first use (crates.io,
//! npm); worker-build also fetches esbuild from npm once into
//! ~/.cache/worker-build. After that, build, dev, dry-run and smoke work
//! offline.

mod http;
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

use wrangler::{Dev, Output};

/// worker-build flags; keep in sync with `[build] command` in
/// crates/do-worker/wrangler.toml, which wrangler runs again (a fast no-op
/// after this build) before serving or bundling. --no-opt: wasm-opt cannot
/// be fetched here.
const WORKER_BUILD_ARGS: &[&str] = &["--release", "--no-opt"];
/// Default `--outdir` for `deploy --dry-run`, relative to the root.
const DEFAULT_BUNDLE_DIR: &str = "target/worker-bundle";
/// wrangler dev rebuilds and boots workerd before it answers.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Builds the worker into `crates/do-worker/build/`.
pub fn build(root: &Path) -> Result<()> {
    build_with(&ensure_tools(root)?)
}

fn build_with(tools: &Tools) -> Result<()> {
    println!("worker: building {} for wasm32 (worker-build {})", tools::WORKER_DIR, WORKER_BUILD_ARGS.join(" "));
    let mut cmd = tools.command(&tools.worker_build)?;
    cmd.args(WORKER_BUILD_ARGS);
    run(cmd, "worker-build")
}

/// Serves the worker on 127.0.0.1:`port` until Ctrl-C, with the dev-only
/// variables from `.dev.vars` (HANDOFF_TEST_HOOKS=1).
pub fn dev(root: &Path, port: u16) -> Result<()> {
    // Fail before building, with a clearer message than workerd's bind error.
    TcpListener::bind(("127.0.0.1", port)).with_context(|| format!("127.0.0.1:{port} is not free; pick another port"))?;
    let tools = ensure_tools(root)?;
    build_with(&tools)?;
    let mut server = Dev::start(&tools, port, None, Output::Inherit)?;
    server.wait_ready(READY_TIMEOUT)?;
    println!("worker: ready on {} (HANDOFF_TEST_HOOKS=1 from .dev.vars); Ctrl-C stops it", server.base);
    println!("worker: try  curl -s {0}/health  or  curl -s '{0}/health?deep=1'", server.base);
    server.wait()
}

/// Runs `wrangler deploy`; with `dry_run`, only bundles into `outdir`
/// (default `target/worker-bundle`) and reports what was written.
pub fn deploy(root: &Path, dry_run: bool, outdir: Option<PathBuf>) -> Result<()> {
    let tools = ensure_tools(root)?;
    build_with(&tools)?;
    // wrangler runs in crates/do-worker: a relative --outdir must not move.
    let outdir = std::path::absolute(outdir.unwrap_or_else(|| root.join(DEFAULT_BUNDLE_DIR)))?;
    let started = SystemTime::now();
    let mut cmd = tools.command(&tools.wrangler)?;
    cmd.arg("deploy").arg("--outdir").arg(&outdir);
    if dry_run {
        cmd.arg("--dry-run");
    }
    println!("worker: wrangler deploy{} (bundle in {})", if dry_run { " --dry-run" } else { "" }, outdir.display());
    run(cmd, "wrangler deploy")?;
    if dry_run { report_bundle(&outdir, started) } else { Ok(()) }
}

/// Prints the files the dry run wrote; fails if there is no bundle.
fn report_bundle(outdir: &Path, since: SystemTime) -> Result<()> {
    // Only files written by this run count (the directory may hold older
    // ones); two seconds of slack for coarse file-system timestamps.
    let since = since - Duration::from_secs(2);
    let entries = fs::read_dir(outdir).with_context(|| format!("wrangler wrote no bundle directory {}", outdir.display()))?;
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
    println!("worker: bundle {} ({} files, {})", outdir.display(), files.len(), kib(total));
    for (name, len) in &files {
        println!("worker:   {name}  {}", kib(*len));
    }
    Ok(())
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// `cargo xtask test`'s worker check: serves the worker on a free port and
/// checks its HTTP contract, then stops wrangler and everything it started.
pub fn smoke(root: &Path) -> Result<()> {
    let tools = ensure_tools(root)?;
    build_with(&tools)?;
    let dir = root.join("target/worker-smoke");
    let state = dir.join("state");
    // Fresh local storage each run, so results never depend on a previous one.
    if state.exists() {
        fs::remove_dir_all(&state).with_context(|| format!("removing {}", state.display()))?;
    }
    fs::create_dir_all(&dir)?;
    let port = wrangler::free_port()?;
    println!("worker: smoke test: wrangler dev on 127.0.0.1:{port} (log {})", dir.join("wrangler.log").display());
    let mut server = Dev::start(&tools, port, Some(&state), Output::File(dir.join("wrangler.log")))?;
    server.wait_ready(READY_TIMEOUT)?;
    for check in SMOKE_CHECKS {
        check.run(&server).map_err(|e| e.context(server.log_tail()))?;
    }
    server.stop()?;
    ensure!(!wrangler::interrupted(), "interrupted");
    println!("worker: smoke test passed ({} checks)", SMOKE_CHECKS.len());
    Ok(())
}

/// One request and what its JSON answer must contain.
struct Check {
    method: &'static str,
    path: &'static str,
    status: u16,
    /// (JSON pointer, expected value) pairs.
    expect: fn() -> Vec<(&'static str, Value)>,
}

const SMOKE_CHECKS: &[Check] = &[
    Check {
        method: "GET",
        path: "/health",
        status: 200,
        // test_hooks: proves .dev.vars reached the worker.
        expect: || vec![("/ok", json!(true)), ("/service", json!("handoff")), ("/test_hooks", json!(true))],
    },
    Check {
        method: "GET",
        path: "/health?deep=1",
        status: 200,
        // Worker → Durable Object stub → Replica and back.
        expect: || vec![("/ok", json!(true)), ("/replica/ok", json!(true)), ("/replica/object", json!("Replica"))],
    },
    Check {
        method: "GET",
        path: "/no-such-route",
        status: 404,
        expect: || vec![("/error/code", json!("not_found"))],
    },
    Check {
        method: "POST",
        path: "/health",
        status: 405,
        expect: || vec![("/error/code", json!("method_not_allowed"))],
    },
];

impl Check {
    fn run(&self, server: &Dev) -> Result<()> {
        let url = format!("{}{}", server.base, self.path);
        let (status, body) = match self.method {
            "POST" => http::post(&url)?,
            _ => http::get(&url)?,
        };
        let what = format!("{} {}", self.method, self.path);
        ensure!(status == self.status, "{what}: expected {}, got {status}: {body}", self.status);
        let json: Value = serde_json::from_str(&body).with_context(|| format!("{what}: body is not JSON: {body}"))?;
        for (pointer, want) in (self.expect)() {
            let got = json.pointer(pointer);
            ensure!(got == Some(&want), "{what}: expected {pointer} = {want}, got {got:?} in {body}");
        }
        println!("worker: ok  {what} -> {status} {body}");
        Ok(())
    }
}

/// Runs `cmd` with inherited output; fails on a non-zero exit.
fn run(mut cmd: Command, what: &str) -> Result<()> {
    let status = cmd.status().with_context(|| format!("starting {what}"))?;
    ensure!(status.success(), "{what} failed ({status})");
    Ok(())
}
