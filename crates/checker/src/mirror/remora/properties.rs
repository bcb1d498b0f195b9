//! The spec's invariants and action properties, named as in the spec.

use super::model::{Invariant, RemoraClaimActivation as M, StepPredicate};
use super::state::{ACTION_PROPERTY_NAMES, State};
use super::values::ActivationStage::*;
use super::values::DurableState::*;
use super::values::{LockOwner, NO_WORKER, Request, Worker};
use crate::compact::{Elem, Func};

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
    (ACTION_PROPERTY_NAMES[0], activation_applies_at_most_once_action, |_, s| {
        !s.step_violations.contains(ACTION_PROPERTY_NAMES[0])
    }),
    (ACTION_PROPERTY_NAMES[1], operation_request_is_immutable_action, |_, s| {
        !s.step_violations.contains(ACTION_PROPERTY_NAMES[1])
    }),
];

/// TLC's deadlock check (`CHECK_DEADLOCK TRUE`): some step of `Next` is
/// enabled; `Done`'s stuttering step counts, as it does for TLC.
pub fn deadlock_free(m: &M, s: &State) -> bool {
    m.instances.iter().any(|&a| m.next(s, a).is_some())
}

fn implies(a: bool, b: bool) -> bool {
    !a || b
}

/// `f \in [domain -> range]`, with `range` as a membership test; the
/// domain is right by construction (a function over the set's positions).
fn maps_into<K: Elem, V: Copy + Default>(f: &Func<K, V>, domain: &[K], range: impl Fn(V) -> bool) -> bool {
    f.on(domain).all(|(_, v)| range(v))
}

/// The string-valued ranges (`DurableStates`, `ActivationStages`,
/// `LockOwners`) are Rust enums and the domains are the sets' positions, so
/// only elements outside their sets (which only a bug of the mirror or of a
/// refinement map could make) and the counter's bound can fail here.
fn type_ok(m: &M, s: &State) -> bool {
    let k = m.k;
    let (claims, ops) = (&k.claims, &k.operations);
    let within = |i: usize, n: usize| i < n;
    let worker = |w: Worker| within(w.index(), k.workers.len());
    let request = |r: Request| match r {
        Request::Key(c, f, w) => within(c.index(), claims.len()) && within(f.index(), k.fences.len()) && worker(w),
        Request::NoRequest => true,
    };
    maps_into(&s.attempt_fence, claims, |f| within(f.index(), k.fences.len()))
        && maps_into(&s.attempt_worker, claims, worker)
        && maps_into(&s.reservation, claims, |w| w.get().is_none_or(worker))
        && maps_into(&s.lease, claims, |w| w.get().is_none_or(worker))
        && maps_into(&s.operation_request, ops, request)
        && maps_into(&s.operation_response, ops, |r| [k.no_response, k.accepted, k.rejected].contains(&r))
        && maps_into(&s.conflict_request, ops, request)
        && maps_into(&s.activation_effect_count, claims, |n| n <= 1)
}

fn live_lease_matches_authority(m: &M, s: &State) -> bool {
    m.k.claims.iter().all(|&c| implies(s.lease[c] != NO_WORKER, s.lease[c] == s.attempt_worker[c]))
}

fn executing_is_committed(m: &M, s: &State) -> bool {
    m.k.claims.iter().all(|&c| {
        implies(
            s.durable_state[c] == Executing,
            s.reservation[c] == NO_WORKER
                && matches!(s.activation_stage[c], Committed | Finished)
                && s.activation_effect_count[c] == 1,
        )
    })
}

fn accepted_response_is_exact_replay(m: &M, s: &State) -> bool {
    m.k.operations.iter().all(|&op| {
        implies(
            s.operation_response[op] == m.k.accepted,
            m.k.claims.iter().any(|&c| {
                s.operation_request[op] == s.exact_request(c)
                    && s.durable_state[c] == Executing
                    && s.lease[c] == s.attempt_worker[c]
                    && s.activation_effect_count[c] == 1
            }),
        )
    })
}

fn conflict_is_changed_request(m: &M, s: &State) -> bool {
    m.k.operations.iter().all(|&op| {
        implies(
            s.conflict_request[op] != Request::NoRequest,
            s.operation_request[op] != Request::NoRequest && s.conflict_request[op] != s.operation_request[op],
        )
    })
}

fn reaped_claim_has_no_activation_effect(m: &M, s: &State) -> bool {
    m.k.claims.iter().all(|&c| implies(s.durable_state[c] == Reaped, s.activation_effect_count[c] == 0))
}

fn reaped_coordination_is_clean(m: &M, s: &State) -> bool {
    m.k.claims
        .iter()
        .all(|&c| implies(s.durable_state[c] == Reaped, s.reservation[c] == NO_WORKER && s.lease[c] == NO_WORKER))
}

fn recovery_owns_inactive_claim(m: &M, s: &State) -> bool {
    m.k.claims.iter().all(|&c| implies(s.durable_lock[c] == LockOwner::Recovery, s.reservation[c] == NO_WORKER))
}

fn activation_applies_at_most_once_action(m: &M, s: &State, n: &State) -> bool {
    m.k.claims.iter().all(|&c| implies(s.activation_effect_count[c] == 1, n.activation_effect_count[c] == 1))
}

fn operation_request_is_immutable_action(m: &M, s: &State, n: &State) -> bool {
    m.k.operations.iter().all(|&op| {
        implies(s.operation_request[op] != Request::NoRequest, n.operation_request[op] == s.operation_request[op])
    })
}
