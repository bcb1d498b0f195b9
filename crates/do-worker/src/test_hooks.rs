//! The test hooks' handlers (only with `HANDOFF_TEST_HOOKS=1`; the routes
//! are `crate::route::Hook`): evicting, pausing and inspecting replicas,
//! raw peer messages, the claims service's hooks, and the benchmark
//! baselines.

use futures_util::future::join_all;
use serde_json::{Value, json};
use worker::worker_sys::ext::{ResponseExt, WebSocketExt};
use worker::{Env, Request};

use crate::api::{self, KvCall, replica_json, replica_stub};
use crate::baseline;
use crate::body;
use crate::claims;
use crate::error::{Code, HttpError, HttpResult};
use crate::http;
use crate::internal::{self, ECHO_BINDING, MEM_BINDING, SQL_BINDING, replica_binding, secret};
use crate::names::ReplicaName;
use crate::route::{Baseline, Hook};
use crate::vocab::MAX_VALUE_BYTES;
use crate::wire::{EchoOp, ReplicaOp, Target};

/// Serves one hook.
pub async fn serve(hook: Hook, req: Request, env: &Env) -> HttpResult {
    match hook {
        Hook::Evict { ns, replica } => evict(env, &ns, replica).await,
        Hook::EvictAll { ns } => evict_all(env, &ns).await,
        Hook::Pause { ns, replica, ms } => {
            to_replica(env, &ns, replica, Target::new(ReplicaOp::Pause, &ns, Some(replica)).with_ms(ms)).await
        }
        Hook::Trace { ns, replica, after } => {
            to_replica(env, &ns, replica, Target::new(ReplicaOp::Trace, &ns, Some(replica)).with_ms(after)).await
        }
        Hook::Raw { ns, replica, auth } => raw(req, env, &ns, replica, auth).await,
        Hook::Link { ns, replica, auth } => link(env, &ns, replica, auth).await,
        Hook::Replicas { ns } => {
            let lines = api::replica_lines(env, &ns, ReplicaOp::Whoami, &secret(env)?).await;
            Ok(http::json(&json!({ "replicas": lines }))?)
        }
        Hook::Reap { ns } => claims::api::reap(env, &ns).await,
        Hook::Bulk { ns, count, reservation_ttl_ms } => claims::api::bulk(env, &ns, count, reservation_ttl_ms).await,
        Hook::Count { ns } => claims::api::count(env, &ns).await,
        Hook::Migrations { ns } => claims::api::migrations(env, &ns).await,
        Hook::BenchActivate { ns, claim } => claims::api::activate_baseline(req, env, &ns, claim).await,
        Hook::Bench { baseline, ns, key, op } => {
            let secret = secret(env)?;
            let call = KvCall::read(&req, op).await?;
            match baseline {
                Baseline::Mem => {
                    let target = Target::new(op, &ns, None).with_key(&key);
                    call.send(&internal::stub(env, MEM_BINDING, &ns)?, &target, &secret).await
                }
                Baseline::Sql => {
                    let target = Target::new(op, &ns, None).with_key(&key);
                    call.send(&internal::stub(env, SQL_BINDING, &ns)?, &target, &secret).await
                }
                Baseline::Echo => {
                    // The router lets only PUTs through to the echo.
                    let target = Target::new(EchoOp::Put, &ns, None).with_key(&key);
                    call.send(&internal::stub(env, ECHO_BINDING, &baseline::echo_front(&ns))?, &target, &secret).await
                }
            }
        }
    }
}

/// A replica's own answer to `target` (pause, trace), passed through.
async fn to_replica(env: &Env, ns: &str, r: ReplicaName, target: Target<ReplicaOp>) -> HttpResult {
    let secret = secret(env)?;
    Ok(internal::call(&replica_stub(env, ns, r)?, &target, Some(&secret), None, &[]).await?)
}

/// `POST /v1/{ns}/_test/evict/{replica}`: reset the object, then prove it
/// was reset (a new object instance has a new birth nonce).
async fn evict(env: &Env, ns: &str, r: ReplicaName) -> HttpResult {
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
    let failed = |message: String| HttpError::new(Code::EvictFailed, message);
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
async fn evict_all(env: &Env, ns: &str) -> HttpResult {
    let evicted = join_all(ReplicaName::ALL.map(|r| evict(env, ns, r))).await;
    for result in evicted {
        result?;
    }
    Ok(http::json(&json!({ "evicted": ["r0", "r1", "r2"], "namespace": ns }))?)
}

/// `POST /v1/{ns}/_test/raw/{replica}?auth=0|1`: the body goes to the
/// replica's peer-message endpoint untouched; its answer comes back as is.
async fn raw(req: Request, env: &Env, ns: &str, r: ReplicaName, auth: bool) -> HttpResult {
    let secret = secret(env)?;
    let body = body::read(&req, MAX_VALUE_BYTES, Code::ValueTooLarge).await?;
    let stub = replica_stub(env, ns, r)?;
    let key = if auth { Some(secret.as_str()) } else { None };
    let target = Target::new(ReplicaOp::Msg, ns, Some(r));
    Ok(internal::call(&stub, &target, key, Some(&body), &[("content-type", "application/json")]).await?)
}

/// `POST /v1/{ns}/_test/link/{r}?auth=0|1`: asks replica `r` for a socket
/// (`GET /link`) with or without the internal credential; answers
/// `{"status"}`, the status the replica answered (101: a socket, which is
/// closed at once).
async fn link(env: &Env, ns: &str, r: ReplicaName, auth: bool) -> HttpResult {
    let secret = secret(env)?;
    let key = if auth { Some(secret.as_str()) } else { None };
    let url = Target::new(ReplicaOp::Link, ns, Some(r)).url().map_err(|e| HttpError::internal(e.to_string()))?;
    let stub = internal::raw_stub(env, replica_binding(r), &r.object_name(ns))?;
    let resp = internal::upgrade(&stub, &url, key).await?;
    if let Some(socket) = resp.websocket() {
        socket.accept().map_err(worker::Error::from)?;
        socket.close_with_code_and_reason(1000, "test hook").map_err(worker::Error::from)?;
    }
    Ok(http::json(&json!({ "status": resp.status() }))?)
}
