//! The Cloudflare Worker in front of Handoff, the memory-only replicated KV
//! store, and its Durable Object classes.
//!
//! Built for `wasm32-unknown-unknown` by worker-build (driven by
//! `cargo xtask dev|deploy|test|bench`) and run on workerd by wrangler.
//!
//! Public API (see [`route`] for the exact decisions; docs/openapi.json is
//! the contract, served at `GET /v1/openapi.json`). Every route but `GET
//! /health` needs `Authorization: Bearer <token>` ([`tokens`]):
//!
//! - namespaces ([`namespaces`]): `PUT|GET|DELETE /v1/{ns}`, `GET /v1`;
//!   `POST /v1/_tokens` mints scoped tokens;
//! - `PUT|GET|DELETE /v1/{ns}/kv/{key}`, `GET /v1/{ns}/status`;
//! - the claims service ([`claims`]): `POST /v1/{ns}/claims`, `GET
//!   /v1/{ns}/claims/{claim}`, `POST /v1/{ns}/claims/{claim}/{activate|heartbeat}`;
//! - `GET /health` (`?deep=1` adds a round trip through a `Replica` stub);
//! - with `HANDOFF_TEST_HOOKS=1` (local dev only): `POST
//!   /v1/{ns}/_test/{evict|pause|raw}/{replica}`, `GET /v1/{ns}/_test/trace/{replica}`, `POST /v1/{ns}/_test/reap`,
//!   `GET /v1/{ns}/_test/replicas`, `GET|POST /v1/{ns}/_test/claims` and the
//!   benchmark baselines `/_bench/{mem|sql|echo}/{ns}/kv/{key}`,
//!   `/_bench/claims/{ns}/claims/{claim}/activate`.
//!
//! Objects: [`Registry`] (one: the namespaces), [`Replica`] (one per
//! namespace and replica: `{ns}:r0` is the coordinator, `{ns}:r1`,
//! `{ns}:r2` the peers), [`ClaimStore`] (one per namespace: the claims'
//! durable store, SQLite), [`MemBaseline`], [`SqlBaseline`] and
//! [`EchoBaseline`] (benchmark baselines). The objects' endpoints are
//! internal ([`wire`], authenticated by [`auth`]); no public route reaches
//! them.
//!
//! No request path may panic: a Rust panic reinitialises the wasm instance
//! that every Durable Object in the isolate shares, wiping all of their
//! in-memory state. Errors become JSON 4xx/5xx responses instead.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

mod api;
pub mod auth;
mod baseline;
mod body;
pub mod claims;
pub mod conditions;
pub mod error;
mod hop;
mod http;
mod internal;
mod isolate;
mod listing;
pub mod names;
pub mod namespaces;
pub mod openapi;
mod replica;
pub mod route;
mod socket;
mod sqlite;
mod test_hooks;
pub mod tokens;
mod tunnel;
mod vars;
pub mod vocab;
pub mod wire;

pub use baseline::{EchoBaseline, MemBaseline, SqlBaseline};
pub use claims::ClaimStore;
pub use namespaces::Registry;
pub use replica::Replica;

use error::{Code, HttpError, HttpResult};
use route::{Access, NsOp, Route};
use serde::Serialize;
use tokens::Bearer;
use worker::{Context, Env, Request, Response, Result, console_error, event};

/// Name the service reports in `/health`.
const SERVICE: &str = "handoff";
/// The `Replica` instance the deep health check pings. A dedicated name keeps
/// the probe from ever touching the replicas the store uses (namespace
/// replicas are always named `{ns}:r{0,1,2}`).
const HEALTH_PROBE_REPLICA: &str = "health-probe";

#[derive(Serialize)]
struct Health {
    ok: bool,
    service: &'static str,
    version: &'static str,
    /// The replicas' wire protocol: the newest version this build reads and
    /// writes, and the one this script's replicas write
    /// (`HANDOFF_WIRE_VERSION`; `cargo xtask deploy` reads both).
    protocol_version: u16,
    wire_version: u16,
    /// Whether `HANDOFF_TEST_HOOKS` is "1" (local `wrangler dev` only).
    test_hooks: bool,
    /// Whether the internal secret is configured and usable.
    internal_key: bool,
    /// Whether the admin token (client authentication) is configured.
    admin_token: bool,
    /// The wasm memory of the isolate that answered (it only grows: its
    /// peak), and the bytes the replicas in it hold.
    wasm_memory_bytes: usize,
    isolate_held_bytes: usize,
    /// The replica's own answer, present for `?deep=1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    replica: Option<serde_json::Value>,
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let head = req.method() == worker::Method::Head;
    let answered = handle(req, &env).await.or_else(HttpError::respond);
    // A HEAD is answered as its GET, without the body.
    let answered = match answered {
        Ok(resp) if head => Ok(Response::empty()?.with_status(resp.status_code()).with_headers(resp.headers().clone())),
        other => other,
    };
    match answered {
        Ok(resp) => Ok(resp),
        Err(err) => {
            // Logged with detail for `wrangler tail`/the dev console; the
            // client gets the same message in the JSON envelope.
            console_error!("internal error: {err}");
            HttpError::internal(err.to_string()).respond()
        }
    }
}

async fn handle(req: Request, env: &Env) -> HttpResult {
    let url = req.url()?;
    let method = req.method();
    let hooks = vars::test_hooks(env);
    let route = route::route(method.as_ref(), url.path(), url.query(), hooks);
    let (bearer, admin_token) = match route.access() {
        Access::Public => (None, None),
        access => {
            let (bearer, admin) = authenticate(&req, env)?;
            authorize(&bearer, &access)?;
            (Some(bearer), Some(admin))
        }
    };
    // The namespace life a scoped token is bound to travels with every
    // request for the namespace, to the object that knows the current one.
    let life = bearer.as_ref().and_then(Bearer::life);
    match route {
        Route::Health { deep } => health(env, deep).await,
        Route::OpenApi => Ok(openapi::response()?),
        Route::NamespaceList => namespaces::api::list(env).await,
        Route::Namespace { ns, op: NsOp::Put } => namespaces::api::put(req, env, &ns, life).await,
        Route::Namespace { ns, op: NsOp::Get } => namespaces::api::get(env, &ns, life).await,
        Route::Namespace { ns, op: NsOp::Delete } => namespaces::api::delete(env, &ns, life).await,
        Route::TokenMint => match (bearer, admin_token) {
            (Some(bearer), Some(admin)) => namespaces::api::mint(req, env, &bearer, &admin).await,
            _ => Err(HttpError::internal("minting without a bearer")),
        },
        Route::Kv { ns, key, op } => api::kv(req, env, &ns, &key, op, life).await,
        Route::KvList { ns, page } => api::list(env, &ns, &page, life).await,
        Route::Status { ns } => api::status(env, &ns, life).await,
        Route::ClaimCreate { ns } => claims::api::create(req, env, &ns, life).await,
        Route::ClaimGet { ns, claim } => claims::api::get(env, &ns, &claim, life).await,
        Route::ClaimActivate { ns, claim } => claims::api::activate(req, env, &ns, claim, life).await,
        Route::ClaimHeartbeat { ns, claim } => claims::api::heartbeat(req, env, &ns, claim, life).await,
        Route::ClaimComplete { ns, claim } => claims::api::complete(req, env, &ns, claim, life).await,
        Route::ClaimList { ns, page } => claims::api::list(env, &ns, &page, life).await,
        Route::Hook(hook) => {
            // The hooks reach objects by operations that carry no life: a
            // scoped token's is checked here.
            if life.is_some() {
                namespaces::calls::get_in_life(env, &internal::secret(env)?, hook.ns(), life).await?;
            }
            test_hooks::serve(hook, req, env).await
        }
        Route::Forbidden { code, message } | Route::BadRequest { code, message } => Err(HttpError::new(code, message)),
        Route::MethodNotAllowed { allow } => Err(HttpError::method_not_allowed(method.as_ref(), url.path(), allow)),
        Route::NotFound => Err(HttpError::new(Code::NotFound, format!("no route for {method} {}", url.path()))),
    }
}

/// Who the request speaks for (401 without a valid token; 500 if the
/// deployment has no admin token: it fails closed), and the admin token.
fn authenticate(req: &Request, env: &Env) -> HttpResult<(Bearer, String)> {
    let configured = env.var(tokens::ADMIN_BINDING).ok().map(|v| v.to_string());
    let admin = tokens::admin_token(configured.as_deref())?;
    let header = req.headers().get("authorization").ok().flatten();
    let bearer = tokens::authenticate(admin, header.as_deref(), internal::now_ms() / 1000)?;
    Ok((bearer, admin.to_string()))
}

/// 403 unless `bearer` has what `access` asks.
fn authorize(bearer: &Bearer, access: &Access) -> HttpResult<()> {
    let Access::Rights { ns, any_of } = access else { return Ok(()) };
    if any_of.iter().any(|&right| bearer.allows(ns.as_deref(), right)) {
        return Ok(());
    }
    let rights: Vec<&str> = any_of.iter().map(|r| r.name()).collect();
    let on = ns.as_deref().map_or("every namespace".to_string(), |ns| format!("namespace {ns:?}"));
    Err(HttpError::new(Code::Forbidden, format!("this token lacks the {} right on {on}", rights.join(" or "))))
}

async fn health(env: &Env, deep: bool) -> HttpResult {
    let replica = if deep {
        match api::ping(env, HEALTH_PROBE_REPLICA).await {
            Ok(answer) => Some(answer),
            Err(err) => {
                let msg = format!("replica {HEALTH_PROBE_REPLICA:?} did not answer: {err}");
                return Err(HttpError::new(Code::ReplicaUnreachable, msg));
            }
        }
    } else {
        None
    };
    Ok(http::json(&Health {
        ok: true,
        service: SERVICE,
        version: env!("CARGO_PKG_VERSION"),
        protocol_version: protocol::handoff::PROTOCOL_VERSION,
        wire_version: replica::wire_version(env).get(),
        test_hooks: vars::test_hooks(env),
        internal_key: internal::internal_key(env).is_ok(),
        admin_token: tokens::admin_token(env.var(tokens::ADMIN_BINDING).ok().map(|v| v.to_string()).as_deref()).is_ok(),
        wasm_memory_bytes: isolate::wasm_memory_bytes(),
        isolate_held_bytes: isolate::held(),
        replica,
    })?)
}
