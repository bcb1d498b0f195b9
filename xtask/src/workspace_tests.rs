//! The workspace's Rust tests (unit and insta snapshot tests).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result};
use serde::Serialize;

/// Totals of a `cargo test` run.
#[derive(Clone, Debug, Serialize)]
pub struct TestsOutcome {
    pub ok: bool,
    pub passed: u64,
    pub failed: u64,
}

/// The tests of the snapshot stage: do-worker and e2e run in the Worker
/// stage (`worker::e2e`): the worker's host unit tests first, then e2e,
/// which needs the Worker running on workerd (HANDOFF_URL).
const TEST_ARGS: [&str; 6] = ["test", "--workspace", "--exclude", "do-worker", "--exclude", "e2e"];

/// Compiles the tests without running them (`cargo xtask setup`, so that
/// the first `check` does not wait for the compiler).
pub fn build(root: &Path) -> Result<()> {
    let status = crate::cargo::command()
        .current_dir(root)
        .args(TEST_ARGS)
        .arg("--no-run")
        .status()
        .context("cannot run cargo test")?;
    anyhow::ensure!(status.success(), "building the tests failed ({status})");
    Ok(())
}

/// Runs `cargo test --workspace`, echoing its output, and totals the
/// `test result:` lines. Snapshots are never rewritten here: a changed
/// snapshot is a failure (`INSTA_UPDATE=no`).
pub fn workspace(root: &Path) -> Result<TestsOutcome> {
    let mut child = crate::cargo::command()
        .current_dir(root)
        .args(TEST_ARGS)
        .env("INSTA_UPDATE", "no")
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run cargo test")?;
    let mut outcome = TestsOutcome { ok: false, passed: 0, failed: 0 };
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            if let Some(rest) = line.strip_prefix("test result: ") {
                outcome.passed += count(rest, " passed");
                outcome.failed += count(rest, " failed");
            }
        }
    }
    outcome.ok = child.wait()?.success() && outcome.failed == 0;
    Ok(outcome)
}

/// `ok. 12 passed; 0 failed; ...` → the number before `label`.
fn count(line: &str, label: &str) -> u64 {
    line.split(';')
        .find_map(|part| {
            part.trim().trim_start_matches("ok. ").trim_start_matches("FAILED. ").strip_suffix(label.trim_start())
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn totals_a_result_line() {
        assert_eq!(super::count("ok. 12 passed; 0 failed; 0 ignored", " passed"), 12);
        assert_eq!(super::count("FAILED. 3 passed; 2 failed; 0 ignored", " failed"), 2);
    }
}
