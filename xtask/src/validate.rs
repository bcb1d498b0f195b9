//! `cargo xtask validate [DIR]`: trace validation (docs/verification.md
//! 1.6). `cargo xtask e2e` runs the Worker with `HANDOFF_TRACE=1`, and its
//! eviction, burst, linearizability and claims-eviction tests save their
//! namespaces' replica traces under [`TRACE_DIR`] (one directory per
//! namespace); this checks each with
//! `checker validate`: the merged steps must form a behaviour of the
//! implementation model, replayed through the real protocol code, with
//! the spec's invariants holding at every step.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

/// Where `cargo xtask e2e` saves the traces, under the project root.
pub const TRACE_DIR: &str = "target/worker-e2e/traces";

/// Validates every run under `dir` (default [`TRACE_DIR`]).
pub fn run(root: &Path, dir: Option<&Path>) -> Result<bool> {
    let dir = dir.map_or_else(|| root.join(TRACE_DIR), Path::to_path_buf);
    let mut runs: Vec<PathBuf> = fs::read_dir(&dir)
        .with_context(|| format!("reading {} (`cargo xtask e2e` records the traces)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    runs.sort();
    ensure!(!runs.is_empty(), "no traces under {}: `cargo xtask e2e` records them", dir.display());
    let bin = crate::check::build_checker(root)?;
    println!("validate: {} runs under {}", runs.len(), dir.display());
    let status =
        std::process::Command::new(bin).arg("validate").args(&runs).status().context("running checker validate")?;
    println!("validate: trace validation {}", if status.success() { "passed" } else { "FAILED" });
    Ok(status.success())
}
