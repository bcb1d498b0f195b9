//! The Cloudflare Worker in front of the replicated KV store.
//!
//! Built for `wasm32-unknown-unknown` by worker-build (driven by
//! `cargo xtask dev|deploy|test`) and run on workerd by wrangler. For now it
//! serves only:
//!
//! - `GET /health` → `{"ok":true,"service":"handoff",...}`;
//! - `GET /health?deep=1` → the same plus a round trip through a [`Replica`]
//!   Durable Object stub, proving the binding and migration are wired;
//! - any other method on `/health` → 405, any other path → 404, both JSON
//!   `{"error":{"code":..,"message":..}}`.
//!
//! No request path may panic: a Rust panic reinitialises the wasm instance
//! that every Durable Object in the isolate shares, wiping all of their
//! in-memory state. Errors are turned into JSON 5xx responses instead.

mod replica;
pub mod route;

pub use replica::Replica;

use route::{ErrorBody, Route};
use serde::Serialize;
use worker::{Context, Env, Headers, Request, Response, Result, console_error, event};

/// Name the service reports in `/health`.
const SERVICE: &str = "handoff";
/// Durable Object binding for [`Replica`], declared in wrangler.toml.
const REPLICA_BINDING: &str = "REPLICA";
/// The `Replica` instance the deep health check pings. A dedicated name keeps
/// the probe from ever touching the replicas the store will use.
const HEALTH_PROBE_REPLICA: &str = "health-probe";

#[derive(Serialize)]
struct Health {
    ok: bool,
    service: &'static str,
    version: &'static str,
    /// Whether `HANDOFF_TEST_HOOKS` is "1" (local `wrangler dev` only).
    test_hooks: bool,
    /// The replica's own answer, present for `?deep=1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    replica: Option<serde_json::Value>,
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    match handle(req, &env).await {
        Ok(resp) => Ok(resp),
        Err(err) => {
            // Logged with detail for `wrangler tail`/the dev console; the
            // client gets the same message in the JSON envelope.
            console_error!("internal error: {err}");
            error(500, "internal", &err.to_string())
        }
    }
}

async fn handle(req: Request, env: &Env) -> Result<Response> {
    let url = req.url()?;
    let method = req.method();
    match route::route(method.as_ref(), url.path(), url.query()) {
        Route::Health { deep } => health(env, deep).await,
        Route::MethodNotAllowed { allow } => {
            let msg = format!("{method} is not allowed on {}; use {allow}", url.path());
            let headers = Headers::new();
            headers.set("allow", allow)?;
            Ok(error(405, "method_not_allowed", &msg)?.with_headers(json_headers(headers)?))
        }
        Route::BadRequest { message } => error(400, "bad_request", &message),
        Route::NotFound => error(404, "not_found", &format!("no route for {method} {}", url.path())),
    }
}

async fn health(env: &Env, deep: bool) -> Result<Response> {
    let replica = if deep {
        match ping_replica(env).await {
            Ok(answer) => Some(answer),
            Err(err) => {
                let msg = format!("replica {HEALTH_PROBE_REPLICA:?} did not answer: {err}");
                return error(503, "replica_unreachable", &msg);
            }
        }
    } else {
        None
    };
    let body = Health {
        ok: true,
        service: SERVICE,
        version: env!("CARGO_PKG_VERSION"),
        test_hooks: test_hooks(env),
        replica,
    };
    Response::from_json(&body)
}

/// One request through a `Replica` stub; its JSON answer on 200.
async fn ping_replica(env: &Env) -> Result<serde_json::Value> {
    let stub = env.durable_object(REPLICA_BINDING)?.get_by_name(HEALTH_PROBE_REPLICA)?;
    // The host is never resolved (the stub routes to the object), but the
    // runtime requires an absolute URL.
    let mut resp = stub.fetch_with_str(replica::PING_URL).await?;
    if resp.status_code() != 200 {
        return Err(format!("status {}", resp.status_code()).into());
    }
    resp.json().await
}

/// `HANDOFF_TEST_HOOKS` is "1" only under `wrangler dev` (set from
/// `.dev.vars`); deployed workers get "0" from `[vars]`. Missing means off.
fn test_hooks(env: &Env) -> bool {
    env.var("HANDOFF_TEST_HOOKS").map(|v| v.to_string() == "1").unwrap_or(false)
}

/// The JSON error envelope with `status`.
pub(crate) fn error(status: u16, code: &str, message: &str) -> Result<Response> {
    Ok(Response::from_json(&ErrorBody::new(code, message))?.with_status(status))
}

/// `extra` plus the JSON content type (replacing a response's headers drops
/// the one `from_json` set).
fn json_headers(extra: Headers) -> Result<Headers> {
    extra.set("content-type", "application/json")?;
    Ok(extra)
}
