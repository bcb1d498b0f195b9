//! The liveness properties of tla/HandoffReadsLiveness.tla on the
//! implementation model, in their TLA+ form (`P ~> Q`, `<>[]Q`: checked on
//! every behaviour, a path that ends in a quiescent state or one that
//! loops forever; `model/handoff/liveness.rs` says what that covers). They
//! hold on `models/HandoffImplLiveness.cfg`, where
//! the gossip timers fire once the environment is done, and they can
//! fail: without gossip, an acknowledged write that dodged a new
//! coordinator's collect (it was acked by the superseded instance after
//! the collect), or whose push a peer refused (the peer had learned a newer
//! epoch), never reaches every replica.

use std::path::PathBuf;

use checker::cfg::{TlcConfig, Value};
use checker::model::handoff::HandoffImpl;
use checker::run::{self, RunOptions};
use checker::spec::Mirror;

fn liveness_cfg() -> TlcConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/HandoffImplLiveness.cfg");
    TlcConfig::load(&path).unwrap()
}

fn check(cfg: &TlcConfig) -> run::Report {
    check_mutated(cfg, None)
}

fn check_mutated(cfg: &TlcConfig, mutation: Option<&str>) -> run::Report {
    let model = HandoffImpl::from_cfg(cfg, mutation).unwrap();
    run::check(model, "HandoffImpl", "HandoffImplLiveness.cfg", mutation, &RunOptions::default())
}

/// Found at once by the engine's breadth-first search (stateright's own
/// `eventually` search ran out of memory on this cfg).
#[test]
fn without_enough_gossip_an_acknowledged_write_never_reaches_every_replica() {
    let mut cfg = liveness_cfg();
    for (name, value) in &mut cfg.constants {
        if name == "MaxGossip" {
            *value = Value::Int(0);
        }
    }
    let report = check(&cfg);
    assert_eq!(report.violated.as_deref(), Some("AckedWritesReachEveryReplica"), "{}", run::format_trace(&report));
    // The path ends quiescent: every replica ready, the write acknowledged
    // (not doomed), and a replica that does not hold it.
    let last = |var: &str| {
        report.trace.iter().rev().find_map(|s| s.changed.iter().find(|(n, _)| n == var).map(|(_, v)| v.clone()))
    };
    let acked = last("acked").unwrap_or_default();
    assert!(acked.contains("doomed |-> FALSE"), "{acked}");
    let replicas = ["impl_r0", "impl_r1", "impl_r2"].map(|r| last(r).unwrap_or_default());
    assert!(replicas.iter().all(|r| r.contains(" ready ")), "{replicas:?}");
    assert!(replicas.iter().any(|r| r.ends_with("mem []")), "{replicas:?}");
}

/// Slow (3 to 50 s each on 2 cores): `cargo xtask check --slow` and
/// `cargo xtask test` run them; the default check skips `::slow::`.
mod slow {
    use super::*;

    #[test]
    fn every_quiescent_end_is_converged() {
        let report = check(&liveness_cfg());
        assert_eq!(report.verdict, "pass", "{}", run::format_trace(&report));
        // Pairs of a state and the leads-to properties its path owes.
        assert_eq!(report.unique_states, 83_564);
    }

    /// `FencesLift` is `fenced[p] # 0 ~> fenced[p] = 0`: owed again each time
    /// a peer is fenced. The mutation `RefenceOnDigest` fences a ready peer
    /// again when it takes a digest -- after the fence had lifted, once the
    /// environment is done (the gossip timers fire only then here). A check
    /// that clears a property for good at the first state where it holds (the
    /// engine before 2026-12-05, and stateright's `eventually`) passes it.
    /// Refinement is left out: it catches the mutation at its first step
    /// (`fenced` changes in a step that maps to no spec action), which would
    /// hide what the liveness check does.
    #[test]
    fn a_fence_raised_again_after_it_lifted_violates_fences_lift() {
        let mut cfg = liveness_cfg();
        cfg.properties.retain(|p| p != "Refinement");
        let report = check_mutated(&cfg, Some("RefenceOnDigest"));
        assert_eq!(report.violated.as_deref(), Some("FencesLift"), "{}", run::format_trace(&report));
        // The same mutation, with the refinement check: caught there first.
        let report = check_mutated(&liveness_cfg(), Some("RefenceOnDigest"));
        assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
    }
}
