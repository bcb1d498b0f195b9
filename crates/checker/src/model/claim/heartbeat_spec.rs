//! What `tla/RemoraClaimHeartbeat.tla` adds to RemoraClaimActivation: the
//! guard of RenewLease and three action properties, transcribed here (the
//! base spec is not: it comes from the mirror). The names are the module's.

use crate::mirror::remora::{Claim, DurableState, NO_WORKER, State, Worker};

use super::names::Names;

/// `RenewLease(c, w)`'s guard; its effect on the variables is none.
pub fn renew_lease(s: &State, c: Claim, w: Worker) -> bool {
    s.durable_state[c] == DurableState::Executing && w == s.attempt_worker[c] && s.lease[c] == w
}

/// The action `A` of a `[][A]_vars`, on a step from the first state to the second.
pub type StepPredicate = fn(&Names, &State, &State) -> bool;

/// The module's action properties, by name.
pub const ACTION_PROPERTIES: &[(&str, StepPredicate)] = &[
    ("LeaseIsNeverRevived", lease_is_never_revived),
    ("LeaseHolderIsStable", lease_holder_is_stable),
    ("RejectionIsFinal", rejection_is_final),
];

/// The module's refinement property: the behaviour is one of `HeartbeatSpec`.
pub const HEARTBEAT_SPEC: &str = "HeartbeatSpec";

fn implies(a: bool, b: bool) -> bool {
    !a || b
}

fn lease_is_never_revived(n: &Names, s: &State, t: &State) -> bool {
    n.k.claims.iter().all(|&c| {
        implies(s.durable_state[c] != DurableState::Authorized && s.lease[c] == NO_WORKER, t.lease[c] == NO_WORKER)
    })
}

fn lease_holder_is_stable(n: &Names, s: &State, t: &State) -> bool {
    n.k.claims.iter().all(|&c| implies(s.lease[c] != NO_WORKER, t.lease[c] == s.lease[c] || t.lease[c] == NO_WORKER))
}

fn rejection_is_final(n: &Names, s: &State, t: &State) -> bool {
    n.k.operations
        .iter()
        .all(|&op| implies(s.operation_response[op] == n.k.rejected, t.operation_response[op] == n.k.rejected))
}
