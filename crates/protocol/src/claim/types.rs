//! Identifiers and small values shared by the stores and the procedures.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch. Everything that depends on time takes
/// it as an argument; nothing in [`crate::claim`] reads a clock.
pub type Millis = u64;

/// Whether a deadline is still ahead of `now`. A deadline equal to `now` has
/// passed, so a deadline of `now + ttl` is live for exactly `ttl` ms.
pub fn is_live(expires_at: Millis, now: Millis) -> bool {
    now < expires_at
}

/// `now + ttl`, saturating: a far-future `now` yields a deadline at the end
/// of time rather than a wrapped one in the past.
pub fn deadline(now: Millis, ttl: Millis) -> Millis {
    now.saturating_add(ttl)
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_string())
            }
        }
    };
}

string_id!(
    /// A claim: the unit of work that one attempt at a time is authorized for.
    ClaimId
);
string_id!(
    /// A worker that executes claims.
    WorkerId
);
string_id!(
    /// A client operation id (the idempotency key of an activate request).
    OperationId
);

/// The fencing token of an attempt: each new attempt on a claim gets a
/// higher one, so a request carrying another fence is from another attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fence(pub u64);

impl fmt::Display for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What an activate request asks for: attempt `fence` of `claim`, executed by
/// `worker` (the spec's `Request(c, f, w)`). An operation id is bound to one
/// of these for good.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RequestKey {
    pub claim: ClaimId,
    pub fence: Fence,
    pub worker: WorkerId,
}

/// The durable state of a claim (the spec's `DurableStates`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimState {
    /// An attempt is authorized and reserved; nothing has executed.
    Authorized,
    /// The activation committed: the attempt's effect is applied.
    Executing,
    /// Recovery gave up on the attempt after its reservation expired; a
    /// new attempt may be authorized.
    Reaped,
    /// The executing attempt completed with [`Outcome::Succeeded`]: final.
    Succeeded,
    /// The executing attempt completed with [`Outcome::Failed`]; a new
    /// attempt may be authorized.
    Failed,
    /// The claim's last allowed attempt failed or was reaped: final (a dead
    /// letter).
    Dead,
}

impl ClaimState {
    /// The wire name (`snake_case`, as serialized).
    pub fn name(self) -> &'static str {
        match self {
            ClaimState::Authorized => "authorized",
            ClaimState::Executing => "executing",
            ClaimState::Reaped => "reaped",
            ClaimState::Succeeded => "succeeded",
            ClaimState::Failed => "failed",
            ClaimState::Dead => "dead",
        }
    }

    /// Every state, in declaration order.
    pub const ALL: [ClaimState; 6] = [
        ClaimState::Authorized,
        ClaimState::Executing,
        ClaimState::Reaped,
        ClaimState::Succeeded,
        ClaimState::Failed,
        ClaimState::Dead,
    ];

    /// The state named `name` (its wire name).
    pub fn from_name(name: &str) -> Option<ClaimState> {
        ClaimState::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the executing attempt completed (the claim may be dead for
    /// another reason: see [`ClaimRow::outcome`](super::ClaimRow)).
    pub fn completed(self) -> bool {
        matches!(self, ClaimState::Succeeded | ClaimState::Failed)
    }
}

/// How an attempt ended, as its worker reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Succeeded,
    Failed,
}

impl Outcome {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
        }
    }
}

/// Everything a request under an operation id says beyond its attempt
/// ([`RequestKey`]): the id binds it too, so a reuse that differs in any
/// field is a conflict.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestBody {
    /// An id bound before whole requests were bound (a row of an older
    /// version): it binds the attempt only, and any activation of that
    /// attempt matches it.
    #[default]
    Attempt,
    /// An activation asking for a lease of `lease_ttl_ms`.
    Activate { lease_ttl_ms: Millis },
    /// A completion with its outcome and result (the result's JSON text in
    /// the one spelling the Worker gives each value, numbers exact).
    Complete { outcome: Outcome, result: Option<String> },
}

impl RequestBody {
    /// Whether an id bound to `self` may serve a request with `other`.
    pub fn admits(&self, other: &RequestBody) -> bool {
        self == other || (*self == RequestBody::Attempt && matches!(other, RequestBody::Activate { .. }))
    }
}

impl fmt::Display for ClaimState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How far an activation has got (the spec's `ActivationStages`), in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivationStage {
    Idle,
    Validated,
    LeaseCreated,
    Committed,
    Finished,
}

/// Why an activate request is refused (HTTP 422). The wire names are the
/// `Display` strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    /// The request names another attempt's fence.
    #[error("stale_fence")]
    StaleFence,
    /// The request names a worker other than the attempt's.
    #[error("wrong_worker")]
    WrongWorker,
    /// The claim was reaped before this request could activate it.
    #[error("reaped")]
    Reaped,
    /// The claim executes, but the worker's lease is gone (deleted or
    /// expired), so the activation no longer stands for it.
    #[error("lease_lost")]
    LeaseLost,
    /// This activation was under way when the reservation expired, and the
    /// claim has since been reaped.
    #[error("reservation_expired")]
    ReservationExpired,
}

/// The answer to an activate request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Answer {
    /// The claim executes for this worker and its lease holds (first
    /// activation, or an exact replay while the lease holds).
    Accepted,
    /// Refused for `reason`; the same operation gets the same answer again.
    Rejected { reason: Rejection },
    /// The operation id is bound to `bound`, not to this request (HTTP 409
    /// `idempotency_key_reused`).
    Conflict {
        bound: RequestKey,
        #[serde(default)]
        body: RequestBody,
    },
}

/// The lease of attempt `fence` of a claim, held by `worker` until
/// `expires_at` (the coordination store's record: `lease.rs`; here so that
/// the durable store can be handed one to decide on without importing it).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lease {
    pub fence: Fence,
    pub worker: WorkerId,
    pub expires_at: Millis,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_passes_at_its_instant() {
        assert!(is_live(10, 9));
        assert!(!is_live(10, 10));
        assert!(!is_live(10, 11));
        assert_eq!(deadline(5, 3), 8);
        assert_eq!(deadline(u64::MAX - 1, 3), u64::MAX);
    }

    #[test]
    fn rejections_use_the_wire_names() {
        let names: Vec<String> = [
            Rejection::StaleFence,
            Rejection::WrongWorker,
            Rejection::Reaped,
            Rejection::LeaseLost,
            Rejection::ReservationExpired,
        ]
        .iter()
        .map(|r| r.to_string())
        .collect();
        assert_eq!(names, ["stale_fence", "wrong_worker", "reaped", "lease_lost", "reservation_expired"]);
    }

    #[test]
    fn states_use_the_wire_names() {
        for state in ClaimState::ALL {
            assert_eq!(serde_json::to_value(state).unwrap(), state.name());
            assert_eq!(ClaimState::from_name(state.name()), Some(state));
        }
        for outcome in [Outcome::Succeeded, Outcome::Failed] {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.name());
        }
    }

    #[test]
    fn stages_are_ordered_as_the_spec_lists_them() {
        use ActivationStage::*;
        assert!(Idle < Validated && Validated < LeaseCreated && LeaseCreated < Committed && Committed < Finished);
    }
}
