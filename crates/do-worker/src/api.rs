//! The public API's handlers (after [`crate::route`] decided): each builds
//! internal requests from validated names only, sends them through the
//! objects' stubs, and answers in the public contract (JSON errors,
//! `Retry-After` on 503).

use futures_util::future::join_all;
use protocol::handoff::WriteId;
use serde_json::{Value, json};
use worker::worker_sys::ext::{ResponseExt, WebSocketExt};
use worker::{Env, Request, Result, Stub};

use crate::baseline;
use crate::error::{HttpError, HttpResult};
use crate::http::{self, WRITE_ID_HEADER};
use crate::internal::{self, ECHO_BINDING, MEM_BINDING, REPLICA_BINDING, SQL_BINDING, secret};
use crate::names::ReplicaName;
use crate::namespaces::{self, calls};
use crate::route::{Backend, KvOp, MAX_VALUE_BYTES};
use crate::wire::{EchoOp, ReplicaOp, Target};

fn replica_stub(env: &Env, ns: &str, r: ReplicaName) -> Result<Stub> {
    internal::stub(env, REPLICA_BINDING, &r.object_name(ns))
}

/// `GET|PUT|DELETE /v1/{ns}/kv/{key}` (and the baselines).
pub async fn kv(mut req: Request, env: &Env, backend: Backend, ns: &str, key: &str, op: KvOp) -> HttpResult {
    let secret = secret(env)?;
    let body = match op {
        KvOp::Get | KvOp::Delete => None,
        KvOp::Put => {
            let declared =
                req.headers().get("content-length").ok().flatten().and_then(|v| v.trim().parse::<u64>().ok());
            if declared.is_some_and(|len| len > MAX_VALUE_BYTES as u64) {
                return Err(too_large(declared.unwrap_or_default()));
            }
            let body = req.bytes().await?;
            if body.len() > MAX_VALUE_BYTES {
                return Err(too_large(body.len() as u64));
            }
            Some(body)
        }
    };
    let wid = if op == KvOp::Get {
        None
    } else {
        match req.headers().get(WRITE_ID_HEADER).ok().flatten() {
            Some(h) => Some(
                WriteId::parse(h.trim())
                    .ok_or_else(|| HttpError::new(400, "invalid_write_id", "handoff-write-id must be 32 hex digits"))?,
            ),
            None => Some(WriteId(internal::random_u128())),
        }
    };
    let wid = wid.map(|w| w.to_string());
    let headers: Vec<(&str, &str)> = wid.as_deref().map(|w| (WRITE_ID_HEADER, w)).into_iter().collect();
    let (secret, body) = (Some(secret.as_str()), body.as_deref());
    let answer = match backend {
        Backend::Replicated => {
            let target = Target::new(ReplicaOp::from(op), ns, Some(ReplicaName::R0)).with_key(key);
            internal::call(&replica_stub(env, ns, ReplicaName::R0)?, &target, secret, body, &headers).await
        }
        Backend::Mem => {
            let target = Target::new(op, ns, None).with_key(key);
            internal::call(&internal::stub(env, MEM_BINDING, ns)?, &target, secret, body, &headers).await
        }
        Backend::Sql => {
            let target = Target::new(op, ns, None).with_key(key);
            internal::call(&internal::stub(env, SQL_BINDING, ns)?, &target, secret, body, &headers).await
        }
        Backend::Echo => {
            // The router lets only PUTs through to the echo.
            let target = Target::new(EchoOp::Put, ns, None).with_key(key);
            let stub = internal::stub(env, ECHO_BINDING, &baseline::echo_front(ns))?;
            internal::call(&stub, &target, secret, body, &headers).await
        }
    };
    // An error: the object was reset (evicted) while serving, or is unreachable.
    answer.map_err(|e| {
        HttpError::unavailable("replica_unavailable", format!("the store did not answer ({e}); retry"), 1000)
    })
}

fn too_large(len: u64) -> HttpError {
    HttpError::new(
        413,
        "value_too_large",
        format!("the value has {len} bytes; at most {MAX_VALUE_BYTES} (1 MiB) are allowed"),
    )
}

/// `GET /v1/{ns}/status`: the namespace as the registry knows it, and the
/// three replicas' lines, asked in parallel (asking starts none of them: a
/// replica that is not running says so). `idle_expires_at` (unix ms) is
/// when the namespace stops its replicas if no client request comes first:
/// its data then goes.
pub async fn status(env: &Env, ns: &str) -> HttpResult {
    let secret = secret(env)?;
    let info = calls::get(env, &secret, ns).await?.ok_or_else(|| namespaces::not_found(ns))?;
    let lines = join_all(ReplicaName::ALL.map(|r| {
        let secret = secret.clone();
        async move {
            match replica_json(env, ns, r, ReplicaOp::Status, &secret).await {
                Ok(line) => line,
                Err(e) => json!({ "name": r.as_str(), "status": "unreachable", "error": e.to_string() }),
            }
        }
    }))
    .await;
    let idle_expires_at = lines.first().and_then(|r0| r0.get("idle_expires_at")).cloned().unwrap_or(Value::Null);
    Ok(http::json(&json!({
        "namespace": ns,
        "state": info.state,
        "settings": info.settings,
        "idle_expires_at": idle_expires_at,
        "replicas": lines,
    }))?)
}

/// `GET /v1/{ns}/_test/replicas`: whether each replica object runs, asked
/// without starting it.
pub async fn replicas(env: &Env, ns: &str) -> HttpResult {
    let secret = secret(env)?;
    let lines = join_all(ReplicaName::ALL.map(|r| {
        let secret = secret.clone();
        async move {
            match replica_json(env, ns, r, ReplicaOp::Whoami, &secret).await {
                Ok(line) => line,
                Err(e) => json!({ "name": r.as_str(), "error": e.to_string() }),
            }
        }
    }))
    .await;
    Ok(http::json(&json!({ "replicas": lines }))?)
}

/// A JSON answer from one replica (`status`, `whoami`).
async fn replica_json(env: &Env, ns: &str, r: ReplicaName, op: ReplicaOp, secret: &str) -> Result<Value> {
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
pub async fn evict(env: &Env, ns: &str, r: ReplicaName) -> HttpResult {
    let secret = secret(env)?;
    let born = |v: &Value| v.get("born").and_then(Value::as_str).map(str::to_string);
    let before = replica_json(env, ns, r, ReplicaOp::Whoami, &secret).await.ok().as_ref().and_then(born);
    let stub = replica_stub(env, ns, r)?;
    // Expected to fail: the object is reset while serving it.
    let evict = Target::new(ReplicaOp::Evict, ns, Some(r));
    let outcome = match internal::call(&stub, &evict, Some(&secret), None, &[]).await {
        Ok(resp) => format!("status {}", resp.status_code()),
        Err(e) => e.to_string(),
    };
    let failed = |message: String| HttpError::new(500, "evict_failed", message);
    let after = match replica_json(env, ns, r, ReplicaOp::Whoami, &secret).await {
        Ok(v) => born(&v),
        Err(e) => return Err(failed(format!("{ns}:{r} did not answer after its reset ({outcome}): {e}"))),
    };
    if after.is_none() || after == before {
        return Err(failed(format!("{ns}:{r} is the same instance after the reset ({outcome})")));
    }
    Ok(http::json(&json!({ "evicted": r.as_str(), "namespace": ns, "before": before, "after": after }))?)
}

/// `POST /v1/{ns}/_test/evict/all`: the three resets at once, so that no
/// replica is left to reseed the others: the namespace's memory is gone, as
/// after a deploy.
pub async fn evict_all(env: &Env, ns: &str) -> HttpResult {
    let evicted = join_all(ReplicaName::ALL.map(|r| evict(env, ns, r))).await;
    for result in evicted {
        result?;
    }
    Ok(http::json(&json!({ "evicted": ["r0", "r1", "r2"], "namespace": ns }))?)
}

/// `POST /v1/{ns}/_test/pause/{replica}?ms=N`.
pub async fn pause(env: &Env, ns: &str, r: ReplicaName, ms: u64) -> HttpResult {
    let secret = secret(env)?;
    let stub = replica_stub(env, ns, r)?;
    let target = Target::new(ReplicaOp::Pause, ns, Some(r)).with_ms(ms);
    Ok(internal::call(&stub, &target, Some(&secret), None, &[]).await?)
}

/// `GET /v1/{ns}/_test/trace/{replica}?after=N`: a page of the replica
/// object's recorded trace, as the object answers it.
pub async fn trace(env: &Env, ns: &str, r: ReplicaName, after: u64) -> HttpResult {
    let secret = secret(env)?;
    let stub = replica_stub(env, ns, r)?;
    let target = Target::new(ReplicaOp::Trace, ns, Some(r)).with_ms(after);
    Ok(internal::call(&stub, &target, Some(&secret), None, &[]).await?)
}

/// `POST /v1/{ns}/_test/raw/{replica}?auth=0|1`: the body goes to the
/// replica's peer-message endpoint untouched; its answer comes back as is.
pub async fn raw(mut req: Request, env: &Env, ns: &str, r: ReplicaName, auth: bool) -> HttpResult {
    let secret = secret(env)?;
    let body = req.bytes().await?;
    if body.len() > MAX_VALUE_BYTES {
        return Err(too_large(body.len() as u64));
    }
    let stub = replica_stub(env, ns, r)?;
    let key = if auth { Some(secret.as_str()) } else { None };
    let target = Target::new(ReplicaOp::Msg, ns, Some(r));
    Ok(internal::call(&stub, &target, key, Some(&body), &[("content-type", "application/json")]).await?)
}

/// `POST /v1/{ns}/_test/link/{r}?auth=0|1`: asks replica `r` for a socket
/// (`GET /link`) with or without the internal credential; answers
/// `{"status"}`, the status the replica answered (101: a socket, which is
/// closed at once).
pub async fn link(env: &Env, ns: &str, r: ReplicaName, auth: bool) -> HttpResult {
    let secret = secret(env)?;
    let key = if auth { Some(secret.as_str()) } else { None };
    let url = Target::new(ReplicaOp::Link, ns, Some(r)).url().map_err(|e| HttpError::internal(e.to_string()))?;
    let stub = internal::raw_stub(env, REPLICA_BINDING, &r.object_name(ns))?;
    let resp = internal::upgrade(&stub, &url, key).await?;
    if let Some(socket) = resp.websocket() {
        socket.accept().map_err(worker::Error::from)?;
        socket.close_with_code_and_reason(1000, "test hook").map_err(worker::Error::from)?;
    }
    Ok(http::json(&json!({ "status": resp.status() }))?)
}

/// `/health?deep=1`: one authenticated round trip through a `Replica` stub.
pub async fn ping(env: &Env, object: &str) -> Result<Value> {
    let secret = internal::internal_key(env).map_err(|p| worker::Error::RustError(p.to_string()))?;
    let stub = internal::stub(env, REPLICA_BINDING, object)?;
    let mut resp = internal::call(&stub, &Target::new(ReplicaOp::Ping, object, None), Some(&secret), None, &[]).await?;
    if resp.status_code() != 200 {
        return Err(format!("status {}", resp.status_code()).into());
    }
    resp.json().await
}
