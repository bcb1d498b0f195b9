//! The claims API's answers as JSON.

use protocol::claim::lease::holder;
use protocol::claim::types::is_live;
use protocol::claim::{
    Answer, ClaimId, ClaimRow, ClaimState, CompletionOutcome, Fence, HeartbeatOutcome, Lease, Millis, OperationId,
    Outcome as JobOutcome, RequestBody, RequestKey, Reservation, WorkerId,
};
use serde::Serialize;
use serde_json::value::RawValue;
use worker::{Response, Result};

use super::store::{Usage, state_name};
use crate::error::Code;
use crate::http;

/// `GET /v1/{ns}/claims/{claim}` (and the 201 of a create).
#[derive(Serialize)]
struct ClaimView<'a> {
    claim: &'a ClaimId,
    state: &'static str,
    fence: Fence,
    worker: &'a WorkerId,
    reservation: Option<&'a Reservation>,
    /// The lease in force, if any.
    lease: Option<LeaseView<'a>>,
    activations: u32,
    /// Which attempt this is (from 1), and how many the claim allows.
    attempt: u32,
    max_attempts: u32,
    /// How the attempt completed, and its result (set once it completed).
    outcome: Option<&'static str>,
    /// The stored text as it is (validated JSON when stored): no parsed
    /// tree, which would take many times its bytes on a full page.
    result: Option<&'a RawValue>,
}

fn claim_view<'a>(row: &'a ClaimRow, lease: Option<LeaseView<'a>>) -> ClaimView<'a> {
    ClaimView {
        claim: &row.claim,
        state: state_name(row.state),
        fence: row.fence,
        worker: &row.worker,
        reservation: row.reservation.as_ref(),
        lease,
        activations: row.activations,
        attempt: row.attempt,
        max_attempts: row.max_attempts,
        outcome: row.outcome.map(JobOutcome::name),
        // Validated JSON when stored; a row that does not parse shows none.
        result: row.result.as_deref().and_then(|r| serde_json::from_str::<&RawValue>(r).ok()),
    }
}

#[derive(Serialize)]
struct LeaseView<'a> {
    worker: &'a WorkerId,
    expires_at: Millis,
}

fn lease_view(lease: Option<&Lease>) -> Option<LeaseView<'_>> {
    lease.map(|l| LeaseView { worker: &l.worker, expires_at: l.expires_at })
}

/// A claim with the lease record found for it, shown only while in force
/// and held by the claim's current attempt.
pub fn claim(status: u16, row: &ClaimRow, lease: Option<&Lease>, now: Millis) -> Result<Response> {
    let lease = holder(lease, now).filter(|l| l.fence == row.fence);
    Ok(http::json(&claim_view(row, lease_view(lease)))?.with_status(status))
}

/// One page of a listing, `{"claims":[...],"next":C|null,"store":{...}}`:
/// each claim as `GET` shows it, except that `lease` is the durable store's
/// record of the executing attempt's lease (its last recorded deadline,
/// while ahead of `now`), not a read of the lease store per claim; and what
/// the store holds against its bounds (so a client that got a 507 sees how
/// full it is).
pub fn claim_page(rows: &[ClaimRow], next: Option<&ClaimId>, store: &Usage, now: Millis) -> Result<Response> {
    let claims: Vec<ClaimView<'_>> = rows
        .iter()
        .map(|row| {
            let recorded = row
                .lease_until
                .filter(|until| row.state == ClaimState::Executing && is_live(*until, now))
                .map(|expires_at| LeaseView { worker: &row.worker, expires_at });
            claim_view(row, recorded)
        })
        .collect();
    http::json(&ClaimPageView { claims, next, store })
}

#[derive(Serialize)]
struct ClaimPageView<'a> {
    claims: Vec<ClaimView<'a>>,
    next: Option<&'a ClaimId>,
    store: &'a Usage,
}

/// The 409's envelope: the error with the bound request.
#[derive(Serialize)]
struct KeyReused<'a> {
    error: KeyReusedDetail<'a>,
}

#[derive(Serialize)]
struct KeyReusedDetail<'a> {
    code: &'static str,
    message: &'a str,
    bound: BoundView<'a>,
}

/// Every field of the request a key is bound to.
#[derive(Serialize)]
struct BoundView<'a> {
    claim: &'a ClaimId,
    fence: Fence,
    worker: &'a WorkerId,
    request: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_ttl_ms: Option<Millis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'static str>,
    /// A completion's result as stored (null for none); absent for an
    /// activation.
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct Outcome<'a> {
    result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    operation: Option<&'a OperationId>,
    claim: &'a ClaimId,
    fence: Fence,
    worker: &'a WorkerId,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease: Option<LeaseView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'static str>,
}

impl<'a> Outcome<'a> {
    fn new(result: &'static str, request: &'a RequestKey) -> Outcome<'a> {
        Outcome {
            result,
            reason: None,
            operation: None,
            claim: &request.claim,
            fence: request.fence,
            worker: &request.worker,
            lease: None,
            outcome: None,
        }
    }
}

/// An activation's answer: 200 accepted, 422 rejected, 409 for a reused key.
/// An accepted one names the lease's deadline as recorded (`lease_until`),
/// so that a replay, answered on what is left of the lease, says how much.
pub fn activation(
    operation: &OperationId,
    request: &RequestKey,
    answer: &Answer,
    lease_until: Option<Millis>,
) -> Result<Response> {
    let (status, outcome) = match answer {
        Answer::Accepted => (
            200,
            Outcome {
                operation: Some(operation),
                lease: lease_until.map(|expires_at| LeaseView { worker: &request.worker, expires_at }),
                ..Outcome::new("accepted", request)
            },
        ),
        Answer::Rejected { reason } => (
            422,
            Outcome {
                operation: Some(operation),
                reason: Some(reason.to_string()),
                ..Outcome::new("rejected", request)
            },
        ),
        Answer::Conflict { bound, body } => return key_reused(operation, bound, body),
    };
    Ok(http::json(&outcome)?.with_status(status))
}

/// 409 `idempotency_key_reused`: the envelope, with `bound`, every field
/// of the request the key is bound to.
fn key_reused(operation: &OperationId, bound: &RequestKey, body: &RequestBody) -> Result<Response> {
    let message = format!(
        "Idempotency-Key {:?} is bound to another request (claim {:?}, fence {}, worker {:?}, {}); \
         a key binds every field of its request",
        operation.0,
        bound.claim.0,
        bound.fence,
        bound.worker.0,
        match body {
            RequestBody::Attempt => "an activation".to_string(),
            RequestBody::Activate { lease_ttl_ms } => format!("an activation with lease_ttl_ms {lease_ttl_ms}"),
            RequestBody::Complete { outcome, .. } => format!("a completion {}", outcome.name()),
        }
    );
    let mut fields = BoundView {
        claim: &bound.claim,
        fence: bound.fence,
        worker: &bound.worker,
        request: "activate",
        lease_ttl_ms: None,
        outcome: None,
        result: None,
    };
    match body {
        RequestBody::Attempt => {}
        RequestBody::Activate { lease_ttl_ms } => fields.lease_ttl_ms = Some(*lease_ttl_ms),
        RequestBody::Complete { outcome, result } => {
            fields.request = "complete";
            fields.outcome = Some(outcome.name());
            let stored = result.as_deref().and_then(|r| serde_json::from_str::<&RawValue>(r).ok());
            fields.result = Some(stored.unwrap_or(RawValue::NULL));
        }
    }
    let code = Code::IdempotencyKeyReused;
    let body = KeyReused { error: KeyReusedDetail { code: code.as_str(), message: &message, bound: fields } };
    Ok(http::json(&body)?.with_status(code.status()))
}

/// A completion's answer: 200 completed, 422 refused, 409 for a reused key.
pub fn completion(operation: &OperationId, request: &RequestKey, answer: &CompletionOutcome) -> Result<Response> {
    let (status, body) = match answer {
        CompletionOutcome::Completed { outcome } => (
            200,
            Outcome { operation: Some(operation), outcome: Some(outcome.name()), ..Outcome::new("completed", request) },
        ),
        CompletionOutcome::Refused { reason } => (
            422,
            Outcome {
                operation: Some(operation),
                reason: Some(reason.to_string()),
                ..Outcome::new("refused", request)
            },
        ),
        CompletionOutcome::Conflict { bound, body } => return key_reused(operation, bound, body),
    };
    Ok(http::json(&body)?.with_status(status))
}

/// A heartbeat's outcome: 200 renewed (with the lease), 422 refused.
pub fn heartbeat(request: &RequestKey, outcome: &HeartbeatOutcome) -> Result<Response> {
    let (status, body) = match outcome {
        HeartbeatOutcome::Renewed { expires_at } => (
            200,
            Outcome {
                lease: Some(LeaseView { worker: &request.worker, expires_at: *expires_at }),
                ..Outcome::new("renewed", request)
            },
        ),
        HeartbeatOutcome::Refused { reason } => {
            (422, Outcome { reason: Some(reason.to_string()), ..Outcome::new("refused", request) })
        }
    };
    Ok(http::json(&body)?.with_status(status))
}
