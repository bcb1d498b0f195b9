//! Remora's claims service: `protocol::claim` on Durable Objects.
//!
//! - [`ClaimStore`] (one object per namespace, named `{ns}`, SQLite-backed):
//!   the durable store (`store.rs`, the authority: claims, attempts, the
//!   durable lock, operations) and the host of the procedures
//!   (`procedures.rs`). Its alarm runs the reaper and the purge of finished
//!   claims, in bounded batches.
//! - The coordination store (`leases.rs`): leases in the namespace's Handoff
//!   KV under `_remora/lease/`, reached through the coordinator `{ns}:r0`.
//! - `api.rs`: the public handlers in the Worker (validate, forward to the
//!   object over the authenticated internal wire); `request.rs`: the
//!   requests and their limits; `views.rs`: the answers; `error.rs`: the
//!   JSON errors.
//!
//! The object serves a namespace only once the registry says it exists (a
//! request for an unknown namespace is a 404 and creates no table); it
//! learns the namespace's settings (the retention of finished claims) then.
//!
//! docs/remora.md section 6 explains the design and maps every await to the
//! spec (tla/RemoraClaimActivation.tla, tla/RemoraClaimLeaseLoss.tla).

pub mod api;
mod error;
mod leases;
mod locks;
mod procedures;
pub mod request;
mod schema;
mod state;
mod store;
mod views;

pub use leases::LEASE_PREFIX;

use std::cell::RefCell;
use std::rc::Rc;

use protocol::claim::types::deadline;
use protocol::claim::{ClaimId, ClaimRow, DurableReply, DurableRequest, Fence, Millis, WorkerId};
use wasm_bindgen::JsValue;
use worker::{DurableObject, Env, Request, Response, Result, ScheduledTime, State, durable_object};

use crate::auth::KeyProblem;
use crate::body;
use crate::error::{Code, HttpError, HttpResult};
use crate::http;
use crate::internal::{self, now_ms};
use crate::names;
use crate::namespaces::{self, State as NamespaceState, calls};
use crate::tokens;
use crate::wire::{ClaimOp, Ops, Target};
use error::ClaimError;
use leases::LeaseStore;
use request::{Activate, Bulk, Complete, Create, Heartbeat, ListPage};
use state::ClaimsState;
use store::{Authorized, DurableStore, Limits};

/// Claims one alarm purges at most (each also deletes its lease record).
const PURGE_BATCH: usize = 50;

/// The claim store of one namespace: what never changes in its life, and
/// its one state (in an `Rc`: the lease locks' guards give their lock back
/// to it when dropped).
#[durable_object]
pub struct ClaimStore {
    object: State,
    env: Env,
    secret: std::result::Result<String, KeyProblem>,
    /// The namespace (the object's name), when the runtime tells it.
    name: Option<String>,
    leases: LeaseStore,
    state: Rc<RefCell<ClaimsState>>,
}

impl DurableObject for ClaimStore {
    fn new(object: State, env: Env) -> Self {
        let secret = internal::internal_key(&env);
        let name = object.id().name();
        let leases = LeaseStore::new(env.clone(), secret.clone());
        Self { object, env, secret, name, leases, state: Rc::default() }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        self.admit_and_serve(req).await.or_else(HttpError::respond)
    }

    /// One batch of the reaper and one of the purge, then the alarm for
    /// what is left (at once if a batch was full). An error fails the
    /// alarm, which the runtime retries.
    async fn alarm(&self) -> Result<Response> {
        let Some(ns) = self.name.clone() else { return Response::ok("no namespace") };
        match self.open(&ns).await {
            Ok(()) => {}
            // The namespace is gone: nothing to reap, and nothing to keep.
            Err(e) if e.status() == Some(404) => {
                self.object.storage().delete_all().await?;
                return Response::ok("namespace gone");
            }
            Err(e) => return Err(worker::Error::RustError(e.to_string())),
        }
        let durable = self.durable().map_err(|e| worker::Error::RustError(e.to_string()))?;
        let (reaped, more_reaping) = procedures::reap(&durable).map_err(to_worker)?;
        let leases = self.leases.of(&ns, &self.state);
        let (lapsed, more_lapsed) = procedures::reap_executing(&durable, &leases).await.map_err(to_worker)?;
        let (purged, more_purging) = self.purge(&ns, &durable).await.map_err(to_worker)?;
        let more = more_reaping || more_lapsed || more_purging;
        self.schedule(&durable, None, more).await.map_err(to_worker)?;
        Response::ok(format!(
            "reaped {} awaiting activation, {} executing, purged {}",
            reaped.len(),
            lapsed.len(),
            purged
        ))
    }
}

fn to_worker(e: ClaimError) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

impl ClaimStore {
    async fn admit_and_serve(&self, req: Request) -> HttpResult {
        let target = internal::admit::<ClaimOp>(&self.secret, &req)?;
        // The namespace is the object's name; if the runtime does not say,
        // the (authenticated) caller's word is taken.
        if self.name.as_ref().is_some_and(|name| *name != target.ns) {
            let message = format!("this is the claim store of another namespace, not {:?}", target.ns);
            return Err(HttpError::new(Code::WrongObject, message));
        }
        names::valid_namespace(&target.ns)
            .map_err(|e| HttpError::new(Code::InvalidNamespace, format!("the namespace {e}")))?;
        if target.op == ClaimOp::Drop {
            return self.drop_everything(target.life).await;
        }
        let limit = match target.op {
            ClaimOp::Complete => request::MAX_INTERNAL_COMPLETE_BYTES,
            _ => request::MAX_BODY_BYTES,
        };
        let body = match target.op.method() {
            "POST" => body::read(&req, limit, Code::BodyTooLarge).await?,
            _ => Vec::new(),
        };
        // The body first: the life is checked after the last await before
        // serving, so a drop and a new life of the name meanwhile cannot
        // let an old life's token through.
        self.open(&target.ns).await?;
        let life = self.enter(|state| state.life)?;
        tokens::check_life(target.life, &target.ns, life)?;
        self.serve(&target, &body).await
    }

    /// The state, borrowed for one synchronous step (an entry point).
    fn enter<R>(&self, f: impl FnOnce(&mut ClaimsState) -> R) -> HttpResult<R> {
        let mut state = self.state.try_borrow_mut().map_err(|_| HttpError::internal(locks::Reentered.to_string()))?;
        Ok(f(&mut state))
    }

    /// The durable store, with the namespace's retention of finished claims
    /// and how much it holds at most.
    fn durable(&self) -> HttpResult<DurableStore> {
        let limits = self.enter(|state| {
            state.settings.as_ref().map(|s| {
                (s.claim_retention_ms(), Limits { max_claims: s.max_claims, max_claim_bytes: s.max_claim_bytes })
            })
        })?;
        let (retention, limits) =
            limits.ok_or_else(|| HttpError::internal("the claim store serves before it opened"))?;
        Ok(DurableStore::new(self.object.storage().sql(), retention, limits))
    }

    /// Makes sure the namespace exists (asking the registry once per object
    /// instance) and the schema is current. A namespace that does not exist
    /// gets a 404, before any table is created.
    async fn open(&self, ns: &str) -> HttpResult<()> {
        let (opened, drops) = self.enter(|state| (state.settings.is_some(), state.drops))?;
        if !opened {
            let secret = internal::secret(&self.env)?;
            let info = calls::get(&self.env, &secret, ns).await?;
            let (settings, life) = match info {
                Some(info) if info.state != NamespaceState::Deleting => (info.settings, info.created_at),
                _ => return Err(namespaces::not_found(ns)),
            };
            let current = self.enter(|state| {
                let current = state.drops == drops;
                if current {
                    state.settings = Some(settings);
                    state.life = Some(life);
                }
                current
            })?;
            if !current {
                let message = "the namespace was deleted while this request opened its claim store; retry";
                return Err(HttpError::unavailable(Code::ClaimStoreUnavailable, message, 1000));
            }
        }
        if !self.enter(|state| state.migrated)? {
            let storage = self.object.storage();
            schema::migrate(&storage).map_err(store::StoreError::from).map_err(ClaimError::from)?;
            if let Some(life) = self.enter(|state| state.life)? {
                schema::record_life(&storage.sql(), life).map_err(store::StoreError::from).map_err(ClaimError::from)?;
            }
            self.enter(|state| state.migrated = true)?;
        }
        Ok(())
    }

    /// `Drop` of namespace life `life`: the namespace is being deleted.
    /// Everything goes (rows, alarm); the next request asks the registry
    /// again. Not if the store is of another life (the name was deleted
    /// and created again since this drop was sent): then nothing of `life`
    /// is here.
    async fn drop_everything(&self, life: Option<u64>) -> HttpResult {
        let stored = schema::stored_life(&self.object.storage().sql())?;
        // Checked and marked in one step, before the first await: an open
        // under way then finds the drop counted and sets nothing up.
        let dropping = self.enter(|state| {
            if tokens::of_other_life(life, state.life.or(stored)) {
                return false;
            }
            state.settings = None;
            state.life = None;
            state.migrated = false;
            state.drops = state.drops.wrapping_add(1);
            true
        })?;
        if !dropping {
            return Ok(http::json(&serde_json::json!({ "dropped": false, "other_life": true }))?);
        }
        self.object.storage().delete_all().await?;
        self.object.storage().delete_alarm().await?;
        Ok(http::json(&serde_json::json!({ "dropped": true }))?)
    }

    async fn serve(&self, target: &Target<ClaimOp>, body: &[u8]) -> HttpResult {
        let durable = self.durable()?;
        Ok(self.serve_claims(target, body, &durable).await?)
    }

    async fn serve_claims(
        &self,
        target: &Target<ClaimOp>,
        body: &[u8],
        durable: &DurableStore,
    ) -> std::result::Result<Response, ClaimError> {
        let leases = self.leases.of(&target.ns, &self.state);
        match target.op {
            ClaimOp::Create => {
                let create = request::internal(body, Create::validated)?;
                let now = now_ms();
                match durable.authorize(&create, now)?? {
                    Authorized::New(row) => {
                        self.schedule(durable, row.reservation.as_ref().map(|r| r.expires_at), false).await?;
                        Ok(views::claim(201, &row, None, now)?)
                    }
                    Authorized::Again(row) => shown(&row, &leases).await,
                }
            }
            ClaimOp::Activate => {
                let call = request::internal(body, Activate::validated)?;
                let answer = procedures::activate(durable, &leases, &call).await?;
                self.schedule_purge(durable).await?;
                Ok(views::activation(&call.operation, &call.request, &answer, durable.lease_until(&call.request)?)?)
            }
            ClaimOp::ActivateBaseline => {
                let call = request::internal(body, Activate::validated)?;
                let answer = procedures::activate_without_lease_store(durable, &call).await?;
                Ok(views::activation(&call.operation, &call.request, &answer, durable.lease_until(&call.request)?)?)
            }
            ClaimOp::Heartbeat => {
                let call = request::internal(body, Heartbeat::validated)?;
                let outcome = procedures::heartbeat(durable, &leases, &call).await?;
                Ok(views::heartbeat(&call.request, &outcome)?)
            }
            ClaimOp::Complete => {
                let call = request::internal_within(body, request::MAX_INTERNAL_COMPLETE_BYTES, Complete::validated)?;
                let answer = procedures::complete(durable, &leases, &call).await?;
                self.schedule_purge(durable).await?;
                Ok(views::completion(&call.operation, &call.request, &answer)?)
            }
            ClaimOp::List => {
                let page = request::internal(body, ListPage::validated)?;
                let found = durable.list(page.state, page.after.as_ref(), page.limit)?;
                Ok(views::claim_page(&found.claims, found.next.as_ref(), &durable.usage()?, now_ms())?)
            }
            ClaimOp::Get => {
                let claim = ClaimId(target.key.clone().unwrap_or_default());
                let row = durable.claim(&claim)?.ok_or_else(|| ClaimError::UnknownClaim(claim.clone()))?;
                shown(&row, &leases).await
            }
            ClaimOp::Reap => {
                let (mut reaped, more) = procedures::reap(durable)?;
                let (lapsed, more_lapsed) = procedures::reap_executing(durable, &leases).await?;
                reaped.extend(lapsed);
                self.schedule(durable, None, more || more_lapsed).await?;
                Ok(http::json(&serde_json::json!({ "reaped": reaped }))?)
            }
            ClaimOp::Bulk => {
                let bulk: Bulk = request::internal(body, Ok)?;
                let now = now_ms();
                let expires_at = deadline(now, bulk.reservation_ttl_ms);
                for i in 0..bulk.count {
                    let authorize = DurableRequest::Authorize {
                        claim: ClaimId(format!("bulk-{i}")),
                        fence: Fence(1),
                        worker: WorkerId::from("w"),
                        reservation_expires_at: expires_at,
                        max_attempts: protocol::claim::DEFAULT_MAX_ATTEMPTS,
                    };
                    if let DurableReply::AuthorizeRefused { refused } = durable.transition(&authorize, now)? {
                        return Err(refused.into());
                    }
                }
                self.schedule(durable, Some(expires_at), false).await?;
                Ok(http::json(&serde_json::json!({ "authorized": bulk.count, "reservation_expires_at": expires_at }))?)
            }
            ClaimOp::Count => Ok(http::json(&durable.count_by_state()?)?),
            ClaimOp::Migrations => {
                let (idempotent, rolled_back) = schema::check_migrations(&self.object.storage())?;
                Ok(http::json(&serde_json::json!({ "idempotent": idempotent, "rolled_back": rolled_back }))?)
            }
            ClaimOp::Drop => Err(ClaimError::Store(store::StoreError::Unexpected {
                request: "drop".into(),
                reply: "served before".into(),
            })),
        }
    }

    /// One batch of the purge: the claims whose retention passed, each
    /// lease record first (without starting the namespace's replicas if
    /// they are not running), then its rows, if still due. In that order so
    /// that a lease store that fails leaves the rows, and the next alarm
    /// tries again; before, a record whose delete failed stayed for good,
    /// and a claim of the same id created again found it. How many were
    /// purged, and whether the batch was full.
    async fn purge(&self, ns: &str, durable: &DurableStore) -> std::result::Result<(usize, bool), ClaimError> {
        let now = now_ms();
        let due = durable.due_for_purge(now, PURGE_BATCH)?;
        let leases = self.leases.of(ns, &self.state);
        let mut purged = 0;
        for claim in &due {
            if leases.forget(claim, || durable.is_due_for_purge(claim, now)).await? && durable.purge(claim, now)? {
                purged += 1;
            }
        }
        Ok((purged, due.len() >= PURGE_BATCH))
    }

    /// After an activation or a completion, the claim may now be due
    /// earlier than the alarm: an executing claim at its recorded lease
    /// deadline (when the reaper looks at its lease), a finished one at its
    /// purge time.
    async fn schedule_purge(&self, durable: &DurableStore) -> std::result::Result<(), ClaimError> {
        let (due, purge) = durable.next_deadlines()?;
        self.schedule(durable, procedures::next_alarm(due, purge, now_ms(), false), false).await
    }

    /// Arms the alarm: at `deadline` if that is earlier than the alarm
    /// already set; or (`None`) recomputed from the store: at once if a
    /// batch left work (`more`), else the earliest reservation deadline or
    /// purge (cleared if there is none).
    async fn schedule(
        &self,
        durable: &DurableStore,
        deadline: Option<Millis>,
        more: bool,
    ) -> std::result::Result<(), ClaimError> {
        let storage = self.object.storage();
        let at = match deadline {
            Some(at) => match storage.get_alarm().await? {
                Some(current) if u64::try_from(current).is_ok_and(|c| c <= at) => return Ok(()),
                _ => Some(at),
            },
            None => {
                let (due, purge) = durable.next_deadlines()?;
                procedures::next_alarm(due, purge, now_ms(), more)
            }
        };
        match at {
            Some(at) => storage.set_alarm(ScheduledTime::new(js_sys::Date::new(&JsValue::from_f64(at as f64)))).await?,
            None if deadline.is_none() => storage.delete_alarm().await?,
            None => {}
        }
        Ok(())
    }
}

impl From<worker::Error> for ClaimError {
    fn from(e: worker::Error) -> Self {
        ClaimError::Store(e.into())
    }
}

/// A claim as GET shows it: its row and its lease record (200).
async fn shown(row: &ClaimRow, leases: &leases::Leases<'_>) -> std::result::Result<Response, ClaimError> {
    let lease = leases.read(&row.claim).await?;
    Ok(views::claim(200, row, lease.as_ref(), now_ms())?)
}
