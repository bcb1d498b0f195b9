//! The liveness properties of `tla/HandoffReadsLiveness.tla` on the
//! implementation model, in their TLA+ form, on the mapped spec state:
//!
//! - `PeersRecover`: `status[p] = "recovering" ~> status[p] = "ready"`, for
//!   each peer;
//! - `CoordinatorServesAgain`: `status[C] # "ready" ~> status[C] = "ready"`;
//! - `FencesLift`: `fenced[p] # 0 ~> fenced[p] = 0`, for each peer;
//! - `AckedWritesReachEveryReplica`: every write acknowledged and not doomed
//!   is eventually, and from then on, held by every replica, all of them
//!   ready (`<>[]`; the spec quantifies over every write, and since the
//!   model's `acked` only grows and `doomed` is only ever set, that is
//!   `<>[]` of "every acknowledged write is doomed or held everywhere").
//!
//! The engine checks them on every behaviour of the model (`engine`,
//! `liveness.rs`): a path that ends stutters in a quiescent state (a step
//! that changes nothing is no step, `HandoffImpl::step`), and a path that
//! loops forever is a cycle of the state graph. The model has no fairness,
//! so every such path counts.
//!
//! Gossip. A finite model cannot say "every 5 s, forever": whatever bounds
//! the gossip messages (the spec's `MaxGossip`) can be spent before the
//! last eviction, and a path then ends with a replica that missed a write
//! and no message left to repair it. The TLA+ checker checks convergence
//! under fairness (HandoffReadsLiveness' `FairGossip`). Here a cfg that
//! sets `GossipWhenDone` lets the gossip timers fire only once the
//! environment is done ([`environment_done`]): every quiescent end of the
//! protocol without gossip must then be converged by the real gossip code,
//! digests, answers and floors, within `MaxGossip` messages (a bound the cfg
//! shows does not bind). What that does not check -- gossip interleaved
//! with writes and evictions -- is HandoffReadsLiveness' (with its rounds)
//! and, for safety, every other cfg's. What this does and does not check:
//! docs/handoff.md section 5.16.

use crate::engine::Liveness;
use crate::mirror::handoff::{Replica as SpecReplica, Status};

use super::model::HandoffImpl;
use super::state::ImplState;

/// The liveness properties a cfg may list, named as in
/// HandoffReadsLiveness.
pub(super) const NAMES: [&str; 4] =
    ["AckedWritesReachEveryReplica", "PeersRecover", "CoordinatorServesAgain", "FencesLift"];

/// The property `name` as the engine checks it (one per peer where the
/// spec quantifies over the peers); empty for any other name.
pub(super) fn property(m: &HandoffImpl, name: &str) -> Vec<Liveness<HandoffImpl>> {
    let peers: Vec<SpecReplica> = m.scale().zombie().peers().to_vec();
    let c = m.scale().zombie().coordinator();
    let status = |s: &ImplState, r: SpecReplica| s.mapped.cond.reads.scale.ext.base.status[r];
    match name {
        "AckedWritesReachEveryReplica" => {
            vec![Liveness::eventually_always("AckedWritesReachEveryReplica", acked_writes_held_everywhere)]
        }
        "PeersRecover" => peers
            .into_iter()
            .map(|p| {
                Liveness::leads_to(
                    "PeersRecover",
                    move |_: &HandoffImpl, s: &ImplState| status(s, p) == Status::Recovering,
                    move |_: &HandoffImpl, s: &ImplState| status(s, p) == Status::Ready,
                )
            })
            .collect(),
        "CoordinatorServesAgain" => vec![Liveness::leads_to(
            "CoordinatorServesAgain",
            move |_: &HandoffImpl, s: &ImplState| status(s, c) != Status::Ready,
            move |_: &HandoffImpl, s: &ImplState| status(s, c) == Status::Ready,
        )],
        "FencesLift" => peers
            .into_iter()
            .map(|p| {
                Liveness::leads_to(
                    "FencesLift",
                    move |_: &HandoffImpl, s: &ImplState| s.mapped.cond.reads.fenced[p] != 0,
                    move |_: &HandoffImpl, s: &ImplState| s.mapped.cond.reads.fenced[p] == 0,
                )
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Every write issued, every eviction and supersession spent, nothing
/// pending at the coordinator or at a zombie (a zombie that had nothing
/// pending hears nothing ever again: it may live on, doing nothing): from
/// here on nothing can be acknowledged and no replica can lose its memory.
pub(super) fn environment_done(m: &HandoffImpl, s: &ImplState) -> bool {
    s.wid_ctr > m.max_writes
        && s.evict_count == m.max_evicts
        && s.mapped.cond.reads.scale.ext.base.pending.is_empty()
        && s.mapped.cond.reads.scale.ext.zombies.iter().all(|z| z.pending.is_empty())
}

/// Every acknowledged write is doomed, or held by every replica, all of
/// them ready (HandoffLivenessProps' `HeldEverywhere`).
fn acked_writes_held_everywhere(m: &HandoffImpl, s: &ImplState) -> bool {
    let spec = &s.mapped.cond.reads.scale.ext.base;
    let replicas = m.scale().zombie().replicas();
    spec.acked.iter().all(|w| w.doomed || replicas.iter().all(|&r| spec.is_ready(r) && spec.holds(r, w.write())))
}
