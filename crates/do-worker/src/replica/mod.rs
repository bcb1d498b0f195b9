//! `Replica`: the Durable Object class hosting one replica of a namespace
//! (`{ns}:r0` the coordinator, `{ns}:r1`, `{ns}:r2` the peers). All
//! protocol decisions are `protocol::handoff::Replica`'s; this is the glue
//! that feeds it inputs and performs its outputs:
//!
//! | protocol                     | here |
//! |------------------------------|------|
//! | `Replica::boot`              | the first request of any kind to a fresh object (client call, peer message, status) |
//! | `Input::Message`             | `POST /msg` from another replica; replies to the sender ride back in the HTTP response |
//! | `Input::Put`/`Input::Delete` | `POST /put`, `POST /delete` from the Worker (coordinator only) |
//! | `Input::Timer`               | a `setTimeout` wake-up (`worker::Delay` in a spawned task) runs the due timers |
//! | `Output::Send`               | a spawned `fetch` through the addressee's stub; the replies in its response are fed back in |
//! | `Output::Reply`, `Output::ReadReply` | completes the waiting client request |
//! | `Output::SetTimer`           | the protocol's `Driver` keeps the deadlines; due-now timers run before returning |
//!
//! One file per job: this one dispatches the internal HTTP requests
//! ([`ReplicaOp`]); `driving.rs` drives the protocol (boot, steps, timers,
//! readiness); `transport.rs` carries messages between replicas (lanes,
//! deliveries) and `outbox.rs` queues them (bounds, batching, the
//! coordinator's thrifty sends); `client.rs` serves client reads and writes and
//! holds every 503 a replica answers; `lifecycle.rs` starts a replica only
//! when the registry admits it and stops it (idle expiry, deletion);
//! `wake.rs` is the wake-up bookkeeping.
//!
//! Memory only: nothing is written to Durable Object storage. The pending
//! `setTimeout` (heartbeat every `Config::heartbeat_ms`) and the heartbeats
//! the other replicas send keep the object from hibernating.
//!
//! No panics: no `unwrap`, no indexing on request or peer data, and no
//! `RefCell` borrow is ever held across an `.await` (every borrow is taken
//! and released inside a synchronous helper; `try_borrow*` turns a broken
//! invariant into an error response instead of a panic).

mod client;
mod driving;
mod lifecycle;
mod outbox;
mod trace;
mod transport;
mod waiters;
mod wake;

pub(crate) use client::Committed;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures_channel::oneshot;
use protocol::handoff::{Driver, Instance};
use serde::Serialize;
use serde_json::json;
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

use crate::auth::KeyProblem;
use crate::error::{HttpError, HttpResult};
use crate::hop::Link;
use crate::http::{self, NO_WAKE_HEADER};
use crate::internal::{self, now_ms, random_u64};
use crate::names::{self, ReplicaName};
use crate::namespaces::settings::Settings;
use crate::route::{KvOp, MAX_PAUSE_MS};
use crate::socket::Accepted;
use crate::wire::{ReplicaOp, Target};
use outbox::Outbox;
use trace::TraceStore;
use transport::LANES;
use waiters::Waiters;
use wake::WakeUp;

/// One replica object. The state lives behind an `Rc` so that spawned
/// tasks (timer wake-ups, peer sends) can hold it.
#[durable_object]
pub struct Replica {
    host: Rc<Host>,
}

impl DurableObject for Replica {
    fn new(state: State, env: Env) -> Self {
        let ident =
            state.id().name().and_then(|name| ReplicaName::split_object_name(&name).map(|(ns, r)| (ns.to_string(), r)));
        Self { host: Rc::new(Host::new(state, env, ident)) }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let served = match internal::admit(&self.host.secret, &req) {
            Ok(target) => self.host.clone().serve(req, target).await,
            Err(e) => Err(e),
        };
        served.or_else(HttpError::respond)
    }

    /// Never armed (the replica uses `setTimeout`, not storage alarms); a
    /// stray alarm is acknowledged rather than left to the panicking default.
    async fn alarm(&self) -> Result<Response> {
        Response::ok("no alarms")
    }
}

/// Counters shown in the status line, for tests and debugging.
#[derive(Default)]
struct Counters {
    msgs_in: Cell<u64>,
    msgs_out: Cell<u64>,
    /// Bytes of message batches this replica sent to the others: the
    /// batches of its deliveries and of the replies it returned (`cargo
    /// xtask bench scale` reads it for the idle traffic).
    bytes_out: Cell<u64>,
    /// Deliveries this replica sent to the others, socket frames or HTTP
    /// requests (each carries a batch: `msgs_out` / `deliveries_out` is
    /// the batching).
    deliveries_out: Cell<u64>,
    send_failures: Cell<u64>,
    refused: Cell<u64>,
}

fn bump(c: &Cell<u64>) {
    add(c, 1);
}

fn add(c: &Cell<u64>, n: usize) {
    c.set(c.get().saturating_add(u64::try_from(n).unwrap_or(u64::MAX)));
}

pub(crate) struct Host {
    state: State,
    env: Env,
    /// The internal secret, read once (see `internal::admit`).
    secret: std::result::Result<String, KeyProblem>,
    /// (namespace, replica), from the object's name (`{ns}:r1`), or from
    /// the first request if the runtime does not pass the name.
    ident: RefCell<Option<(String, ReplicaName)>>,
    /// Random nonce of this object instance (tells a reset apart).
    born: u64,
    born_at: u64,
    // The namespace (lifecycle.rs).
    /// The namespace's settings, from the registry when it admitted this
    /// replica.
    settings: RefCell<Option<Settings>>,
    /// The last client request (the coordinator's idle expiry).
    last_client_at: Cell<u64>,
    /// This replica is stopping: it serves nothing more.
    stopping: Cell<bool>,
    /// Test hook: peer messages in and out are dropped until then.
    paused_until: Cell<u64>,
    resetting: Cell<bool>,
    counters: Counters,
    // Driving the protocol (driving.rs).
    driver: RefCell<Option<Driver>>,
    /// Where the driver's steps are recorded, in test runs that validate
    /// traces (trace.rs).
    trace: Option<TraceStore>,
    /// The protocol instance the client waiters belong to.
    instance: Cell<Option<Instance>>,
    wake: RefCell<WakeUp>,
    // Transport (transport.rs).
    /// By replica index.
    links: RefCell<[Option<Rc<Link>>; 3]>,
    /// Sockets the other replicas opened to this one (`transport.rs`).
    incoming: RefCell<Accepted>,
    /// By replica index × lane.
    outboxes: RefCell<[[Outbox; LANES]; 3]>,
    /// The peer the coordinator waits for (the other one's pushes and
    /// confirms are held back briefly: `outbox.rs`).
    preferred: Cell<ReplicaName>,
    // Clients (client.rs).
    /// Client requests waiting for their `Output::Reply` or
    /// `Output::ReadReply`, each until its deadline.
    waiters: RefCell<Waiters<oneshot::Sender<client::Answer>>>,
    /// Client requests waiting for the coordinator to become ready.
    ready_waiters: RefCell<Vec<oneshot::Sender<()>>>,
    next_req: Cell<u64>,
}

impl Host {
    fn new(state: State, env: Env, ident: Option<(String, ReplicaName)>) -> Self {
        let born = random_u64();
        Host {
            trace: TraceStore::open(&state, &env, born),
            state,
            secret: internal::internal_key(&env),
            env,
            ident: RefCell::new(ident),
            born,
            born_at: now_ms(),
            settings: RefCell::new(None),
            last_client_at: Cell::new(now_ms()),
            stopping: Cell::new(false),
            paused_until: Cell::new(0),
            resetting: Cell::new(false),
            counters: Counters::default(),
            driver: RefCell::new(None),
            instance: Cell::new(None),
            wake: RefCell::new(WakeUp::default()),
            links: RefCell::new(Default::default()),
            incoming: RefCell::new(Accepted::default()),
            outboxes: RefCell::new(Default::default()),
            preferred: Cell::new(ReplicaName::R1),
            waiters: RefCell::new(Waiters::default()),
            ready_waiters: RefCell::new(Vec::new()),
            next_req: Cell::new(0),
        }
    }

    /// Dispatches one internal request. Every operation but the health
    /// probe's `Ping` (its object is no replica of any namespace) first
    /// checks that this is the object the caller meant.
    async fn serve(self: Rc<Self>, mut req: Request, target: Target<ReplicaOp>) -> HttpResult {
        let identify = || self.identify(&target);
        match target.op {
            ReplicaOp::Ping => {
                Ok(http::json(&json!({ "ok": true, "object": "Replica", "born": format!("{:016x}", self.born) }))?)
            }
            ReplicaOp::Whoami => {
                let (_, me) = identify()?;
                Ok(http::json(&json!({
                    "name": me.as_str(),
                    "born": format!("{:016x}", self.born),
                    "booted": self.booted(),
                }))?)
            }
            ReplicaOp::Stop => {
                identify()?;
                if !self.booted() {
                    return Ok(http::json(&json!({ "stopped": false, "running": false }))?);
                }
                self.stop("stopped by the Worker").await;
                Err(HttpError::new(500, "stop_failed", "the object survived its reset"))
            }
            ReplicaOp::Evict => {
                identify()?;
                self.evict().await
            }
            ReplicaOp::Trace => {
                identify()?;
                let (page, next) = TraceStore::page(&self.state, target.ms.unwrap_or(0))?;
                Ok(http::trace_page(page, next)?)
            }
            ReplicaOp::Pause => {
                let (_, me) = identify()?;
                let ms = target.ms.unwrap_or(0).min(MAX_PAUSE_MS);
                self.paused_until.set(now_ms().saturating_add(ms));
                Ok(http::json(&json!({ "paused": me.as_str(), "ms": ms }))?)
            }
            ReplicaOp::Status => {
                let (_, me) = identify()?;
                if !self.booted() {
                    return Ok(http::json(&json!({ "name": me.as_str(), "status": "stopped" }))?);
                }
                self.status_line(me)
            }
            ReplicaOp::Msg => {
                identify()?;
                let body = req.bytes().await?;
                self.admit(false).await?;
                self.on_msg(&body)
            }
            ReplicaOp::Link => {
                identify()?;
                self.admit(false).await?;
                self.on_link()
            }
            ReplicaOp::Put | ReplicaOp::Delete | ReplicaOp::Get => {
                let me = identify()?;
                let no_wake = req.headers().get(NO_WAKE_HEADER).ok().flatten().is_some();
                if no_wake && !self.booted() {
                    let message = "the namespace's replicas are not running (its records went with them)";
                    return Err(HttpError::new(410, "namespace_not_running", message));
                }
                self.admit(true).await?;
                self.note_client();
                let op = match target.op {
                    ReplicaOp::Put => KvOp::Put,
                    ReplicaOp::Delete => KvOp::Delete,
                    _ => KvOp::Get,
                };
                self.serve_client(op, me, req, &target).await
            }
        }
    }

    /// This object's (namespace, replica), checked against what the caller
    /// meant. The runtime passes the object's name; if it ever does not,
    /// the first caller's claim is adopted (all callers are authenticated).
    fn identify(&self, target: &Target<ReplicaOp>) -> HttpResult<(String, ReplicaName)> {
        let wrong = |message: String| HttpError::new(400, "wrong_object", message);
        let mut ident = self.ident.try_borrow_mut().map_err(|_| wrong("identity busy".into()))?;
        if ident.is_none() {
            let r = target.replica.ok_or_else(|| wrong("a replica request must name the replica (r=)".into()))?;
            names::valid_namespace(&target.ns).map_err(|e| wrong(format!("the namespace {e}")))?;
            *ident = Some((target.ns.clone(), r));
        }
        let Some((ns, me)) = ident.as_ref() else { return Err(wrong("no identity".into())) };
        if *ns != target.ns || target.replica.is_some_and(|r| r != *me) {
            let meant = target.replica.map_or("?", |r| r.as_str());
            return Err(wrong(format!("this is {ns}:{me}, not {}:{meant}", target.ns)));
        }
        Ok((ns.clone(), *me))
    }

    fn me(&self) -> Option<(String, ReplicaName)> {
        self.ident.try_borrow().ok().and_then(|i| i.clone())
    }

    fn status_line(&self, me: ReplicaName) -> HttpResult {
        let report = {
            let slot = self.driver.try_borrow().map_err(|_| driving::StepError::Busy)?;
            slot.as_ref().ok_or(driving::StepError::NotBooted)?.replica().status()
        };
        let now = now_ms();
        Ok(http::json(&StatusLine {
            name: me.as_str(),
            role: report.role,
            status: report.status.to_string(),
            epoch: report.epoch.0,
            known: report.known.0,
            keys: report.keys,
            tombstones: report.tombstones,
            bytes: report.bytes,
            budget: report.budget,
            floor: format!("{}.{}", report.floor.ep.0, report.floor.ver.0),
            pending: report.pending,
            pending_bytes: report.pending_bytes,
            generation: report.generation.map(|g| format!("{}-{:016x}", g.minted_at, g.nonce)),
            instance: self.instance.get().map(|i| format!("{}-{:016x}", i.born, i.nonce)),
            object: format!("{:016x}", self.born),
            uptime_ms: now.saturating_sub(self.born_at),
            wasm_memory_bytes: wasm_memory_bytes(),
            paused_ms: self.paused_until.get().saturating_sub(now),
            timers: self.driver.try_borrow().ok().and_then(|d| d.as_ref().map(Driver::armed)).unwrap_or(0),
            idle_expires_at: self.idle_expires_at(),
            preferred_peer: (me == ReplicaName::R0).then(|| self.preferred.get().as_str()),
            memory_budget_bytes: self.settings.try_borrow().ok().and_then(|s| s.as_ref()?.memory_budget_bytes),
            msgs_in: self.counters.msgs_in.get(),
            msgs_out: self.counters.msgs_out.get(),
            bytes_out: self.counters.bytes_out.get(),
            deliveries_out: self.counters.deliveries_out.get(),
            send_failures: self.counters.send_failures.get(),
            refused: self.counters.refused.get(),
        })?)
    }

    /// The eviction test hook: reset this object so its memory is lost, as
    /// on a real eviction. The request itself fails (the object is gone);
    /// the Worker confirms the reset by seeing a new birth nonce.
    async fn evict(self: &Rc<Self>) -> HttpResult {
        self.resetting.set(true);
        self.reset("evicted by the test hook").await?;
        Err(HttpError::new(500, "evict_failed", "the object survived its reset"))
    }

    /// `blockConcurrencyWhile` with a failing callback: the runtime resets
    /// the object (platform notes: the one clean way from Rust). The
    /// replica's records and queues are dropped first: the runtime discards
    /// the object, but this `Host` lives in the isolate's wasm memory until
    /// V8 happens to collect the object's wrapper (and the tasks holding
    /// it), so each reset used to keep a whole replica's records there
    /// (`cargo xtask bench scale` measured +5 to +16 MiB of wasm memory per
    /// eviction of an 8 MiB replica). `resetting` keeps it from booting
    /// again meanwhile.
    async fn reset(&self, why: &str) -> Result<()> {
        self.resetting.set(true);
        if let Ok(mut driver) = self.driver.try_borrow_mut() {
            *driver = None;
        }
        if let Ok(mut outboxes) = self.outboxes.try_borrow_mut() {
            *outboxes = Default::default();
        }
        if let Ok(mut links) = self.links.try_borrow_mut() {
            *links = Default::default();
        }
        if let Ok(mut incoming) = self.incoming.try_borrow_mut() {
            incoming.clear();
        }
        let why = why.to_string();
        self.state.block_concurrency_while(async move { Err::<(), _>(worker::Error::RustError(why)) }).await
    }
}

/// Bytes of the isolate's wasm linear memory: what the 128 MB isolate
/// limit counts of the Rust side (`cargo xtask bench scale` reports it).
#[cfg(target_arch = "wasm32")]
fn wasm_memory_bytes() -> usize {
    core::arch::wasm32::memory_size::<0>().saturating_mul(64 * 1024)
}

/// Not a wasm build (host unit tests): no isolate.
#[cfg(not(target_arch = "wasm32"))]
fn wasm_memory_bytes() -> usize {
    0
}

/// One replica's entry in `GET /v1/{ns}/status`.
#[derive(Serialize)]
struct StatusLine {
    name: &'static str,
    role: &'static str,
    status: String,
    epoch: u64,
    known: u64,
    keys: usize,
    /// Tombstones not yet collected.
    tombstones: usize,
    /// Bytes of keys, values and tombstones this replica holds.
    bytes: usize,
    /// The namespace's memory budget (a write beyond it gets a 507).
    budget: usize,
    /// The tombstone floor, `ep.ver`.
    floor: String,
    pending: usize,
    /// Bytes of the coordinator's uncommitted writes.
    pending_bytes: usize,
    generation: Option<String>,
    instance: Option<String>,
    object: String,
    uptime_ms: u64,
    /// The wasm linear memory of the isolate this replica runs in (shared
    /// by every object of the isolate; it only grows, so it is the peak).
    wasm_memory_bytes: usize,
    paused_ms: u64,
    timers: usize,
    /// The coordinator: when the namespace stops if no client request
    /// comes first (unix ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    idle_expires_at: Option<u64>,
    /// The coordinator: the peer it waits for (thrifty sends, `outbox.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    preferred_peer: Option<&'static str>,
    /// The namespace's memory budget (`None`: the protocol's default).
    memory_budget_bytes: Option<u64>,
    msgs_in: u64,
    msgs_out: u64,
    /// Bytes sent to the other replicas (deliveries and replies).
    bytes_out: u64,
    /// Deliveries to the other replicas (each carries a batch).
    deliveries_out: u64,
    send_failures: u64,
    refused: u64,
}
