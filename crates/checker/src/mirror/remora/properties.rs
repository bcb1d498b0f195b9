//! The spec's invariants and action properties, named as in the spec.

use super::RemoraClaimActivation as M;
use super::state::State;
use super::values::ActivationStage::*;
use super::values::DurableState::*;
use super::values::{LockOwner, ModelValue, Request};

/// A state predicate (`INVARIANT`).
pub type Invariant = fn(&M, &State) -> bool;

/// The action `A` of a `PROPERTY [][A]_vars`, on a step from the first
/// state to the second.
pub type StepPredicate = fn(&M, &State, &State) -> bool;

pub const INVARIANTS: &[(&str, Invariant)] = &[
    ("TypeOK", type_ok),
    ("LiveLeaseMatchesAuthority", live_lease_matches_authority),
    ("ExecutingIsCommitted", executing_is_committed),
    ("AcceptedResponseIsExactReplay", accepted_response_is_exact_replay),
    ("ConflictIsChangedRequest", conflict_is_changed_request),
    ("ReapedClaimHasNoActivationEffect", reaped_claim_has_no_activation_effect),
    ("ReapedCoordinationIsClean", reaped_coordination_is_clean),
    ("RecoveryOwnsInactiveClaim", recovery_owns_inactive_claim),
];

/// Each `P == [][A]_vars` with `A`, and the `always` predicate that reads
/// the marker `next_state` leaves on a state reached by a step violating `A`.
pub const ACTION_PROPERTIES: &[(&str, StepPredicate, Invariant)] = &[
    ("ActivationAppliesAtMostOnce", activation_applies_at_most_once_action, |_, s| {
        !s.step_violations.contains(&"ActivationAppliesAtMostOnce")
    }),
    ("OperationRequestIsImmutable", operation_request_is_immutable_action, |_, s| {
        !s.step_violations.contains(&"OperationRequestIsImmutable")
    }),
];

/// TLC's deadlock check (`CHECK_DEADLOCK TRUE`): some step of `Next` is
/// enabled; `Done`'s stuttering step counts, as it does for TLC.
pub fn deadlock_free(m: &M, s: &State) -> bool {
    let mut actions = Vec::new();
    m.instances(&mut actions);
    actions.into_iter().any(|a| m.next(s, a).is_some())
}

fn implies(a: bool, b: bool) -> bool {
    !a || b
}

/// The string-valued ranges (`DurableStates`, `ActivationStages`, the two
/// strings of `LockOwners`) are Rust enums, so only the domains, the model
/// values and the counter's bound can fail here.
fn type_ok(m: &M, s: &State) -> bool {
    let worker_or_none = |w: &ModelValue| m.workers.contains(w) || *w == m.no_worker;
    let request_or_none = |r: &Request| match r {
        Request::Key(c, f, w) => m.claims.contains(c) && m.fences.contains(f) && m.workers.contains(w),
        Request::NoRequest(_) => *r == m.no_request,
    };
    s.durable_state.is_in(&m.claims, |_| true)
        && s.attempt_fence.is_in(&m.claims, |f| m.fences.contains(f))
        && s.attempt_worker.is_in(&m.claims, |w| m.workers.contains(w))
        && s.reservation.is_in(&m.claims, worker_or_none)
        && s.lease.is_in(&m.claims, worker_or_none)
        && s.activation_stage.is_in(&m.claims, |_| true)
        && s.durable_lock.is_in(&m.claims, |o| match o {
            LockOwner::NoOwner(_) => *o == m.no_owner,
            LockOwner::Activator | LockOwner::Recovery => true,
        })
        && s.operation_request.is_in(&m.operations, request_or_none)
        && s.operation_response.is_in(&m.operations, |r| [m.no_response, m.accepted, m.rejected].contains(r))
        && s.conflict_request.is_in(&m.operations, request_or_none)
        && s.activation_effect_count.is_in(&m.claims, |n| *n <= 1)
}

fn live_lease_matches_authority(m: &M, s: &State) -> bool {
    m.claims.iter().all(|c| implies(s.lease[c] != m.no_worker, s.lease[c] == s.attempt_worker[c]))
}

fn executing_is_committed(m: &M, s: &State) -> bool {
    m.claims.iter().all(|c| {
        implies(
            s.durable_state[c] == Executing,
            s.reservation[c] == m.no_worker
                && matches!(s.activation_stage[c], Committed | Finished)
                && s.activation_effect_count[c] == 1,
        )
    })
}

fn accepted_response_is_exact_replay(m: &M, s: &State) -> bool {
    m.operations.iter().all(|op| {
        implies(
            s.operation_response[op] == m.accepted,
            m.claims.iter().any(|&c| {
                s.operation_request[op] == s.exact_request(c)
                    && s.durable_state[&c] == Executing
                    && s.lease[&c] == s.attempt_worker[&c]
                    && s.activation_effect_count[&c] == 1
            }),
        )
    })
}

fn conflict_is_changed_request(m: &M, s: &State) -> bool {
    m.operations.iter().all(|op| {
        implies(
            s.conflict_request[op] != m.no_request,
            s.operation_request[op] != m.no_request && s.conflict_request[op] != s.operation_request[op],
        )
    })
}

fn reaped_claim_has_no_activation_effect(m: &M, s: &State) -> bool {
    m.claims.iter().all(|c| implies(s.durable_state[c] == Reaped, s.activation_effect_count[c] == 0))
}

fn reaped_coordination_is_clean(m: &M, s: &State) -> bool {
    m.claims
        .iter()
        .all(|c| implies(s.durable_state[c] == Reaped, s.reservation[c] == m.no_worker && s.lease[c] == m.no_worker))
}

fn recovery_owns_inactive_claim(m: &M, s: &State) -> bool {
    m.claims.iter().all(|c| implies(s.durable_lock[c] == LockOwner::Recovery, s.reservation[c] == m.no_worker))
}

fn activation_applies_at_most_once_action(m: &M, s: &State, n: &State) -> bool {
    m.claims.iter().all(|c| implies(s.activation_effect_count[c] == 1, n.activation_effect_count[c] == 1))
}

fn operation_request_is_immutable_action(m: &M, s: &State, n: &State) -> bool {
    m.operations
        .iter()
        .all(|op| implies(s.operation_request[op] != m.no_request, n.operation_request[op] == s.operation_request[op]))
}
