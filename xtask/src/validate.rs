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

/// The runs `cargo xtask e2e` saves: the namespace prefix of each test
/// that calls `save_trace` (its directory is `{prefix}-{16 hex digits}`).
/// After the end-to-end stage every one must be there, with a trace and an
/// end per replica, so a test that stopped saving, or a replica whose
/// trace or end went missing, fails the stage instead of leaving less to
/// validate.
pub const EXPECTED_RUNS: &[&str] = &[
    "burst",
    "claims-complete-evict",
    "claims-evict",
    "claims-restore",
    "evict-all",
    "evict-each",
    "evict-turn",
    "faults",
    "linearizable",
];

/// The files of a whole run: each replica's trace and end.
const RUN_FILES: [&str; 6] = ["r0.trace", "r1.trace", "r2.trace", "r0.end", "r1.end", "r2.end"];

/// What is missing from `runs` (directories) of [`EXPECTED_RUNS`], one
/// line each.
pub fn missing(runs: &[PathBuf]) -> Vec<String> {
    let prefix_of = |run: &Path| {
        let name = run.file_name()?.to_str()?;
        let (prefix, id) = name.rsplit_once('-')?;
        (id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| prefix.to_string())
    };
    let mut lines = Vec::new();
    for expected in EXPECTED_RUNS {
        let found: Vec<&PathBuf> = runs.iter().filter(|r| prefix_of(r).as_deref() == Some(*expected)).collect();
        if found.is_empty() {
            lines.push(format!("no run {expected}-*"));
        }
        for run in found {
            for file in RUN_FILES {
                if !run.join(file).is_file() {
                    lines.push(format!("{}: no {file}", run.display()));
                }
            }
        }
    }
    lines
}

/// Validates every run under `dir` (default [`TRACE_DIR`]); with
/// `expect_all`, also that every run of [`EXPECTED_RUNS`] is there whole.
pub fn run(root: &Path, dir: Option<&Path>, expect_all: bool) -> Result<bool> {
    let dir = dir.map_or_else(|| root.join(TRACE_DIR), Path::to_path_buf);
    let mut runs: Vec<PathBuf> = fs::read_dir(&dir)
        .with_context(|| format!("reading {} (`cargo xtask e2e` records the traces)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    runs.sort();
    ensure!(!runs.is_empty(), "no traces under {}: `cargo xtask e2e` records them", dir.display());
    let missing = if expect_all { missing(&runs) } else { Vec::new() };
    for line in &missing {
        println!("validate: missing: {line}");
    }
    let bin = crate::check::build_checker(root)?;
    println!("validate: {} runs under {}", runs.len(), dir.display());
    let status =
        std::process::Command::new(bin).arg("validate").args(&runs).status().context("running checker validate")?;
    let passed = status.success() && missing.is_empty();
    println!("validate: trace validation {}", if passed { "passed" } else { "FAILED" });
    Ok(passed)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn every_expected_run_must_be_there_whole() {
        let dir = std::env::temp_dir().join(format!("xtask-validate-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut runs = Vec::new();
        for prefix in EXPECTED_RUNS {
            let run = dir.join(format!("{prefix}-0123456789abcdef"));
            fs::create_dir_all(&run).expect("run dir");
            for file in RUN_FILES {
                fs::write(run.join(file), b"").expect("file");
            }
            runs.push(run);
        }
        assert_eq!(missing(&runs), Vec::<String>::new());
        // A run missing, whose prefix another's begins with: still missing.
        let evict = runs.iter().position(|r| r.ends_with("claims-evict-0123456789abcdef")).expect("claims-evict");
        let gone = runs.remove(evict);
        assert_eq!(missing(&runs), ["no run claims-evict-*"]);
        runs.push(gone.clone());
        fs::remove_file(gone.join("r2.end")).expect("remove");
        assert_eq!(missing(&runs), [format!("{}: no r2.end", gone.display())]);
        let _ = fs::remove_dir_all(&dir);
    }
}
