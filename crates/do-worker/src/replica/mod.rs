//! `Replica`: the Durable Object class hosting one replica of a namespace
//! (`{ns}:r0` the coordinator, `{ns}:r1`, `{ns}:r2` the peers). All
//! protocol decisions are `protocol::handoff::Replica`'s; this module is
//! the shell around it, in the shape of quinn's connection: one plain
//! state ([`ReplicaState`], `state.rs`) behind one `RefCell`, borrowed once
//! per entry point and never across an `.await`; the state queues
//! [`Effect`]s and this shell performs them once the borrow has ended.
//!
//! | entry point (the shell)        | the state's method |
//! |--------------------------------|--------------------|
//! | an internal request (`fetch`)  | `identify`, `boot` (after the registry admitted it), `on_msg`, `ask` (client requests), `status`, ... |
//! | a frame on a peer's socket     | `on_frame` |
//! | a delivery finished            | `delivered` |
//! | a socket opened, answered, ended | `socket_opened`, `socket_answered`, `socket_ended` |
//! | the wake-up, the end of a hold | `woke`, `hold_ended` |
//!
//! and after each, `settle` (due protocol timers, the next wake-up,
//! readiness, idle expiry). Follow a client PUT: [`Shell::client`] steps
//! `Input::Put` with a waiter (`ask`); the protocol's `Output::Send` queue
//! in the outbox and leave as an [`Effect::Deliver`]; the peer's answer
//! comes back through `delivered`, whose `PushAckBy` makes the protocol
//! reply; `Output::Reply` becomes an [`Effect::Answer`] that completes the
//! waiter, and the client gets its 200.
//!
//! Files by job: `state.rs` (the state, the driver, settling),
//! `transport.rs` (links, queues, batches), `versions.rs` (the wire
//! version each peer reads, for rolling deploys; pure), `outbox.rs` (the bounded queue
//! per destination and lane; pure), `client.rs` (client requests and every
//! 503 a replica answers), `waiters.rs` (deadlines; pure), `wake.rs` (the
//! wake-up token; pure), `lifecycle.rs` (admission, idle expiry,
//! stopping), `status.rs` (the status line), `trace.rs` (recorded steps),
//! `effects.rs` (what the shell performs).
//!
//! Memory only: nothing is written to Durable Object storage but the trace
//! of test runs. The pending wake-up (heartbeat every
//! `Config::heartbeat_ms`) and the heartbeats the other replicas send keep
//! the object from hibernating.
//!
//! No panics: no `unwrap`, no indexing on request or peer data; a borrow
//! of the state that fails (re-entrance: a bug, impossible as the shell is
//! written) is reported as one, never silently skipped.

mod client;
mod effects;
mod lifecycle;
mod outbox;
mod state;
mod status;
mod trace;
mod transport;
mod versions;
mod waiters;
mod wake;

use std::cell::RefCell;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future;
use protocol::handoff::{Input, MAX_MESSAGE_BYTES, WriteId};
use serde_json::json;
use worker::wasm_bindgen_futures::spawn_local;
use worker::{
    Delay, DurableObject, Env, Request, Response, Result, State, console_error, console_warn, durable_object,
};

use crate::auth::KeyProblem;
use crate::body;
use crate::conditions::Conditions;
use crate::error::{Code, HttpError, HttpResult};
use crate::hop::{Link, Via};
use crate::http::{self, BINARY, NO_WAKE_HEADER, WRITE_ID_HEADER};
use crate::internal::{self, now_ms, random_u64, random_u128, replica_binding};
use crate::isolate;
use crate::listing;
use crate::names::{self, ReplicaName};
use crate::namespaces::{self, Boot, calls};
use crate::socket::{Incoming, parse_answer};
use crate::tunnel;
use crate::vars;
use crate::vocab::{KvOp, MAX_PAUSE_MS, MAX_VALUE_BYTES, RESERVED_PREFIX};
use crate::wire::{ReplicaOp, Target};
use effects::{Delivery, Effect};
use state::{Deployment, ReplicaState};
use trace::TraceStore;
use transport::{DELIVERY_TIMEOUT, Delivered, Over};
pub use versions::WireVersion;

/// Largest batch body `POST /msg` reads: what an outbox sends at most.
const MAX_BATCH_BODY_BYTES: usize = outbox::MAX_BATCH_BYTES + MAX_MESSAGE_BYTES;

/// One replica object. The shell lives behind an `Rc` so that the tasks it
/// spawns (deliveries, wake-ups) and the sockets' callbacks can reach it.
#[durable_object]
pub struct Replica {
    shell: Rc<Shell>,
}

impl DurableObject for Replica {
    fn new(state: State, env: Env) -> Self {
        let ident =
            state.id().name().and_then(|name| ReplicaName::split_object_name(&name).map(|(ns, r)| (ns.to_string(), r)));
        Self { shell: Rc::new(Shell::new(state, env, ident)) }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let served = match internal::admit(&self.shell.secret, &req) {
            Ok(target) => self.shell.clone().serve(req, target).await,
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

/// What never changes in the object's life, and the one state.
pub(crate) struct Shell {
    object: State,
    env: Env,
    /// The internal secret, read once (see `internal::admit`).
    secret: std::result::Result<String, KeyProblem>,
    /// Where the driver's steps are recorded, in test runs that validate
    /// traces (`trace.rs`).
    trace: Option<TraceStore>,
    state: RefCell<ReplicaState>,
}

/// The wire version to write: the deployment's if this build writes it,
/// else this build's (a bad value is logged; `/health` shows the result).
pub fn wire_version(env: &Env) -> WireVersion {
    let Some(var) = vars::wire_version(env) else { return WireVersion::default() };
    WireVersion::parse(&var).unwrap_or_else(|| {
        console_error!("{}={var:?} is not a version this build writes; it writes its own", vars::WIRE_VERSION);
        WireVersion::default()
    })
}

/// A borrow of the state failed: re-entrance, which the shell never does.
fn reentered(at: &str) -> HttpError {
    console_error!("bug: the replica's state was borrowed twice ({at})");
    HttpError::internal(format!("bug: the replica's state was borrowed twice ({at})"))
}

impl Shell {
    fn new(object: State, env: Env, ident: Option<(String, ReplicaName)>) -> Self {
        let trace = TraceStore::open(&object, &env);
        let state = ReplicaState::new(
            (ident, Deployment { role: vars::role(&env), wire: wire_version(&env) }),
            random_u64(),
            now_ms(),
            trace.is_some(),
        );
        Shell { secret: internal::internal_key(&env), trace, object, env, state: RefCell::new(state) }
    }

    /// An entry point: the state is borrowed once, `f` runs at the current
    /// time, the state settles, the borrow ends, then the queued effects
    /// are performed.
    fn enter<R>(self: &Rc<Self>, at: &str, f: impl FnOnce(&mut ReplicaState, u64) -> R) -> HttpResult<R> {
        let now = now_ms();
        let (result, effects, born) = {
            let Ok(mut state) = self.state.try_borrow_mut() else { return Err(reentered(at)) };
            let result = f(&mut state, now);
            state.settle(now);
            let (old, new) = state.held_change();
            isolate::held_changed(old, new);
            (result, state.take_effects(), state.born)
        };
        self.perform(effects, born);
        Ok(result)
    }

    /// An entry point with no one to answer (a callback, a task's end) of
    /// the state instance `born` started: `f` runs only if that state is
    /// still the object's (not renewed since), and a bug is logged by
    /// [`Shell::enter`].
    fn quietly(self: &Rc<Self>, born: u64, at: &str, f: impl FnOnce(&mut ReplicaState, u64)) {
        let _ = self.enter(at, |state, now| {
            if state.born == born {
                f(state, now);
            }
        });
    }

    /// The current state instance's birth nonce.
    fn born(self: &Rc<Self>) -> HttpResult<u64> {
        self.enter("born", |state, _| state.born)
    }

    /// Performs the effects of state instance `born`, in order.
    fn perform(self: &Rc<Self>, effects: Vec<Effect>, born: u64) {
        for effect in effects {
            match effect {
                Effect::Deliver(delivery) => self.deliver(delivery, born),
                Effect::OpenSocket { to, id, link } => self.open_socket(to, id, link, born),
                Effect::WakeAt { token, at } => self.after(at, born, move |state, now| state.woke(token, now)),
                Effect::HoldUntil { to, lane, at } => {
                    self.after(at, born, move |state, now| state.hold_ended(to, lane, now));
                }
                Effect::Answer { tx, answer } => {
                    // The client request went away meanwhile: nobody to tell.
                    let _ = tx.send(answer);
                }
                Effect::Ready(waiting) => waiting.into_iter().for_each(|tx| {
                    let _ = tx.send(());
                }),
                Effect::Record(rows) => self.record(rows, born),
                Effect::Renew { why } => {
                    worker::console_log!("renewing this replica ({why}): its memory goes");
                    self.quietly(born, "renew", |state, now| state.renew(random_u64(), now));
                }
                Effect::Reset { why } => {
                    if why.starts_with("coordinator fenced") {
                        console_warn!("{why}: resetting this object");
                    }
                    let shell = self.clone();
                    spawn_local(async move { shell.reset(why).await });
                }
                Effect::StopNamespace { ns } => {
                    let shell = self.clone();
                    spawn_local(async move {
                        if let Err(e) = shell.stop_namespace(&ns, born).await {
                            console_warn!("idle expiry: the namespace did not stop ({e}); trying again later");
                            shell.quietly(born, "stop failed", |state, _| state.stop_failed());
                        }
                    });
                }
            }
        }
    }

    /// Calls `f` at `at` (unix ms), as an entry point.
    fn after(self: &Rc<Self>, at: u64, born: u64, f: impl FnOnce(&mut ReplicaState, u64) + 'static) {
        let shell = self.clone();
        spawn_local(async move {
            Delay::from(Duration::from_millis(at.saturating_sub(now_ms()))).await;
            shell.quietly(born, "timer", f);
        });
    }

    /// Carries a batch as the state decided, then reports how it went.
    fn deliver(self: &Rc<Self>, Delivery { to, lane, body, via }: Delivery, born: u64) {
        let shell = self.clone();
        let key = self.secret.clone();
        match via {
            Via::Frame { socket, answer, id, .. } => {
                // Sent now, in the order the state routed it: frames are
                // answered in order.
                if let Err(e) = socket.send(&body) {
                    console_warn!("a frame to {to} could not be sent: {e}");
                    self.quietly(born, "frame unsent", |state, _| state.socket_ended(to, id));
                }
                drop(socket);
                spawn_local(async move {
                    let outcome = match answer.await.ok().as_deref().and_then(parse_answer) {
                        Some((status, body)) => Delivered::Answer { status, body: body.to_vec() },
                        None => Delivered::Failed("the socket closed before it answered".into()),
                    };
                    shell.quietly(born, "delivered", |state, now| {
                        state.delivered((to, lane), outcome, Over::Frame, now)
                    });
                });
            }
            Via::Http(link) => spawn_local(async move {
                let outcome = post(&link, &key, &body).await;
                let over = Over::Kept(link);
                shell.quietly(born, "delivered", |state, now| state.delivered((to, lane), outcome, over, now));
            }),
            Via::NewLink => spawn_local(async move {
                let (outcome, made) = match shell.make_link(to) {
                    Ok(link) => (post(&link, &key, &body).await, Some(link)),
                    Err(e) => (Delivered::Failed(e.to_string()), None),
                };
                let over = Over::Made(made);
                shell.quietly(born, "delivered", |state, now| state.delivered((to, lane), outcome, over, now));
            }),
        }
    }

    /// A new link to replica `to` of this namespace.
    fn make_link(self: &Rc<Self>, to: ReplicaName) -> HttpResult<Rc<Link>> {
        let ns = self.enter("make link", |state, _| state.ident.clone().map(|(ns, _)| ns))?;
        let ns = ns.ok_or_else(|| HttpError::internal("no identity"))?;
        let object = to.object_name(&ns);
        let link =
            Link::to(&self.env, (replica_binding(to), &object), (&ns, Some(to)), ReplicaOp::Msg, ReplicaOp::Link)?;
        Ok(Rc::new(link))
    }

    /// Opens socket `id` of `link` (to `to`); its answers and end are
    /// entry points.
    fn open_socket(self: &Rc<Self>, to: ReplicaName, id: u64, link: Rc<Link>, born: u64) {
        let shell = self.clone();
        let weak = Rc::downgrade(self);
        spawn_local(async move {
            let Ok(key) = shell.secret.as_ref() else { return };
            let answers = weak.clone();
            let on_answer = move |frame| {
                if let Some(shell) = answers.upgrade() {
                    shell.quietly(born, "socket answer", |state, _| state.socket_answered(to, id, frame));
                }
            };
            let on_end = move || {
                if let Some(shell) = weak.upgrade() {
                    shell.quietly(born, "socket end", |state, _| state.socket_ended(to, id));
                }
            };
            let opened = link.open(key, DELIVERY_TIMEOUT, on_answer, on_end).await;
            if let Err(e) = &opened {
                worker::console_debug!("the socket to {to} did not open: {e}");
            }
            shell.quietly(born, "socket opened", |state, _| state.socket_opened(to, id, opened, now_ms()));
        });
    }

    /// Appends recorded rows to the trace store; a failed write stops the
    /// recording (one `Lost` row marks it).
    fn record(self: &Rc<Self>, rows: Vec<Vec<u8>>, born: u64) {
        let Some(trace) = &self.trace else { return };
        for row in rows {
            if trace.insert(born, row).is_err() {
                if let Ok(Some(lost)) = self.enter("trace failed", |state, _| state.trace_failed()) {
                    let _ = trace.insert(born, lost);
                }
                return;
            }
        }
    }

    /// `blockConcurrencyWhile` with a failing callback: the runtime resets
    /// the object (platform notes: the one clean way from Rust). The state
    /// dropped its records first (`ReplicaState::drop_for_reset`).
    async fn reset(&self, why: &str) {
        let why = why.to_string();
        let _ = self.object.block_concurrency_while(async move { Err::<(), _>(worker::Error::RustError(why)) }).await;
    }

    /// The idle expiry passed: mark the namespace idle in the registry, so
    /// that nothing but a client request starts it again; stop the peers;
    /// stop this replica.
    async fn stop_namespace(self: &Rc<Self>, ns: &str, born: u64) -> HttpResult<()> {
        let secret = self.secret.as_ref().map_err(internal::key_missing)?;
        // Of this replica's life only: the registry refuses to idle, and a
        // peer to stop, a namespace deleted and created again meanwhile.
        let life = self.enter("idle", |state, _| state.life.created_at())?;
        calls::idle(&self.env, secret, ns, life).await?;
        for peer in [ReplicaName::R1, ReplicaName::R2] {
            // A peer that does not hear it stops when it next hears from the
            // coordinator that the namespace is not running.
            if let Err(e) = namespaces::api::stop_replica(&self.env, secret, ns, peer, life).await {
                console_warn!("idle expiry: {ns}:{peer} did not confirm it stopped: {e}");
            }
        }
        // Only the state instance that went idle stops: one renewed
        // meanwhile (and perhaps booted by a client since) is not idle.
        self.quietly(born, "idle stop", |state, _| state.stop("the namespace went idle"));
        Ok(())
    }

    /// Boots the replica if the registry admits it; a no-op once booted.
    /// `client`: the request is a client's (it may wake an idle namespace);
    /// `life`: the namespace life its token is bound to, which the registry
    /// checks before it admits (a token of a deleted life wakes nothing).
    async fn admit(self: &Rc<Self>, client: bool, life: Option<u64>) -> HttpResult<()> {
        let ident = self.enter("admit", |state, _| {
            state.life.refuse_if_stopping()?;
            if state.booted() {
                return Ok(None);
            }
            state.ident.clone().map(|ident| Some((ident, state.born))).ok_or_else(|| HttpError::internal("no identity"))
        })??;
        let Some(((ns, me), born)) = ident else { return Ok(()) };
        let secret = self.secret.as_ref().map_err(internal::key_missing)?;
        match calls::boot(&self.env, secret, &ns, me, (client, life)).await? {
            Boot::Admitted { settings, created_at } => {
                let budget = vars::budget_bytes(&self.env);
                self.enter("boot", |state, now| {
                    if state.born != born {
                        // Stopped (or evicted) while the registry answered.
                        let message = "this replica was stopped while it booted; retry";
                        return Err(HttpError::unavailable(Code::ReplicaUnavailable, message, 1000));
                    }
                    state.boot((settings, created_at), budget, now, random_u64())
                })?
            }
            Boot::Refused { .. } if client => Err(namespaces::not_found(&ns)),
            Boot::Refused { state } => Err(HttpError::new(
                Code::NamespaceNotRunning,
                format!("namespace {ns:?} is not running ({})", state.map_or("unknown", |s| s.name())),
            )),
        }
    }

    /// Dispatches one internal request. Every operation but the health
    /// probe's `Ping` (its object is no replica of any namespace) first
    /// checks that this is the object the caller meant.
    async fn serve(self: Rc<Self>, req: Request, target: Target<ReplicaOp>) -> HttpResult {
        let born = self.born()?;
        if target.op == ReplicaOp::Ping {
            return Ok(http::json(&json!({ "ok": true, "object": "Replica", "born": format!("{born:016x}") }))?);
        }
        let (ns, me) = self.enter("identify", |state, _| state.identify(&target))??;
        match target.op {
            ReplicaOp::Ping => Err(HttpError::internal("served above")),
            ReplicaOp::Whoami => {
                // Booted in the life asked about (any, if none is named).
                let booted =
                    self.enter("whoami", |state, _| state.booted() && !state.life.of_other_life(target.life))?;
                Ok(http::json(&json!({ "name": me.as_str(), "born": format!("{born:016x}"), "booted": booted }))?)
            }
            ReplicaOp::Stop => {
                // Stopping renews the replica: a new state instance, not
                // booted, that the registry will not admit again while the
                // namespace is deleting or idle.
                // Renewed even if not booted: a boot the registry admitted
                // before the stop, still on its way, then boots nothing.
                // Not if it runs in another life than the stop's: a late
                // stop of a deleted life leaves the namespace created again.
                let stopped = self.enter("stop", |state, now| {
                    if state.life.of_other_life(target.life) {
                        return None;
                    }
                    let running = state.booted();
                    state.renew(random_u64(), now);
                    Some(running)
                })?;
                Ok(http::json(&match stopped {
                    Some(running) => json!({ "stopped": running, "running": false }),
                    None => json!({ "stopped": false, "running": true, "other_life": true }),
                })?)
            }
            ReplicaOp::Evict => {
                // The eviction test hook: the replica's memory is lost, as
                // on a real eviction (a new state instance, with a new birth
                // nonce, which the Worker checks). The loss of the whole
                // isolate is `cargo xtask dev restart` (a new process).
                let after = self.enter("evict", |state, now| {
                    state.renew(random_u64(), now);
                    state.born
                })?;
                Ok(http::json(&json!({ "evicted": me.as_str(), "born": format!("{after:016x}") }))?)
            }
            ReplicaOp::Trace => {
                let (page, next) = TraceStore::page(&self.object, target.ms.unwrap_or(0))?;
                Ok(http::trace_page(page, next)?)
            }
            ReplicaOp::Pause => {
                let ms = target.ms.unwrap_or(0).min(MAX_PAUSE_MS);
                let end = self.enter("pause", |state, now| state.pause(ms, now))?;
                // Where the trace stands: saved beside it, so the validator
                // finds a trace cut short of it (docs/verification.md 1.6).
                let trace = end.map(|(object, steps)| json!({ "object": format!("{object:016x}"), "steps": steps }));
                Ok(http::json(&json!({ "paused": me.as_str(), "ms": ms, "trace": trace }))?)
            }
            ReplicaOp::Status => {
                let line = self.enter("status", |state, now| state.status(me, now, isolate::wasm_memory_bytes()))?;
                match line {
                    Some(line) => Ok(http::json(&line)?),
                    None => Ok(http::json(&json!({ "name": me.as_str(), "status": "stopped" }))?),
                }
            }
            ReplicaOp::Msg => {
                let body = body::read(&req, MAX_BATCH_BODY_BYTES, Code::BodyTooLarge).await?;
                self.admit(false, None).await?;
                let full = self.peer_isolate_full();
                let replies = self.enter("msg", |state, now| state.on_msg(&body, full, now))??;
                let headers = worker::Headers::new();
                headers.set("content-type", BINARY)?;
                Ok(Response::from_bytes(replies)?.with_headers(headers))
            }
            ReplicaOp::Link => {
                self.admit(false, None).await?;
                self.accept_link()
            }
            ReplicaOp::Calls => self.accept_calls((ns, me)),
            ReplicaOp::List => self.list((ns, me), &target).await,
            ReplicaOp::Put => self.client(KvOp::Put, (ns, me), &req, &target).await,
            ReplicaOp::Delete => self.client(KvOp::Delete, (ns, me), &req, &target).await,
            ReplicaOp::Get => self.client(KvOp::Get, (ns, me), &req, &target).await,
        }
    }

    /// `GET /link`: a socket from another replica (registry admission as
    /// for `POST /msg`, once), each frame a batch answered as `POST /msg`
    /// answers one. The socket holds this replica only weakly: it closes
    /// with the replica, it does not keep it.
    fn accept_link(self: &Rc<Self>) -> HttpResult {
        let (id, born) = self.enter("link", |state, _| (state.next_incoming_id(), state.born))?;
        let frames = Rc::downgrade(self);
        let serve = move |frame: &[u8]| match frames.upgrade() {
            Some(shell) => shell.frame(frame),
            None => (503, b"this replica is gone".to_vec()),
        };
        let ends = Rc::downgrade(self);
        let on_end = move || {
            if let Some(shell) = ends.upgrade() {
                shell.quietly(born, "link end", |state, _| state.incoming_ended(id));
            }
        };
        let (response, socket) = Incoming::accept(serve, on_end)?;
        self.enter("link", |state, _| {
            if state.born == born {
                state.accepted(id, socket);
            }
        })?;
        Ok(response)
    }

    /// `GET /calls`: a socket from the claim object carrying its client
    /// calls (`crate::tunnel`), which only the coordinator serves. Nothing
    /// boots here: each call is admitted as its HTTP request is. The socket
    /// holds this replica only weakly, and goes with its state instance.
    fn accept_calls(self: &Rc<Self>, (ns, me): (String, ReplicaName)) -> HttpResult {
        if me != ReplicaName::R0 {
            let message = format!("client requests go to {ns}:r0, not {ns}:{me}");
            return Err(HttpError::new(Code::NotCoordinator, message));
        }
        let (id, born) = self.enter("calls", |state, _| (state.callers.next_id(), state.born))?;
        let frames = Rc::downgrade(self);
        let on_frame = move |frame: Vec<u8>| {
            if let Some(shell) = frames.upgrade() {
                shell.call(born, id, frame);
            }
        };
        let ends = Rc::downgrade(self);
        let on_end = move || {
            if let Some(shell) = ends.upgrade() {
                shell.quietly(born, "calls end", |state, _| state.callers.ended(id));
            }
        };
        let (response, socket) = Incoming::accept_later(on_frame, on_end)?;
        self.quietly(born, "calls", |state, _| state.callers.keep(id, socket));
        Ok(response)
    }

    /// One call on socket `id` of the state instance `born`: served as its
    /// HTTP request would be, and answered under its number when done. A
    /// frame without a number cannot be answered: its socket closes (the
    /// opener's calls on it fail, and are made again).
    fn call(self: &Rc<Self>, born: u64, id: u64, frame: Vec<u8>) {
        let Some((number, _)) = tunnel::split_number(&frame) else {
            self.quietly(born, "call", |state, _| state.callers.ended(id));
            return;
        };
        let bytes = frame.len();
        let serve = match self.enter("call", |state, _| state.born == born && state.callers.begin(id, bytes)) {
            Ok(serve) => serve,
            Err(_) => {
                // The state was busy (a bug, logged): the call cannot be
                // served, so its socket closes once the state is free.
                let shell = self.clone();
                spawn_local(async move { shell.quietly(born, "call refused", |state, _| state.callers.ended(id)) });
                return;
            }
        };
        if !serve {
            return;
        }
        let shell = self.clone();
        spawn_local(async move {
            let answer = shell.clone().serve_call(number, &frame).await;
            shell.quietly(born, "call answered", |state, _| {
                // An answer that cannot be made or sent closes the socket:
                // the opener's waiting calls fail at once, and are made again.
                let sent = state.callers.finish(id, bytes).map(|socket| answer.map(|a| socket.send(&a).is_ok()));
                if matches!(sent, Some(None | Some(false))) {
                    state.callers.ended(id);
                }
            });
        });
    }

    /// The answer frame to call `number` (`frame`): served as `fetch`
    /// serves its request, from the same target and headers, without making
    /// one (the socket's opener presented the internal key once); only
    /// client calls.
    async fn serve_call(self: Rc<Self>, number: u64, frame: &[u8]) -> Option<Vec<u8>> {
        let served = async {
            let call = tunnel::split_number(frame).and_then(|(_, rest)| tunnel::parse_call(rest));
            let (head, body) = call.ok_or_else(|| HttpError::new(Code::BadRequest, "a frame that is no call"))?;
            let (target, op) = tunnel::client_call(&head, body.len())?;
            let value = (op == KvOp::Put).then(|| body.to_vec());
            let (ns, me) = self.enter("identify", |state, _| state.identify(&target))??;
            self.client_call(op, (ns, me), &target, &head.headers, value).await
        };
        let answer = async {
            let mut resp = served.await.or_else(HttpError::respond)?;
            let headers: Vec<(String, String)> = resp.headers().entries().collect();
            let body = resp.bytes().await?;
            tunnel::reply_frame(number, resp.status_code(), &headers, &body)
                .map_err(|e| worker::Error::RustError(format!("encoding an answer: {e}")))
        };
        match answer.await {
            Ok(frame) => Some(frame),
            Err(e) => tunnel::reply_frame(number, 500, &[], e.to_string().as_bytes()).ok(),
        }
    }

    /// Whether this isolate is past the cap at which a peer takes no more
    /// records (`crate::isolate`).
    fn peer_isolate_full(&self) -> bool {
        !isolate::room_for(0, vars::isolate_cap_bytes(&self.env).saturating_add(isolate::PEER_MARGIN_BYTES))
    }

    /// One frame of a peer's socket: (status, body).
    fn frame(self: &Rc<Self>, frame: &[u8]) -> (u16, Vec<u8>) {
        let full = self.peer_isolate_full();
        match self.enter("frame", |state, now| state.on_frame(frame, full, now)) {
            Ok(answer) => answer,
            Err(e) => (500, e.to_string().into_bytes()),
        }
    }

    /// `POST /put`, `POST /delete`, `GET /get`: a client request, which
    /// only the coordinator `{ns}:r0` serves. It waits (bounded) for the
    /// coordinator to be ready, is stepped, and waits (bounded) for its
    /// answer.
    async fn client(
        self: &Rc<Self>,
        op: KvOp,
        (ns, me): (String, ReplicaName),
        req: &Request,
        target: &Target<ReplicaOp>,
    ) -> HttpResult {
        let headers: Vec<(String, String)> = req.headers().entries().collect();
        let value = match op {
            KvOp::Put => Some(body::read(req, MAX_VALUE_BYTES, Code::ValueTooLarge).await?),
            KvOp::Get | KvOp::Delete => None,
        };
        self.client_call(op, (ns, me), target, &headers, value).await
    }

    /// A client request with its `headers` and `value` (a `Put`'s body),
    /// however it came (an HTTP request, a call frame).
    async fn client_call(
        self: &Rc<Self>,
        op: KvOp,
        (ns, me): (String, ReplicaName),
        target: &Target<ReplicaOp>,
        headers: &[(String, String)],
        value: Option<Vec<u8>>,
    ) -> HttpResult {
        if me != ReplicaName::R0 {
            let message = format!("client requests go to {ns}:r0, not {ns}:{me}");
            return Err(HttpError::new(Code::NotCoordinator, message));
        }
        let key = target.key.as_deref().ok_or_else(|| HttpError::new(Code::BadRequest, "missing key"))?;
        let key = names::valid_key(key).map_err(|e| HttpError::new(Code::InvalidKey, format!("the key {e}")))?;
        let header = |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
        let wid = match header(WRITE_ID_HEADER) {
            Some(h) => WriteId::parse(h.trim())
                .ok_or_else(|| HttpError::new(Code::InvalidWriteId, "handoff-write-id must be 32 hex digits"))?,
            None => WriteId(random_u128()),
        };
        let conditions = match op {
            KvOp::Put | KvOp::Delete => Conditions::parse(op == KvOp::Put, header)?,
            KvOp::Get => Conditions::default(),
        };
        if header(NO_WAKE_HEADER).is_some() && !self.enter("no wake", |s, _| s.booted())? {
            let message = "the namespace's replicas are not running (its records went with them)";
            return Err(HttpError::new(Code::NamespaceNotRunning, message));
        }
        self.admit(true, target.life).await?;
        self.enter("token", |state, _| state.life.check_token(&ns, target.life))??;
        let grows = value.as_ref().map_or(0, |v| v.len().saturating_add(key.as_str().len()));
        if grows > 0 && !isolate::room_for(grows, vars::isolate_cap_bytes(&self.env)) {
            let message = format!(
                "this replica's isolate holds {} bytes for all the namespaces in it, near its cap of {}; nothing changed",
                isolate::held(),
                vars::isolate_cap_bytes(&self.env)
            );
            return Err(HttpError::new(Code::IsolateFull, message));
        }
        if let Some(ready) = self.enter("client", |state, now| state.wait_ready(now))? {
            let _ = future::select(ready, pin!(Delay::from(client::READY_WAIT))).await;
        }
        let name = key.as_str().to_string();
        let Conditions { cond, ttl_ms } = conditions;
        let if_match = conditions.if_match();
        let (input, wait): (Box<dyn FnOnce(_) -> Input>, _) = match (op, value) {
            (KvOp::Put, Some(value)) => {
                (Box::new(move |req| Input::Put { req, key, value, wid, cond, ttl_ms }), client::COMMIT_WAIT)
            }
            (KvOp::Delete, _) => (Box::new(move |req| Input::Delete { req, key, wid, if_match }), client::COMMIT_WAIT),
            _ => (Box::new(move |req| Input::Read { req, key }), client::CONFIRM_WAIT),
        };
        let answer = self.enter("ask", |state, now| state.ask(input, wait, now))??;
        // Dropped unanswered: the protocol instance it waited on is gone.
        let answer = answer.await.ok();
        match op {
            KvOp::Get => client::read_answer(&name, answer),
            KvOp::Put | KvOp::Delete => client::write_answer(answer),
        }
    }
}

impl Shell {
    /// `GET /list`: one page of the namespace's keys, which only the
    /// coordinator serves (confirmed as a read is); the reserved prefix is
    /// left out.
    async fn list(self: &Rc<Self>, (ns, me): (String, ReplicaName), target: &Target<ReplicaOp>) -> HttpResult {
        if me != ReplicaName::R0 {
            let message = format!("client requests go to {ns}:r0, not {ns}:{me}");
            return Err(HttpError::new(Code::NotCoordinator, message));
        }
        let page = listing::Page::from_target(target)?;
        self.admit(true, target.life).await?;
        self.enter("token", |state, _| state.life.check_token(&ns, target.life))??;
        if let Some(ready) = self.enter("list", |state, now| state.wait_ready(now))? {
            let _ = future::select(ready, pin!(Delay::from(client::READY_WAIT))).await;
        }
        let listing::Page { prefix, after, limit } = page;
        let hide = Some(RESERVED_PREFIX.to_string());
        let input = move |req| Input::List { req, prefix, after, limit, hide };
        let answer = self.enter("list", |state, now| state.ask(input, client::CONFIRM_WAIT, now))??;
        client::list_answer(answer.await.ok())
    }
}

/// One HTTP hop of `body` through `link`, presenting `key`.
async fn post(link: &Link, key: &std::result::Result<String, KeyProblem>, body: &[u8]) -> Delivered {
    let Ok(key) = key else { return Delivered::Failed("no internal key".into()) };
    match link.post(key, body, DELIVERY_TIMEOUT).await {
        Ok((status, body)) => Delivered::Answer { status, body },
        Err(e) => Delivered::Failed(e.to_string()),
    }
}
