//! The invariants and action properties the module and RemoraClaimHeartbeat
//! define, named as in the specs (the base module's are the base mirror's).

use super::RemoraClaimLeaseLoss as M;
use super::state::LossState;
use crate::mirror::remora::DurableState::{Authorized, Executing};

/// A state predicate (`INVARIANT`).
pub type Invariant = fn(&M, &LossState) -> bool;
/// The action `A` of a `PROPERTY [][A]_v`, on a step from the first state to
/// the second.
pub type StepPredicate = fn(&M, &LossState, &LossState) -> bool;

pub const INVARIANTS: &[(&str, Invariant)] =
    &[("TypeOKLoss", type_ok_loss), ("LostLeaseIsAbsent", lost_lease_is_absent)];

pub const ACTION_PROPERTIES: &[(&str, StepPredicate)] = &[
    // RemoraClaimHeartbeat's
    ("LeaseIsNeverRevived", lease_is_never_revived),
    ("LeaseHolderIsStable", lease_holder_is_stable),
    ("RejectionIsFinal", rejection_is_final),
    // this module's
    ("ExpiredLeaseIsNeverRevived", expired_lease_is_never_revived),
    ("LeaseIsLostOnlyInForce", lease_is_lost_only_in_force),
];

fn implies(a: bool, b: bool) -> bool {
    !a || b
}

/// `leaseLost \in [Claims -> BOOLEAN]`: the domain (the values are `bool`).
fn type_ok_loss(m: &M, s: &LossState) -> bool {
    s.lease_lost.is_in(&m.claims, |_| true)
}

fn lost_lease_is_absent(m: &M, s: &LossState) -> bool {
    m.claims
        .iter()
        .all(|c| implies(s.lease_lost[c], s.base.durable_state[c] == Executing && s.base.lease[c] == m.no_worker))
}

fn lease_is_never_revived(m: &M, s: &LossState, t: &LossState) -> bool {
    m.claims.iter().all(|c| {
        implies(s.base.durable_state[c] != Authorized && s.base.lease[c] == m.no_worker, t.base.lease[c] == m.no_worker)
    })
}

fn lease_holder_is_stable(m: &M, s: &LossState, t: &LossState) -> bool {
    m.claims.iter().all(|c| {
        implies(s.base.lease[c] != m.no_worker, t.base.lease[c] == s.base.lease[c] || t.base.lease[c] == m.no_worker)
    })
}

fn rejection_is_final(m: &M, s: &LossState, t: &LossState) -> bool {
    m.operations
        .iter()
        .all(|op| implies(s.base.operation_response[op] == m.rejected, t.base.operation_response[op] == m.rejected))
}

fn expired_lease_is_never_revived(m: &M, s: &LossState, t: &LossState) -> bool {
    m.claims.iter().all(|c| {
        implies(
            s.base.durable_state[c] != Authorized && s.base.lease[c] == m.no_worker,
            t.base.lease[c] == m.no_worker || (s.lease_lost[c] && t.base.lease[c] == s.base.attempt_worker[c]),
        )
    })
}

fn lease_is_lost_only_in_force(m: &M, s: &LossState, t: &LossState) -> bool {
    m.claims.iter().all(|c| implies(!s.lease_lost[c] && t.lease_lost[c], s.base.lease[c] != m.no_worker))
}
