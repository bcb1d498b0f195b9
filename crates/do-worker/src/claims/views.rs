//! The claims API's answers as JSON.

use protocol::claim::lease::holder;
use protocol::claim::{
    Answer, ClaimId, ClaimRow, Fence, HeartbeatOutcome, Lease, Millis, OperationId, RequestKey, Reservation, WorkerId,
};
use serde::Serialize;
use worker::{Response, Result};

use super::store::state_name;
use crate::error::{Code, HttpError};
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
    let view = ClaimView {
        claim: &row.claim,
        state: state_name(row.state),
        fence: row.fence,
        worker: &row.worker,
        reservation: row.reservation.as_ref(),
        lease: lease_view(lease),
        activations: row.activations,
    };
    Ok(http::json(&view)?.with_status(status))
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
        }
    }
}

/// An activation's answer: 200 accepted, 422 rejected, 409 for a reused key.
pub fn activation(operation: &OperationId, request: &RequestKey, answer: &Answer) -> Result<Response> {
    let (status, outcome) = match answer {
        Answer::Accepted => (200, Outcome { operation: Some(operation), ..Outcome::new("accepted", request) }),
        Answer::Rejected { reason } => (
            422,
            Outcome {
                operation: Some(operation),
                reason: Some(reason.to_string()),
                ..Outcome::new("rejected", request)
            },
        ),
        Answer::Conflict { bound } => {
            let message = format!(
                "Idempotency-Key {operation:?} is bound to another request (claim {:?}, fence {}, worker {:?})",
                bound.claim.0, bound.fence, bound.worker.0
            );
            return HttpError::new(Code::IdempotencyKeyReused, message).respond();
        }
    };
    Ok(http::json(&outcome)?.with_status(status))
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
