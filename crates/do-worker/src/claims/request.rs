//! The claims API's requests as clients send them, and their validation:
//! pure, so every limit is unit-tested on the host.
//!
//! Limits (400 otherwise):
//!
//! - claim ids, worker ids and idempotency keys: 1 to [`names::MAX_ID_BYTES`] bytes of
//!   UTF-8, no control characters; a claim id (a path segment) also no `/`;
//! - `fence`: any `u64`;
//! - `reservation_ttl_ms`, `lease_ttl_ms`: 1 ms to [`MAX_TTL_MS`] (24 h);
//! - bodies: at most [`MAX_BODY_BYTES`], JSON objects with exactly the
//!   documented fields.
//!
//! The Worker validates what clients send; the claim store re-validates what
//! reaches it over the internal wire (the same functions), so no request
//! reaches the protocol unchecked.

use protocol::claim::{ClaimId, Fence, Millis, OperationId, RequestKey, WorkerId};
use serde::{Deserialize, Serialize};

use crate::error::Code;
use crate::names::{self, IdProblem};

/// Longest reservation or lease lifetime: 24 h.
pub const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// Largest request body; the largest valid one is well under 2 KiB.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// The header carrying an activation's operation id.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Why a request was refused; `code()` is the JSON error code (all 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRequest {
    #[error("the body is not the expected JSON object: {0}")]
    Body(String),
    #[error("the {field} {problem}")]
    Id { field: &'static str, problem: IdProblem },
    #[error("{field} must be 1 to {MAX_TTL_MS} ms, not {value}")]
    Ttl { field: &'static str, value: u64 },
    #[error("the Idempotency-Key header is required")]
    MissingIdempotencyKey,
}

impl InvalidRequest {
    pub fn code(&self) -> Code {
        match self {
            InvalidRequest::Body(_) => Code::InvalidBody,
            InvalidRequest::Id { field: "claim", .. } => Code::InvalidClaim,
            InvalidRequest::Id { field: "worker", .. } => Code::InvalidWorker,
            InvalidRequest::Id { .. } => Code::InvalidIdempotencyKey,
            InvalidRequest::Ttl { .. } => Code::InvalidTtl,
            InvalidRequest::MissingIdempotencyKey => Code::MissingIdempotencyKey,
        }
    }
}

fn check_id(field: &'static str, id: &str) -> Result<(), InvalidRequest> {
    let checked = if field == "claim" { names::check_claim(id) } else { names::check_id(id) };
    checked.map_err(|problem| InvalidRequest::Id { field, problem })
}

fn check_ttl(field: &'static str, value: u64) -> Result<Millis, InvalidRequest> {
    if (1..=MAX_TTL_MS).contains(&value) { Ok(value) } else { Err(InvalidRequest::Ttl { field, value }) }
}

/// An idempotency key from its header (absent → 400).
pub fn operation(header: Option<&str>) -> Result<OperationId, InvalidRequest> {
    let key = header.ok_or(InvalidRequest::MissingIdempotencyKey)?;
    check_id("idempotency key", key)?;
    Ok(OperationId(key.to_string()))
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, InvalidRequest> {
    if body.len() > MAX_BODY_BYTES {
        return Err(InvalidRequest::Body(format!("{} bytes; at most {MAX_BODY_BYTES}", body.len())));
    }
    serde_json::from_slice(body).map_err(|e| InvalidRequest::Body(e.to_string()))
}

/// `POST /v1/{ns}/claims`: authorize attempt `fence` of `claim` for `worker`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Create {
    pub claim: ClaimId,
    pub fence: Fence,
    pub worker: WorkerId,
    pub reservation_ttl_ms: Millis,
}

impl Create {
    pub fn parse(body: &[u8]) -> Result<Create, InvalidRequest> {
        parse::<Create>(body)?.validated()
    }

    pub fn validated(self) -> Result<Create, InvalidRequest> {
        check_id("claim", &self.claim.0)?;
        check_id("worker", &self.worker.0)?;
        check_ttl("reservation_ttl_ms", self.reservation_ttl_ms)?;
        Ok(self)
    }
}

/// The public body of activate and heartbeat requests (the claim is in the path).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttemptBody {
    fence: Fence,
    worker: WorkerId,
    lease_ttl_ms: Millis,
}

/// An activate request: `operation` (the Idempotency-Key) for attempt
/// `(claim, fence, worker)`, asking for a lease of `lease_ttl_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Activate {
    pub operation: OperationId,
    pub request: RequestKey,
    pub lease_ttl_ms: Millis,
}

impl Activate {
    pub fn parse(claim: ClaimId, operation: OperationId, body: &[u8]) -> Result<Activate, InvalidRequest> {
        let b: AttemptBody = parse(body)?;
        let request = RequestKey { claim, fence: b.fence, worker: b.worker };
        Activate { operation, request, lease_ttl_ms: b.lease_ttl_ms }.validated()
    }

    pub fn validated(self) -> Result<Activate, InvalidRequest> {
        check_id("idempotency key", &self.operation.0)?;
        check_attempt(&self.request)?;
        check_ttl("lease_ttl_ms", self.lease_ttl_ms)?;
        Ok(self)
    }
}

/// A heartbeat: the executing worker renews its lease for `lease_ttl_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    pub request: RequestKey,
    pub lease_ttl_ms: Millis,
}

impl Heartbeat {
    pub fn parse(claim: ClaimId, body: &[u8]) -> Result<Heartbeat, InvalidRequest> {
        let b: AttemptBody = parse(body)?;
        Heartbeat { request: RequestKey { claim, fence: b.fence, worker: b.worker }, lease_ttl_ms: b.lease_ttl_ms }
            .validated()
    }

    pub fn validated(self) -> Result<Heartbeat, InvalidRequest> {
        check_attempt(&self.request)?;
        check_ttl("lease_ttl_ms", self.lease_ttl_ms)?;
        Ok(self)
    }
}

fn check_attempt(request: &RequestKey) -> Result<(), InvalidRequest> {
    check_id("claim", &request.claim.0)?;
    check_id("worker", &request.worker.0)
}

/// The bulk test hook: `count` claims `bulk-{i}` (fence 1, worker `w`),
/// reserved for `reservation_ttl_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bulk {
    pub count: u64,
    pub reservation_ttl_ms: Millis,
}

/// Parses an internal body (built by the Worker from a validated request)
/// and validates it again.
pub fn internal<T: for<'a> Deserialize<'a>>(
    body: &[u8],
    validated: impl FnOnce(T) -> Result<T, InvalidRequest>,
) -> Result<T, InvalidRequest> {
    validated(parse(body)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::MAX_ID_BYTES;

    fn claim(s: &str) -> ClaimId {
        ClaimId::from(s)
    }

    #[test]
    fn a_create_body_is_parsed_and_checked() {
        let ok =
            Create::parse(br#"{"claim":"job-1","fence":18446744073709551615,"worker":"w","reservation_ttl_ms":1}"#);
        assert_eq!(ok.map(|c| c.fence), Ok(Fence(u64::MAX)));
        for (body, code) in [
            (r#"{"claim":"","fence":1,"worker":"w","reservation_ttl_ms":5}"#, "invalid_claim"),
            (r#"{"claim":"a/b","fence":1,"worker":"w","reservation_ttl_ms":5}"#, "invalid_claim"),
            (r#"{"claim":"a","fence":1,"worker":"w\u0007","reservation_ttl_ms":5}"#, "invalid_worker"),
            (r#"{"claim":"a","fence":1,"worker":"w","reservation_ttl_ms":0}"#, "invalid_ttl"),
            (r#"{"claim":"a","fence":1,"worker":"w","reservation_ttl_ms":86400001}"#, "invalid_ttl"),
            (r#"{"claim":"a","fence":-1,"worker":"w","reservation_ttl_ms":5}"#, "invalid_body"),
            (r#"{"claim":"a","fence":1,"worker":"w"}"#, "invalid_body"),
            (r#"{"claim":"a","fence":1,"worker":"w","reservation_ttl_ms":5,"x":1}"#, "invalid_body"),
            ("[1,2]", "invalid_body"),
            ("{", "invalid_body"),
        ] {
            assert_eq!(Create::parse(body.as_bytes()).map_err(|e| e.code().as_str()), Err(code), "{body}");
        }
        let long = format!(r#"{{"claim":"{}","fence":1,"worker":"w","reservation_ttl_ms":5}}"#, "c".repeat(257));
        assert_eq!(Create::parse(long.as_bytes()).map_err(|e| e.code().as_str()), Err("invalid_claim"));
        let huge = vec![b' '; MAX_BODY_BYTES + 1];
        assert_eq!(Create::parse(&huge).map_err(|e| e.code().as_str()), Err("invalid_body"));
    }

    #[test]
    fn activate_needs_a_key_and_a_valid_body() {
        let body = br#"{"fence":3,"worker":"w1","lease_ttl_ms":1000}"#;
        let op = operation(Some("k1")).unwrap();
        let a = Activate::parse(claim("c"), op.clone(), body).unwrap();
        assert_eq!(a.request, RequestKey { claim: claim("c"), fence: Fence(3), worker: WorkerId::from("w1") });
        assert_eq!(operation(None).map_err(|e| e.code().as_str()), Err("missing_idempotency_key"));
        assert_eq!(operation(Some("")).map_err(|e| e.code().as_str()), Err("invalid_idempotency_key"));
        assert_eq!(operation(Some(&"k".repeat(257))).map_err(|e| e.code().as_str()), Err("invalid_idempotency_key"));
        let no_ttl = br#"{"fence":3,"worker":"w1"}"#;
        assert_eq!(Activate::parse(claim("c"), op, no_ttl).map_err(|e| e.code().as_str()), Err("invalid_body"));
    }

    #[test]
    fn claim_ids_in_paths_are_decoded_then_checked() {
        assert_eq!(names::claim("caf%C3%A9"), Ok(claim("café")));
        assert_eq!(names::claim("a%2Fb"), Err(IdProblem::Slash));
        assert_eq!(names::claim("%FF"), Err(IdProblem::NotUtf8));
        assert_eq!(names::claim("%00"), Err(IdProblem::Control(0)));
        assert!(names::claim(&"c".repeat(MAX_ID_BYTES)).is_ok());
    }

    #[test]
    fn internal_bodies_round_trip_and_are_checked_again() {
        let h = Heartbeat::parse(claim("c"), br#"{"fence":1,"worker":"w","lease_ttl_ms":10}"#).unwrap();
        let bytes = serde_json::to_vec(&h).unwrap();
        assert_eq!(internal(&bytes, Heartbeat::validated), Ok(h));
        let forged = br#"{"request":{"claim":"c","fence":1,"worker":"w"},"lease_ttl_ms":0}"#;
        assert_eq!(internal(forged, Heartbeat::validated).map_err(|e| e.code().as_str()), Err("invalid_ttl"));
    }
}
