//! The claims API in the Worker: read and validate the client's request
//! (`request.rs`), then forward it, rebuilt from the validated values, to
//! the namespace's [`super::ClaimStore`] over the authenticated internal
//! wire. The object's answer is the client's answer.

use protocol::claim::ClaimId;
use serde::Serialize;
use worker::{Env, Request};

use super::request::{
    self, Activate, Bulk, Complete, Create, Heartbeat, IDEMPOTENCY_KEY, ListPage, MAX_BODY_BYTES,
    MAX_COMPLETE_BODY_BYTES,
};
use crate::body;
use crate::error::{Code, HttpError, HttpResult};
use crate::internal::{self, CLAIMS_BINDING};
use crate::wire::{ClaimOp, Target};

/// `POST /v1/{ns}/claims`.
/// (`life`, here and below: the namespace life the client's token is bound
/// to, which the claim store checks.)
pub async fn create(req: Request, env: &Env, ns: &str, life: Option<u64>) -> HttpResult {
    let body = body::read(&req, MAX_BODY_BYTES, Code::BodyTooLarge).await?;
    let create = Create::parse(&body)?;
    forward(env, Target::new(ClaimOp::Create, ns, None).with_life(life), Some(&create)).await
}

/// `POST /v1/{ns}/claims/{claim}/activate`, and the benchmark baseline's.
/// (The baseline's has no `life`.)
pub async fn activate(req: Request, env: &Env, ns: &str, claim: ClaimId, life: Option<u64>) -> HttpResult {
    activate_as(req, env, Target::new(ClaimOp::Activate, ns, None).with_life(life), claim).await
}

/// `POST /v1/{ns}/_bench/claims/{claim}/activate` (test hooks only): the
/// benchmark baseline's activation.
pub async fn activate_baseline(req: Request, env: &Env, ns: &str, claim: ClaimId) -> HttpResult {
    activate_as(req, env, Target::new(ClaimOp::ActivateBaseline, ns, None), claim).await
}

async fn activate_as(req: Request, env: &Env, target: Target<ClaimOp>, claim: ClaimId) -> HttpResult {
    let key = req.headers().get(IDEMPOTENCY_KEY).ok().flatten();
    let operation = request::operation(key.as_deref())?;
    let body = body::read(&req, MAX_BODY_BYTES, Code::BodyTooLarge).await?;
    let call = Activate::parse(claim, operation, &body)?;
    forward(env, target, Some(&call)).await
}

/// `POST /v1/{ns}/claims/{claim}/heartbeat`.
pub async fn heartbeat(req: Request, env: &Env, ns: &str, claim: ClaimId, life: Option<u64>) -> HttpResult {
    let body = body::read(&req, MAX_BODY_BYTES, Code::BodyTooLarge).await?;
    let call = Heartbeat::parse(claim, &body)?;
    forward(env, Target::new(ClaimOp::Heartbeat, ns, None).with_life(life), Some(&call)).await
}

/// `POST /v1/{ns}/claims/{claim}/complete`: the executing attempt reports
/// how it ended (its body may carry a result of up to 16 KiB).
pub async fn complete(req: Request, env: &Env, ns: &str, claim: ClaimId, life: Option<u64>) -> HttpResult {
    let key = req.headers().get(IDEMPOTENCY_KEY).ok().flatten();
    let operation = request::operation(key.as_deref())?;
    let body = body::read(&req, MAX_COMPLETE_BODY_BYTES, Code::BodyTooLarge).await?;
    let call = Complete::parse(claim, operation, &body)?;
    forward(env, Target::new(ClaimOp::Complete, ns, None).with_life(life), Some(&call)).await
}

/// `GET /v1/{ns}/claims?state=&after=&limit=`: one page of the claims.
pub async fn list(env: &Env, ns: &str, page: &ListPage, life: Option<u64>) -> HttpResult {
    forward(env, Target::new(ClaimOp::List, ns, None).with_life(life), Some(page)).await
}

/// `GET /v1/{ns}/claims/{claim}`.
pub async fn get(env: &Env, ns: &str, claim: &ClaimId, life: Option<u64>) -> HttpResult {
    forward::<()>(env, Target::new(ClaimOp::Get, ns, None).with_key(&claim.0).with_life(life), None).await
}

/// `POST /v1/{ns}/_test/reap` (test hooks only): one recovery pass now.
pub async fn reap(env: &Env, ns: &str) -> HttpResult {
    forward::<()>(env, Target::new(ClaimOp::Reap, ns, None), None).await
}

/// `POST /v1/{ns}/_test/claims?count=N&reservation_ttl_ms=M` (test hooks
/// only): authorize N claims in one request.
pub async fn bulk(env: &Env, ns: &str, count: u64, reservation_ttl_ms: u64) -> HttpResult {
    forward(env, Target::new(ClaimOp::Bulk, ns, None), Some(&Bulk { count, reservation_ttl_ms })).await
}

/// `POST /v1/{ns}/_test/migrations` (test hooks only): the claim store's
/// migrations are idempotent and run in one transaction.
pub async fn migrations(env: &Env, ns: &str) -> HttpResult {
    forward::<()>(env, Target::new(ClaimOp::Migrations, ns, None), None).await
}

/// `GET /v1/{ns}/_test/claims` (test hooks only): claims by state.
pub async fn count(env: &Env, ns: &str) -> HttpResult {
    forward::<()>(env, Target::new(ClaimOp::Count, ns, None), None).await
}

/// Sends `target` to its namespace's claim store; its answer is passed
/// through.
async fn forward<T: Serialize>(env: &Env, target: Target<ClaimOp>, body: Option<&T>) -> HttpResult {
    let secret = internal::secret(env)?;
    let body = body.map(serde_json::to_vec).transpose()?;
    let stub = internal::stub(env, CLAIMS_BINDING, &target.ns)?;
    let answer =
        internal::call(&stub, &target, Some(&secret), body.as_deref(), &[("content-type", "application/json")]).await;
    answer.map_err(|e| {
        HttpError::unavailable(
            Code::ClaimStoreUnavailable,
            format!("the claim store did not answer ({e}); retry"),
            1000,
        )
    })
}
