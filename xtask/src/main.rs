//! `cargo xtask`: project automation (the rust-analyzer pattern: Rust
//! instead of shell scripts).
//!
//! | command   | what it does |
//! |-----------|--------------|
//! | `setup`   | install every pinned tool and build once (a new machine) |
//! | `check`   | TLA+ checker + Rust models (with state-count parity) + workspace tests |
//! | `tidy`    | rustfmt and clippy (host and wasm32) must be clean |
//! | `test`    | everything CI runs: tidy, check, the Worker on workerd |
//! | `explore` | the stateright web explorer for a spec |
//! | `explorer-test` | every spec's explorer driven in headless Chromium |
//! | `build`   | build the Worker to wasm |
//! | `dev`     | run the Worker locally on workerd (wrangler dev) |
//! | `deploy`  | `wrangler deploy` (or `--dry-run`: bundle only) |
//! | `e2e`     | the Worker stage of `test` alone: bundle, smoke and end-to-end tests, trace validation |
//! | `validate` | trace validation of the traces the last `e2e` recorded |
//! | `bench`   | benchmarks on workerd; `bench models`: the model checkers |

mod bench;
mod cargo;
mod check;
mod chromium;
#[cfg(test)]
mod code_map_test;
mod explore;
mod explorer_test;
#[cfg(test)]
mod import_cycles_test;
mod npm;
mod setup;
mod tidy;
mod tools;
mod validate;
mod worker;
mod workspace_tests;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Handoff project automation")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// What `cargo xtask dev` does to a running dev server.
#[derive(Subcommand)]
enum DevAction {
    /// Restart one replica role (r0, r1, r2): a real restart of its process,
    /// with fresh memory; returns once its replicas are ready again.
    Restart {
        role: String,
        /// Kill it at once (SIGKILL), as a crash would, instead of stopping it.
        #[arg(long)]
        crash: bool,
        /// Seconds its replicas get to be ready again.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// What a deploy does: rebuild, then restart r1, r2, r0 and the front
    /// in turn, each once the previous recovered; non-zero if one does not.
    Roll {
        /// Seconds each role's replicas get to be ready again.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
}

#[derive(Subcommand)]
enum Cmd {
    /// Install every pinned tool (wasm target, tla, worker-build,
    /// wasm-bindgen-cli, wrangler, playwright-core, Chromium) and build the
    /// Worker and the checker once.
    Setup,
    /// Model-check every cfg in tla/ with TLC (or the tla fallback) and the
    /// Rust models, then run the workspace tests; print one summary table.
    Check(check::CheckArgs),
    /// rustfmt and clippy (host, and wasm32 for the code the Worker links)
    /// must be clean.
    Tidy,
    /// Run everything CI runs (tidy first), installing what it needs.
    Test,
    /// Serve the stateright web explorer for a spec on 127.0.0.1.
    Explore(explore::ExploreArgs),
    /// Drive every spec's explorer in headless Chromium (part of `test`).
    ExplorerTest {
        /// Where the screenshots go (default: target/explorer-test/).
        #[arg(long)]
        screenshots: Option<PathBuf>,
    },
    /// Build the Worker to wasm (crates/do-worker/build/).
    Build,
    /// Serve the Worker locally on workerd, test hooks on: its four scripts
    /// (front, r0, r1, r2), each its own `wrangler dev`; `restart` and
    /// `roll` act on a running one.
    Dev {
        #[arg(long, global = true, default_value_t = worker::DEFAULT_DEV_PORT)]
        port: u16,
        #[command(subcommand)]
        action: Option<DevAction>,
    },
    /// The Worker stage of `test` alone: bundle (dry run), smoke and
    /// end-to-end tests on workerd.
    E2e,
    /// Validate the replica traces the last `e2e` recorded (or those under
    /// DIR): each run must be a behaviour of the implementation model.
    Validate { dir: Option<PathBuf> },
    /// Benchmarks on workerd (`bench kv`: the replicated store against single-DO
    /// baselines; `bench claims`: activations against one SQLite transaction;
    /// `bench scale`: one namespace as it grows to its memory budget;
    /// `bench models`: the Rust model checker against the TLA+ checker).
    Bench(bench::BenchArgs),
    /// Deploy with wrangler; --dry-run only writes the bundle.
    Deploy(worker::DeployArgs),
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool> {
    let root = project_root()?;
    match Cli::parse().command {
        Cmd::Setup => setup::run(&root).map(|()| true),
        Cmd::Check(args) => check::run(&root, &args),
        Cmd::Tidy => tidy::run(&root),
        Cmd::Test => test(&root),
        Cmd::Explore(args) => explore::run(&root, &args).map(|()| true),
        Cmd::ExplorerTest { screenshots } => explorer_test::run(&root, screenshots.as_deref()),
        Cmd::Build => worker::build(&root).map(|()| true),
        Cmd::E2e => worker_stage(&root),
        Cmd::Validate { dir } => validate::run(&root, dir.as_deref(), false),
        Cmd::Bench(args) => bench::run(&root, &args),
        Cmd::Dev { port, action: None } => worker::dev(&root, port).map(|()| true),
        Cmd::Dev { port, action: Some(DevAction::Restart { role, crash, timeout }) } => {
            worker::dev_restart(&root, port, &role, crash, Duration::from_secs(timeout)).map(|()| true)
        }
        Cmd::Dev { port, action: Some(DevAction::Roll { timeout }) } => {
            worker::dev_roll(&root, port, Duration::from_secs(timeout)).map(|()| true)
        }
        Cmd::Deploy(args) => worker::deploy(&root, &args).map(|()| true),
    }
}

/// `cargo xtask test`: tidy, the full check (TLA+ stage, Rust stage with
/// parity, workspace tests), the `tla` fallback on a small cfg, the
/// explorers in Chromium, then the Worker on workerd. A tidy failure stops
/// here: it is the cheapest gate and names its fix.
fn test(root: &Path) -> Result<bool> {
    if !tidy::run(root)? {
        return Ok(false);
    }
    let args = check::CheckArgs {
        cfg: None,
        deep: false,
        checker: None,
        tla_only: false,
        rust_only: false,
        json: false,
        coverage: false,
        simulation_seconds: None,
        unreduced: true,
        slow: true,
    };
    let (checked, tests) = check::run_with_tests(root, &args)?;
    // Each stage reports its own failure and the next still runs.
    let stage = |name: &str, result: Result<bool>| {
        result.unwrap_or_else(|e| {
            eprintln!("{name}: FAIL: {e:#}");
            false
        })
    };
    let fallback = stage("fallback", check::test_fallback(root));
    let explorers = stage("explorer", explorer_test::run(root, None));
    let e2e = worker_stage(root)?;
    // A closing line for CI: the workspace test totals (the end-to-end
    // suite reports its own above).
    if let Some(t) = tests {
        println!("tests: {} passed, {} failed", t.passed, t.failed);
    }
    Ok(checked && fallback && explorers && e2e)
}

/// The Worker stage: build, the deploy bundle (dry run), then the Worker on
/// workerd: smoke and end-to-end tests, then schemathesis.
fn worker_stage(root: &Path) -> Result<bool> {
    eprintln!("Worker stage: build, deploy bundle (dry run), run on workerd, smoke and end-to-end tests");
    worker::deploy(root, &worker::DeployArgs { dry_run: true, outdir: None, url: None, timeout: 120 })?;
    worker::smoke(root)?;
    let e2e = worker::e2e(root)?;
    Ok(worker::schemathesis::run(root)? && e2e)
}

fn project_root() -> Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    Ok(manifest.parent().context("xtask has no parent directory")?.to_path_buf())
}
