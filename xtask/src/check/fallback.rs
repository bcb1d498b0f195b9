//! The `tla` fallback stays tested where TLC runs: `cargo xtask test`
//! checks one small cfg with it and requires the mirror's distinct-state
//! count, so that a machine without Java still gets a working TLA+ stage.

use std::path::Path;

use anyhow::{Context, Result};

use super::summary::Row;
use super::target::resolve;
use super::{checker_bin, rust_stage, tla_rs};

/// Small enough for the single-threaded `tla` (8,931 states, seconds),
/// with both invariants and action properties.
const CFG: &str = "tla/RemoraClaimActivationThreeFences.cfg";

/// Runs `tla` and the mirror on [`CFG`]; `Ok(false)` unless both pass with
/// the same count.
pub fn test(root: &Path) -> Result<bool> {
    let bin = checker_bin::build(root)?;
    let target = resolve(&bin, &root.join(CFG), &root.join("tla"))?;
    let spec = target.spec.as_ref().with_context(|| format!("{CFG} names no TLA+ module"))?;
    let tla = tla_rs::locate(root)?;
    eprintln!("Fallback stage: {} on {}, against the mirror", tla.version_line, target.cfg_name());
    let mut row = Row::new(&target);
    row.tla = Some(tla_rs::run(&tla.exe, spec, &target.cfg_path, &target.cfg_name(), target.liveness)?);
    row.rust = Some(rust_stage::run(&bin, &target, 0, rust_stage::Reductions::On)?);
    let count = |n: Option<u64>| n.map_or("-".into(), |n| n.to_string());
    let (tla_out, rust_out) = (row.tla.as_ref(), row.rust.as_ref());
    let equal = row.parity() == Some(true);
    println!(
        "fallback: {} {}: tla {} ({} distinct states), mirror {} ({} distinct states): {}",
        row.spec,
        row.cfg,
        tla_out.map_or("-", |o| o.verdict),
        count(tla_out.and_then(|o| o.distinct_states)),
        rust_out.map_or("-", |o| o.verdict.as_str()),
        count(rust_out.and_then(|o| o.unique_states)),
        if equal { "equal" } else { "FAIL" }
    );
    if let Some(e) = tla_out.and_then(|o| o.error.as_deref()) {
        println!("  tla error: {e}");
    }
    Ok(equal)
}
