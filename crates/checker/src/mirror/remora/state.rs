//! A state of RemoraClaimActivation: exactly the module's `VARIABLES`.

use std::fmt;

use super::values::{
    ActivationStage, Claim, ClaimFunc, Constants, DurableState, Fence, LockOwner, OpFunc, Request, Worker,
    WorkerOrNone, string_of,
};
use crate::compact::{Ctx, Mv};
use crate::spec::{TlaState, fmt_variables};

/// The eleven variables of the spec, plus the marker through which action
/// properties are checked (see `step_violations`), and the model's names.
/// A few dozen bytes, no heap.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct State {
    /// The constants and names of the model (no part of the state's
    /// identity: it compares equal and hashes as nothing).
    pub k: Ctx<Constants>,
    pub durable_state: ClaimFunc<DurableState>,
    pub attempt_fence: ClaimFunc<Fence>,
    pub attempt_worker: ClaimFunc<Worker>,
    pub reservation: ClaimFunc<WorkerOrNone>,
    pub lease: ClaimFunc<WorkerOrNone>,
    pub activation_stage: ClaimFunc<ActivationStage>,
    pub durable_lock: ClaimFunc<LockOwner>,
    pub operation_request: OpFunc<Request>,
    pub operation_response: OpFunc<Mv>,
    pub conflict_request: OpFunc<Request>,
    pub activation_effect_count: ClaimFunc<u8>,
    /// The action properties (`[][A]_vars`) that the step into this state
    /// violated. stateright checks predicates on single states only, so
    /// `next_state` evaluates each step and records failures here for an
    /// `always` property to read. It is empty on every state of a correct
    /// run, so it adds no states; it is part of the hash so that a bad step
    /// into an otherwise known state still yields a new state to report.
    pub step_violations: Violations,
}

/// The module's action properties, by name: what the bits of
/// [`Violations`] stand for (`properties::ACTION_PROPERTIES` gives each
/// its predicate).
pub const ACTION_PROPERTY_NAMES: [&str; 2] = ["ActivationAppliesAtMostOnce", "OperationRequestIsImmutable"];

/// A set of the module's action properties ([`ACTION_PROPERTY_NAMES`]), by
/// position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Violations(u8);

impl Violations {
    pub fn insert(&mut self, name: &str) {
        if let Some(i) = ACTION_PROPERTY_NAMES.iter().position(|n| *n == name) {
            self.0 |= 1 << i;
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        ACTION_PROPERTY_NAMES.iter().position(|n| *n == name).is_some_and(|i| self.0 & (1 << i) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The names, in the module's order.
    pub fn names(&self) -> Vec<&'static str> {
        ACTION_PROPERTY_NAMES.iter().enumerate().filter(|(i, _)| self.0 & (1 << i) != 0).map(|(_, n)| *n).collect()
    }
}

impl FromIterator<&'static str> for Violations {
    fn from_iter<I: IntoIterator<Item = &'static str>>(names: I) -> Self {
        let mut v = Violations::default();
        for name in names {
            v.insert(name);
        }
        v
    }
}

impl State {
    /// `ExactRequest(c) == Request(c, attemptFence[c], attemptWorker[c])`
    pub fn exact_request(&self, c: Claim) -> Request {
        Request::Key(c, self.attempt_fence[c], self.attempt_worker[c])
    }
}

impl TlaState for State {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let k = &*self.k;
        let (names, claims, ops) = (&k.names, &k.claims, &k.operations);
        let name = |e| k.name(e).to_string();
        vec![
            ("durableState", self.durable_state.show(names, claims, string_of)),
            ("attemptFence", self.attempt_fence.show(names, claims, name)),
            ("attemptWorker", self.attempt_worker.show(names, claims, |w| k.name(w).to_string())),
            ("reservation", self.reservation.show(names, claims, |w| k.worker_or_none(w))),
            ("lease", self.lease.show(names, claims, |w| k.worker_or_none(w))),
            ("activationStage", self.activation_stage.show(names, claims, string_of)),
            ("durableLock", self.durable_lock.show(names, claims, |o| k.lock_owner(o))),
            ("operationRequest", self.operation_request.show(names, ops, |r| k.request(r))),
            ("operationResponse", self.operation_response.show(names, ops, |r| k.response(r))),
            ("conflictRequest", self.conflict_request.show(names, ops, |r| k.request(r))),
            ("activationEffectCount", self.activation_effect_count.show(names, claims, |n| n.to_string())),
        ]
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)?;
        // The explorer shows states through Debug: say why a state that
        // looks like a known one is separate.
        if !self.step_violations.is_empty() {
            write!(f, "\n\\* the step here violates {}", self.step_violations.names().join(", "))?;
        }
        Ok(())
    }
}
