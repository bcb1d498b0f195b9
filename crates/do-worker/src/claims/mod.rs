//! Remora's claims service: `protocol::claim` on Durable Objects.
//!
//! - [`ClaimStore`] (one object per namespace, named `{ns}`, SQLite-backed):
//!   the durable store (`store.rs`, the authority: claims, attempts, the
//!   durable lock, operations) and the host of the procedures
//!   (`procedures.rs`). Its alarm runs the reaper.
//! - The coordination store (`leases.rs`): leases in the namespace's Handoff
//!   KV under `_remora/lease/`, reached through the coordinator `{ns}:r0`.
//! - `api.rs`: the public handlers in the Worker (validate, forward to the
//!   object over the authenticated internal wire); `request.rs`: the
//!   requests and their limits; `views.rs`: the answers; `error.rs`: the
//!   JSON errors.
//!
//! docs/remora.md section 6 explains the design and maps every await to the
//! spec (tla/RemoraClaimActivation.tla).

pub mod api;
mod error;
mod leases;
mod locks;
mod procedures;
pub mod request;
mod schema;
mod store;
mod views;

pub use leases::LEASE_PREFIX;

use std::cell::Cell;

use protocol::claim::{ClaimId, Millis};
use wasm_bindgen::JsValue;
use worker::{DurableObject, Env, Request, Response, Result, ScheduledTime, State, durable_object};

use crate::auth::KeyProblem;
use crate::error::{HttpError, HttpResult};
use crate::http;
use crate::internal::{self, now_ms};
use crate::names;
use crate::wire::{ClaimOp, Ops, Target};
use error::ClaimError;
use leases::LeaseStore;
use request::{Activate, Create, Heartbeat};
use store::DurableStore;

/// The claim store of one namespace.
#[durable_object]
pub struct ClaimStore {
    state: State,
    secret: std::result::Result<String, KeyProblem>,
    /// The namespace (the object's name), when the runtime tells it.
    name: Option<String>,
    durable: DurableStore,
    leases: LeaseStore,
    /// Whether the schema is known to be current in this instance.
    migrated: Cell<bool>,
}

impl DurableObject for ClaimStore {
    fn new(state: State, env: Env) -> Self {
        let secret = internal::internal_key(&env);
        let name = state.id().name();
        let durable = DurableStore::new(state.storage().sql());
        let leases = LeaseStore::new(env, secret.clone());
        Self { state, secret, name, durable, leases, migrated: Cell::new(false) }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        self.admit_and_serve(req).await.or_else(HttpError::respond)
    }

    /// The reaper: one recovery pass, then the alarm for the next deadline.
    /// An error fails the alarm, which the runtime retries.
    async fn alarm(&self) -> Result<Response> {
        let reaped = self.migrate().and_then(|()| procedures::reap(&self.durable)).map_err(to_worker)?;
        self.schedule_reaper(None).await.map_err(to_worker)?;
        Response::ok(format!("reaped {}", reaped.len()))
    }
}

fn to_worker(e: ClaimError) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

impl ClaimStore {
    async fn admit_and_serve(&self, mut req: Request) -> HttpResult {
        let target = internal::admit::<ClaimOp>(&self.secret, &req)?;
        // The namespace is the object's name; if the runtime does not say,
        // the (authenticated) caller's word is taken.
        if self.name.as_ref().is_some_and(|name| *name != target.ns) {
            let message = format!("this is the claim store of another namespace, not {:?}", target.ns);
            return Err(HttpError::new(400, "wrong_object", message));
        }
        names::valid_namespace(&target.ns)
            .map_err(|e| HttpError::new(400, "invalid_namespace", format!("the namespace {e}")))?;
        self.migrate()?;
        let body = match target.op.method() {
            "POST" => {
                req.bytes().await.map_err(|e| HttpError::new(400, "bad_request", format!("unreadable body: {e}")))?
            }
            _ => Vec::new(),
        };
        Ok(self.serve(&target, &body).await?)
    }

    fn migrate(&self) -> std::result::Result<(), ClaimError> {
        if !self.migrated.get() {
            schema::migrate(self.durable.sql()).map_err(store::StoreError::from)?;
            self.migrated.set(true);
        }
        Ok(())
    }

    async fn serve(&self, target: &Target<ClaimOp>, body: &[u8]) -> std::result::Result<Response, ClaimError> {
        let leases = self.leases.of(&target.ns);
        match target.op {
            ClaimOp::Create => {
                let create = request::internal(body, Create::validated)?;
                let now = now_ms();
                let row = self.durable.authorize(&create, now)?;
                self.schedule_reaper(row.reservation.as_ref().map(|r| r.expires_at)).await?;
                Ok(views::claim(201, &row, None, now)?)
            }
            ClaimOp::Activate => {
                let call = request::internal(body, Activate::validated)?;
                let answer = procedures::activate(&self.durable, &leases, &call).await?;
                Ok(views::activation(&call.operation, &call.request, &answer)?)
            }
            ClaimOp::ActivateBaseline => {
                let call = request::internal(body, Activate::validated)?;
                let answer = procedures::activate_without_lease_store(&self.durable, &call).await?;
                Ok(views::activation(&call.operation, &call.request, &answer)?)
            }
            ClaimOp::Heartbeat => {
                let call = request::internal(body, Heartbeat::validated)?;
                let outcome = procedures::heartbeat(&self.durable, &leases, &call).await?;
                Ok(views::heartbeat(&call.request, &outcome)?)
            }
            ClaimOp::Get => {
                let claim = ClaimId(target.key.clone().unwrap_or_default());
                let row = self.durable.claim(&claim)?.ok_or_else(|| ClaimError::UnknownClaim(claim.clone()))?;
                let lease = leases.read(&claim).await?;
                Ok(views::claim(200, &row, lease.as_ref(), now_ms())?)
            }
            ClaimOp::Reap => {
                let reaped = procedures::reap(&self.durable)?;
                self.schedule_reaper(None).await?;
                Ok(http::json(&serde_json::json!({ "reaped": reaped }))?)
            }
        }
    }

    /// Arms the alarm for the reaper: at `deadline` if that is earlier than
    /// the alarm already set, or (`None`) recomputed from every claim
    /// awaiting activation (cleared if there is none).
    async fn schedule_reaper(&self, deadline: Option<Millis>) -> std::result::Result<(), ClaimError> {
        let storage = self.state.storage();
        let at = match deadline {
            Some(at) => match storage.get_alarm().await? {
                Some(current) if u64::try_from(current).is_ok_and(|c| c <= at) => return Ok(()),
                _ => Some(at),
            },
            None => procedures::next_alarm(&self.durable.authorized()?, now_ms()),
        };
        match at {
            Some(at) => storage.set_alarm(ScheduledTime::new(js_sys::Date::new(&JsValue::from_f64(at as f64)))).await?,
            None => storage.delete_alarm().await?,
        }
        Ok(())
    }
}

impl From<worker::Error> for ClaimError {
    fn from(e: worker::Error) -> Self {
        ClaimError::Store(e.into())
    }
}
