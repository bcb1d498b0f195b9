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
//! | `Input::Timer`               | a `setTimeout` wake-up (`worker::Delay` in a spawned task) |
//! | `Output::Send`               | a spawned `fetch` through the addressee's stub; the replies in its response are fed back in |
//! | `Output::Reply`              | completes the waiting client request |
//! | `Output::SetTimer`           | the timer table; due-now timers run before returning |
//!
//! Memory only: nothing is written to Durable Object storage. The pending
//! `setTimeout` (heartbeat every `Config::heartbeat_ms`) and the heartbeats
//! the other replicas send keep the object from hibernating.
//!
//! No panics: no `unwrap`, no indexing on request or peer data, and no
//! `RefCell` borrow is ever held across an `.await` (every borrow is taken
//! and released inside a synchronous helper; `try_borrow*` turns a broken
//! invariant into an error response instead of a panic).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_channel::oneshot;
use futures_util::future::{self, Either};
use protocol::handoff::coordinator::Phase;
use protocol::handoff::peer::PeerStatus;
use protocol::handoff::{
    self as proto, Body, ClientRequestId, Config, HandleError, Input, Instance, Key, Message, Millis, Output, Read,
    ReplicaId, RoleView, Status, Timer, Value, WriteId, WriteReply,
};
use serde::Serialize;
use serde_json::value::RawValue;
use worker::wasm_bindgen_futures::spawn_local;
use worker::{Delay, DurableObject, Env, Request, Response, Result, State, Stub, console_warn, durable_object};

use crate::auth::KeyProblem;
use crate::http::{self, WRITE_ID_HEADER};
use crate::internal::{self, REPLICA_BINDING, now_ms, random_u64};
use crate::names::{self, ReplicaName};
use crate::route::MAX_PAUSE_MS;
use crate::timers::Timers;
use crate::wire::{Op, Target};

/// How long a client request waits for a recovering coordinator before it
/// gets a 503. Recovery is two round trips to the peers (collect, then
/// announce): milliseconds when both answer.
const READY_WAIT: Duration = Duration::from_secs(2);
/// How long a write waits for its commit (a peer's ack) before a 503. The
/// write stays pending and may still commit; a retry with the same
/// `handoff-write-id` is answered from it rather than written twice.
const COMMIT_WAIT: Duration = Duration::from_secs(10);
/// Due-now timer steps run before a batch of outputs is done (recovery
/// asks for its next step by arming the retry timer at `now`).
const MAX_SYNC_STEPS: usize = 64;
/// Requests in flight per lane to one other replica. Further messages
/// queue and leave together in the next request: under load one round
/// trip carries many pushes (fewer requests per write, which is what the
/// CPU pays for), and while the link is idle nothing waits. Two lanes per
/// destination (gossip, which carries whole memories, apart from
/// everything else, so a large snapshot never delays a push) x two
/// destinations = 4 connections, within the platform's 6.
const MAX_IN_FLIGHT: usize = 1;
/// Lanes: 0 = protocol traffic, 1 = gossip.
const LANES: usize = 2;
/// Messages per batch, and bytes (a batch holds at least one message).
const MAX_BATCH: usize = 256;
const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;
/// A delivery not answered by then frees its slot (the protocol retries
/// whatever it still needs).
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);

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
        let target = match internal::admit(&self.host.secret, &req) {
            Ok(target) => target,
            Err(resp) => return resp,
        };
        self.host.clone().serve(req, target).await
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
    send_failures: Cell<u64>,
    refused: Cell<u64>,
}

fn bump(c: &Cell<u64>) {
    c.set(c.get().saturating_add(1));
}

/// Messages waiting for one other replica.
#[derive(Default)]
struct Outbox {
    queue: std::collections::VecDeque<Vec<u8>>,
    in_flight: usize,
}

/// A cached route to one other replica: its stub and `POST /msg` URL.
struct Link {
    stub: Rc<Stub>,
    url: Rc<str>,
}

pub(crate) struct Host {
    state: State,
    env: Env,
    /// The internal secret, read once (see `internal::admit`).
    secret: std::result::Result<String, KeyProblem>,
    /// By replica index.
    links: RefCell<[Option<Link>; 3]>,
    /// (namespace, replica), from the object's name (`{ns}:r1`), or from
    /// the first request if the runtime does not pass the name.
    ident: RefCell<Option<(String, ReplicaName)>>,
    /// Random nonce of this object instance (tells a reset apart).
    born: u64,
    born_at: u64,
    replica: RefCell<Option<proto::Replica>>,
    /// The protocol instance the waiters below belong to.
    instance: Cell<Option<Instance>>,
    /// Client writes waiting for their `Output::Reply`.
    waiters: RefCell<BTreeMap<u64, oneshot::Sender<WriteReply>>>,
    /// Client requests waiting for the coordinator to become ready.
    ready_waiters: RefCell<Vec<oneshot::Sender<()>>>,
    timers: RefCell<Timers<Timer>>,
    /// By replica index × lane.
    outboxes: RefCell<[[Outbox; LANES]; 3]>,
    next_req: Cell<u64>,
    /// Test hook: peer messages in and out are dropped until then.
    paused_until: Cell<u64>,
    resetting: Cell<bool>,
    counters: Counters,
}

/// Why a protocol step did not run.
enum StepError {
    Refused(HandleError),
    NotBooted,
    Busy,
}

impl StepError {
    fn respond(self) -> Result<Response> {
        match self {
            StepError::Refused(HandleError::ValueTooLarge { len, max }) => {
                http::error(413, "value_too_large", &format!("the value has {len} bytes; at most {max} are allowed"))
            }
            StepError::Refused(e) => http::error(409, "refused", &e.to_string()),
            StepError::NotBooted => http::error(500, "internal", "replica not booted"),
            StepError::Busy => http::error(500, "internal", "replica state busy (re-entrant call)"),
        }
    }
}

impl Host {
    fn new(state: State, env: Env, ident: Option<(String, ReplicaName)>) -> Self {
        Host {
            state,
            secret: internal::internal_key(&env),
            env,
            links: RefCell::new(Default::default()),
            ident: RefCell::new(ident),
            born: random_u64(),
            born_at: now_ms(),
            replica: RefCell::new(None),
            instance: Cell::new(None),
            waiters: RefCell::new(BTreeMap::new()),
            ready_waiters: RefCell::new(Vec::new()),
            timers: RefCell::new(Timers::default()),
            outboxes: RefCell::new(Default::default()),
            next_req: Cell::new(0),
            paused_until: Cell::new(0),
            resetting: Cell::new(false),
            counters: Counters::default(),
        }
    }

    async fn serve(self: Rc<Self>, mut req: Request, target: Target) -> Result<Response> {
        if target.op == Op::Ping {
            return http::json(
                &serde_json::json!({ "ok": true, "object": "Replica", "born": format!("{:016x}", self.born) }),
            );
        }
        let (ns, me) = match self.identify(&target) {
            Ok(ident) => ident,
            Err(msg) => return http::error(400, "wrong_object", &msg),
        };
        match target.op {
            Op::Ping => Response::ok("pong"),
            Op::Whoami => http::json(&serde_json::json!({
                "name": me.as_str(),
                "born": format!("{:016x}", self.born),
                "booted": self.replica.try_borrow().map(|r| r.is_some()).unwrap_or(true),
            })),
            Op::Evict => self.evict().await,
            Op::Pause => {
                let ms = target.ms.unwrap_or(0).min(MAX_PAUSE_MS);
                self.paused_until.set(now_ms().saturating_add(ms));
                http::json(&serde_json::json!({ "paused": me.as_str(), "ms": ms }))
            }
            Op::Status => {
                if let Err(e) = self.ensure_booted() {
                    return http::error(500, "internal", &e);
                }
                self.status_line(me)
            }
            Op::Msg => {
                let body = req.bytes().await?;
                self.on_msg(&body)
            }
            Op::Put | Op::Delete | Op::Get => {
                if me != ReplicaName::R0 {
                    return http::error(
                        400,
                        "not_coordinator",
                        &format!("client requests go to {ns}:r0, not {ns}:{me}"),
                    );
                }
                let Some(key) = target.key.as_deref() else {
                    return http::error(400, "bad_request", "missing key");
                };
                let key = match names::check(key)
                    .map_err(|e| e.to_string())
                    .and_then(|()| Key::new(key).map_err(|e| e.to_string()))
                {
                    Ok(key) => key,
                    Err(e) => return http::error(400, "invalid_key", &format!("the key {e}")),
                };
                match target.op {
                    Op::Get => self.client_read(&key).await,
                    op => {
                        let wid = match req.headers().get(WRITE_ID_HEADER).ok().flatten() {
                            Some(h) => match WriteId::parse(h.trim()) {
                                Some(wid) => wid,
                                None => {
                                    return http::error(
                                        400,
                                        "invalid_write_id",
                                        "handoff-write-id must be 32 hex digits",
                                    );
                                }
                            },
                            None => WriteId(internal::random_u128()),
                        };
                        let value = if op == Op::Put { Some(req.bytes().await?) } else { None };
                        self.client_write(key, value, wid).await
                    }
                }
            }
            Op::ClaimCreate
            | Op::ClaimActivate
            | Op::ClaimActivateBaseline
            | Op::ClaimHeartbeat
            | Op::ClaimGet
            | Op::ClaimReap => http::error(404, "not_found", "claims requests go to the claim store, not a replica"),
        }
    }

    /// This object's (namespace, replica), checked against what the caller
    /// meant. The runtime passes the object's name; if it ever does not,
    /// the first caller's claim is adopted (all callers are authenticated).
    fn identify(&self, target: &Target) -> std::result::Result<(String, ReplicaName), String> {
        let mut ident = self.ident.try_borrow_mut().map_err(|_| "identity busy".to_string())?;
        if ident.is_none() {
            let r = target.replica.ok_or("a replica request must name the replica (r=)")?;
            names::check(&target.ns).map_err(|e| format!("the namespace {e}"))?;
            *ident = Some((target.ns.clone(), r));
        }
        let Some((ns, me)) = ident.as_ref() else { return Err("no identity".into()) };
        if *ns != target.ns || target.replica.is_some_and(|r| r != *me) {
            return Err(format!("this is {ns}:{me}, not {}:{}", target.ns, target.replica.map_or("?", |r| r.as_str())));
        }
        Ok((ns.clone(), *me))
    }

    fn me(&self) -> Option<(String, ReplicaName)> {
        self.ident.try_borrow().ok().and_then(|i| i.clone())
    }

    /// Boots the protocol replica on the first request to this object.
    fn ensure_booted(self: &Rc<Self>) -> std::result::Result<(), String> {
        if self.replica.try_borrow().map_err(|_| "replica busy")?.is_some() {
            return Ok(());
        }
        let (_, me) = self.me().ok_or("no identity")?;
        let config = Config::new(ReplicaId(0), [ReplicaId(1), ReplicaId(2)]).map_err(|e| e.to_string())?;
        let (replica, outputs) = proto::Replica::boot(config, ReplicaId(me.index()), Millis(now_ms()), random_u64())
            .map_err(|e| e.to_string())?;
        self.instance.set(Some(replica.instance()));
        *self.replica.try_borrow_mut().map_err(|_| "replica busy")? = Some(replica);
        self.perform(outputs, None);
        Ok(())
    }

    /// One protocol step. The borrow ends before this returns.
    fn step(&self, input: Input) -> std::result::Result<Vec<Output>, StepError> {
        let outputs = {
            let mut slot = self.replica.try_borrow_mut().map_err(|_| StepError::Busy)?;
            let replica = slot.as_mut().ok_or(StepError::NotBooted)?;
            let outputs = replica.handle(Millis(now_ms()), input).map_err(StepError::Refused)?;
            let instance = replica.instance();
            if self.instance.replace(Some(instance)) != Some(instance) {
                // The replica rebooted itself (it learned that its namespace
                // generation died): the waiting clients' writes died with it.
                self.waiters.try_borrow_mut().map(|mut w| w.clear()).ok();
            }
            outputs
        };
        Ok(outputs)
    }

    /// Performs `outputs`; messages to `reply_to` are returned (they ride
    /// back in the response to the request being served) instead of sent.
    /// Runs due-now timers, schedules the next wake-up, wakes clients
    /// waiting for readiness.
    fn perform(self: &Rc<Self>, outputs: Vec<Output>, reply_to: Option<ReplicaId>) -> Vec<Message> {
        let mut queue: std::collections::VecDeque<Output> = outputs.into();
        let mut inline = Vec::new();
        let mut steps = 0;
        loop {
            while let Some(output) = queue.pop_front() {
                match output {
                    Output::Send(msg) if Some(msg.to) == reply_to => inline.push(msg),
                    Output::Send(msg) => self.send(msg),
                    Output::Reply { req, reply } => {
                        let waiter = self.waiters.try_borrow_mut().ok().and_then(|mut w| w.remove(&req.0));
                        if let Some(tx) = waiter {
                            let _ = tx.send(reply);
                        }
                    }
                    Output::SetTimer { timer, at } => {
                        if let Ok(mut t) = self.timers.try_borrow_mut() {
                            t.set(timer, at.0);
                        }
                    }
                }
            }
            let due = self.timers.try_borrow_mut().map(|mut t| t.take_due(now_ms())).unwrap_or_default();
            if due.is_empty() || steps >= MAX_SYNC_STEPS {
                // Left-over due timers are picked up by a 0 ms wake-up.
                for timer in due {
                    if let Ok(mut t) = self.timers.try_borrow_mut() {
                        t.set(timer, now_ms());
                    }
                }
                break;
            }
            steps += 1;
            for timer in due {
                match self.step(Input::Timer(timer)) {
                    Ok(outputs) => queue.extend(outputs),
                    Err(StepError::Refused(e)) => console_warn!("timer {timer:?} refused: {e}"),
                    Err(_) => {}
                }
            }
        }
        self.schedule_wake();
        self.after_step();
        inline
    }

    /// Schedules a `setTimeout` wake-up for the earliest deadline, unless
    /// one early enough is already in flight.
    fn schedule_wake(self: &Rc<Self>) {
        let plan = self.timers.try_borrow_mut().ok().and_then(|mut t| t.plan());
        let Some((token, at)) = plan else { return };
        let host = self.clone();
        let delay = Duration::from_millis(at.saturating_sub(now_ms()));
        spawn_local(async move {
            Delay::from(delay).await;
            let current = host.timers.try_borrow_mut().map(|mut t| t.woke(token)).unwrap_or(false);
            if current {
                host.perform(Vec::new(), None);
            }
        });
    }

    /// The replica's phase (cheap: `Replica::status` also counts keys).
    fn phase(&self) -> Option<Status> {
        let slot = self.replica.try_borrow().ok()?;
        Some(match slot.as_ref()?.role() {
            RoleView::Coordinator(c) => match c.phase() {
                Phase::Ready => Status::Ready,
                Phase::Collect { .. } => Status::Collect,
                Phase::Announce { .. } => Status::Announce,
                Phase::Fenced => Status::Fenced,
            },
            RoleView::Peer(p) => match p.peer_status() {
                PeerStatus::Ready => Status::Ready,
                PeerStatus::Recovering { .. } => Status::Recovering,
            },
        })
    }

    /// Readiness waiters; self-reset of a fenced coordinator.
    fn after_step(self: &Rc<Self>) {
        let status = self.phase();
        if status == Some(Status::Ready) {
            let waiters = self.ready_waiters.try_borrow_mut().map(|mut w| std::mem::take(&mut *w)).unwrap_or_default();
            for tx in waiters {
                let _ = tx.send(());
            }
        }
        if status == Some(Status::Fenced) && !self.resetting.replace(true) {
            // A coordinator instance that learned it is superseded never
            // serves again; resetting the object lets the runtime start a
            // fresh instance that recovers with a newer epoch (on the
            // platform a superseded instance is a zombie already replaced,
            // and this only ends it sooner).
            console_warn!("coordinator fenced (superseded epoch): resetting this object");
            let host = self.clone();
            spawn_local(async move {
                let _ = host.reset("coordinator fenced").await;
            });
        }
    }

    fn paused(&self) -> bool {
        now_ms() < self.paused_until.get()
    }

    /// Queues `msg` for its addressee and pumps that outbox.
    fn send(self: &Rc<Self>, msg: Message) {
        if self.paused() {
            return;
        }
        let Some(to) = ReplicaName::from_index(msg.to.0) else { return };
        let lane = usize::from(matches!(msg.body, Body::Gossip { .. }));
        let Ok(bytes) = msg.encode() else { return };
        bump(&self.counters.msgs_out);
        if let Some(outbox) = self.outboxes.try_borrow_mut().ok().as_mut().and_then(|b| outbox(b, to, lane)) {
            outbox.queue.push_back(bytes);
        }
        self.pump(to, lane);
    }

    /// Starts deliveries to `to` while slots are free: each takes what is
    /// queued (up to [`MAX_BATCH`]) as one request.
    fn pump(self: &Rc<Self>, to: ReplicaName, lane: usize) {
        let Some((ns, _)) = self.me() else { return };
        loop {
            let batch: Vec<Vec<u8>> = {
                let Ok(mut boxes) = self.outboxes.try_borrow_mut() else { return };
                let Some(outbox) = outbox(&mut boxes, to, lane) else { return };
                if outbox.in_flight >= MAX_IN_FLIGHT || outbox.queue.is_empty() {
                    return;
                }
                outbox.in_flight += 1;
                let mut batch = Vec::new();
                let mut bytes = 0;
                while batch.len() < MAX_BATCH {
                    let Some(next) = outbox.queue.front() else { break };
                    if !batch.is_empty() && bytes + next.len() > MAX_BATCH_BYTES {
                        break;
                    }
                    bytes += next.len();
                    batch.extend(outbox.queue.pop_front());
                }
                batch
            };
            let (host, ns) = (self.clone(), ns.clone());
            spawn_local(async move {
                let body = batch_body(batch);
                let delivery = pin!(host.deliver(&ns, to, &body));
                let outcome = match future::select(delivery, pin!(Delay::from(DELIVERY_TIMEOUT))).await {
                    Either::Left((outcome, _)) => outcome,
                    Either::Right(_) => Err(worker::Error::RustError("timed out".into())),
                };
                if let Err(e) = outcome {
                    bump(&host.counters.send_failures);
                    // Expected while a peer is being reset; the protocol retries.
                    worker::console_debug!("send to {ns}:{to} failed: {e}");
                }
                if let Some(outbox) = host.outboxes.try_borrow_mut().ok().as_mut().and_then(|b| outbox(b, to, lane)) {
                    outbox.in_flight = outbox.in_flight.saturating_sub(1);
                }
                host.pump(to, lane);
            });
        }
    }

    /// One request to `to` carrying `body` (a message or a batch); the
    /// replies in its response are fed back in.
    async fn deliver(self: &Rc<Self>, ns: &str, to: ReplicaName, body: &[u8]) -> Result<()> {
        let key = self.secret.as_ref().map_err(|e| worker::Error::RustError(e.to_string()))?;
        let (stub, url) = self.link(ns, to)?;
        let headers = [("content-type", "application/json")];
        let mut resp = match internal::call_url(&stub, &url, true, Some(key), Some(body), &headers).await {
            Ok(resp) => resp,
            Err(e) => {
                // A stub whose object threw (was reset, evicted) stays broken:
                // forget it, the next delivery makes a new one.
                self.forget_link(to);
                return Err(e);
            }
        };
        let status = resp.status_code();
        let bytes = resp.bytes().await?;
        if status != 200 {
            if status == 409 {
                bump(&self.counters.refused);
            }
            return Err(worker::Error::RustError(format!("status {status}: {}", String::from_utf8_lossy(&bytes))));
        }
        let replies: Vec<Box<RawValue>> = serde_json::from_slice(&bytes)?;
        for raw in replies {
            match Message::decode(raw.get().as_bytes()) {
                Ok(reply) => self.receive(reply),
                Err(e) => console_warn!("bad reply from {ns}:{to}: {e}"),
            }
        }
        Ok(())
    }

    /// The stub and message URL of `to`, kept until a delivery through the
    /// stub fails (see `forget_link`).
    fn link(&self, ns: &str, to: ReplicaName) -> Result<(Rc<Stub>, Rc<str>)> {
        let i = usize::from(to.index());
        if let Some(Some(link)) = self.links.try_borrow().ok().as_ref().and_then(|l| l.get(i)) {
            return Ok((link.stub.clone(), link.url.clone()));
        }
        let stub = Rc::new(internal::stub(&self.env, REPLICA_BINDING, &to.object_name(ns))?);
        let url: Rc<str> = Target::new(Op::Msg, ns, Some(to))
            .url()
            .map_err(|e| worker::Error::RustError(format!("internal url: {e}")))?
            .into();
        if let Some(slot) = self.links.try_borrow_mut().ok().as_mut().and_then(|l| l.get_mut(i)) {
            *slot = Some(Link { stub: stub.clone(), url: url.clone() });
        }
        Ok((stub, url))
    }

    fn forget_link(&self, to: ReplicaName) {
        if let Some(slot) = self.links.try_borrow_mut().ok().as_mut().and_then(|l| l.get_mut(usize::from(to.index()))) {
            *slot = None;
        }
    }

    /// A message that arrived as a reply to one of ours.
    fn receive(self: &Rc<Self>, msg: Message) {
        if self.paused() {
            return;
        }
        bump(&self.counters.msgs_in);
        match self.step(Input::Message(msg)) {
            Ok(outputs) => {
                self.perform(outputs, None);
            }
            Err(StepError::Refused(_)) => bump(&self.counters.refused),
            Err(_) => {}
        }
    }

    /// `POST /msg`: a message from another replica, or a batch of them (a
    /// JSON array). A single message that is malformed or refused gets a
    /// 400/409; in a batch each message stands alone (bad ones are counted
    /// and skipped). Replies to the sender ride back in the 200 response,
    /// as a JSON array.
    fn on_msg(self: &Rc<Self>, body: &[u8]) -> Result<Response> {
        if self.paused() {
            return http::unavailable("paused", "this replica is paused by the test hook", 1000);
        }
        let batch = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
        let raws: Vec<&[u8]> = if batch {
            match serde_json::from_slice::<Vec<&RawValue>>(body) {
                Ok(raws) if raws.len() <= MAX_BATCH => raws.into_iter().map(|r| r.get().as_bytes()).collect(),
                Ok(raws) => {
                    return http::error(
                        400,
                        "bad_message",
                        &format!("a batch is at most {MAX_BATCH} messages, not {}", raws.len()),
                    );
                }
                Err(e) => return http::error(400, "bad_message", &format!("malformed batch: {e}")),
            }
        } else {
            vec![body]
        };
        if let Err(e) = self.ensure_booted() {
            return http::error(500, "internal", &e);
        }
        let mut replies = Vec::new();
        for raw in raws {
            let msg = match Message::decode(raw) {
                Ok(msg) => msg,
                Err(e) if !batch => return http::error(400, "bad_message", &e.to_string()),
                Err(_) => {
                    bump(&self.counters.refused);
                    continue;
                }
            };
            bump(&self.counters.msgs_in);
            let from = msg.from;
            match self.step(Input::Message(msg)) {
                Ok(outputs) => replies.extend(self.perform(outputs, Some(from))),
                Err(e) => {
                    bump(&self.counters.refused);
                    if !batch {
                        return e.respond();
                    }
                }
            }
        }
        let body = serde_json::to_vec(&replies)?;
        let headers = worker::Headers::new();
        headers.set("content-type", "application/json")?;
        Ok(Response::from_bytes(body)?.with_headers(headers))
    }

    fn is_ready(&self) -> bool {
        self.phase() == Some(Status::Ready)
    }

    /// Waits (bounded) for the coordinator to finish recovering.
    async fn wait_ready(self: &Rc<Self>, max: Duration) -> bool {
        if self.is_ready() {
            return true;
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.ready_waiters.try_borrow_mut() {
            w.push(tx);
        }
        let delay = pin!(Delay::from(max));
        let _ = future::select(rx, delay).await;
        self.is_ready()
    }

    /// 503 for a coordinator that cannot serve.
    fn not_ready(&self) -> Result<Response> {
        match self.phase() {
            Some(Status::Fenced) => {
                http::unavailable("superseded", "this coordinator instance was superseded; retry", 1000)
            }
            Some(s) => http::unavailable("recovering", &format!("the coordinator is recovering ({s}); retry"), 1000),
            None => http::unavailable("recovering", "the coordinator is starting; retry", 1000),
        }
    }

    async fn client_write(self: &Rc<Self>, key: Key, value: Option<Vec<u8>>, wid: WriteId) -> Result<Response> {
        if let Err(e) = self.ensure_booted() {
            return http::error(500, "internal", &e);
        }
        if !self.wait_ready(READY_WAIT).await {
            return self.not_ready();
        }
        let req = self.next_req.get().wrapping_add(1);
        self.next_req.set(req);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiters.try_borrow_mut() {
            w.insert(req, tx);
        }
        let req_id = ClientRequestId(req);
        let input = match value {
            Some(value) => Input::Put { req: req_id, key, value, wid },
            None => Input::Delete { req: req_id, key, wid },
        };
        match self.step(input) {
            Ok(outputs) => {
                self.perform(outputs, None);
            }
            Err(e) => {
                self.waiters.try_borrow_mut().map(|mut w| w.remove(&req)).ok();
                return e.respond();
            }
        }
        let delay = pin!(Delay::from(COMMIT_WAIT));
        match future::select(rx, delay).await {
            Either::Left((Ok(reply), _)) => write_reply(reply),
            Either::Left((Err(_), _)) => {
                http::unavailable("not_committed", "the coordinator restarted before the write committed; retry", 1000)
            }
            Either::Right(_) => {
                self.waiters.try_borrow_mut().map(|mut w| w.remove(&req)).ok();
                http::unavailable(
                    "not_committed",
                    "no peer acknowledged the write in time; it may still commit: retry with the same handoff-write-id",
                    1000,
                )
            }
        }
    }

    async fn client_read(self: &Rc<Self>, key: &Key) -> Result<Response> {
        if let Err(e) = self.ensure_booted() {
            return http::error(500, "internal", &e);
        }
        if !self.wait_ready(READY_WAIT).await {
            return self.not_ready();
        }
        let read = {
            let Ok(slot) = self.replica.try_borrow() else { return StepError::Busy.respond() };
            match slot.as_ref() {
                Some(replica) => replica.read(key),
                None => return StepError::NotBooted.respond(),
            }
        };
        match read {
            Ok(Read::Committed(Some(rec))) => match rec.value {
                Value::Bytes(bytes) => http::record(bytes, rec.stamp.ep.0, rec.stamp.ver.0, &rec.wid.to_string()),
                Value::Tombstone => http::error(404, "key_not_found", &format!("{key} was deleted")),
            },
            Ok(Read::Committed(None)) => http::error(404, "key_not_found", &format!("{key} does not exist")),
            Ok(Read::Unavailable { .. } | Read::Superseded) => self.not_ready(),
            Err(e) => StepError::Refused(e).respond(),
        }
    }

    fn status_line(&self, me: ReplicaName) -> Result<Response> {
        let report = {
            let Ok(slot) = self.replica.try_borrow() else { return StepError::Busy.respond() };
            match slot.as_ref() {
                Some(replica) => replica.status(),
                None => return StepError::NotBooted.respond(),
            }
        };
        let now = now_ms();
        http::json(&StatusLine {
            name: me.as_str(),
            role: report.role,
            status: report.status.to_string(),
            epoch: report.epoch.0,
            known: report.known.0,
            keys: report.keys,
            pending: report.pending,
            generation: report.generation.map(|g| format!("{}-{:016x}", g.minted_at, g.nonce)),
            instance: self.instance.get().map(|i| format!("{:016x}", i.0)),
            object: format!("{:016x}", self.born),
            uptime_ms: now.saturating_sub(self.born_at),
            paused_ms: self.paused_until.get().saturating_sub(now),
            timers: self.timers.try_borrow().map(|t| t.len()).unwrap_or(0),
            msgs_in: self.counters.msgs_in.get(),
            msgs_out: self.counters.msgs_out.get(),
            send_failures: self.counters.send_failures.get(),
            refused: self.counters.refused.get(),
        })
    }

    /// The eviction test hook: reset this object so its memory is lost, as
    /// on a real eviction. The request itself fails (the object is gone);
    /// the Worker confirms the reset by seeing a new birth nonce.
    async fn evict(self: &Rc<Self>) -> Result<Response> {
        self.resetting.set(true);
        self.reset("evicted by the test hook").await?;
        http::error(500, "evict_failed", "the object survived its reset")
    }

    /// `blockConcurrencyWhile` with a failing callback: the runtime resets
    /// the object (platform notes: the one clean way from Rust).
    async fn reset(&self, why: &str) -> Result<()> {
        let why = why.to_string();
        self.state.block_concurrency_while(async move { Err::<(), _>(worker::Error::RustError(why)) }).await
    }
}

fn outbox(boxes: &mut [[Outbox; LANES]; 3], to: ReplicaName, lane: usize) -> Option<&mut Outbox> {
    boxes.get_mut(usize::from(to.index()))?.get_mut(lane)
}

/// One message as is, several as a JSON array.
fn batch_body(mut batch: Vec<Vec<u8>>) -> Vec<u8> {
    if batch.len() == 1 {
        return batch.pop().unwrap_or_default();
    }
    let mut body = Vec::with_capacity(batch.iter().map(|m| m.len() + 1).sum::<usize>() + 2);
    body.push(b'[');
    for (i, msg) in batch.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(msg);
    }
    body.push(b']');
    body
}

fn write_reply(reply: WriteReply) -> Result<Response> {
    match reply {
        WriteReply::Committed { key, stamp, wid } => {
            http::json(&Committed { key: key.as_str(), ep: stamp.ep.0, ver: stamp.ver.0, wid: wid.to_string() })
        }
        WriteReply::Unavailable { status, retry_after_ms } => {
            http::unavailable("recovering", &format!("the coordinator is recovering ({status}); retry"), retry_after_ms)
        }
        WriteReply::Overloaded { retry_after_ms } => {
            http::unavailable("overloaded", "too many uncommitted writes; retry", retry_after_ms)
        }
        WriteReply::Superseded => {
            http::unavailable("superseded", "this coordinator instance was superseded; retry", 1000)
        }
    }
}

/// `200` body of a committed write.
#[derive(Serialize)]
pub(crate) struct Committed<'a> {
    pub key: &'a str,
    pub ep: u64,
    pub ver: u64,
    pub wid: String,
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
    pending: usize,
    generation: Option<String>,
    instance: Option<String>,
    object: String,
    uptime_ms: u64,
    paused_ms: u64,
    timers: usize,
    msgs_in: u64,
    msgs_out: u64,
    send_failures: u64,
    refused: u64,
}

#[cfg(test)]
mod tests {
    use super::batch_body;

    #[test]
    fn one_message_travels_alone_several_as_an_array() {
        assert_eq!(batch_body(vec![b"{\"a\":1}".to_vec()]), b"{\"a\":1}");
        assert_eq!(batch_body(vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]), b"[{\"a\":1},{\"b\":2}]");
        assert_eq!(batch_body(Vec::new()), b"[]");
    }
}
