//! The implementation model catches deliberately broken protocol code: each
//! mutation (`protocol::handoff::Mutation`, compiled only with the
//! `mutations` feature) runs the real replicas with one handler broken, and
//! the model must report a violation on the cfg whose bounds reach it (the
//! quick cfg; the scale and chunks cfgs for the floor and chunking), with the
//! shortest counterexample pinned as an insta snapshot.

use std::path::PathBuf;

use checker::cfg::TlcConfig;
use checker::model::handoff::HandoffImpl;
use checker::run::{self, RunOptions};
use checker::spec::Mirror;

fn caught(mutation: &str) -> run::Report {
    caught_on("HandoffImplQuick.cfg", mutation)
}

fn caught_on(cfg_name: &str, mutation: &str) -> run::Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models").join(cfg_name);
    let cfg = TlcConfig::load(&path).unwrap();
    let model = HandoffImpl::from_cfg(&cfg, Some(mutation)).unwrap();
    let report =
        run::check(model, "HandoffImpl", cfg_name, Some(mutation), &RunOptions { threads: 2, ..Default::default() });
    assert_eq!(report.verdict, "violation", "{mutation} was not caught");
    // The shortest counterexample, reviewed like the mirrors' ones.
    insta::assert_snapshot!(mutation, run::format_trace(&report));
    report
}

/// Committing before any peer acked: the write is acked while only the
/// coordinator holds it, which no spec step allows.
#[test]
fn commit_before_ack_is_caught() {
    let report = caught("CommitBeforeAck");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

/// A peer accepting a push from an epoch older than it knows: the zombie's
/// stale write lands, which `DeliverPushZ` (HandoffZombie, kept by HandoffScale) refuses.
#[test]
fn a_peer_accepting_a_stale_epoch_push_is_caught() {
    let report = caught("AcceptStalePush");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

/// A coordinator serving before its announce completed: `FinishRecoveryC`
/// needs every peer to know the new epoch.
#[test]
fn a_coordinator_serving_before_announce_completes_is_caught() {
    let report = caught("ServeBeforeAnnounce");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

/// A replica collecting a tombstone above its floor: what it stores is no
/// longer the spec's `Concrete`, and a ghost push could resurrect the key.
#[test]
fn collecting_a_tombstone_above_the_floor_is_caught() {
    let report = caught_on("HandoffImplScale.cfg", "CollectAboveFloor");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

/// A recovering replica counting a source done after its first chunk: the
/// coordinator finishes collect missing a committed key (the spec's `Advance`
/// seeds a source only when its chunks covered every key).
#[test]
fn finishing_recovery_on_a_partial_snapshot_is_caught() {
    let report = caught_on("HandoffImplChunks.cfg", "FinishOnPartialSnapshot");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

#[test]
fn unknown_mutations_are_refused() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/HandoffImplQuick.cfg");
    let cfg = TlcConfig::load(&path).unwrap();
    assert!(HandoffImpl::from_cfg(&cfg, Some("NoSuchBug")).is_err());
}

/// A coordinator answering a read at once, unconfirmed: the answer maps to
/// HandoffReads' `ReadFinish` of a read no peer confirmed, which the spec
/// does not allow (its `serve-reads-unconfirmed`). Since the step map
/// covers reads this is caught at the first such answer; what it leads to
/// (a zombie answering without a write its successor completed before the
/// read began) is the mirror's counterexample (`handoff_reads.rs`).
#[test]
fn serving_reads_unconfirmed_is_caught() {
    let report = caught_on("HandoffImplReads.cfg", "ServeReadsUnconfirmed");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

/// A peer that answers a collect without fencing itself: the answer maps
/// to `ChunkCR`, which fences the peer, while the code's peer stays
/// unfenced (`no-collect-fence`). What it leads to (the zombie's push lands
/// after the snapshot left, and the new instance, confirmed, answers a
/// read without it) is the mirror's counterexample.
#[test]
fn answering_a_collect_without_the_fence_is_caught() {
    let report = caught_on("HandoffImplReads.cfg", "NoCollectFence");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

/// A coordinator answering a failed condition at once, unconfirmed
/// (HandoffCond's `cond-unconfirmed`): the 412 maps to no step of
/// HandoffCond, which answers a failure only after a peer confirmed the
/// coordinator's epoch (a recovering or superseded coordinator's memory may
/// be stale).
#[test]
fn answering_a_failed_condition_unconfirmed_is_caught() {
    let report = caught_on("HandoffImplCond.cfg", "CondUnconfirmed");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

/// A coordinator evaluating a condition while a write to its key is pending
/// (HandoffCond's `cond-ignores-pending`): the evaluation maps to no step of
/// HandoffCond, whose conditions wait for the pending write's commit.
#[test]
fn evaluating_a_condition_over_a_pending_write_is_caught() {
    let report = caught_on("HandoffImplCond.cfg", "CondIgnoresPending");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
}

/// A coordinator answering a read from its memory without the expiry filter
/// (HandoffCond's `serve-expired`): the read returns a record whose time to
/// live has passed on the model's clock.
#[test]
fn serving_an_expired_record_is_caught() {
    let report = caught_on("HandoffImplExpiryQuick.cfg", "ServeExpired");
    assert_eq!(report.violated.as_deref(), Some("ExpiredNeverServed"), "{}", run::format_trace(&report));
}

/// A coordinator counting an ack of a peer instance it has seen replaced
/// (HandoffRoll's `AckedByLive`): in the rolling restart, r1 acks, is
/// evicted, its new instance reseeds from r0 before the commit, and the old
/// ack commits a write only r0 holds, which no HandoffRoll step allows (the
/// roll's next eviction, r0's, would lose it).
#[test]
fn counting_a_stale_ack_is_caught() {
    let report = caught_on("HandoffImplRolling.cfg", "CountStaleAck");
    assert_eq!(report.violated.as_deref(), Some("Refinement"), "{}", run::format_trace(&report));
    let trace = run::format_trace(&report);
    assert!(trace.contains("Deliver(reseed r1 -> r0"), "the new instance reseeded first:\n{trace}");
}
