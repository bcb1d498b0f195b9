//! `cargo xtask setup`: everything the other commands install on first
//! use, at once, so that a new machine is ready before the first `dev`,
//! `check` or `test`: rustfmt and clippy, the wasm target, the pinned cargo tools in `.tools/`
//! (the `tla` checker, worker-build, wasm-bindgen-cli), wrangler from
//! `package-lock.json` (`npm ci`), schemathesis from PyPI into a virtual
//! environment in `.tools/`, then one build of the Worker and of the
//! release model checker, so that `cargo xtask dev` and `check` start at
//! once. Each step is skipped when already done.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use crate::{check, worker};

pub fn run(root: &Path) -> Result<()> {
    let started = Instant::now();
    println!("setup: rustfmt and clippy (for `cargo xtask tidy`)");
    crate::tidy::ensure_components(root)?;
    println!("setup: the TLA+ fallback checker");
    let tla = check::locate_tla(root)?;
    println!("setup: the Worker's tools (wasm target, worker-build, wasm-bindgen-cli, wrangler)");
    let tools = worker::ensure_tools(root)?;
    println!("setup: schemathesis (a Python virtual environment in .tools/, for `cargo xtask test`)");
    let st = worker::schemathesis::ensure(root)?;
    println!("setup: building the Worker");
    worker::build_with(&tools)?;
    println!("setup: building the model checker (release)");
    check::build_checker(root)?;
    println!("setup: done in {:.0} s", started.elapsed().as_secs_f64());
    println!("  tla:       {}", tla.display());
    println!("  wrangler:  {}", tools.wrangler.display());
    println!("  st:        {}", st.display());
    println!("next: `cargo xtask dev` (the store on 127.0.0.1:8787), `cargo xtask check`, `cargo xtask test`");
    Ok(())
}
