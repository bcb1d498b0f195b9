//! The spec's invariants and its action property `NoServedRegression`,
//! named as in the spec.

use std::collections::BTreeMap;

use super::model::{HandoffModel, Mutation, Version};
use super::state::{State, wins};
use super::values::{Status, Val, WriteRec};

/// A state predicate, as stateright's `Property` takes it.
use super::model::Check;

/// Every invariant the spec defines, by its name in the spec.
pub(super) fn invariants<V: Version>() -> [(&'static str, Check<V>); 5] {
    [
        ("TypeOK", type_ok),
        ("EpochVerUnique", epoch_ver_unique),
        ("AckedImpliesHeldUnlessDoomed", acked_implies_held_unless_doomed),
        ("CoordinatorHoldsOwnCommits", coordinator_holds_own_commits),
        ("EpochAgreement", epoch_agreement),
    ]
}

/// The spec's one temporal property, `[][NoServedRegressionStep]_vars`.
pub(super) const NO_SERVED_REGRESSION: &str = "NoServedRegression";

/// Reads the marker `next_state` sets on a step that violates
/// `NoServedRegressionStep` (see `State::served_regression`).
pub(super) fn no_served_regression<V: Version>(_: &HandoffModel<V>, s: &State) -> bool {
    !s.served_regression
}

/// TLC's deadlock check (`CHECK_DEADLOCK TRUE`): some step of `Next` is
/// enabled -- a stuttering step counts, as it does for TLC.
pub(super) const DEADLOCK: &str = "Deadlock";

pub(super) fn deadlock_free<V: Version>(m: &HandoffModel<V>, s: &State) -> bool {
    let mut actions = Vec::new();
    m.next(s, &mut actions);
    actions.iter().any(|a| m.step(s, a).is_some())
}

fn type_ok<V: Version>(m: &HandoffModel<V>, s: &State) -> bool {
    let max_epoch = m.max_evicts + 1;
    let in_rec = |ep: u8, ver: u8, wid: u8| {
        (1..=max_epoch).contains(&ep) && (1..=m.max_writes).contains(&ver) && (1..=m.max_writes).contains(&wid)
    };
    let mem_ok = s.mem.values().flat_map(|row| row.values()).all(|v| match *v {
        Val::NoVal(_) => true,
        Val::Rec(r) => in_rec(r.ep, r.ver, r.wid),
    });
    let status_ok = m.peers.iter().all(|&p| matches!(s.status[p], Status::Ready | Status::Recovering));
    mem_ok
        && status_ok
        && s.known.values().all(|&e| e <= max_epoch)
        && s.epoch <= max_epoch
        && s.collect_max <= max_epoch
        && s.ver_ctr <= m.max_writes
        && (1..=m.max_writes + 1).contains(&s.wid_ctr)
        && s.pending.iter().all(|w| in_rec(w.ep, w.ver, w.wid))
        && s.net.iter().all(|w| m.peers.contains(&w.dst) && in_rec(w.ep, w.ver, w.wid))
        && s.acked.iter().all(|w| in_rec(w.ep, w.ver, w.wid))
        && s.evict_count <= m.max_evicts
}

/// `Universe`: every place a write's identity can exist -- memories,
/// in-flight pushes, the pending buffer, the history of client acks.
fn universe(s: &State) -> impl Iterator<Item = WriteRec> + '_ {
    let mem_recs = s.mem.values().flat_map(|row| {
        row.iter().filter_map(|(key, v)| match *v {
            Val::Rec(rec) => Some(WriteRec { key, rec }),
            Val::NoVal(_) => None,
        })
    });
    mem_recs
        .chain(s.net.iter().map(|m| m.write()))
        .chain(s.pending.iter().map(|pw| pw.write()))
        .chain(s.acked.iter().map(|w| w.write()))
}

/// (1) A (key, epoch, ver) identity never refers to two different writes.
fn epoch_ver_unique<V: Version>(_: &HandoffModel<V>, s: &State) -> bool {
    let mut wid_of = BTreeMap::new();
    universe(s).all(|w| *wid_of.entry((w.key, w.rec.ep, w.rec.ver)).or_insert(w.rec.wid) == w.rec.wid)
}

/// (2) An acked write is held somewhere unless an eviction destroyed its
/// last copy.
fn acked_implies_held_unless_doomed<V: Version>(m: &HandoffModel<V>, s: &State) -> bool {
    s.acked.iter().all(|w| w.doomed || m.replicas.iter().any(|&r| s.holds(r, w.write())))
}

/// (3) A ready coordinator holds every non-doomed acked write of its own
/// incarnation. The `strong-coordinator-completeness` mutation drops the
/// `w.ep = epoch =>` guard: the claim the spec's comment says is false.
fn coordinator_holds_own_commits<V: Version>(m: &HandoffModel<V>, s: &State) -> bool {
    let strong = m.mutation == Some(Mutation::StrongCoordinatorCompleteness);
    !s.is_ready(m.coordinator)
        || s.acked.iter().all(|w| !(strong || w.ep == s.epoch) || w.doomed || s.holds(m.coordinator, w.write()))
}

/// (4) With the coordinator ready, every ready peer knows its epoch.
fn epoch_agreement<V: Version>(m: &HandoffModel<V>, s: &State) -> bool {
    !s.is_ready(m.coordinator) || m.peers.iter().all(|&p| s.status[p] != Status::Ready || s.known[p] == s.epoch)
}

/// `NoServedRegressionStep`: a replica ready before and after the step
/// neither drops a served record nor replaces it by an (ep, ver) loser.
pub(super) fn no_served_regression_step<V: Version>(m: &HandoffModel<V>, s: &State, t: &State) -> bool {
    m.replicas.iter().all(|&r| {
        !(s.is_ready(r) && t.is_ready(r))
            || m.keys.iter().all(|&k| match (s.mem[r][k], t.mem[r][k]) {
                (Val::NoVal(_), _) => true,
                (Val::Rec(_), Val::NoVal(_)) => false,
                (Val::Rec(before), Val::Rec(after)) => !wins(before, after),
            })
    })
}
