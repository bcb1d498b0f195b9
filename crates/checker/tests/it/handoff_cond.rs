//! The HandoffCond mirror (`tla/HandoffCond.tla`, conditional writes and
//! expiring keys): parity with TLC's distinct-state count on the shipped
//! cfgs, and each of the module's invariants shown to catch a mutation.

use checker::mirror::handoff_cond::HandoffCond;
use checker::run::{self, Report};

use crate::check_tla;

fn check(cfg_name: &str, mutation: Option<&str>) -> Report {
    check_tla::<HandoffCond>(cfg_name, mutation)
}

/// TLC (2026.12.05 snapshot) reports 30,234 distinct states.
#[test]
fn the_zombie_cfg_matches_tlc_and_passes() {
    let report = check("HandoffCond.cfg", None);
    assert_eq!(report.verdict, "pass", "{:?}", report.violated);
    assert_eq!(report.unique_states, 30_234);
}

/// TLC (2026.12.05 snapshot) reports 12,402 distinct states.
#[test]
fn the_clock_cfg_matches_tlc_and_passes() {
    let report = check("HandoffCondExpiry.cfg", None);
    assert_eq!(report.verdict, "pass", "{:?}", report.violated);
    assert_eq!(report.unique_states, 12_402);
}

/// A condition evaluated while a write to its key is pending succeeds, and
/// the conditional write commits over the write it never saw: the
/// invariant checks the successes, which take no confirmation.
#[test]
fn a_condition_evaluated_over_a_pending_write_is_caught() {
    let report = check("HandoffCond.cfg", Some("cond-ignores-pending"));
    assert_eq!(report.violated.as_deref(), Some("CondLinearizable"));
    let trace = run::format_trace(&report);
    assert!(trace.contains("CondIssue"), "the conditional write was issued:\n{trace}");
}

/// A read that sees an expired record as present.
#[test]
fn an_expired_record_served_is_caught() {
    let report = check("HandoffCondExpiry.cfg", Some("serve-expired"));
    assert_eq!(report.violated.as_deref(), Some("ExpiredNeverServed"));
    assert!(run::format_trace(&report).contains("Tick"));
}

/// The coordinator deleting a record before its expiry.
#[test]
fn an_expiry_before_its_time_is_caught() {
    let report = check("HandoffCondExpiry.cfg", Some("expire-unexpired"));
    assert_eq!(report.violated.as_deref(), Some("ExpiryDeletesOnlyExpired"));
    assert!(run::format_trace(&report).contains("Expire(k1)"));
}

/// Slow (3 to 50 s each on 2 cores): `cargo xtask check --slow` and
/// `cargo xtask test` run them; the default check skips `::slow::`.
mod slow {
    use super::*;

    /// A zombie that answers a failed condition at once fails a condition
    /// that holds on the write the new coordinator completed before the
    /// request began.
    #[test]
    fn a_failure_answered_without_a_confirmation_is_caught() {
        let report = check("HandoffCond.cfg", Some("cond-unconfirmed"));
        assert_eq!(report.violated.as_deref(), Some("CondLinearizable"));
        let trace = run::format_trace(&report);
        assert!(trace.contains("CondFail"), "the failure was answered:\n{trace}");
        assert!(trace.contains("SupersedeC"), "by a zombie:\n{trace}");
    }

    /// Without the collect fence, a confirmation is not enough: the new
    /// coordinator, confirmed, evaluates a condition against a memory that
    /// misses a zombie's commit completed before the request began.
    #[test]
    fn a_condition_without_the_collect_fence_is_caught() {
        let report = check("HandoffCond.cfg", Some("no-collect-fence"));
        assert_eq!(report.violated.as_deref(), Some("CondLinearizable"));
        let trace = run::format_trace(&report);
        assert!(trace.contains("ZombieCommitC"), "the zombie committed:\n{trace}");
        assert!(trace.contains("conf |-> TRUE"), "the condition was confirmed:\n{trace}");
    }
}
