//! The invariants and action properties the module and RemoraClaimHeartbeat
//! define, named as in the specs (the base module's are the base mirror's).

use super::model::{Invariant, RemoraClaimLeaseLoss as M, StepPredicate};
use super::state::{LOSS_ACTION_PROPERTY_NAMES as NAMES, LossState};
use crate::mirror::remora::DurableState::{Authorized, Executing};
use crate::mirror::remora::NO_WORKER;

pub const INVARIANTS: &[(&str, Invariant)] =
    &[("TypeOKLoss", type_ok_loss), ("LostLeaseIsAbsent", lost_lease_is_absent)];

pub const ACTION_PROPERTIES: &[(&str, StepPredicate)] = &[
    // RemoraClaimHeartbeat's
    (NAMES[0], lease_is_never_revived),
    (NAMES[1], lease_holder_is_stable),
    (NAMES[2], rejection_is_final),
    // this module's
    (NAMES[3], expired_lease_is_never_revived),
    (NAMES[4], lease_is_lost_only_in_force),
];

fn implies(a: bool, b: bool) -> bool {
    !a || b
}

/// `leaseLost \in [Claims -> BOOLEAN]`: the domain is the claims' positions
/// by construction and the values are `bool`, so only a slot past the
/// domain set (which only a bug of a refinement map could make) fails.
fn type_ok_loss(m: &M, s: &LossState) -> bool {
    s.lease_lost == crate::mirror::remora::ClaimFunc::new(&m.k.claims, |c| s.lease_lost[c])
}

fn lost_lease_is_absent(m: &M, s: &LossState) -> bool {
    m.k.claims
        .iter()
        .all(|&c| implies(s.lease_lost[c], s.base.durable_state[c] == Executing && s.base.lease[c] == NO_WORKER))
}

fn lease_is_never_revived(m: &M, s: &LossState, t: &LossState) -> bool {
    m.k.claims.iter().all(|&c| {
        implies(s.base.durable_state[c] != Authorized && s.base.lease[c] == NO_WORKER, t.base.lease[c] == NO_WORKER)
    })
}

fn lease_holder_is_stable(m: &M, s: &LossState, t: &LossState) -> bool {
    m.k.claims.iter().all(|&c| {
        implies(s.base.lease[c] != NO_WORKER, t.base.lease[c] == s.base.lease[c] || t.base.lease[c] == NO_WORKER)
    })
}

fn rejection_is_final(m: &M, s: &LossState, t: &LossState) -> bool {
    m.k.operations.iter().all(|&op| {
        implies(s.base.operation_response[op] == m.k.rejected, t.base.operation_response[op] == m.k.rejected)
    })
}

fn expired_lease_is_never_revived(m: &M, s: &LossState, t: &LossState) -> bool {
    m.k.claims.iter().all(|&c| {
        implies(
            s.base.durable_state[c] != Authorized && s.base.lease[c] == NO_WORKER,
            t.base.lease[c] == NO_WORKER || (s.lease_lost[c] && t.base.lease[c] == s.base.attempt_worker[c]),
        )
    })
}

fn lease_is_lost_only_in_force(m: &M, s: &LossState, t: &LossState) -> bool {
    m.k.claims.iter().all(|&c| implies(!s.lease_lost[c] && t.lease_lost[c], s.base.lease[c] != NO_WORKER))
}
