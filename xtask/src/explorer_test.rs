//! `cargo xtask explorer-test`: the stateright explorer in a real browser.
//! Every spec in `tla/` with a mirror is explored on its own cfg, started
//! as `cargo xtask explore <Spec>` starts it, and driven in headless
//! Chromium by `xtask/browser/explorer.mjs` (playwright-core): the page
//! loads, the initial state shows exactly the spec's variables (read from
//! the `.tla`, EXTENDS included), every action offered is an instance of an
//! action the spec defines, and following one shows the next state under
//! that action's name. A screenshot of each explorer goes to the
//! screenshots directory.

use std::fs::{self, File};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::check;
use crate::explore::{self, ExploreArgs};

/// The driver script, relative to the root.
const SCRIPT: &str = "xtask/browser/explorer.mjs";
/// Logs and the plan handed to the script.
const WORK_DIR: &str = "target/explorer-test";
/// An explorer answers within a second or two once the checker is built.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the browser test; screenshots go to `screenshots` (default
/// `target/explorer-test/`). `Ok(false)` when a spec's explorer failed.
pub fn run(root: &Path, screenshots: Option<&Path>) -> Result<bool> {
    let started = Instant::now();
    let chromium = crate::chromium::locate()?;
    crate::npm::ensure(root)?;
    let bin = check::build_checker(root)?;
    let tla = root.join("tla");
    let specs = spec_mirrors(&bin, &tla)?;
    let work = root.join(WORK_DIR);
    let shots = screenshots.map_or_else(|| work.clone(), Path::to_path_buf);
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    fs::create_dir_all(&shots).with_context(|| format!("creating {}", shots.display()))?;
    let shots = shots.canonicalize()?;

    let mut explorers = Vec::new();
    for module in &specs {
        explorers.push(Explorer::start(root, module, &work)?);
    }
    let mut plan = Vec::new();
    for e in &mut explorers {
        e.wait_ready()?;
        let declared = check::declarations(&e.module, &tla)?;
        plan.push(json!({
            "module": e.module,
            "url": e.url,
            "variables": declared.variables,
            "definitions": declared.definitions,
            "screenshot": shots.join(format!("{}.png", e.module)),
        }));
    }
    let plan_file = work.join("plan.json");
    let plan = json!({ "chromium": chromium, "specs": plan });
    fs::write(&plan_file, serde_json::to_string_pretty(&plan)?)?;
    eprintln!("Explorer stage: {} in headless Chromium ({})", specs.join(", "), chromium.display());
    let status = Command::new("node")
        .arg(root.join(SCRIPT))
        .arg(&plan_file)
        .current_dir(root)
        .status()
        .context("cannot run node")?;
    drop(explorers);
    println!(
        "explorer: {} specs {} in {:.0} s (screenshots in {})",
        specs.len(),
        if status.success() { "pass" } else { "FAIL" },
        started.elapsed().as_secs_f64(),
        shots.display()
    );
    Ok(status.success())
}

/// Modules in `tla_dir` with a mirror and a cfg of their own name: those
/// `cargo xtask explore <Spec>` opens without `--config`.
fn spec_mirrors(bin: &Path, tla_dir: &Path) -> Result<Vec<String>> {
    let mut specs = Vec::new();
    for cfg in check::cfgs_in(tla_dir)? {
        let info = check::describe_cfg(bin, &cfg)?;
        let own = cfg.file_stem().is_some_and(|s| s.to_string_lossy() == info.module);
        if own && info.rust_model && cfg.with_extension("tla").is_file() {
            specs.push(info.module);
        }
    }
    if specs.is_empty() {
        bail!("no spec in {} has a mirror", tla_dir.display());
    }
    Ok(specs)
}

/// One running explorer, stopped when dropped.
struct Explorer {
    module: String,
    url: String,
    log: PathBuf,
    child: Child,
}

impl Explorer {
    fn start(root: &Path, module: &str, work: &Path) -> Result<Explorer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let args = ExploreArgs { spec: module.to_string(), config: None, port, mutation: None };
        let log = work.join(format!("{module}.log"));
        let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let child = explore::command(root, &args)?
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("cannot start the explorer for {module}"))?;
        Ok(Explorer { module: module.to_string(), url: format!("http://127.0.0.1:{port}/"), log, child })
    }

    /// Waits until the explorer answers its status endpoint.
    fn wait_ready(&mut self) -> Result<()> {
        let agent: ureq::Agent =
            ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(2))).build().into();
        let status = format!("{}.status", self.url);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if agent.get(&status).call().is_ok() {
                return Ok(());
            }
            if let Some(exit) = self.child.try_wait()? {
                let log = fs::read_to_string(&self.log).unwrap_or_default();
                bail!("the explorer for {} stopped ({exit}):\n{}", self.module, log.trim());
            }
            if Instant::now() > deadline {
                bail!("the explorer for {} did not answer on {status} within {READY_TIMEOUT:?}", self.module);
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Explorer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
