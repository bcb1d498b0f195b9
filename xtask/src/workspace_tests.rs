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

/// The e2e crate's own unit tests (the history checker, `src/history`),
/// which need no Worker: part of the snapshot stage.
const E2E_LIB_ARGS: [&str; 4] = ["test", "-p", "e2e", "--lib"];

/// Compiles the tests without running them (`cargo xtask setup`, so that
/// the first `check` does not wait for the compiler).
pub fn build(root: &Path) -> Result<()> {
    for args in [&TEST_ARGS[..], &E2E_LIB_ARGS[..]] {
        let status = crate::cargo::command()
            .current_dir(root)
            .args(args)
            .arg("--no-run")
            .status()
            .context("cannot run cargo test")?;
        anyhow::ensure!(status.success(), "building the tests failed ({status})");
    }
    Ok(())
}

/// Tests in a module of this name are slow (model checks of larger cfgs,
/// 5 to 50 s each): the default check leaves them to `--slow`.
const SLOW_TESTS: &str = "::slow::";

/// libtest's arguments that leave out the slow tests, unless `slow`.
fn skip_args(slow: bool) -> &'static [&'static str] {
    if slow { &[] } else { &["--", "--skip", SLOW_TESTS] }
}

/// Runs `cargo test --workspace`, then the e2e crate's unit tests, echoing
/// their output, and totals the `test result:` lines; the tests in `slow`
/// modules only if `slow`. Snapshots are never rewritten here: a changed
/// snapshot is a failure (`INSTA_UPDATE=no`).
pub fn workspace(root: &Path, slow: bool) -> Result<TestsOutcome> {
    let mut outcome = TestsOutcome { ok: true, passed: 0, failed: 0 };
    let skip = skip_args(slow);
    for args in [&TEST_ARGS[..], &E2E_LIB_ARGS[..]] {
        let mut child = crate::cargo::command()
            .current_dir(root)
            .args(args)
            .args(skip)
            .env("INSTA_UPDATE", "no")
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot run cargo test")?;
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("{line}");
                if let Some(rest) = line.strip_prefix("test result: ") {
                    match (count(rest, "passed"), count(rest, "failed")) {
                        (Some(passed), Some(failed)) => {
                            outcome.passed += passed;
                            outcome.failed += failed;
                        }
                        // A total that cannot be read counts as a failure,
                        // not as nothing.
                        _ => {
                            println!("cannot read the totals of `{line}`");
                            outcome.ok = false;
                        }
                    }
                }
            }
        }
        outcome.ok &= child.wait()?.success();
    }
    outcome.ok &= outcome.failed == 0;
    Ok(outcome)
}

/// `ok. 12 passed; 0 failed; ...` → the number before `label`.
fn count(line: &str, label: &str) -> Option<u64> {
    line.split(';').find_map(|part| {
        let part = part.trim().trim_start_matches("ok. ").trim_start_matches("FAILED. ");
        part.strip_suffix(label)?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::{SLOW_TESTS, count, skip_args};

    /// libtest's `--skip` matches any part of a test's path: only a module
    /// named exactly `slow` may match, and only without `--slow`.
    #[test]
    fn only_tests_in_slow_modules_are_skipped_and_only_by_default() {
        assert!("handoff_reads::slow::recovering_without_the_decline_fence_is_caught".contains(SLOW_TESTS));
        assert!("history::tests::slow::long_busy_histories_are_decided".contains(SLOW_TESTS));
        for fast in ["handoff_impl_model::slowly_converges", "slow_start::x", "cli::a_slow_cfg"] {
            assert!(!fast.contains(SLOW_TESTS), "{fast}");
        }
        assert_eq!(skip_args(false), ["--", "--skip", SLOW_TESTS]);
        assert!(skip_args(true).is_empty());
    }

    #[test]
    fn totals_a_result_line() {
        assert_eq!(count("ok. 12 passed; 0 failed; 0 ignored", "passed"), Some(12));
        assert_eq!(count("FAILED. 3 passed; 2 failed; 0 ignored", "failed"), Some(2));
        assert_eq!(count("ok. many passed; 0 failed", "passed"), None);
        assert_eq!(count("something else", "failed"), None);
    }
}
