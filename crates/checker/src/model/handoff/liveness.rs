//! The liveness properties of `tla/HandoffReadsLiveness.tla` on the
//! implementation model, as far as stateright can check them: as
//! `Property::eventually`.
//!
//! The checker's engine checks `eventually(P)` as stateright does, only on
//! paths that end in a state without successors -- here a quiescent state,
//! since a step that changes nothing is no step (`HandoffImpl::step`). A
//! path that closes a cycle is not checked (`engine` says how). So each
//! condition below is
//! "the environment is done, and the replicas have converged": false until
//! the clients and the platform have spent their budget and nothing is
//! pending, and stable from then on (no eviction undoes
//! readiness, memories only grow, nothing new is acknowledged). Then "some
//! state of the path satisfies it" is "the quiescent state the path ends in
//! satisfies it", whichever path reached that state.
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

use stateright::Property;

use super::HandoffImpl;
use super::state::ImplState;

/// A condition on a state of the model.
type Condition = fn(&HandoffImpl, &ImplState) -> bool;

/// The liveness properties a cfg may list, named as in
/// HandoffReadsLiveness.
const PROPERTIES: [(&str, Condition); 4] = [
    ("AckedWritesReachEveryReplica", acked_writes_reach_every_replica),
    ("PeersRecover", peers_recover),
    ("CoordinatorServesAgain", coordinator_serves_again),
    ("FencesLift", fences_lift),
];

/// The `eventually` property named `name`, if it is one of them.
pub(super) fn property(name: &str) -> Option<Property<HandoffImpl>> {
    PROPERTIES.iter().find(|(n, _)| *n == name).map(|&(n, condition)| Property::eventually(n, condition))
}

/// Every write issued, every eviction and supersession spent, nothing
/// pending at the coordinator or at a zombie (a zombie that had nothing
/// pending hears nothing ever again: it may live on, doing nothing): from
/// here on nothing can be acknowledged and no replica can lose its memory.
pub(super) fn environment_done(m: &HandoffImpl, s: &ImplState) -> bool {
    s.wid_ctr > m.max_writes
        && s.evict_count == m.max_evicts
        && s.mapped.reads.scale.ext.base.pending.is_empty()
        && s.mapped.reads.scale.ext.zombies.iter().all(|z| z.pending.is_empty())
}

/// Every replica ready and holding every acknowledged write that was not
/// doomed.
fn acked_writes_reach_every_replica(m: &HandoffImpl, s: &ImplState) -> bool {
    let spec = &s.mapped.reads.scale.ext.base;
    let replicas = m.scale().zombie().replicas();
    environment_done(m, s)
        && replicas.iter().all(|&r| spec.is_ready(r))
        && spec.acked.iter().all(|w| w.doomed || replicas.iter().all(|&r| spec.holds(r, w.write())))
}

fn peers_recover(m: &HandoffImpl, s: &ImplState) -> bool {
    environment_done(m, s) && m.scale().zombie().peers().iter().all(|&p| s.mapped.reads.scale.ext.base.is_ready(p))
}

fn coordinator_serves_again(m: &HandoffImpl, s: &ImplState) -> bool {
    environment_done(m, s) && s.mapped.reads.scale.ext.base.is_ready(m.scale().zombie().coordinator())
}

/// No peer is fenced (HandoffReads' `fenced[p] = 0`).
fn fences_lift(m: &HandoffImpl, s: &ImplState) -> bool {
    environment_done(m, s) && s.mapped.reads.fenced.values().all(|&f| f == 0)
}
