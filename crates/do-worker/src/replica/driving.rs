//! Driving the protocol: boot the replica on the first request, feed it
//! one input at a time, perform its outputs, run its due timers (the
//! protocol's [`Driver`]) and keep one `setTimeout` wake-up in flight for
//! the next deadline; wake the clients waiting for readiness; reset a
//! fenced coordinator.

use std::rc::Rc;
use std::time::Duration;

use protocol::handoff::{Driver, HandleError, Input, Message, Millis, Output, ReplicaId, Status};
use worker::wasm_bindgen_futures::spawn_local;
use worker::{Delay, console_warn};

use super::client::Answer;
use super::{Host, lifecycle};
use crate::error::{Code, HttpError, HttpResult};
use crate::internal::{now_ms, random_u64};

/// Due-now timer steps run before a batch of outputs is done (recovery
/// asks for its next step by arming the retry timer at `now`).
const MAX_SYNC_STEPS: usize = 64;

/// Why a protocol step did not run.
pub(super) enum StepError {
    Refused(HandleError),
    NotBooted,
    Busy,
}

impl From<StepError> for HttpError {
    fn from(e: StepError) -> Self {
        match e {
            StepError::Refused(HandleError::ValueTooLarge { len, max }) => {
                HttpError::new(Code::ValueTooLarge, format!("the value has {len} bytes; at most {max} are allowed"))
            }
            StepError::Refused(e) => HttpError::new(Code::Refused, e.to_string()),
            StepError::NotBooted => HttpError::internal("replica not booted"),
            StepError::Busy => HttpError::internal("replica state busy (re-entrant call)"),
        }
    }
}

/// The deployment's default memory budget of a namespace in bytes (a
/// `[vars]` entry), for namespaces created without `memory_budget_bytes`;
/// without either, [`protocol::handoff::DEFAULT_BUDGET_BYTES`].
const BUDGET_VAR: &str = "HANDOFF_BUDGET_BYTES";

impl Host {
    /// Boots the protocol replica once the registry admitted it
    /// (`lifecycle.rs`: the settings are known then); a no-op once booted.
    pub(super) fn ensure_booted(self: &Rc<Self>) -> HttpResult<()> {
        let busy = || HttpError::internal("replica busy");
        if self.driver.try_borrow().map_err(|_| busy())?.is_some() {
            return Ok(());
        }
        if self.resetting.get() {
            // Its records were dropped for the reset under way (`Host::reset`).
            let message = "this replica is being reset; retry";
            return Err(HttpError::unavailable(Code::ReplicaUnavailable, message, lifecycle::RETRY_AFTER_MS));
        }
        let (_, me) = self.me().ok_or_else(|| HttpError::internal("no identity"))?;
        let settings = self.settings.try_borrow().map_err(|_| busy())?.clone();
        let settings = settings.ok_or_else(|| HttpError::internal("replica not admitted by the registry"))?;
        let default_budget = self.env.var(BUDGET_VAR).ok().and_then(|v| v.to_string().parse().ok());
        let config =
            lifecycle::replica_config(&settings, default_budget).map_err(|e| HttpError::internal(e.to_string()))?;
        let boot = if self.trace.is_some() { Driver::boot_traced } else { Driver::boot };
        let (mut driver, outputs) = boot(config, ReplicaId(me.index()), Millis(now_ms()), random_u64())
            .map_err(|e| HttpError::internal(e.to_string()))?;
        self.record(&mut driver);
        self.instance.set(Some(driver.replica().instance()));
        *self.driver.try_borrow_mut().map_err(|_| busy())? = Some(driver);
        self.perform(outputs, None);
        Ok(())
    }

    /// One protocol step. The borrow ends before this returns.
    pub(super) fn step(&self, input: Input) -> Result<Vec<Output>, StepError> {
        let mut slot = self.driver.try_borrow_mut().map_err(|_| StepError::Busy)?;
        let driver = slot.as_mut().ok_or(StepError::NotBooted)?;
        let outputs = driver.handle(Millis(now_ms()), input).map_err(StepError::Refused)?;
        self.record(driver);
        let instance = driver.replica().instance();
        if self.instance.replace(Some(instance)) != Some(instance) {
            // The replica rebooted itself (it learned that its namespace
            // generation died): the waiting clients' writes died with it.
            self.waiters.try_borrow_mut().map(|mut w| w.clear()).ok();
        }
        Ok(outputs)
    }

    /// Runs the due timers, then performs their outputs and `outputs`;
    /// messages to `reply_to` are returned (they ride back in the response
    /// to the request being served) instead of sent. Schedules the next
    /// wake-up, wakes clients waiting for readiness.
    pub(super) fn perform(self: &Rc<Self>, mut outputs: Vec<Output>, reply_to: Option<ReplicaId>) -> Vec<Message> {
        if let Ok(mut slot) = self.driver.try_borrow_mut()
            && let Some(driver) = slot.as_mut()
        {
            // Timers left due after the budget keep their deadline, in the
            // past: the wake-up below is then immediate.
            outputs.extend(driver.run_due(Millis(now_ms()), MAX_SYNC_STEPS));
            self.record(driver);
        }
        let mut inline = Vec::new();
        for output in outputs {
            match output {
                Output::Send(msg) if Some(msg.to) == reply_to => inline.push(msg),
                Output::Send(msg) => self.send(msg),
                Output::Reply { req, reply } => self.reply(req, Answer::Write(reply)),
                Output::ReadReply { req, read } => self.reply(req, Answer::Read(read)),
                // The driver keeps the timers; it never passes these on.
                Output::SetTimer { .. } => {}
            }
        }
        self.schedule_wake();
        self.after_step();
        self.check_idle();
        inline
    }

    /// Stores the steps the driver recorded (trace validation runs only).
    fn record(&self, driver: &mut Driver) {
        if let Some(trace) = &self.trace {
            trace.append(driver.take_trace());
        }
    }

    /// Schedules a `setTimeout` wake-up for the earliest deadline (of the
    /// protocol's timers and of the waiting clients), unless one early
    /// enough is already in flight.
    fn schedule_wake(self: &Rc<Self>) {
        let timers = self.driver.try_borrow().ok().and_then(|d| d.as_ref()?.next_deadline()).map(|at| at.0);
        let clients = self.waiters.try_borrow().ok().and_then(|w| w.earliest());
        let earliest = timers.into_iter().chain(clients).min();
        let plan = self.wake.try_borrow_mut().ok().and_then(|mut w| w.plan(earliest));
        let Some((token, at)) = plan else { return };
        let host = self.clone();
        let delay = Duration::from_millis(at.saturating_sub(now_ms()));
        spawn_local(async move {
            Delay::from(delay).await;
            let current = host.wake.try_borrow_mut().map(|mut w| w.woke(token)).unwrap_or(false);
            if current {
                host.expire_waiters();
                host.expire_deliveries();
                host.perform(Vec::new(), None);
            }
        });
    }

    /// The replica's phase, `None` before boot.
    pub(super) fn phase(&self) -> Option<Status> {
        let slot = self.driver.try_borrow().ok()?;
        Some(slot.as_ref()?.replica().phase())
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
}
