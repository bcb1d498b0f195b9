//! The replica object's one state: a plain value, no interior mutability,
//! changed only by `&mut self` methods that take the time (and randomness)
//! as arguments and queue [`Effect`]s for the shell. Its parts, each in its
//! own file: the protocol's [`Driver`] (here), the links and queues to the
//! other replicas ([`Transport`]), the waiting clients ([`Clients`]), the
//! replica's life in its namespace ([`Life`]).
//!
//! After every entry point the shell calls [`ReplicaState::settle`]: due
//! protocol timers run, the next wake-up is planned, readiness waiters are
//! woken, a fenced coordinator resets, an idle namespace stops.

use protocol::handoff::{Driver, HandleError, Input, Instance, Message, Millis, Output, ReplicaId, Status};

use super::client::{Answer, Clients};
use super::effects::Effect;
use super::lifecycle::Life;
use super::status::{Counters, StatusLine};
use super::trace::TraceLog;
use super::transport::Transport;
use super::wake::WakeUp;
use crate::error::{Code, HttpError, HttpResult};
use crate::names::{self, ReplicaName};
use crate::namespaces::settings::Settings;
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

/// One replica object's state.
pub(super) struct ReplicaState {
    /// (namespace, replica), from the object's name (`{ns}:r1`), or from
    /// the first request if the runtime does not pass the name.
    pub(super) ident: Option<(String, ReplicaName)>,
    /// Random nonce of this object instance (tells a reset apart).
    pub(super) born: u64,
    pub(super) born_at: u64,
    pub(super) life: Life,
    /// Test hook: peer messages in and out are dropped until then.
    pub(super) paused_until: u64,
    pub(super) counters: Counters,
    /// The protocol replica, once admitted and booted.
    pub(super) driver: Option<Driver>,
    /// The protocol instance the client waiters belong to.
    instance: Option<Instance>,
    wake: WakeUp,
    pub(super) transport: Transport,
    pub(super) clients: Clients,
    /// Recording the driver's steps (trace validation runs only).
    trace: Option<TraceLog>,
    effects: Vec<Effect>,
}

impl ReplicaState {
    pub(super) fn new(ident: Option<(String, ReplicaName)>, born: u64, now: u64, trace: bool) -> Self {
        ReplicaState {
            ident,
            born,
            born_at: now,
            life: Life::new(now),
            paused_until: 0,
            counters: Counters::default(),
            driver: None,
            instance: None,
            wake: WakeUp::default(),
            transport: Transport::default(),
            clients: Clients::default(),
            trace: trace.then(TraceLog::default),
            effects: Vec::new(),
        }
    }

    /// Queues an effect for the shell.
    pub(super) fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
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
    /// registry admitted it); a no-op once booted.
    pub(super) fn boot(
        &mut self,
        settings: Settings,
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
        let config = super::lifecycle::replica_config(&settings, default_budget)
            .map_err(|e| HttpError::internal(e.to_string()))?;
        let boot = if self.trace.is_some() { Driver::boot_traced } else { Driver::boot };
        let (driver, outputs) =
            boot(config, ReplicaId(me.index()), Millis(now), seed).map_err(|e| HttpError::internal(e.to_string()))?;
        self.instance = Some(driver.replica().instance());
        self.driver = Some(driver);
        self.life.admitted(settings, now);
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
            self.clients.waiters.clear();
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
            let ready = std::mem::take(&mut self.clients.ready);
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
        let earliest = timers.into_iter().chain(self.clients.waiters.earliest()).min();
        if let Some((token, at)) = self.wake.plan(earliest) {
            self.effects.push(Effect::WakeAt { token, at });
        }
    }

    /// The wake-up `token` fired at `now`: if it is the current one,
    /// overdue clients and socket answers expire (the shell settles next).
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

    /// The records, queues, links and sockets go; nothing boots again.
    pub(super) fn drop_for_reset(&mut self) {
        self.life.resetting = true;
        self.driver = None;
        self.transport = Transport::default();
        self.clients.waiters.clear();
    }

    /// The status line (`GET /v1/{ns}/status`), `None` before boot.
    pub(super) fn status(&self, me: ReplicaName, now: u64, wasm_memory_bytes: usize) -> Option<StatusLine> {
        let driver = self.driver.as_ref()?;
        Some(super::status::line(self, driver, me, now, wasm_memory_bytes, self.instance))
    }
}
