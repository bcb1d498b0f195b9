//! Everything a claims request can fail with, and the [`HttpError`] each
//! becomes (`{"error":{"code","message"}}`, as in the KV API).

use protocol::claim::{AuthorizeRefused, ClaimId, DurableError, ProcedureError};

use super::leases::LeaseStoreError;
use super::locks::LockError;
use super::request::InvalidRequest;
use super::store::{CreateRefused, NoRoom, StoreError};
use crate::error::{Code, HttpError};

/// `Retry-After` for the 503s below.
const RETRY_AFTER_MS: u64 = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Invalid(#[from] InvalidRequest),
    #[error("no claim {0}")]
    UnknownClaim(ClaimId),
    #[error(transparent)]
    Authorize(#[from] AuthorizeRefused),
    #[error("{}", full_message(.0, "a new claim"))]
    Full(NoRoom),
    #[error("{}; a retry with a key already bound is still answered", full_message(.full, &format!("a new Idempotency-Key of claim {}", .claim)))]
    OperationsFull { claim: ClaimId, full: NoRoom },
    #[error(transparent)]
    LeaseStore(LeaseStoreError),
    /// The activation waits for something that has not happened within the
    /// request's time (another activation's lock, or recovery of a claim
    /// whose reservation expired). Retrying with the same key is safe.
    #[error(
        "the activation is still waiting after {waited_ms} ms (another activation holds the claim, or recovery has not reaped it yet); retry with the same Idempotency-Key"
    )]
    Pending { waited_ms: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Procedure(ProcedureError),
}

/// What a 507 says: what the store is full of, and what waits for room.
fn full_message(full: &NoRoom, what: &str) -> String {
    match full {
        NoRoom::Claims { max } => {
            format!("the namespace holds {max} claims, its max_claims; {what} waits for finished claims to be purged")
        }
        NoRoom::Bytes { held, bound } => format!(
            "the claim store's rows hold {held} bytes, at its bound of {bound} (max_claim_bytes, and an eighth more for the claims it holds); {what} waits for finished claims to be purged"
        ),
        NoRoom::Keys { max } => format!("the claim has bound {max} Idempotency-Keys, the most one claim binds"),
    }
}

impl From<LeaseStoreError> for ClaimError {
    fn from(e: LeaseStoreError) -> Self {
        match e {
            LeaseStoreError::Store(e) => ClaimError::Store(e),
            other => ClaimError::LeaseStore(other),
        }
    }
}

impl From<CreateRefused> for ClaimError {
    fn from(e: CreateRefused) -> Self {
        match e {
            CreateRefused::Authorize(refused) => ClaimError::Authorize(refused),
            CreateRefused::Full(full) => ClaimError::Full(full),
        }
    }
}

impl From<ProcedureError> for ClaimError {
    fn from(e: ProcedureError) -> Self {
        match e {
            ProcedureError::Durable(DurableError::UnknownClaim(claim)) => ClaimError::UnknownClaim(claim),
            other => ClaimError::Procedure(other),
        }
    }
}

impl From<ClaimError> for HttpError {
    fn from(e: ClaimError) -> Self {
        let message = e.to_string();
        match e {
            ClaimError::Invalid(e) => HttpError::new(e.code(), message),
            ClaimError::UnknownClaim(_) => HttpError::new(Code::ClaimNotFound, message),
            ClaimError::Authorize(AuthorizeRefused::Live { .. }) => HttpError::new(Code::ClaimExists, message),
            ClaimError::Authorize(AuthorizeRefused::StaleFence { .. }) => HttpError::new(Code::StaleFence, message),
            ClaimError::Authorize(AuthorizeRefused::Dead { .. }) => HttpError::new(Code::ClaimDead, message),
            ClaimError::Full(_) => HttpError::new(Code::ClaimsFull, message),
            ClaimError::OperationsFull { .. } => HttpError::new(Code::OperationsFull, message),
            ClaimError::LeaseStore(
                LeaseStoreError::Unavailable { .. }
                | LeaseStoreError::LockWait { .. }
                | LeaseStoreError::Lock(LockError::Crowded(_)),
            ) => HttpError::unavailable(Code::LeaseStoreUnavailable, message, RETRY_AFTER_MS),
            ClaimError::LeaseStore(LeaseStoreError::Key(_)) => HttpError::new(Code::InternalKeyMissing, message),
            ClaimError::LeaseStore(LeaseStoreError::Full { .. }) => HttpError::new(Code::LeaseStoreFull, message),
            ClaimError::LeaseStore(_) => HttpError::new(Code::LeaseStore, message),
            ClaimError::Pending { .. } => HttpError::unavailable(Code::ActivationPending, message, RETRY_AFTER_MS),
            ClaimError::Store(_) => HttpError::new(Code::Storage, message),
            ClaimError::Procedure(_) => HttpError::internal(message),
        }
    }
}

impl From<InvalidRequest> for HttpError {
    fn from(e: InvalidRequest) -> Self {
        ClaimError::Invalid(e).into()
    }
}
