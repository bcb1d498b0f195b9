//! The public API's handlers (after [`crate::route`] decided): each builds
//! internal requests from validated names only, sends them through the
//! objects' stubs, and answers in the public contract (JSON errors,
//! `Retry-After` on 503).

use futures_util::future::join_all;
use protocol::handoff::WriteId;
use serde_json::{Value, json};
use worker::{Env, Request, Response, Result, Stub};

use crate::http::{self, WRITE_ID_HEADER};
use crate::internal::{self, MEM_BINDING, REPLICA_BINDING, SQL_BINDING};
use crate::names::ReplicaName;
use crate::route::{Backend, KvOp, MAX_VALUE_BYTES};
use crate::wire::{Op, Target};

/// The internal secret, or the 500 the client gets without one.
fn secret(env: &Env) -> std::result::Result<String, Result<Response>> {
    internal::internal_key(env).map_err(|p| http::error(500, "internal_key_missing", &p.to_string()))
}

fn replica_stub(env: &Env, ns: &str, r: ReplicaName) -> Result<Stub> {
    internal::stub(env, REPLICA_BINDING, &r.object_name(ns))
}

/// `GET|PUT|DELETE /v1/{ns}/kv/{key}` (and the baselines).
pub async fn kv(mut req: Request, env: &Env, backend: Backend, ns: &str, key: &str, op: KvOp) -> Result<Response> {
    let secret = match secret(env) {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let (wire_op, body) = match op {
        KvOp::Get => (Op::Get, None),
        KvOp::Delete => (Op::Delete, None),
        KvOp::Put => {
            let declared =
                req.headers().get("content-length").ok().flatten().and_then(|v| v.trim().parse::<u64>().ok());
            if declared.is_some_and(|len| len > MAX_VALUE_BYTES as u64) {
                return too_large(declared.unwrap_or_default());
            }
            let body = req.bytes().await?;
            if body.len() > MAX_VALUE_BYTES {
                return too_large(body.len() as u64);
            }
            (Op::Put, Some(body))
        }
    };
    let wid = if op == KvOp::Get {
        None
    } else {
        match req.headers().get(WRITE_ID_HEADER).ok().flatten() {
            Some(h) => match WriteId::parse(h.trim()) {
                Some(wid) => Some(wid),
                None => return http::error(400, "invalid_write_id", "handoff-write-id must be 32 hex digits"),
            },
            None => Some(WriteId(internal::random_u128())),
        }
    };
    let (stub, replica) = match backend {
        Backend::Replicated => (replica_stub(env, ns, ReplicaName::R0)?, Some(ReplicaName::R0)),
        Backend::Mem => (internal::stub(env, MEM_BINDING, ns)?, None),
        Backend::Sql => (internal::stub(env, SQL_BINDING, ns)?, None),
    };
    let target = Target::new(wire_op, ns, replica).with_key(key);
    let wid = wid.map(|w| w.to_string());
    let headers: Vec<(&str, &str)> = wid.as_deref().map(|w| (WRITE_ID_HEADER, w)).into_iter().collect();
    match internal::call(&stub, &target, Some(&secret), body.as_deref(), &headers).await {
        Ok(resp) => Ok(resp),
        // The object was reset (evicted) while serving, or is unreachable.
        Err(e) => http::unavailable("replica_unavailable", &format!("the store did not answer ({e}); retry"), 1000),
    }
}

fn too_large(len: u64) -> Result<Response> {
    http::error(
        413,
        "value_too_large",
        &format!("the value has {len} bytes; at most {MAX_VALUE_BYTES} (1 MiB) are allowed"),
    )
}

/// `GET /v1/{ns}/status`: the three replicas' lines, asked in parallel.
pub async fn status(env: &Env, ns: &str) -> Result<Response> {
    let secret = match secret(env) {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let lines = join_all(ReplicaName::ALL.map(|r| {
        let secret = secret.clone();
        async move {
            match replica_json(env, ns, r, Op::Status, &secret).await {
                Ok(line) => line,
                Err(e) => json!({ "name": r.as_str(), "status": "unreachable", "error": e.to_string() }),
            }
        }
    }))
    .await;
    http::json(&json!({ "replicas": lines }))
}

/// A JSON answer from one replica (`status`, `whoami`).
async fn replica_json(env: &Env, ns: &str, r: ReplicaName, op: Op, secret: &str) -> Result<Value> {
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

/// `POST /v1/{ns}/_test/evict/{replica}`: reset the object, then prove it
/// was reset (a new object instance has a new birth nonce).
pub async fn evict(env: &Env, ns: &str, r: ReplicaName) -> Result<Response> {
    let secret = match secret(env) {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let born = |v: &Value| v.get("born").and_then(Value::as_str).map(str::to_string);
    let before = replica_json(env, ns, r, Op::Whoami, &secret).await.ok().as_ref().and_then(born);
    let stub = replica_stub(env, ns, r)?;
    // Expected to fail: the object is reset while serving it.
    let outcome = match internal::call(&stub, &Target::new(Op::Evict, ns, Some(r)), Some(&secret), None, &[]).await {
        Ok(resp) => format!("status {}", resp.status_code()),
        Err(e) => e.to_string(),
    };
    let after = match replica_json(env, ns, r, Op::Whoami, &secret).await {
        Ok(v) => born(&v),
        Err(e) => {
            return http::error(
                500,
                "evict_failed",
                &format!("{ns}:{r} did not answer after its reset ({outcome}): {e}"),
            );
        }
    };
    if after.is_none() || after == before {
        return http::error(500, "evict_failed", &format!("{ns}:{r} is the same instance after the reset ({outcome})"));
    }
    http::json(&json!({ "evicted": r.as_str(), "namespace": ns, "before": before, "after": after }))
}

/// `POST /v1/{ns}/_test/pause/{replica}?ms=N`.
pub async fn pause(env: &Env, ns: &str, r: ReplicaName, ms: u64) -> Result<Response> {
    let secret = match secret(env) {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let stub = replica_stub(env, ns, r)?;
    internal::call(&stub, &Target::new(Op::Pause, ns, Some(r)).with_ms(ms), Some(&secret), None, &[]).await
}

/// `POST /v1/{ns}/_test/raw/{replica}?auth=0|1`: the body goes to the
/// replica's peer-message endpoint untouched; its answer comes back as is.
pub async fn raw(mut req: Request, env: &Env, ns: &str, r: ReplicaName, auth: bool) -> Result<Response> {
    let secret = match secret(env) {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let body = req.bytes().await?;
    if body.len() > MAX_VALUE_BYTES {
        return too_large(body.len() as u64);
    }
    let stub = replica_stub(env, ns, r)?;
    let key = if auth { Some(secret.as_str()) } else { None };
    internal::call(&stub, &Target::new(Op::Msg, ns, Some(r)), key, Some(&body), &[("content-type", "application/json")])
        .await
}

/// `/health?deep=1`: one authenticated round trip through a `Replica` stub.
pub async fn ping(env: &Env, object: &str) -> Result<Value> {
    let secret = internal::internal_key(env).map_err(|p| worker::Error::RustError(p.to_string()))?;
    let stub = internal::stub(env, REPLICA_BINDING, object)?;
    let mut resp = internal::call(&stub, &Target::new(Op::Ping, object, None), Some(&secret), None, &[]).await?;
    if resp.status_code() != 200 {
        return Err(format!("status {}", resp.status_code()).into());
    }
    resp.json().await
}
