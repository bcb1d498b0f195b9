//! Everything a claims request can fail with, and the JSON error each
//! becomes (`{"error":{"code","message"}}`, as in the KV API).

use protocol::claim::{AuthorizeRefused, ClaimId, DurableError, ProcedureError};
use worker::{Response, Result};

use super::leases::LeaseStoreError;
use super::request::InvalidRequest;
use super::store::StoreError;
use crate::http;

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
    #[error(transparent)]
    LeaseStore(#[from] LeaseStoreError),
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

impl From<ProcedureError> for ClaimError {
    fn from(e: ProcedureError) -> Self {
        match e {
            ProcedureError::Durable(DurableError::UnknownClaim(claim)) => ClaimError::UnknownClaim(claim),
            other => ClaimError::Procedure(other),
        }
    }
}

impl ClaimError {
    pub fn respond(&self) -> Result<Response> {
        let message = self.to_string();
        match self {
            ClaimError::Invalid(e) => http::error(400, e.code(), &message),
            ClaimError::UnknownClaim(_) => http::error(404, "claim_not_found", &message),
            ClaimError::Authorize(e) => http::error(409, e.code(), &message),
            ClaimError::LeaseStore(LeaseStoreError::Unavailable { .. }) => {
                http::unavailable("lease_store_unavailable", &message, RETRY_AFTER_MS)
            }
            ClaimError::LeaseStore(LeaseStoreError::Key(_)) => http::error(500, "internal_key_missing", &message),
            ClaimError::LeaseStore(_) => http::error(500, "lease_store", &message),
            ClaimError::Pending { .. } => http::unavailable("activation_pending", &message, RETRY_AFTER_MS),
            ClaimError::Store(_) => http::error(500, "storage", &message),
            ClaimError::Procedure(_) => http::error(500, "internal", &message),
        }
    }
}
