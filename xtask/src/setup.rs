//! `cargo xtask setup`: everything the other commands install on first
//! use, at once, so that a new machine is ready before the first `dev`,
//! `check` or `test`. One step per tool, each skipped when already done
//! and timed: rustfmt and clippy, the pinned cargo tools (the `tla`
//! checker, worker-build, wasm-bindgen-cli: built once per user into the
//! shared tools cache, `crate::tools`), the npm packages from
//! `package-lock.json` (wrangler, playwright-core), Chromium, schemathesis
//! from PyPI into a virtual environment in `.tools/`, then one build of the
//! Worker, of the release model checker and of the tests, so that
//! `cargo xtask dev` and `check` start at once.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use crate::{check, chromium, npm, tidy, worker, workspace_tests};

pub fn run(root: &Path) -> Result<()> {
    let started = Instant::now();
    step("rustfmt and clippy (for `cargo xtask tidy`)", || tidy::ensure_components(root))?;
    let tla = step("the TLA+ fallback checker (tla)", || check::locate_tla(root))?;
    step("the npm packages (wrangler, playwright-core)", || npm::ensure(root))?;
    let tools =
        step("the Worker's tools (wasm target, worker-build, wasm-bindgen-cli)", || worker::ensure_tools(root))?;
    step("Chromium (the explorer's browser test)", chromium::ensure)?;
    let st = step("schemathesis (a Python virtual environment in .tools/)", || worker::schemathesis::ensure(root))?;
    step("building the Worker", || worker::build_with(&tools))?;
    step("building the model checker (release)", || check::build_checker(root))?;
    step("building the tests (for `cargo xtask check`)", || workspace_tests::build(root))?;
    println!("setup: done in {:.0} s", started.elapsed().as_secs_f64());
    println!("  tla:       {}", tla.display());
    println!("  wrangler:  {}", tools.wrangler.display());
    println!("  st:        {}", st.display());
    println!("next: `cargo xtask dev` (the store on 127.0.0.1:8787), `cargo xtask check`, `cargo xtask test`");
    Ok(())
}

/// Runs one step, saying what it is and how long it took.
fn step<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    println!("setup: {what}");
    let started = Instant::now();
    let out = f()?;
    println!("setup: {what}: {:.1} s", started.elapsed().as_secs_f64());
    Ok(out)
}
