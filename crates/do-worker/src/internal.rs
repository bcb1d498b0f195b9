//! Calls over the internal wire (Worker → object, replica → replica) and
//! the check every object runs first on what it receives.

use std::time::Duration;

use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Env, Request, Response, Result, Stub, web_sys};

use crate::auth::{self, KeyProblem};
use crate::error::{Code, HttpError, HttpResult};
use crate::names::ReplicaName;
use crate::wire::{Ops, Target};

/// Durable Object bindings, declared in wrangler.toml.
/// The replicas of role `r` (`{ns}:r0`, ...): one binding per role, so
/// that each role can live in a Worker script of its own (its own failure
/// domain; docs/operating.md 4.8, "Failure domains").
pub fn replica_binding(r: ReplicaName) -> &'static str {
    match r {
        ReplicaName::R0 => REPLICA_R0_BINDING,
        ReplicaName::R1 => REPLICA_R1_BINDING,
        ReplicaName::R2 => REPLICA_R2_BINDING,
    }
}
pub const REPLICA_R0_BINDING: &str = "REPLICA_R0";
pub const REPLICA_R1_BINDING: &str = "REPLICA_R1";
pub const REPLICA_R2_BINDING: &str = "REPLICA_R2";
pub const MEM_BINDING: &str = "MEM_BASELINE";
pub const SQL_BINDING: &str = "SQL_BASELINE";
pub const ECHO_BINDING: &str = "ECHO_BASELINE";
pub const CLAIMS_BINDING: &str = "CLAIMS";
pub const REGISTRY_BINDING: &str = "REGISTRY";

/// The deployment's internal secret, if usable.
pub fn internal_key(env: &Env) -> std::result::Result<String, KeyProblem> {
    let configured = env.var(auth::BINDING).ok().map(|v| v.to_string());
    auth::usable(configured.as_deref()).map(str::to_string)
}

/// The internal secret, or the 500 a caller gets without one (the Worker
/// fails closed).
pub fn secret(env: &Env) -> HttpResult<String> {
    internal_key(env).map_err(|problem| key_missing(&problem))
}

/// 500 `internal_key_missing`.
pub fn key_missing(problem: &KeyProblem) -> HttpError {
    HttpError::new(Code::InternalKeyMissing, problem.to_string())
}

/// The stub of object `name` in `binding`.
pub fn stub(env: &Env, binding: &str, name: &str) -> Result<Stub> {
    env.durable_object(binding)?.get_by_name(name)
}

/// One internal request. `key` is the credential to present (`None` only
/// for the test hook that proves objects refuse unauthenticated calls).
pub async fn call<O: Ops>(
    stub: &Stub,
    target: &Target<O>,
    key: Option<&str>,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> Result<Response> {
    let url = target.url().map_err(|e| worker::Error::RustError(format!("internal url: {e}")))?;
    let req = request(target.op.method(), &url, key, body, headers, None)?;
    stub.fetch_with_request(req.into()).await
}

/// The request of an internal call: `key` as the credential, then
/// `headers`; `timeout`, if any, enforced by the runtime (an `AbortSignal`).
fn request(
    method: &str,
    url: &str,
    key: Option<&str>,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
    timeout: Option<Duration>,
) -> Result<web_sys::Request> {
    let h = web_sys::Headers::new()?;
    if let Some(key) = key {
        h.set(auth::HEADER, key)?;
    }
    for (name, value) in headers {
        h.set(name, value)?;
    }
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    init.set_headers(&h);
    if let Some(body) = body {
        init.set_body(&js_sys::Uint8Array::from(body));
    }
    if let Some(timeout) = timeout {
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        init.set_signal(Some(&web_sys::AbortSignal::timeout_with_u32(ms)));
    }
    Ok(web_sys::Request::new_with_str_and_init(url, &init)?)
}

/// A stub as the runtime hands it out, for [`exchange`].
pub type RawStub = worker::worker_sys::DurableObject;

/// The stub of object `name` in `binding`, for [`exchange`].
pub fn raw_stub(env: &Env, binding: &str, name: &str) -> Result<RawStub> {
    Ok(stub(env, binding, name)?.into_rpc())
}

/// One internal `POST` of `body` to a prebuilt `url` (objects cache theirs
/// per destination), its answer read whole: (status, body). The hop between
/// replicas, on the web platform's types directly: workers-rs' `Response`
/// reads every response's `cf` and `websocket` and reads a body as a stream,
/// chunk by chunk (a reader lock taken and released per chunk); a CPU
/// profile of workerd under `bench kv` put those at about a tenth of the
/// replicated store's CPU (docs/BENCHMARKS.md). The runtime aborts the
/// exchange (request and answer) after `timeout`: its own timer, not one
/// more `setTimeout` and wasm closure per request.
pub async fn exchange(
    stub: &RawStub,
    url: &str,
    key: &str,
    body: &[u8],
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<(u16, Vec<u8>)> {
    let req = request("POST", url, Some(key), Some(body), headers, Some(timeout))?;
    let resp: web_sys::Response = JsFuture::from(stub.fetch_with_request(&req)?).await?.dyn_into()?;
    let buf = JsFuture::from(resp.array_buffer()?).await?;
    Ok((resp.status(), js_sys::Uint8Array::new(&buf).to_vec()))
}

/// The upgrade request of a [`crate::socket`] to a prebuilt `url` (the
/// object's link operation), presenting `key` (`None` only for the test
/// hook that proves objects refuse it): the runtime's answer, whose
/// WebSocket, if any, the caller accepts.
pub async fn upgrade(stub: &RawStub, url: &str, key: Option<&str>) -> Result<web_sys::Response> {
    let req = request("GET", url, key, None, &[("upgrade", "websocket")], None)?;
    Ok(JsFuture::from(stub.fetch_with_request(&req)?).await?.dyn_into()?)
}

/// What an object does first with every request: the credential, then the
/// URL, which must name one of the object class's operations `O`; else 403,
/// 404, 405 or 500. `expected` is the object's copy of the secret, read once
/// when it was constructed (a deployment's secrets do not change under a
/// running object).
pub fn admit<O: Ops>(expected: &std::result::Result<String, KeyProblem>, req: &Request) -> HttpResult<Target<O>> {
    let expected = expected.as_ref().map_err(key_missing)?;
    let presented = req.headers().get(auth::HEADER).ok().flatten();
    if !auth::matches(expected, presented.as_deref()) {
        return Err(HttpError::new(Code::Forbidden, "internal endpoint: requests must come from the Handoff Worker"));
    }
    let url = req.url().map_err(|e| HttpError::new(Code::BadRequest, format!("unreadable url: {e}")))?;
    let Some(target) = Target::<O>::parse(&url) else {
        return Err(HttpError::new(Code::NotFound, format!("no internal endpoint {}", url.path())));
    };
    if req.method().as_ref() != target.op.method() {
        return Err(HttpError::method_not_allowed(req.method().as_ref(), url.path(), target.op.method()));
    }
    Ok(target)
}

/// Host milliseconds (`Date.now()`).
pub fn now_ms() -> u64 {
    // `as` saturates (NaN → 0): never panics.
    js_sys::Date::now() as u64
}

/// Fresh randomness from `crypto.getRandomValues`. Falls back to
/// `Math.random` if the runtime refuses (never seen; keeps this total).
pub fn random_u128() -> u128 {
    let mut buf = [0u8; 16];
    if getrandom::getrandom(&mut buf).is_ok() {
        return u128::from_le_bytes(buf);
    }
    let part = || (js_sys::Math::random() * 9_007_199_254_740_992.0) as u128;
    (part() << 75) ^ (part() << 37) ^ part() ^ u128::from(now_ms())
}

pub fn random_u64() -> u64 {
    (random_u128() >> 64) as u64 ^ random_u128() as u64
}
