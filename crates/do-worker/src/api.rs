//! The public API's KV and status handlers (after [`crate::route`]
//! decided): each builds internal requests from validated names only, sends
//! them through the objects' stubs, and answers in the public contract
//! (JSON errors, `Retry-After` on 503).

use futures_util::future::join_all;
use protocol::handoff::WriteId;
use serde_json::{Value, json};
use worker::{Env, Request, Result, Stub};

use crate::body;
use crate::conditions::Conditions;
use crate::error::{Code, HttpError, HttpResult};
use crate::http::{self, WRITE_ID_HEADER};
use crate::internal::{self, replica_binding, secret};
use crate::listing::Page;
use crate::names::ReplicaName;
use crate::namespaces::{self, calls};
use crate::vocab::{KvOp, MAX_VALUE_BYTES};
use crate::wire::{Ops, ReplicaOp, Target};

pub fn replica_stub(env: &Env, ns: &str, r: ReplicaName) -> Result<Stub> {
    internal::stub(env, replica_binding(r), &r.object_name(ns))
}

/// What a KV request carries to the object that serves it: the value (a
/// PUT's, read with its limit) and the write id (the client's, or a fresh
/// one; none for a GET).
pub struct KvCall {
    pub value: Option<Vec<u8>>,
    pub wid: Option<String>,
    pub conditions: Conditions,
}

impl KvCall {
    pub async fn read(req: &Request, op: KvOp) -> HttpResult<KvCall> {
        // The conditions are refused here if malformed, before anything is
        // read or sent; the coordinator reads them again from the headers
        // passed on.
        let conditions = match op {
            KvOp::Put | KvOp::Delete => {
                let headers: Vec<(String, String)> = req.headers().entries().collect();
                Conditions::parse(op == KvOp::Put, |name| {
                    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
                })?
            }
            KvOp::Get => Conditions::default(),
        };
        let value = match op {
            KvOp::Put => Some(body::read(req, MAX_VALUE_BYTES, Code::ValueTooLarge).await?),
            KvOp::Get | KvOp::Delete => None,
        };
        let wid = match (op, req.headers().get(WRITE_ID_HEADER).ok().flatten()) {
            (KvOp::Get, _) => None,
            (_, Some(h)) => Some(
                WriteId::parse(h.trim())
                    .ok_or_else(|| HttpError::new(Code::InvalidWriteId, "handoff-write-id must be 32 hex digits"))?,
            ),
            (_, None) => Some(WriteId(internal::random_u128())),
        };
        Ok(KvCall { value, wid: wid.map(|w| w.to_string()), conditions })
    }

    /// Sends the call to `stub` as `target`; a failure to reach the object
    /// (it was reset while serving, or is unreachable) is a 503.
    pub async fn send<O: Ops>(&self, stub: &Stub, target: &Target<O>, secret: &str) -> HttpResult {
        let conditions = self.conditions.headers();
        let mut headers: Vec<(&str, &str)> = self.wid.as_deref().map(|w| (WRITE_ID_HEADER, w)).into_iter().collect();
        headers.extend(conditions.iter().map(|(name, value)| (*name, value.as_str())));
        store_answer(internal::call(stub, target, Some(secret), self.value.as_deref(), &headers).await)
    }
}

/// The coordinator's answer, or a 503 with `Retry-After` if there was none:
/// the object could not be reached, or the runtime answered for it (its
/// script not running, its isolate replaced mid-request: a plain-text 5xx
/// that is none of the store's JSON errors).
fn store_answer(answer: worker::Result<worker::Response>) -> HttpResult {
    let unavailable = |e: String| {
        HttpError::unavailable(Code::ReplicaUnavailable, format!("the store did not answer ({e}); retry"), 1000)
    };
    let answer = answer.map_err(|e| unavailable(e.to_string()))?;
    let ours = answer
        .headers()
        .get("content-type")
        .ok()
        .flatten()
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with(crate::http::BINARY));
    if answer.status_code() >= 500 && !ours {
        return Err(unavailable(format!("the runtime answered {}", answer.status_code())));
    }
    Ok(answer)
}

/// `GET|PUT|DELETE /v1/{ns}/kv/{key}`: served by the coordinator `{ns}:r0`.
/// (`life`, here and below: the namespace life the client's token is bound
/// to, which the coordinator checks.)
pub async fn kv(req: Request, env: &Env, ns: &str, key: &str, op: KvOp, life: Option<u64>) -> HttpResult {
    let secret = secret(env)?;
    let call = KvCall::read(&req, op).await?;
    let target = Target::new(ReplicaOp::from(op), ns, Some(ReplicaName::R0)).with_key(key).with_life(life);
    call.send(&replica_stub(env, ns, ReplicaName::R0)?, &target, &secret).await
}

/// `GET /v1/{ns}/kv?prefix=&after=&limit=`: one page of the keys, from the
/// coordinator.
pub async fn list(env: &Env, ns: &str, page: &Page, life: Option<u64>) -> HttpResult {
    let secret = secret(env)?;
    let target = page.target(ns).with_life(life);
    store_answer(internal::call(&replica_stub(env, ns, ReplicaName::R0)?, &target, Some(&secret), None, &[]).await)
}

/// `GET /v1/{ns}/status`: the namespace as the registry knows it, and the
/// three replicas' lines, asked in parallel (asking starts none of them: a
/// replica that is not running says so). `idle_expires_at` (unix ms) is
/// when the namespace stops its replicas if no client request comes first:
/// its data then goes.
pub async fn status(env: &Env, ns: &str, life: Option<u64>) -> HttpResult {
    let secret = secret(env)?;
    let info = calls::get_in_life(env, &secret, ns, life).await?.ok_or_else(|| namespaces::not_found(ns))?;
    let lines = replica_lines(env, ns, ReplicaOp::Status, &secret).await;
    let idle_expires_at = lines.first().and_then(|r0| r0.get("idle_expires_at")).cloned().unwrap_or(Value::Null);
    Ok(http::json(&json!({
        "namespace": ns,
        "state": info.state,
        "settings": info.settings,
        "idle_expires_at": idle_expires_at,
        "replicas": lines,
    }))?)
}

/// The three replicas' JSON answers to `op`, asked in parallel; an error
/// becomes a line that says so.
pub async fn replica_lines(env: &Env, ns: &str, op: ReplicaOp, secret: &str) -> Vec<Value> {
    join_all(ReplicaName::ALL.map(|r| async move {
        match replica_json(env, ns, r, op, secret).await {
            Ok(line) => line,
            Err(e) => json!({ "name": r.as_str(), "status": "unreachable", "error": e.to_string() }),
        }
    }))
    .await
}

/// A JSON answer from one replica (`status`, `whoami`).
pub async fn replica_json(env: &Env, ns: &str, r: ReplicaName, op: ReplicaOp, secret: &str) -> Result<Value> {
    let stub = replica_stub(env, ns, r)?;
    let mut resp = internal::call(&stub, &Target::new(op, ns, Some(r)), Some(secret), None, &[]).await?;
    if resp.status_code() != 200 {
        return Err(worker::Error::RustError(format!(
            "status {}: {}",
            resp.status_code(),
            resp.text().await.unwrap_or_default()
        )));
    }
    resp.json().await
}

/// `/health?deep=1`: one authenticated round trip through a `Replica` stub.
pub async fn ping(env: &Env, object: &str) -> Result<Value> {
    let secret = internal::internal_key(env).map_err(|p| worker::Error::RustError(p.to_string()))?;
    let stub = internal::stub(env, replica_binding(ReplicaName::R0), object)?;
    let mut resp = internal::call(&stub, &Target::new(ReplicaOp::Ping, object, None), Some(&secret), None, &[]).await?;
    if resp.status_code() != 200 {
        return Err(format!("status {}", resp.status_code()).into());
    }
    resp.json().await
}
