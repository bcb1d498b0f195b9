//! Everything a claims request can fail with, and the [`HttpError`] each
//! becomes (`{"error":{"code","message"}}`, as in the KV API).

use protocol::claim::{AuthorizeRefused, ClaimId, DurableError, ProcedureError};

use super::leases::LeaseStoreError;
use super::locks::LockError;
use super::request::InvalidRequest;
use super::store::{CreateRefused, StoreError};
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
    #[error("the namespace holds {max} claims, its max_claims; a new claim needs one to be deleted first")]
    Full { max: u64 },
    #[error(
        "claim {claim} has bound {max} Idempotency-Keys, the most one claim binds; a retry with a key already bound is still answered"
    )]
    OperationsFull { claim: ClaimId, max: u64 },
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
            CreateRefused::Full { max } => ClaimError::Full { max },
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
            ClaimError::Full { .. } => HttpError::new(Code::ClaimsFull, message),
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
