//! The replica object's one state: a plain value, no interior mutability,
//! changed only by `&mut self` methods that take the time (and randomness)
//! as arguments and queue [`Effect`]s for the shell. It holds the protocol's
//! [`Driver`] and its parts, each in its own file and none of which knows
//! this one: the links and queues to the other replicas ([`Transport`]),
//! the waiting clients ([`Clients`]), the replica's life in its namespace
//! ([`Life`]). Every method the shell calls is here, so one file shows
//! what each entry point does.
//!
//! After every entry point the shell calls [`ReplicaState::settle`]: due
//! protocol timers run, the next wake-up is planned, readiness waiters are
//! woken, a fenced coordinator resets, an idle namespace stops.

use std::time::Duration;

use futures_channel::oneshot;
use protocol::handoff::{
    Body, ClientRequestId, Driver, HandleError, Input, Instance, Message, Millis, Output, ReplicaId, Status,
};

use super::client::{Answer, Clients, RETRY_AFTER_MS, Unavailable};
use super::effects::Effect;
use super::lifecycle::{self, Life};
use super::status::{self, Shown, StatusLine};
use super::trace::TraceLog;
use super::transport::{Arrived, Delivered, Over, Transport, add};
use super::versions::WireVersion;
use super::wake::WakeUp;
use crate::error::{Code, HttpError, HttpResult};
use crate::names::{self, ReplicaName};
use crate::namespaces::settings::Settings;
use crate::socket::{Incoming, MAX_ANSWER_BYTES, Outgoing};
use crate::tunnel::Callers;
use crate::wire::{ReplicaOp, Target};

/// Due-now timer steps run before a batch of outputs is done (recovery
/// asks for its next step by arming the retry timer at `now`).
const MAX_SYNC_STEPS: usize = 64;

/// Why a protocol step did not run.
pub(super) enum StepError {
    Refused(HandleError),
    NotBooted,
}

impl From<StepError> for HttpError {
    fn from(e: StepError) -> Self {
        match e {
            StepError::Refused(HandleError::ValueTooLarge { len, max }) => {
                HttpError::new(Code::ValueTooLarge, format!("the value has {len} bytes; at most {max} are allowed"))
            }
            StepError::Refused(e) => HttpError::new(Code::Refused, e.to_string()),
            StepError::NotBooted => HttpError::internal("replica not booted"),
        }
    }
}

/// What a replica takes from its deployment's variables (`vars.rs`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Deployment {
    /// The role of the script this object runs in, if it is a role script.
    pub(super) role: Option<ReplicaName>,
    /// The wire version it writes (`versions.rs`).
    pub(super) wire: WireVersion,
}

/// One replica object's state.
pub(super) struct ReplicaState {
    /// (namespace, replica), from the object's name (`{ns}:r1`), or from
    /// the first request if the runtime does not pass the name.
    pub(super) ident: Option<(String, ReplicaName)>,
    /// What the deployment's variables say (role, wire version).
    deployment: Deployment,
    /// Random nonce of this object instance (tells a reset apart).
    pub(super) born: u64,
    pub(super) born_at: u64,
    pub(super) life: Life,
    /// Test hook: peer messages in and out are dropped until then.
    paused_until: u64,
    /// The protocol replica, once admitted and booted.
    driver: Option<Driver>,
    /// The protocol instance the client waiters belong to.
    instance: Option<Instance>,
    wake: WakeUp,
    transport: Transport,
    clients: Clients,
    /// The sockets carrying client calls (the claim object's).
    pub(super) callers: Callers<Incoming>,
    /// Recording the driver's steps (trace validation runs only).
    trace: Option<TraceLog>,
    /// The bytes this replica last reported to its isolate's gauge.
    reported: usize,
    effects: Vec<Effect>,
}

impl ReplicaState {
    pub(super) fn new(
        (ident, deployment): (Option<(String, ReplicaName)>, Deployment),
        born: u64,
        now: u64,
        trace: bool,
    ) -> Self {
        ReplicaState {
            ident,
            deployment,
            born,
            born_at: now,
            life: Life::new(now),
            paused_until: 0,
            driver: None,
            instance: None,
            wake: WakeUp::default(),
            transport: Transport::new(deployment.wire),
            clients: Clients::default(),
            callers: Callers::default(),
            trace: trace.then(TraceLog::default),
            reported: 0,
            effects: Vec::new(),
        }
    }

    /// The effects queued so far, in order.
    pub(super) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// This object's (namespace, replica), checked against what the caller
    /// meant. The runtime passes the object's name; if it ever does not,
    /// the first caller's claim is adopted (all callers are authenticated).
    pub(super) fn identify(&mut self, target: &Target<ReplicaOp>) -> HttpResult<(String, ReplicaName)> {
        let wrong = |message: String| HttpError::new(Code::WrongObject, message);
        if self.ident.is_none() {
            let r = target.replica.ok_or_else(|| wrong("a replica request must name the replica (r=)".into()))?;
            names::valid_namespace(&target.ns).map_err(|e| wrong(format!("the namespace {e}")))?;
            self.ident = Some((target.ns.clone(), r));
        }
        let Some((ns, me)) = &self.ident else { return Err(wrong("no identity".into())) };
        if self.deployment.role.is_some_and(|role| role != *me) {
            let role = self.deployment.role.map_or("?", |r| r.as_str());
            return Err(wrong(format!(
                "this is {ns}:{me}, in the script of role {role}: a replica runs in its role's script"
            )));
        }
        if *ns != target.ns || target.replica.is_some_and(|r| r != *me) {
            let meant = target.replica.map_or("?", |r| r.as_str());
            return Err(wrong(format!("this is {ns}:{me}, not {}:{meant}", target.ns)));
        }
        Ok((ns.clone(), *me))
    }

    pub(super) fn me(&self) -> Option<ReplicaName> {
        self.ident.as_ref().map(|(_, me)| *me)
    }

    pub(super) fn booted(&self) -> bool {
        self.driver.is_some()
    }

    /// The replica's phase, `None` before boot.
    pub(super) fn phase(&self) -> Option<Status> {
        Some(self.driver.as_ref()?.replica().phase())
    }

    /// Boots the protocol replica of a namespace with `settings` (the
    /// registry admitted it, in the namespace life `created_at`); a no-op
    /// once booted.
    pub(super) fn boot(
        &mut self,
        (settings, created_at): (Settings, u64),
        default_budget: Option<u64>,
        now: u64,
        seed: u64,
    ) -> HttpResult<()> {
        if self.booted() {
            return Ok(());
        }
        if self.life.resetting {
            // Its records were dropped for the reset under way.
            return Err(self.life.unavailable_while_resetting());
        }
        let me = self.me().ok_or_else(|| HttpError::internal("no identity"))?;
        let config =
            lifecycle::replica_config(&settings, default_budget).map_err(|e| HttpError::internal(e.to_string()))?;
        let boot = if self.trace.is_some() { Driver::boot_traced } else { Driver::boot };
        let (driver, outputs) =
            boot(config, ReplicaId(me.index()), Millis(now), seed).map_err(|e| HttpError::internal(e.to_string()))?;
        self.instance = Some(driver.replica().instance());
        self.driver = Some(driver);
        self.life.admitted(settings, created_at, now);
        self.record();
        self.apply(outputs, None, now);
        Ok(())
    }

    /// One protocol step on `input` at `now`; its outputs are performed,
    /// but messages to `reply_to`, which are returned instead (they ride
    /// back in the answer to the batch being served).
    pub(super) fn step(
        &mut self,
        now: u64,
        input: Input,
        reply_to: Option<ReplicaId>,
    ) -> Result<Vec<Message>, StepError> {
        let driver = self.driver.as_mut().ok_or(StepError::NotBooted)?;
        let outputs = driver.handle(Millis(now), input).map_err(StepError::Refused)?;
        let instance = driver.replica().instance();
        self.record();
        if self.instance.replace(instance) != Some(instance) {
            // The replica rebooted itself (it learned that its namespace
            // generation died): the waiting clients' writes died with it
            // (dropped, their requests answer "restarted").
            self.clients.drop_waiting();
        }
        Ok(self.apply(outputs, reply_to, now))
    }

    /// Performs the protocol's outputs; messages to `reply_to` are returned.
    fn apply(&mut self, outputs: Vec<Output>, reply_to: Option<ReplicaId>, now: u64) -> Vec<Message> {
        let mut inline = Vec::new();
        for output in outputs {
            match output {
                Output::Send(msg) if Some(msg.to) == reply_to => inline.push(msg),
                Output::Send(msg) => self.send(msg, now),
                Output::Reply { req, reply } => self.answer(req.0, Answer::Write(reply)),
                Output::ReadReply { req, read } => self.answer(req.0, Answer::Read(read)),
                Output::ListReply { req, list } => self.answer(req.0, Answer::List(list)),
                // The driver keeps the timers; it never passes these on.
                Output::SetTimer { .. } => {}
            }
        }
        inline
    }

    /// Hands the driver's recorded steps to the shell (trace validation).
    fn record(&mut self) {
        let (Some(trace), Some(driver)) = (self.trace.as_mut(), self.driver.as_mut()) else { return };
        let rows = trace.encode(driver.take_trace());
        if !rows.is_empty() {
            self.effects.push(Effect::Record(rows));
        }
    }

    /// A trace row could not be written: recording stops (the validator
    /// refuses an incomplete trace rather than check part of it).
    pub(super) fn trace_failed(&mut self) -> Option<Vec<u8>> {
        self.trace.as_mut().and_then(TraceLog::lose)
    }

    /// After every entry point: the due protocol timers run, the next
    /// wake-up is planned, readiness waiters wake, a fenced coordinator
    /// resets, an idle namespace stops.
    pub(super) fn settle(&mut self, now: u64) {
        if let Some(driver) = self.driver.as_mut() {
            // Timers left due after the budget keep their deadline, in the
            // past: the wake-up below is then immediate.
            let outputs = driver.run_due(Millis(now), MAX_SYNC_STEPS);
            self.record();
            self.apply(outputs, None, now);
        }
        self.plan_wake();
        let phase = self.phase();
        if phase == Some(Status::Ready) {
            let ready = self.clients.take_ready();
            if !ready.is_empty() {
                self.effects.push(Effect::Ready(ready));
            }
        }
        if phase == Some(Status::Fenced) && !self.life.resetting {
            // A coordinator instance that learned it is superseded never
            // serves again; resetting the object lets the runtime start a
            // fresh instance that recovers with a newer epoch (on the
            // platform a superseded instance is a zombie already replaced,
            // and this only ends it sooner).
            self.reset("coordinator fenced (superseded epoch)");
        }
        self.check_idle(now);
    }

    /// Plans the one wake-up for the earliest deadline (of the protocol's
    /// timers and of the waiting clients), unless one early enough is
    /// already in flight.
    fn plan_wake(&mut self) {
        let timers = self.driver.as_ref().and_then(Driver::next_deadline).map(|at| at.0);
        let earliest = timers.into_iter().chain(self.clients.earliest()).min();
        if let Some((token, at)) = self.wake.plan(earliest) {
            self.effects.push(Effect::WakeAt { token, at });
        }
    }

    /// The wake-up `token` fired at `now`: if it is the current one,
    /// overdue clients and socket answers expire (and `settle` runs the due
    /// protocol timers).
    pub(super) fn woke(&mut self, token: u64, now: u64) {
        if self.wake.woke(token) {
            self.expire_clients(now);
            self.transport.expire_deliveries(now);
        }
    }

    /// Drops everything the replica holds and asks the shell to reset the
    /// object. The runtime discards the object, but this state lives in
    /// the isolate's wasm memory until V8 happens to collect the object's
    /// wrapper (and the tasks holding it), so each reset used to keep a
    /// whole replica's records there (`cargo xtask bench scale` measured +5
    /// to +16 MiB of wasm memory per eviction of an 8 MiB replica).
    /// `resetting` keeps it from booting again meanwhile.
    pub(super) fn reset(&mut self, why: &'static str) {
        self.drop_for_reset();
        self.effects.push(Effect::Reset { why });
    }

    /// Renews the replica: this state gives way to a fresh one, born
    /// `born` at `now`, with nothing of this one but the object's identity
    /// (as an eviction would leave it, and a stopped replica must be: it
    /// boots again only if the registry admits it). Tasks and callbacks of
    /// the old state find a state of another birth and do nothing.
    pub(super) fn renew(&mut self, born: u64, now: u64) {
        let fresh = ReplicaState::new((self.ident.clone(), self.deployment), born, now, self.trace.is_some());
        // The old state's pending effects (answers to its clients are
        // dropped with it: they see their instance gone) go with it.
        drop(std::mem::replace(self, fresh));
    }

    /// The records, queues, links and sockets go; nothing boots again.
    pub(super) fn drop_for_reset(&mut self) {
        self.life.resetting = true;
        self.driver = None;
        self.transport = Transport::new(self.deployment.wire);
        self.callers = Callers::default();
        self.clients.drop_waiting();
    }

    /// The bytes this replica holds (records and uncommitted writes) as the
    /// isolate's gauge last had them, and as it holds them now: the shell
    /// reports the change (`crate::isolate`).
    pub(super) fn held_change(&mut self) -> (usize, usize) {
        let held = self.driver.as_ref().map_or(0, |d| {
            let status = d.replica().status();
            status.bytes.saturating_add(status.pending_bytes)
        });
        (std::mem::replace(&mut self.reported, held), held)
    }

    /// The status line (`GET /v1/{ns}/status`), `None` before boot.
    pub(super) fn status(&self, me: ReplicaName, now: u64, wasm_memory_bytes: usize) -> Option<StatusLine> {
        let driver = self.driver.as_ref()?;
        Some(status::line(
            driver,
            Shown {
                me,
                object: self.born,
                born_at: self.born_at,
                now,
                wasm_memory_bytes,
                instance: self.instance,
                paused_until: self.paused_until,
                idle_expires_at: self.idle_expires_at(),
                preferred: self.transport.preferred,
                memory_budget_bytes: self.life.settings.as_ref().and_then(|s| s.memory_budget_bytes),
                counters: &self.transport.counters,
                wire_version: self.deployment.wire.get(),
                calls_in_frames: self.callers.calls,
            },
        ))
    }

    /// The pause test hook: peer messages in and out are dropped for `ms`.
    /// Where the trace of this state instance stands, when recording: its
    /// object (the birth nonce its rows carry) and the steps taken so far,
    /// every one of which the trace store holds.
    pub(super) fn pause(&mut self, ms: u64, now: u64) -> Option<(u64, u64)> {
        self.paused_until = now.saturating_add(ms);
        let steps = self.trace.as_ref().and(self.driver.as_ref()).and_then(Driver::traced_steps)?;
        Some((self.born, steps))
    }

    fn paused(&self, now: u64) -> bool {
        now < self.paused_until
    }

    fn coordinator(&self) -> bool {
        self.me() == Some(ReplicaName::R0)
    }

    // Client requests (`client.rs` keeps them).

    /// `None` if the coordinator is ready; else where to wait for it.
    pub(super) fn wait_ready(&mut self, now: u64) -> Option<oneshot::Receiver<()>> {
        self.life.note_client(now);
        self.clients.wait_ready(self.phase() == Some(Status::Ready))
    }

    /// Steps the client request `input(req)` at `now` if the coordinator is
    /// ready; its answer arrives on the receiver by `now + wait` at the
    /// latest ([`Answer::Expired`], by the replica's wake-up).
    pub(super) fn ask(
        &mut self,
        input: impl FnOnce(ClientRequestId) -> Input,
        wait: Duration,
        now: u64,
    ) -> HttpResult<oneshot::Receiver<Answer>> {
        match self.phase() {
            Some(Status::Ready) => {}
            Some(Status::Fenced) => return Err(Unavailable::Superseded.into()),
            status => return Err(Unavailable::Recovering { status, retry_after_ms: RETRY_AFTER_MS }.into()),
        }
        let (req, answer) = self.clients.register(wait, now);
        if let Err(e) = self.step(now, input(ClientRequestId(req)), None) {
            self.clients.take(req);
            return Err(e.into());
        }
        Ok(answer)
    }

    /// Completes the client request `req` waiting for `answer`.
    fn answer(&mut self, req: u64, answer: Answer) {
        if let Some(tx) = self.clients.take(req) {
            self.effects.push(Effect::Answer { tx, answer });
        }
    }

    /// Answers the client requests whose deadline passed.
    fn expire_clients(&mut self, now: u64) {
        for tx in self.clients.expire(now) {
            self.effects.push(Effect::Answer { tx, answer: Answer::Expired });
        }
    }

    // Messages between replicas (`transport.rs` carries them).

    /// Queues `msg` for its addressee.
    fn send(&mut self, msg: Message, now: u64) {
        if !self.paused(now) {
            let coordinator = self.coordinator();
            self.transport.send(msg, coordinator, now, &mut self.effects);
        }
    }

    /// A delivery to `to` on `lane` went `over` a link and came to
    /// `outcome`; the replies in its answer are fed in.
    pub(super) fn delivered(&mut self, (to, lane): (ReplicaName, usize), outcome: Delivered, over: Over, now: u64) {
        if self.life.resetting {
            return;
        }
        let at = (self.coordinator(), now);
        match self.transport.delivered((to, lane), outcome, over, at, &mut self.effects) {
            Arrived::Replies(replies) => {
                for reply in replies {
                    self.receive(reply, now);
                }
            }
            Arrived::Refused { not_running: true } => self.stop_soon("a peer says the namespace is not running"),
            Arrived::Refused { not_running: false } | Arrived::Failed => {}
        }
    }

    /// A message that arrived as a reply to one of ours.
    fn receive(&mut self, msg: Message, now: u64) {
        if self.paused(now) {
            return;
        }
        add(&mut self.transport.counters.msgs_in, 1);
        if self.step(now, Input::Message(msg), None).is_err() {
            add(&mut self.transport.counters.refused, 1);
        }
    }

    /// The end of a hold on `to`'s `lane`.
    pub(super) fn hold_ended(&mut self, to: ReplicaName, lane: usize, now: u64) {
        let coordinator = self.coordinator();
        self.transport.hold_ended(to, lane, coordinator, now, &mut self.effects);
    }

    pub(super) fn socket_opened(
        &mut self,
        to: ReplicaName,
        id: u64,
        socket: worker::Result<Option<Outgoing>>,
        now: u64,
    ) {
        self.transport.socket_opened(to, id, socket, now);
    }

    pub(super) fn socket_answered(&mut self, to: ReplicaName, id: u64, frame: Vec<u8>) {
        self.transport.socket_answered(to, id, frame);
    }

    pub(super) fn socket_ended(&mut self, to: ReplicaName, id: u64) {
        self.transport.socket_ended(to, id);
    }

    /// The id the next socket another replica opens will have.
    pub(super) fn next_incoming_id(&mut self) -> u64 {
        self.transport.next_incoming_id()
    }

    /// Keeps a socket another replica opened.
    pub(super) fn accepted(&mut self, id: u64, socket: Incoming) {
        self.transport.accepted(id, socket);
    }

    pub(super) fn incoming_ended(&mut self, id: u64) {
        self.transport.incoming_ended(id);
    }

    /// A batch of messages from another replica, stepped one by one (a
    /// refused one is counted and skipped). Returns the replies to the
    /// sender.
    fn on_batch(&mut self, body: &[u8], isolate_full: bool, now: u64) -> HttpResult<Vec<Message>> {
        self.life.refuse_if_stopping()?;
        if self.paused(now) {
            return Err(Unavailable::Paused.into());
        }
        let messages = self.transport.decode_batch(body)?;
        if !self.booted() {
            return Err(self.life.unavailable_while_resetting());
        }
        let mut replies = Vec::new();
        for msg in messages {
            // An isolate past its hard cap takes no record that would grow
            // it: the message is as good as lost, which the protocol
            // tolerates (the write commits on the other peer's ack).
            if isolate_full && grows_memory(&msg.body) {
                add(&mut self.transport.counters.refused, 1);
                continue;
            }
            let from = msg.from;
            match self.step(now, Input::Message(msg), Some(from)) {
                Ok(inline) => replies.extend(inline),
                Err(_) => add(&mut self.transport.counters.refused, 1),
            }
        }
        Ok(replies)
    }

    /// `POST /msg`: a batch, answered with the encoded replies.
    pub(super) fn on_msg(&mut self, body: &[u8], isolate_full: bool, now: u64) -> HttpResult<Vec<u8>> {
        let replies = self.on_batch(body, isolate_full, now)?;
        self.transport.reply(&replies)
    }

    /// One frame of a socket: (status, body) as `POST /msg` would answer.
    /// If the replies do not fit in a frame, they leave as this replica's
    /// own messages instead (the protocol does not care which way a reply
    /// travels) and the answer is an empty batch.
    pub(super) fn on_frame(&mut self, frame: &[u8], isolate_full: bool, now: u64) -> (u16, Vec<u8>) {
        let answer = self.on_batch(frame, isolate_full, now).and_then(|replies| {
            let body = self.transport.reply(&replies)?;
            if body.len() <= MAX_ANSWER_BYTES {
                return Ok(body);
            }
            replies.into_iter().for_each(|reply| self.send(reply, now));
            self.transport.reply(&[])
        });
        match answer {
            Ok(body) => (200, body),
            Err(e) => (e.status().unwrap_or(500), e.to_string().into_bytes()),
        }
    }

    // The replica's life in its namespace (`lifecycle.rs`).

    /// When the coordinator stops the namespace if no client request comes
    /// first (unix ms); `None` for a peer or a replica not running.
    fn idle_expires_at(&self) -> Option<u64> {
        self.life.idle_expires_at(self.coordinator() && self.booted())
    }

    /// Past the idle expiry the coordinator stops the namespace (marks it
    /// idle in the registry, so that nothing but a client request starts it
    /// again; stops the peers; stops itself).
    fn check_idle(&mut self, now: u64) {
        let Some(expires_at) = self.idle_expires_at() else { return };
        let Some((ns, _)) = &self.ident else { return };
        if now < expires_at || self.life.stopping {
            return;
        }
        self.life.stopping = true;
        let ns = ns.clone();
        self.effects.push(Effect::StopNamespace { ns });
    }

    /// The idle stop did not complete: it is tried again at a later wake-up.
    pub(super) fn stop_failed(&mut self) {
        self.life.stopping = false;
    }

    /// Stops this replica: it is renewed (its records go), after which the
    /// registry admits it again only for a running namespace.
    pub(super) fn stop(&mut self, why: &'static str) {
        self.life.stopping = true;
        self.effects.push(Effect::Renew { why });
    }

    /// A peer answered that the namespace is not running: stop too.
    fn stop_soon(&mut self, why: &'static str) {
        if !self.life.stopping {
            self.stop(why);
        }
    }
}

/// Whether a message to a peer brings records it would keep.
fn grows_memory(body: &Body) -> bool {
    matches!(body, Body::Push { .. } | Body::Records { .. } | Body::ReseedReply { .. })
}

/// A replica's state that goes (the runtime discarded its object, and V8
/// collected it) gives its bytes back to the isolate's gauge.
impl Drop for ReplicaState {
    fn drop(&mut self) {
        crate::isolate::held_changed(self.reported, 0);
    }
}
