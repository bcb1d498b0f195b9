//! The liveness properties of tla/HandoffReadsLiveness.tla on the
//! implementation model (`eventually` properties: checked on every path,
//! which ends in a quiescent state; `model/handoff/liveness.rs` says what
//! that covers). They hold on `models/HandoffImplLiveness.cfg`, where
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
    let model = HandoffImpl::from_cfg(cfg, None).unwrap();
    run::check(model, "HandoffImpl", "HandoffImplLiveness.cfg", None, &RunOptions::default())
}

#[test]
fn every_quiescent_end_is_converged() {
    let report = check(&liveness_cfg());
    assert_eq!(report.verdict, "pass", "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 86_054);
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
