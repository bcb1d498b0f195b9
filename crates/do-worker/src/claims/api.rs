//! The claims API in the Worker: read and validate the client's request
//! (`request.rs`), then forward it, rebuilt from the validated values, to
//! the namespace's [`super::ClaimStore`] over the authenticated internal
//! wire. The object's answer is the client's answer.

use protocol::claim::ClaimId;
use serde::Serialize;
use worker::{Env, Request, Response, Result};

use super::request::{self, Activate, Create, Heartbeat, IDEMPOTENCY_KEY, InvalidRequest, MAX_BODY_BYTES};
use crate::http;
use crate::internal::{self, CLAIMS_BINDING};
use crate::wire::{Op, Target};

/// `POST /v1/{ns}/claims`.
pub async fn create(req: Request, env: &Env, ns: &str) -> Result<Response> {
    let body = match read_body(req).await? {
        Ok(body) => body,
        Err(resp) => return resp,
    };
    match Create::parse(&body) {
        Ok(create) => forward(env, ns, Op::ClaimCreate, None, Some(&create)).await,
        Err(e) => invalid(&e),
    }
}

/// `POST /v1/{ns}/claims/{claim}/activate`, and the benchmark baseline's.
pub async fn activate(req: Request, env: &Env, ns: &str, claim: ClaimId, baseline: bool) -> Result<Response> {
    let key = req.headers().get(IDEMPOTENCY_KEY).ok().flatten();
    let operation = match request::operation(key.as_deref()) {
        Ok(operation) => operation,
        Err(e) => return invalid(&e),
    };
    let body = match read_body(req).await? {
        Ok(body) => body,
        Err(resp) => return resp,
    };
    let op = if baseline { Op::ClaimActivateBaseline } else { Op::ClaimActivate };
    match Activate::parse(claim, operation, &body) {
        Ok(call) => forward(env, ns, op, None, Some(&call)).await,
        Err(e) => invalid(&e),
    }
}

/// `POST /v1/{ns}/claims/{claim}/heartbeat`.
pub async fn heartbeat(req: Request, env: &Env, ns: &str, claim: ClaimId) -> Result<Response> {
    let body = match read_body(req).await? {
        Ok(body) => body,
        Err(resp) => return resp,
    };
    match Heartbeat::parse(claim, &body) {
        Ok(call) => forward(env, ns, Op::ClaimHeartbeat, None, Some(&call)).await,
        Err(e) => invalid(&e),
    }
}

/// `GET /v1/{ns}/claims/{claim}`.
pub async fn get(env: &Env, ns: &str, claim: &ClaimId) -> Result<Response> {
    forward::<()>(env, ns, Op::ClaimGet, Some(claim), None).await
}

/// `POST /v1/{ns}/_test/reap` (test hooks only): one recovery pass now.
pub async fn reap(env: &Env, ns: &str) -> Result<Response> {
    forward::<()>(env, ns, Op::ClaimReap, None, None).await
}

fn invalid(e: &InvalidRequest) -> Result<Response> {
    http::error(400, e.code(), &e.to_string())
}

/// The body, at most [`MAX_BODY_BYTES`] (413 otherwise: checked on
/// `Content-Length` before reading, and on the bytes read).
async fn read_body(mut req: Request) -> Result<std::result::Result<Vec<u8>, Result<Response>>> {
    let declared = req.headers().get("content-length").ok().flatten().and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(len) = declared.filter(|len| *len > MAX_BODY_BYTES as u64) {
        return Ok(Err(too_large(len)));
    }
    let body = req.bytes().await?;
    if body.len() > MAX_BODY_BYTES {
        return Ok(Err(too_large(body.len() as u64)));
    }
    Ok(Ok(body))
}

fn too_large(len: u64) -> Result<Response> {
    http::error(413, "body_too_large", &format!("the body has {len} bytes; at most {MAX_BODY_BYTES} are allowed"))
}

/// Sends `op` to the namespace's claim store; its answer is passed through.
async fn forward<T: Serialize>(
    env: &Env,
    ns: &str,
    op: Op,
    claim: Option<&ClaimId>,
    body: Option<&T>,
) -> Result<Response> {
    let secret = match internal::internal_key(env) {
        Ok(secret) => secret,
        Err(problem) => return http::error(500, "internal_key_missing", &problem.to_string()),
    };
    let mut target = Target::new(op, ns, None);
    if let Some(claim) = claim {
        target = target.with_key(&claim.0);
    }
    let body = body.map(serde_json::to_vec).transpose()?;
    let stub = internal::stub(env, CLAIMS_BINDING, ns)?;
    match internal::call(&stub, &target, Some(&secret), body.as_deref(), &[("content-type", "application/json")]).await
    {
        Ok(resp) => Ok(resp),
        Err(e) => {
            http::unavailable("claim_store_unavailable", &format!("the claim store did not answer ({e}); retry"), 1000)
        }
    }
}
