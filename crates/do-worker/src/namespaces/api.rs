//! The public namespace routes, and minting tokens: the Worker asks the
//! registry, and on a delete stops the namespace's objects before the
//! registry forgets it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use worker::{Env, Request};

use super::calls;
use super::info::{Info, MAX_BODY_BYTES};
use crate::body;
use crate::error::{Code, HttpError, HttpResult};
use crate::http;
use crate::internal::{self, CLAIMS_BINDING, now_ms, replica_binding};
use crate::names::ReplicaName;
use crate::tokens::{self, Bearer, Grant, MAX_TTL_SECONDS, Right};
use crate::wire::{ClaimOp, RegistryOp, ReplicaOp, Target};

/// `PUT /v1/{ns}`: 201 created, 200 if it exists with the same settings.
/// (`life`, here and below: the namespace life the client's token is bound
/// to, which the registry checks.)
pub async fn put(req: Request, env: &Env, ns: &str, life: Option<u64>) -> HttpResult {
    let secret = internal::secret(env)?;
    let body = body::read(&req, MAX_BODY_BYTES, Code::BodyTooLarge).await?;
    calls::call(env, &secret, &Target::new(RegistryOp::Create, ns, None).with_life(life), Some(&body)).await
}

/// `GET /v1/{ns}`: its settings and state.
pub async fn get(env: &Env, ns: &str, life: Option<u64>) -> HttpResult {
    let secret = internal::secret(env)?;
    calls::call(env, &secret, &Target::new(RegistryOp::Get, ns, None).with_life(life), None).await
}

/// `GET /v1`: every namespace, the count and the limit.
pub async fn list(env: &Env) -> HttpResult {
    let secret = internal::secret(env)?;
    calls::call(env, &secret, &Target::new(RegistryOp::List, "*", None), None).await
}

/// `DELETE /v1/{ns}`: from now on none of its objects may start; stop its
/// replicas (their memory goes), empty its claim store, then forget it. If
/// an object cannot be confirmed stopped, the namespace stays `deleting`
/// (nothing of it can start) and the answer is a 503: retry the DELETE.
/// Every step names the life being deleted: a DELETE that overlapped
/// another, still stopping after the name was created again, leaves the
/// new life's objects and registry entry alone.
pub async fn delete(env: &Env, ns: &str, life: Option<u64>) -> HttpResult {
    let secret = internal::secret(env)?;
    let mut deleting =
        calls::call(env, &secret, &Target::new(RegistryOp::Delete, ns, None).with_life(life), None).await?;
    if deleting.status_code() != 200 {
        return Ok(deleting);
    }
    let life = Some(deleting.json::<Info>().await?.created_at);
    let incomplete = |what: String| {
        HttpError::unavailable(
            Code::DeleteIncomplete,
            format!("{what}; the namespace stays deleting: retry DELETE"),
            1000,
        )
    };
    for r in ReplicaName::ALL {
        stop_replica(env, &secret, ns, r, life).await.map_err(|e| incomplete(format!("{ns}:{r} did not stop: {e}")))?;
    }
    let claims = internal::stub(env, CLAIMS_BINDING, ns)?;
    let drop = Target::new(ClaimOp::Drop, ns, None).with_life(life);
    match internal::call(&claims, &drop, Some(&secret), None, &[]).await {
        Ok(resp) if resp.status_code() == 200 => {}
        Ok(resp) => return Err(incomplete(format!("the claim store answered {}", resp.status_code()))),
        Err(e) => return Err(incomplete(format!("the claim store did not answer: {e}"))),
    }
    // Refused (401) if the name has another life by now: this one's entry
    // is gone already.
    calls::call(env, &secret, &Target::new(RegistryOp::Forget, ns, None).with_life(life), None).await?;
    Ok(http::json(&json!({ "deleted": ns }))?)
}

/// Stops replica `r` of `ns` in namespace life `life` and checks that it
/// is not running in it (a fresh object instance that has not booted, or
/// one of another life, which the stop leaves alone). The namespace must
/// already refuse boots (deleting or idle), so nothing starts it again in
/// between.
pub async fn stop_replica(env: &Env, secret: &str, ns: &str, r: ReplicaName, life: Option<u64>) -> HttpResult<()> {
    let stub = internal::stub(env, replica_binding(r), &r.object_name(ns))?;
    let target = |op| Target::new(op, ns, Some(r)).with_life(life);
    // Fails when the object resets itself while answering: that is the stop.
    let _ = internal::call(&stub, &target(ReplicaOp::Stop), Some(secret), None, &[]).await;
    let stub = internal::stub(env, replica_binding(r), &r.object_name(ns))?;
    let mut resp = internal::call(&stub, &target(ReplicaOp::Whoami), Some(secret), None, &[]).await?;
    let status = resp.status_code();
    let answer: Value = resp.json().await.unwrap_or(Value::Null);
    match answer.get("booted").and_then(Value::as_bool) {
        Some(false) if status == 200 => Ok(()),
        _ => Err(HttpError::internal(format!("{ns}:{r} still runs ({status}: {answer})"))),
    }
}

/// `POST /v1/_tokens`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MintRequest {
    /// `null`: every namespace.
    namespace: Option<String>,
    rights: Vec<Right>,
    ttl_seconds: u64,
}

#[derive(Serialize)]
struct Minted<'a> {
    token: String,
    namespace: Option<&'a str>,
    rights: &'a [Right],
    /// Unix seconds.
    expires_at: u64,
}

/// `POST /v1/_tokens`: a token for a namespace (or all) with some rights,
/// minted by a bearer with `admin` there; it expires no later than the
/// bearer's own token. A token for one namespace needs the namespace to
/// exist, and ends with it (it is bound to its `created_at`).
pub async fn mint(req: Request, env: &Env, bearer: &Bearer, admin_token: &str) -> HttpResult {
    let body = body::read(&req, MAX_BODY_BYTES, Code::BodyTooLarge).await?;
    let asked: MintRequest = serde_json::from_slice(&body)
        .map_err(|e| HttpError::new(Code::InvalidBody, format!("the body is not a token request: {e}")))?;
    if let Some(ns) = &asked.namespace {
        crate::names::valid_namespace(ns)
            .map_err(|e| HttpError::new(Code::InvalidNamespace, format!("the namespace {e}")))?;
    }
    if asked.rights.is_empty() {
        return Err(HttpError::new(Code::InvalidRights, "rights must name at least one of read, write, claims, admin"));
    }
    if !(1..=MAX_TTL_SECONDS).contains(&asked.ttl_seconds) {
        let message = format!("ttl_seconds must be 1 to {MAX_TTL_SECONDS}, not {}", asked.ttl_seconds);
        return Err(HttpError::new(Code::InvalidTtl, message));
    }
    if !bearer.allows(asked.namespace.as_deref(), Right::Admin) {
        let on = asked.namespace.as_deref().map_or("every namespace".to_string(), |ns| format!("namespace {ns:?}"));
        return Err(HttpError::new(Code::Forbidden, format!("minting a token needs the admin right on {on}")));
    }
    let mut rights = asked.rights.clone();
    rights.sort();
    rights.dedup();
    let life = match &asked.namespace {
        Some(ns) => {
            let info = calls::get_in_life(env, &internal::secret(env)?, ns, bearer.life()).await?;
            Some(info.ok_or_else(|| super::not_found(ns))?.created_at)
        }
        None => None,
    };
    let exp = (now_ms() / 1000).saturating_add(asked.ttl_seconds).min(bearer.expires().unwrap_or(u64::MAX));
    let grant = Grant { ns: asked.namespace.clone(), rights, exp, life };
    let token = tokens::mint(admin_token, &grant);
    let minted = Minted { token, namespace: grant.ns.as_deref(), rights: &grant.rights, expires_at: grant.exp };
    Ok(http::json(&minted)?.with_status(201))
}
