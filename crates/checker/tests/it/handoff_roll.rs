//! The HandoffRoll mirror (`tla/HandoffRoll.tla`, push acks that name the
//! acking incarnation, rolling restarts): parity with TLC's distinct-state
//! count, and `RollLosesNothing` shown to catch the stale acks it exists for, at the
//! coordinator and at a zombie.

use checker::mirror::handoff_roll::HandoffRoll;
use checker::run::{self, Report};

use crate::check_tla;

fn check(cfg_name: &str, mutation: Option<&str>) -> Report {
    check_tla::<HandoffRoll>(cfg_name, mutation)
}

/// Counting an ack whatever incarnation sent it (HandoffCond's rule): the
/// acking peer is replaced, its new incarnation reseeds from the
/// coordinator before the commit, the old ack commits a write only the
/// coordinator holds, and the roll's next eviction, the coordinator's,
/// dooms it.
#[test]
fn a_stale_ack_counted_is_caught() {
    let report = check("HandoffRoll.cfg", Some("count-stale-ack"));
    assert_eq!(report.violated.as_deref(), Some("RollLosesNothing"));
    let trace = run::format_trace(&report);
    assert!(trace.contains("CommitWriteRo"), "a write committed:\n{trace}");
    assert!(trace.contains("EvictRo(r0)"), "then the coordinator was evicted:\n{trace}");
}

/// A zombie counting an ack by the current coordinator's reg rather than
/// its own (`zreg` unused): r1 is replaced and reseeded before r0 is
/// superseded, and the zombie commits, on r1's old ack, a write nobody
/// holds. The shipped cfg has no zombie, so this needs the deep one.
#[test]
fn a_zombie_counting_a_stale_ack_is_caught() {
    let report = check("large/HandoffRollZombie.cfg", Some("zombie-counts-stale-ack"));
    assert_eq!(report.violated.as_deref(), Some("RollLosesNothing"));
    let trace = run::format_trace(&report);
    assert!(trace.contains("SupersedeRo"), "r0 was superseded:\n{trace}");
    assert!(trace.contains("ZombieCommitRo"), "and the zombie committed:\n{trace}");
}

/// Slow (3 to 50 s each on 2 cores): `cargo xtask check --slow` and
/// `cargo xtask test` run them; the default check skips `::slow::`.
mod slow {
    use super::*;

    /// TLC (2026.12.05 snapshot) reports 89,229 distinct states.
    #[test]
    fn the_rolling_cfg_matches_tlc_and_passes() {
        let report = check("HandoffRoll.cfg", None);
        assert_eq!(report.verdict, "pass", "{:?}", report.violated);
        assert_eq!(report.unique_states, 89_229);
    }
}
