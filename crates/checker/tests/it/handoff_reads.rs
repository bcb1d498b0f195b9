//! The HandoffReads mirror (`tla/HandoffReads.tla`, linearizable reads):
//! parity with TLC's distinct-state count on the shipped cfgs, and every way
//! of serving a stale read caught by `ReadsLinearizable`.

use checker::mirror::handoff_reads::HandoffReads;
use checker::run::{self, Report};

use crate::check_tla;

fn check(mutation: Option<&str>) -> Report {
    check_cfg("HandoffReads.cfg", mutation)
}

fn check_cfg(cfg_name: &str, mutation: Option<&str>) -> Report {
    check_tla::<HandoffReads>(cfg_name, mutation)
}

/// TLC (2026.12.04 snapshot) reports 3,541 distinct states.
#[test]
fn shipped_cfg_matches_tlc_and_passes() {
    let report = check(None);
    assert_eq!(report.verdict, "pass", "{:?}", report.violated);
    assert_eq!(report.unique_states, 3_541);
}

/// A zombie answering at once returns a value older than a write the new
/// coordinator completed before the read began.
#[test]
fn reads_served_without_confirmation_are_caught() {
    let report = check(Some("serve-reads-unconfirmed"));
    assert_eq!(report.violated.as_deref(), Some("ReadsLinearizable"));
    let trace = run::format_trace(&report);
    assert!(trace.contains("conf |-> FALSE]"), "the stale read was not confirmed:\n{trace}");
}

/// Without the fence a confirmed read can still be stale: a zombie commits
/// a write after the new coordinator collected, and the new coordinator
/// answers without it.
#[test]
fn a_confirmation_without_the_collect_fence_is_caught() {
    let report = check(Some("no-collect-fence"));
    assert_eq!(report.violated.as_deref(), Some("ReadsLinearizable"));
    let trace = run::format_trace(&report);
    assert!(trace.contains("ZombieCommitR"), "the stale read misses a zombie's commit:\n{trace}");
    assert!(trace.contains("conf |-> TRUE]"), "the stale read was confirmed:\n{trace}");
}

/// Slow (3 to 50 s each on 2 cores): `cargo xtask check --slow` and
/// `cargo xtask test` run them; the default check skips `::slow::`.
mod slow {
    use super::*;

    /// The fence on a decline's arrival is needed too: the coordinator collected
    /// a peer's older instance, declines the new one, which recovers from the
    /// other peer alone, takes a zombie's write, and confirms a read that the
    /// coordinator answers without it.
    #[test]
    fn recovering_without_the_decline_fence_is_caught() {
        let report = check_cfg("large/HandoffReadsEvicts2.cfg", Some("no-decline-fence"));
        assert_eq!(report.violated.as_deref(), Some("ReadsLinearizable"));
        let trace = run::format_trace(&report);
        assert!(trace.contains("DeclineArrivesR"), "the peer got the decline:\n{trace}");
        assert!(trace.contains("ZombieCommitR"), "the stale read misses a zombie's commit:\n{trace}");
    }

    /// TLC (2026.12.05 snapshot) reports 490,230 distinct states at two
    /// evictions, where the coordinator declines recovering peers (489,786
    /// before the late requests, LateReseedR and LateCollectR).
    #[test]
    fn two_evictions_match_tlc_and_pass() {
        let report = check_cfg("large/HandoffReadsEvicts2.cfg", None);
        assert_eq!(report.verdict, "pass", "{:?}", report.violated);
        assert_eq!(report.unique_states, 490_230);
    }
}
