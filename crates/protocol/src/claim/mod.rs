//! Remora claim activation (`tla/RemoraClaimActivation.tla`, extended with
//! lease renewal in `tla/RemoraClaimHeartbeat.tla`), sans-IO.
//!
//! Two stores and three procedures:
//!
//! - [`durable`]: the authority. Pure transitions over a claim row and
//!   operation rows, served one transaction per request by [`durable::apply`].
//! - [`lease`]: the coordination store's leases (claim → attempt, worker,
//!   expiry). Leases are not authority.
//! - [`activator`]: serves one activate request (first activation, replay,
//!   rejection, conflict, compensation).
//! - [`reaper`]: one recovery pass over the claims whose reservation expired;
//!   one over the executing claims whose lease is neither live nor restorable.
//! - [`heartbeat`]: the executing worker renews its lease.
//! - [`completion`]: the executing worker reports how its attempt ended
//!   (succeeded, or failed: a new attempt may follow until the claim's
//!   `max_attempts`, then the claim is dead).
//!
//! The three procedures have one shape, [`Procedure`]: a procedure never
//! touches a store, it emits a [`Request`], the host serves it
//! (`durable::apply` or `lease::apply`, at the host's `now`) and hands the
//! [`Reply`] back, until the procedure has its outcome. One driver
//! ([`procedure::run`], [`procedure::step`]) runs any of them for any
//! [`Host`]: the Durable Object, the model checker, the tests. Time is an
//! input everywhere; expiry is decided by comparing it with a deadline
//! ([`types::is_live`]). Nothing panics on any input: a reply that does not
//! fit is a [`ProcedureError`].
//!
//! Creating a claim is a durable request too (`DurableRequest::Authorize`,
//! a new attempt), served by `durable::apply` like the procedures' requests.

pub mod activator;
pub mod completion;
pub mod durable;
pub mod error;
pub mod heartbeat;
pub mod lease;
pub mod message;
pub mod procedure;
pub mod reaper;
#[cfg(test)]
mod testing;
pub mod types;

pub use activator::{Activator, ActivatorConfig, ActivatorStep};
pub use completion::{Completion, CompletionOutcome, CompletionStep};
pub use durable::{
    ClaimRow, CompletionAnswer, DEFAULT_MAX_ATTEMPTS, DurableLock, DurableReply, DurableRequest, DurableRows,
    MemoryDurable, OperationRow, Reservation, Validation,
};
pub use error::{
    AuthorizeRefused, CommitRefused, CompletionRefused, DurableError, HeartbeatRefused, LeaseRefused, LockRefused,
    ProcedureError, RecoveryRefused,
};
pub use heartbeat::{Heartbeat, HeartbeatOutcome, HeartbeatStep};
pub use lease::{Lease, LeaseReply, LeaseRequest, LeaseRows, MemoryLeases};
pub use message::{Reply, Request};
pub use procedure::{Host, Procedure, Progress};
pub use reaper::{ExecutingReaper, ExecutingReaperStep, Reaper, ReaperStep};
pub use types::{
    ActivationStage, Answer, ClaimId, ClaimState, Fence, Millis, OperationId, Outcome, Rejection, RequestBody,
    RequestKey, WorkerId,
};
