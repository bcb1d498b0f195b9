//! Typed refusals of the store transitions, and the errors of the procedures.
//!
//! A refusal is an ordinary outcome that a procedure acts on (a lock that is
//! held, a reservation that expired); it travels in a reply. An error is a
//! request the stores cannot serve or a reply a procedure cannot take: the
//! host turns it into a 4xx/5xx and the procedure's state is left as it was.

use serde::{Deserialize, Serialize};

use super::types::{ClaimId, ClaimState, Fence, OperationId};

/// A durable request names a row that does not exist.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum DurableError {
    #[error("no claim {0}")]
    UnknownClaim(ClaimId),
    #[error("operation {0} is not bound to a request")]
    UnknownOperation(OperationId),
    /// A completion request names an id bound to an activation (the
    /// procedure binds it first, so this is a bug).
    #[error("operation {0} is not bound to a completion")]
    NotACompletion(OperationId),
}

/// Why a new attempt cannot be authorized (HTTP 409, with [`AuthorizeRefused::code`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum AuthorizeRefused {
    /// The claim's attempt is authorized or executing (another attempt
    /// would take authority from it), or it succeeded.
    #[error("claim {claim} already has attempt {fence} ({state}); only a reaped or failed claim takes a new attempt")]
    Live { claim: ClaimId, fence: Fence, state: ClaimState },
    /// The claim's attempt was reaped or failed, and the new attempt's
    /// fence is not higher.
    #[error("claim {claim}'s attempt {fence} ended; a new attempt needs a higher fence")]
    StaleFence { claim: ClaimId, fence: Fence },
    /// The claim's last allowed attempt failed or was reaped (HTTP 409
    /// `claim_dead`).
    #[error("claim {claim} is dead: its {attempts} allowed attempts failed or were reaped")]
    Dead { claim: ClaimId, attempts: u32 },
}

impl AuthorizeRefused {
    /// The wire code.
    pub fn code(&self) -> &'static str {
        match self {
            AuthorizeRefused::Live { .. } => "claim_exists",
            AuthorizeRefused::StaleFence { .. } => "stale_fence",
            AuthorizeRefused::Dead { .. } => "claim_dead",
        }
    }
}

/// Why the activator cannot take the durable lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum LockRefused {
    #[error("the claim already executes")]
    Executing,
    #[error("the claim was reaped")]
    Reaped,
    #[error("the reservation expired: the claim can no longer be activated")]
    ReservationExpired,
    #[error("another activation or the recovery holds the lock")]
    Held,
}

/// Why a commit of the activation is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum CommitRefused {
    #[error("the claim already executes")]
    Executing,
    #[error("the claim was reaped")]
    Reaped,
    #[error("the committing activation does not hold the durable lock")]
    LockNotHeld,
    #[error("the reservation expired")]
    ReservationExpired,
    #[error("the lease the activation created has expired")]
    LeaseExpired,
}

/// Why recovery cannot lock or reap a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryRefused {
    #[error("the claim is not awaiting activation")]
    NotAuthorized,
    #[error("the reservation is still live")]
    ReservationLive,
    #[error("an activation holds the durable lock")]
    LockHeld,
    #[error("recovery does not hold the durable lock")]
    NotRecoveryLocked,
    /// `ReapExecuting` found the claim not executing (it completed, or
    /// another pass reaped it).
    #[error("the claim is not executing")]
    NotExecuting,
    /// `ReapExecuting` found the executing attempt's lease live in the
    /// coordination store, or restorable (its recorded deadline ahead).
    #[error("the executing attempt's lease is live or restorable")]
    LeaseLive,
}

/// Why the coordination store refuses a lease request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum LeaseRefused {
    #[error("the reservation the lease would stand for has expired")]
    ReservationExpired,
    #[error("this attempt's lease has expired; it is not created or renewed again")]
    Lapsed,
    #[error("no lease is held")]
    NotHeld,
    #[error("the lease is held by another worker")]
    HeldByOther,
    #[error("the lease belongs to a newer attempt")]
    Superseded,
    /// A lease is created only while the durable store shows the attempt
    /// awaiting activation.
    #[error("the claim's attempt is no longer awaiting activation")]
    NotAwaitingActivation,
}

/// Why a heartbeat does not renew the lease, or a completion is refused
/// (the same reasons: [`CompletionRefused`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum HeartbeatRefused {
    #[error("stale_fence")]
    StaleFence,
    #[error("wrong_worker")]
    WrongWorker,
    /// Only an executing claim's worker holds a lease worth renewing: before
    /// the commit the lease stands for an activation, not for execution.
    #[error("not_executing")]
    NotExecuting,
    #[error("reaped")]
    Reaped,
    #[error("lease_lost")]
    LeaseLost,
}

/// Why a completion is refused (HTTP 422): the heartbeat's reasons, since
/// both come only from the attempt that executes the claim.
pub type CompletionRefused = HeartbeatRefused;

/// A procedure was handed something it cannot act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProcedureError {
    /// The host answered with a reply of another request (a host bug).
    #[error("{procedure} waiting at {step} cannot take the reply {reply}")]
    UnexpectedReply { procedure: &'static str, step: &'static str, reply: String },
    /// The durable store could not serve the request.
    #[error(transparent)]
    Durable(#[from] DurableError),
    /// The host does not serve requests of this kind (a procedure sent one
    /// it never sends: a bug).
    #[error("the {host} cannot serve {request}")]
    Unserved { host: &'static str, request: String },
    /// The procedure has no outcome and nothing to ask (a protocol bug).
    #[error("the {procedure} has no answer and nothing to ask")]
    Stalled { procedure: &'static str },
}

impl ProcedureError {
    /// `procedure`, waiting at `step`, was handed `reply`.
    pub fn unexpected(procedure: &'static str, step: &'static str, reply: &impl std::fmt::Debug) -> Self {
        ProcedureError::UnexpectedReply { procedure, step, reply: format!("{reply:?}") }
    }
}
