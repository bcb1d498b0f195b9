//! The implementation model: the real replicas, refining HandoffScale.

use std::path::PathBuf;
use std::time::Duration;

use checker::cfg::TlcConfig;
use checker::model::handoff::HandoffImpl;
use checker::run::{self, RunOptions, Walks};
use checker::search::Search;
use checker::spec::Mirror;

fn models(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models").join(name)
}

/// 65,470 before the collect fence (HandoffReads): a peer that answered a
/// collect now ignores pushes until the announce, which removes the
/// interleavings where it took the dead instance's ghosts in between.
/// 42,055 before acks named the acking instance (HandoffRoll): two
/// instances' acks of one push are two messages now.
const QUICK_STATES: usize = 42_275;

/// First boot, run through the real code, maps to the spec's `Init`.
#[test]
fn first_boot_maps_to_init() {
    let cfg = TlcConfig::load(&models("HandoffImplQuick.cfg")).unwrap();
    let model = HandoffImpl::from_cfg(&cfg, None).unwrap();
    use stateright::Model;
    let init = model.init_states().remove(0);
    assert!(init.mapped.eq_unmarked(&model.spec().init()), "{:?}", init.mapped);
    assert!(init.replicas.iter().all(|r| r.status().status == protocol::handoff::Status::Ready));
    assert!(init.replicas.iter().all(|r| r.generation() == init.replicas[0].generation() && r.generation().is_some()));
}

/// The cfg's unknown names are errors, not silently ignored.
#[test]
fn cfg_errors_are_reported() {
    let text = std::fs::read_to_string(models("HandoffImplQuick.cfg")).unwrap();
    let bad = TlcConfig::parse(&text.replace("INVARIANT EpochAgreement", "INVARIANT NoSuchThing")).unwrap();
    assert!(HandoffImpl::from_cfg(&bad, None).is_err());
    let missing = TlcConfig::parse(&text.replace("MaxZombies", "MaxGhosts")).unwrap();
    assert!(HandoffImpl::from_cfg(&missing, None).is_err());
}

/// The reduction's old rule (the mutation `PruneAnsweredRequests`: a
/// collect or reseed request dropped as soon as its sender is gone or
/// answered) is unsound, and the unreduced run says so: r2 evicted twice,
/// its dead instance's reseed request still makes r0 register it, which
/// the rule claimed could change nothing (`ReductionSound`). Reduced, the
/// same model hides that step.
#[test]
fn the_old_pruning_rule_fails_unreduced() {
    let path = models("large/HandoffImpl.cfg");
    let mut cfg = TlcConfig::load(&path).unwrap();
    cfg.reduction = checker::cfg::Reduction::Off;
    let model = HandoffImpl::from_cfg(&cfg, Some("PruneAnsweredRequests")).unwrap();
    let opts = RunOptions { threads: 1, search: Search::Dfs, ..Default::default() };
    let report = run::check(model, "HandoffImpl", "large/HandoffImpl.cfg", Some("PruneAnsweredRequests"), &opts);
    let trace = run::format_trace(&report);
    assert_eq!(report.violated.as_deref(), Some("ReductionSound"), "{trace}");
    assert!(trace.contains("Deliver(reseed r2 -> r0"), "the dead instance's request was delivered:\n{trace}");
}

/// The rule as it stood until the unreduced run of `large/HandoffImpl.cfg`
/// (the mutation `PruneDeclinedReseeds`: a late reseed request to a
/// coordinator that has heard from its sender counts as inert even while
/// the coordinator collects) is unsound: r2 and then r0 evicted, r2's
/// reseed request delivered again to the collecting r0, whose decline then
/// fences the still recovering r2 (`ReductionSound`; here, breadth-first,
/// r1 is the peer). That run took 37
/// minutes to find it depth-first; without writes breadth-first finds it
/// in a fraction of a second.
#[test]
fn a_declined_reseed_is_not_inert() {
    let text = std::fs::read_to_string(models("large/HandoffImpl.cfg")).unwrap();
    let mut cfg = TlcConfig::parse(&text.replace("MaxWrites = 2", "MaxWrites = 0")).unwrap();
    cfg.reduction = checker::cfg::Reduction::Off;
    let model = HandoffImpl::from_cfg(&cfg, Some("PruneDeclinedReseeds")).unwrap();
    let opts = RunOptions { threads: 1, search: Search::Bfs, ..Default::default() };
    let report = run::check(model, "HandoffImpl", "large/HandoffImpl.cfg", Some("PruneDeclinedReseeds"), &opts);
    let trace = run::format_trace(&report);
    assert_eq!(report.violated.as_deref(), Some("ReductionSound"), "{trace}");
    let last = trace.lines().rev().find(|l| l.starts_with("State ")).unwrap_or_default();
    assert!(
        last.contains("Deliver(reseed r") && last.contains(" -> r0:"),
        "a late reseed request reached r0 last:\n{trace}"
    );
}

/// The same rule on the whole cfg (two writes), unreduced and
/// breadth-first but bounded in depth (`--depth-bound`, the way the deep
/// tier's graph, too large to exhaust unreduced, is checked completely to
/// a depth): caught within 12 steps, while the code's rule passes the same
/// bounded run.
#[test]
fn a_bounded_unreduced_run_of_the_whole_cfg_catches_it() {
    let mut cfg = TlcConfig::load(&models("large/HandoffImpl.cfg")).unwrap();
    cfg.reduction = checker::cfg::Reduction::Off;
    let opts = RunOptions { threads: 2, search: Search::Bfs, depth_bound: Some(12), ..Default::default() };
    for mutation in [None, Some("PruneDeclinedReseeds")] {
        let model = HandoffImpl::from_cfg(&cfg, mutation).unwrap();
        let report = run::check(model, "HandoffImpl", "large/HandoffImpl.cfg", mutation, &opts);
        assert_eq!(report.depth_bound, Some(12));
        let expected = mutation.map(|_| "ReductionSound");
        assert_eq!(report.violated.as_deref(), expected, "{mutation:?}:\n{}", run::format_trace(&report));
        if mutation.is_none() {
            assert_eq!(report.max_depth, 12, "every level to the bound was explored");
        }
    }
}

/// Both old rules, with one step's drops kept (`--keep-one`, the run that
/// covers the whole unreduced graph where it is out of reach): each is
/// caught, breadth-first, in a few steps, as the unreduced run catches it.
#[test]
fn keeping_one_step_s_drops_catches_both_old_rules() {
    let text = std::fs::read_to_string(models("large/HandoffImpl.cfg")).unwrap();
    let mut cfg = TlcConfig::parse(&text.replace("MaxWrites = 2", "MaxWrites = 0")).unwrap();
    cfg.reduction = checker::cfg::Reduction::KeepOne;
    let opts = RunOptions { threads: 1, search: Search::Bfs, ..Default::default() };
    for (mutation, depth) in [("PruneAnsweredRequests", 4), ("PruneDeclinedReseeds", 9)] {
        let model = HandoffImpl::from_cfg(&cfg, Some(mutation)).unwrap();
        let report = run::check(model, "HandoffImpl", "large/HandoffImpl.cfg", Some(mutation), &opts);
        let trace = run::format_trace(&report);
        assert_eq!(report.violated.as_deref(), Some("ReductionSound"), "{mutation}:\n{trace}");
        assert_eq!(report.max_depth, depth, "{mutation}:\n{trace}");
        assert!(trace.contains("keeping what it drops"), "{mutation}: a step kept its drops:\n{trace}");
    }
}

/// A liveness cfg unreduced and bounded in depth (its `\* UNREDUCED depth`
/// line's kind of run) checks its invariants and steps, and names the
/// liveness properties it left to the reduced run.
#[test]
fn a_bounded_run_of_a_liveness_cfg_names_what_it_did_not_check() {
    let mut cfg = TlcConfig::load(&models("HandoffImplLiveness.cfg")).unwrap();
    cfg.reduction = checker::cfg::Reduction::Off;
    let model = HandoffImpl::from_cfg(&cfg, None).unwrap();
    let opts = RunOptions { threads: 2, search: Search::Bfs, depth_bound: Some(10), ..Default::default() };
    let report = run::check(model, "HandoffImpl", "HandoffImplLiveness.cfg", None, &opts);
    assert_eq!(report.verdict, "pass", "{:?}", report.violated);
    for name in ["AckedWritesReachEveryReplica", "PeersRecover", "CoordinatorServesAgain", "FencesLift"] {
        assert!(report.liveness_unchecked.contains(&name), "{name}: {:?}", report.liveness_unchecked);
    }
    assert!(report.summary().contains("liveness not checked: "), "{}", report.summary());
}

/// Slow (3 to 50 s each on 2 cores): `cargo xtask check --slow` and
/// `cargo xtask test` run them; the default check skips `::slow::`.
mod slow {
    use super::*;

    /// The scale cfg (a write then a delete, digests, the floor raised and the
    /// tombstone collected) and the chunks cfg (two keys, one record a chunk,
    /// one eviction): each refines HandoffScale.
    #[test]
    fn the_floor_and_chunked_recovery_refine_handoff_scale() {
        for (name, states) in [("HandoffImplScale.cfg", 36_546), ("HandoffImplChunks.cfg", 17_317)] {
            let cfg = TlcConfig::load(&models(name)).unwrap();
            let model = HandoffImpl::from_cfg(&cfg, None).unwrap();
            let report = run::check(model, "HandoffImpl", name, None, &RunOptions { threads: 2, ..Default::default() });
            assert_eq!(report.verdict, "pass", "{name}: {:?}\n{}", report.violated, run::format_trace(&report));
            assert_eq!(report.unique_states, states, "{name}");
        }
    }

    /// The quick cfg: every step of the real code maps to a HandoffScale step
    /// or a stutter, and every invariant holds on the mapped states.
    #[test]
    fn the_implementation_refines_handoff_scale() {
        let cfg = TlcConfig::load(&models("HandoffImplQuick.cfg")).unwrap();
        let model = HandoffImpl::from_cfg(&cfg, None).unwrap();
        let report = run::check(
            model,
            "HandoffImpl",
            "HandoffImplQuick.cfg",
            None,
            &RunOptions { threads: 2, ..Default::default() },
        );
        assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
        assert_eq!(report.unique_states, QUICK_STATES);
    }

    /// Client reads with a zombie coordinator: every answer the real code gives
    /// satisfies HandoffReads' `ReadsLinearizable`, and the steps still refine
    /// HandoffScale (reads, confirm rounds and the collect fence are stutters
    /// there).
    #[test]
    fn reads_answered_by_the_code_are_linearizable_with_zombies() {
        let cfg = TlcConfig::load(&models("HandoffImplReads.cfg")).unwrap();
        let model = HandoffImpl::from_cfg(&cfg, None).unwrap();
        let options = RunOptions { threads: 2, ..Default::default() };
        let report = run::check(model, "HandoffImpl", "HandoffImplReads.cfg", None, &options);
        assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
        assert_eq!(report.unique_states, 15_550);
    }

    /// The rule before the unreduced run of
    /// `large/HandoffImplLivenessEvicts2.cfg` (the mutation
    /// `PruneRepliesByCurrent`: a collect or reseed reply judged by its
    /// receiver's current instance only) is unsound: r0 recovers and is
    /// ready with a late collect reply in flight, which the rule drops, and
    /// is then superseded; judged by the new collecting instance, the reply
    /// counts no longer as droppable (`ReductionSound`). Without the write,
    /// breadth-first and unreduced, it is caught at depth 18 (223,651
    /// states; 7 s by the release checker, about 30 s here). Keeping one
    /// step's drops (`--keep-one`) catches it at the same depth.
    #[test]
    fn a_zombie_s_replies_are_judged_by_the_zombie() {
        let text = std::fs::read_to_string(models("large/HandoffImplLivenessEvicts2.cfg")).unwrap();
        let no_write = text.replace("MaxWrites = 1", "MaxWrites = 0");
        assert_ne!(no_write, text, "the cfg's write was taken out");
        let mut cfg = TlcConfig::parse(&no_write).unwrap();
        cfg.reduction = checker::cfg::Reduction::Off;
        let mutation = Some("PruneRepliesByCurrent");
        let model = HandoffImpl::from_cfg(&cfg, mutation).unwrap();
        let opts = RunOptions { threads: 2, search: Search::Bfs, ..Default::default() };
        let report = run::check(model, "HandoffImpl", "large/HandoffImplLivenessEvicts2.cfg", mutation, &opts);
        let trace = run::format_trace(&report);
        assert_eq!(report.violated.as_deref(), Some("ReductionSound"), "{trace}");
        assert_eq!(report.max_depth, 18, "{trace}");
        let last = trace.lines().rev().find(|l| l.starts_with("State ")).unwrap_or_default();
        assert!(last.contains("<Supersede>"), "the ready r0 was superseded last:\n{trace}");
    }

    /// Random walks at the simulation bounds, for a few seconds.
    #[test]
    fn a_short_simulation_at_larger_bounds_passes() {
        let cfg = TlcConfig::load(&models("simulation/HandoffImplLarge.cfg")).unwrap();
        let model = HandoffImpl::from_cfg(&cfg, None).unwrap();
        assert_eq!(cfg.search, Search::Simulation);
        let walks = Walks { seed: 7, max_depth: 80, budget: Duration::from_secs(5) };
        let report = run::check(
            model,
            "HandoffImpl",
            "HandoffImplLarge.cfg",
            None,
            &RunOptions { threads: 2, search: cfg.search, walks, ..Default::default() },
        );
        assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
        assert!(report.states > 100, "{report:?}");
    }
}
