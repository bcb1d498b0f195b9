//! The registry's operations, as the Worker and the namespaces' objects call
//! them (the authenticated internal wire).

use serde_json::{Value, json};
use worker::{Env, Response};

use super::info::{Boot, Info};
use crate::error::{Code, HttpError, HttpResult};
use crate::internal::{self, REGISTRY_BINDING};
use crate::names::ReplicaName;
use crate::tokens;
use crate::wire::{RegistryOp, Target};

/// The name of the one registry object.
const REGISTRY_OBJECT: &str = "registry";

/// One call; the registry's answer (its errors included) as it gave it.
pub async fn call(env: &Env, secret: &str, target: &Target<RegistryOp>, body: Option<&[u8]>) -> HttpResult<Response> {
    let stub = internal::stub(env, REGISTRY_BINDING, REGISTRY_OBJECT)?;
    internal::call(&stub, target, Some(secret), body, &[("content-type", "application/json")]).await.map_err(|e| {
        HttpError::unavailable(Code::RegistryUnavailable, format!("the registry did not answer ({e})"), 1000)
    })
}

/// The namespace's info; `None` if it does not exist.
pub async fn get(env: &Env, secret: &str, ns: &str) -> HttpResult<Option<Info>> {
    let mut resp = call(env, secret, &Target::new(RegistryOp::Get, ns, None), None).await?;
    match resp.status_code() {
        200 => Ok(Some(resp.json().await?)),
        404 => Ok(None),
        status => Err(unexpected(status, &mut resp).await),
    }
}

/// The namespace's info, for a token bound to namespace life `life`
/// (`None`: any): 401 if the namespace is of another life or gone.
pub async fn get_in_life(env: &Env, secret: &str, ns: &str, life: Option<u64>) -> HttpResult<Option<Info>> {
    let info = get(env, secret, ns).await?;
    tokens::check_life(life, ns, info.as_ref().map(|i| i.created_at))?;
    Ok(info)
}

/// May `replica` of `ns` start (`client`: for a client request)?
pub async fn boot(
    env: &Env,
    secret: &str,
    ns: &str,
    replica: ReplicaName,
    (client, life): (bool, Option<u64>),
) -> HttpResult<Boot> {
    let body = json!({ "client": client }).to_string();
    let target = Target::new(RegistryOp::Boot, ns, Some(replica)).with_life(life);
    let mut resp = call(env, secret, &target, Some(body.as_bytes())).await?;
    match resp.status_code() {
        200 => Ok(resp.json().await?),
        // The client's token is for a life of the namespace that ended: the
        // registry refused it before changing anything.
        401 => {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            let message = body
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("the token's namespace was deleted")
                .to_string();
            Err(HttpError::new(Code::Unauthorized, message).with_header("www-authenticate", "Bearer"))
        }
        status => Err(unexpected(status, &mut resp).await),
    }
}

/// Marks `ns` idle (its replicas are stopping); whether it was active.
/// `life`: the namespace life idling (the registry refuses another).
pub async fn idle(env: &Env, secret: &str, ns: &str, life: Option<u64>) -> HttpResult<bool> {
    let mut resp = call(env, secret, &Target::new(RegistryOp::Idle, ns, None).with_life(life), None).await?;
    match resp.status_code() {
        200 => Ok(resp.json::<Value>().await?.get("idle").and_then(Value::as_bool).unwrap_or(false)),
        status => Err(unexpected(status, &mut resp).await),
    }
}

async fn unexpected(status: u16, resp: &mut Response) -> HttpError {
    let body = resp.text().await.unwrap_or_default();
    HttpError::internal(format!("the registry answered {status}: {body}"))
}
