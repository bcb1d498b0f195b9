//! A state of RemoraClaimActivation: exactly the module's `VARIABLES`.

use std::fmt;

use super::values::{ActivationStage, DurableState, Func, LockOwner, ModelValue, Request};
use crate::spec::{TlaState, fmt_variables};

/// The eleven variables of the spec, plus the marker through which action
/// properties are checked (see `step_violations`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct State {
    pub durable_state: Func<DurableState>,
    pub attempt_fence: Func<ModelValue>,
    pub attempt_worker: Func<ModelValue>,
    pub reservation: Func<ModelValue>,
    pub lease: Func<ModelValue>,
    pub activation_stage: Func<ActivationStage>,
    pub durable_lock: Func<LockOwner>,
    pub operation_request: Func<Request>,
    pub operation_response: Func<ModelValue>,
    pub conflict_request: Func<Request>,
    pub activation_effect_count: Func<u8>,
    /// The action properties (`[][A]_vars`) that the step into this state
    /// violated. stateright checks predicates on single states only, so
    /// `next_state` evaluates each step and records failures here for an
    /// `always` property to read. It is empty on every state of a correct
    /// run, so it adds no states; it is part of the hash so that a bad step
    /// into an otherwise known state still yields a new state to report.
    pub step_violations: Vec<&'static str>,
}

impl State {
    /// `ExactRequest(c) == Request(c, attemptFence[c], attemptWorker[c])`
    pub fn exact_request(&self, c: ModelValue) -> Request {
        Request::Key(c, self.attempt_fence[&c], self.attempt_worker[&c])
    }
}

impl TlaState for State {
    fn variables(&self) -> Vec<(&'static str, String)> {
        vec![
            ("durableState", self.durable_state.to_string()),
            ("attemptFence", self.attempt_fence.to_string()),
            ("attemptWorker", self.attempt_worker.to_string()),
            ("reservation", self.reservation.to_string()),
            ("lease", self.lease.to_string()),
            ("activationStage", self.activation_stage.to_string()),
            ("durableLock", self.durable_lock.to_string()),
            ("operationRequest", self.operation_request.to_string()),
            ("operationResponse", self.operation_response.to_string()),
            ("conflictRequest", self.conflict_request.to_string()),
            ("activationEffectCount", self.activation_effect_count.to_string()),
        ]
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)?;
        // The explorer shows states through Debug: say why a state that
        // looks like a known one is separate.
        if !self.step_violations.is_empty() {
            write!(f, "\n\\* the step here violates {}", self.step_violations.join(", "))?;
        }
        Ok(())
    }
}
