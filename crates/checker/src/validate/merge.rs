//! Merging the streams into one run and replaying it through the real
//! code: the run must be a behaviour of the implementation model
//! (`model/handoff`), whose actions are exactly these steps:
//!
//! - a boot: a replica's first boot (the models' initial states), or its
//!   reboot after an eviction into a newer instance (the order the code
//!   keeps instances in), at the models' guards: the implementation
//!   model's `Evict` while another replica is ready; with no other replica
//!   ready, HandoffGenerations' `Evict` (any time: a total death, or one
//!   outside the spec's regime), counted apart. A coordinator's older
//!   instance may go on as a zombie only as `Supersede` does: it was ready,
//!   and so was another replica. A peer's older instance, and an evicted
//!   coordinator's, must have taken its last step before its successor
//!   boots;
//! - a message delivered: it must have been sent by a step merged before
//!   (`Deliver` from the model's network: unordered, duplicating, lossy);
//! - a message refused: sent before too, and refused as the models allow
//!   only a message of an older generation to be (HandoffGenerations'
//!   `NoProtocolError`); a client request refused changes nothing (a
//!   stutter), counted apart;
//! - a client request (`Put`, `Read`): at any time;
//! - a timer: due at that time -- the one the driver has due first when
//!   it fires one, armed for that time or earlier when the host feeds it.
//!
//! Each step is replayed through `Driver` from the recorded boot (same
//! config, time and seed) and must produce exactly the recorded entry
//! (outputs, instance, phase, epoch): the host fed the replica nothing
//! else and lost none of its state. The merge takes, among the steps
//! whose conditions hold, the earliest by host time; the conditions only
//! ever become true, so if no step can be taken, none of the runs the
//! streams allow is a behaviour and the first blocked step is reported.

use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasher;

use protocol::handoff::trace::{Entry, Row, Step};
use protocol::handoff::{Body, Driver, HandleError, Input, Message, Output, Status};

use super::invariants::{Current, Invariants, no_served_regression};
use super::load::Stream;

/// A step of the run that is not a step of the model, or a state that
/// breaks an invariant.
#[derive(Debug)]
pub struct Misfit {
    /// Steps merged before it.
    pub at: usize,
    pub step: String,
    pub reason: String,
    /// The steps merged just before it, oldest first.
    pub context: Vec<String>,
}

/// What a run that fits consisted of.
#[derive(Debug, Default)]
pub struct Fitted {
    pub steps: usize,
    pub instances: usize,
    pub boots: [usize; 3],
    pub delivered: usize,
    pub timers: usize,
    pub client: usize,
    pub acked: usize,
    pub zombie_steps: usize,
    /// Reboots with no other replica ready (HandoffGenerations' regime: a
    /// total death, or an eviction the implementation model does not take).
    pub evictions_alone: usize,
    /// Messages refused, all of an older generation.
    pub refused_messages: usize,
    /// Client requests refused (nothing changed).
    pub refused_client: usize,
}

const CONTEXT: usize = 12;

struct Run<'a> {
    streams: &'a [Stream],
    cursor: Vec<usize>,
    drivers: Vec<Option<Driver>>,
    /// The stream of each replica's current instance.
    current: [Option<usize>; 3],
    /// Every message sent so far, by hash.
    sent: HashSet<u64>,
    invariants: Invariants,
    context: VecDeque<String>,
    fitted: Fitted,
}

/// Merges and replays `streams`.
pub fn replay(streams: &[Stream]) -> Result<Fitted, Misfit> {
    let mut run = Run {
        streams,
        cursor: vec![0; streams.len()],
        drivers: streams.iter().map(|_| None).collect(),
        current: [None; 3],
        sent: HashSet::new(),
        invariants: Invariants::default(),
        context: VecDeque::new(),
        fitted: Fitted { instances: streams.len(), ..Fitted::default() },
    };
    loop {
        let earliest = |i: &usize| (run.entry(*i).now, *i);
        let Some(first) = run.pending().min_by_key(earliest) else { break };
        let Some(i) = run.pending().filter(|&i| run.enabled(i)).min_by_key(earliest) else {
            return Err(run.misfit(first, run.blocked(first)));
        };
        run.step(i)?;
    }
    run.fitted.acked = run.invariants.acked();
    Ok(run.fitted)
}

impl Run<'_> {
    /// Streams with steps left.
    fn pending(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.streams.len()).filter(|&i| self.cursor[i] < self.streams[i].entries.len())
    }

    fn entry(&self, i: usize) -> &Entry {
        &self.streams[i].entries[self.cursor[i]]
    }

    fn replica_index(&self, i: usize) -> usize {
        usize::from(self.streams[i].replica.0).min(2)
    }

    fn is_coordinator(&self, i: usize) -> bool {
        self.streams[i].replica == self.streams[i].coordinator
    }

    fn enabled(&self, i: usize) -> bool {
        match &self.entry(i).step {
            Step::Boot { .. } => match self.current[self.replica_index(i)] {
                Some(old) if old != i && self.cursor[old] < self.streams[old].entries.len() => self.is_coordinator(i),
                _ => true,
            },
            Step::Handle(Input::Message(m)) | Step::Refused(Input::Message(m)) => self.sent.contains(&key(m)),
            Step::Handle(_) | Step::Refused(_) | Step::Fire(_) => true,
        }
    }

    /// Why stream `i`'s next step cannot be taken.
    fn blocked(&self, i: usize) -> String {
        match &self.entry(i).step {
            Step::Handle(Input::Message(_)) | Step::Refused(Input::Message(_)) => {
                "it receives a message that no step merged before it sent (every other stream is blocked or done \
                 too)"
                    .into()
            }
            Step::Boot { .. } => "a peer boots again while its previous instance still has steps to take (a peer \
                                  has no zombies)"
                .into(),
            _ => "blocked".into(),
        }
    }

    fn step(&mut self, i: usize) -> Result<(), Misfit> {
        let entry = self.entry(i).clone();
        let r = self.replica_index(i);
        let mut booted = Vec::new();
        if let Step::Boot { config, me, seed } = &entry.step {
            if let Some(old) = self.current[r] {
                self.eviction(i, old)?;
                let replaced = self.drivers[old].as_ref().map(|d| d.replica().instance());
                if replaced.is_some_and(|replaced| entry.instance <= replaced) {
                    return Err(self.misfit(
                        i,
                        format!(
                            "the new instance {:?} is not newer than the one it replaces, {replaced:?} (the \
                             coordinator keeps the newest instance of each peer it heard from)",
                            entry.instance
                        ),
                    ));
                }
                let current = view(self.streams, &self.current, &self.drivers);
                self.invariants.dropping(r, &current);
            }
            match Driver::boot_traced(config.clone(), *me, entry.now, *seed) {
                Ok((driver, out)) => {
                    self.drivers[i] = Some(driver);
                    booted = out;
                }
                Err(e) => return Err(self.misfit(i, format!("the recorded config does not boot: {e}"))),
            }
            self.current[r] = Some(i);
            self.fitted.boots[r] += 1;
        }
        let Some(driver) = self.drivers[i].as_ref() else {
            return Err(self.misfit(i, "a step before the boot".into()));
        };
        if driver.replica().instance() != entry.instance && !matches!(entry.step, Step::Boot { .. }) {
            // A reboot into a newer generation drops the memory.
            let current = view(self.streams, &self.current, &self.drivers);
            self.invariants.dropping(r, &current);
        }
        // A ready replica's memory before the step, for NoServedRegression.
        let ready_before = self.drivers[i]
            .as_ref()
            .map(Driver::replica)
            .filter(|r| r.phase() == Status::Ready && !matches!(entry.step, Step::Boot { .. }))
            .map(|r| (r.instance(), r.memory().clone()));
        let Some(driver) = self.drivers[i].as_mut() else {
            return Err(self.misfit(i, "a step before the boot".into()));
        };
        let outputs = match &entry.step {
            // Booted above.
            Step::Boot { .. } => booted,
            Step::Refused(input) => match (driver.handle(entry.now, input.clone()), input) {
                (Ok(_), _) => return Err(self.misfit(i, "replayed, the code takes this input it had refused".into())),
                (Err(HandleError::StaleGeneration { .. }), Input::Message(_)) => {
                    self.fitted.refused_messages += 1;
                    Vec::new()
                }
                (Err(e), Input::Message(_)) => {
                    return Err(self.misfit(
                        i,
                        format!(
                            "the code refuses this message ({e}); the models refuse only a message of an older \
                             generation (NoProtocolError)"
                        ),
                    ));
                }
                (Err(_), _) => {
                    self.fitted.refused_client += 1;
                    Vec::new()
                }
            },
            Step::Handle(input) => {
                if let Input::Timer(timer) = input
                    && driver.deadline(*timer).is_none_or(|at| at > entry.now)
                {
                    let armed = driver.deadline(*timer).map(|at| at.0);
                    return Err(self.misfit(
                        i,
                        format!("the host fed {timer:?} at {}, but it is armed for {armed:?}", entry.now.0),
                    ));
                }
                let handled = driver.handle(entry.now, input.clone());
                match input {
                    Input::Message(_) => self.fitted.delivered += 1,
                    _ => self.fitted.client += 1,
                }
                match handled {
                    Ok(out) => out,
                    Err(e) => return Err(self.misfit(i, format!("the code refuses this input: {e}"))),
                }
            }
            Step::Fire(timer) => {
                let due = driver.due(entry.now);
                if due != Some(*timer) {
                    return Err(self.misfit(i, format!("the host fired {timer:?}, but the timer due was {due:?}")));
                }
                self.fitted.timers += 1;
                driver.fire_next(entry.now).unwrap_or_default()
            }
        };
        let replayed = driver.take_trace();
        if replayed != [Row::Step(Box::new(entry.clone()))] {
            let reason = match replayed.as_slice() {
                [Row::Step(again)] if again.outputs != entry.outputs => {
                    format!("replayed, the step returns other outputs: {}", summary(&outputs))
                }
                [Row::Step(again)] => format!(
                    "replayed, the step ends in another state: instance {:?} phase {:?} epoch {} (recorded {:?} \
                     {:?} {})",
                    again.instance, again.phase, again.epoch.0, entry.instance, entry.phase, entry.epoch.0
                ),
                other => format!("replayed, the step records {other:?}"),
            };
            return Err(self.misfit(i, reason));
        }
        for out in &outputs {
            if let Output::Send(m) = out {
                self.sent.insert(key(m));
            }
        }
        if self.current[r] != Some(i) {
            self.fitted.zombie_steps += 1;
        }
        let current = view(self.streams, &self.current, &self.drivers);
        let checked = match self.drivers[i].as_ref().map(Driver::replica) {
            Some(r) => self.invariants.after_step(r, &outputs, &current).and_then(|()| match &ready_before {
                Some((instance, before)) if r.instance() == *instance && r.phase() == Status::Ready => {
                    no_served_regression(before, r)
                }
                _ => Ok(()),
            }),
            None => Ok(()),
        };
        if let Err(reason) = checked {
            return Err(self.misfit(i, reason));
        }
        self.note(i);
        self.cursor[i] += 1;
        self.fitted.steps += 1;
        Ok(())
    }

    /// Stream `i` boots the replica whose current instance is stream
    /// `old`: the models' eviction guards (the module doc).
    fn eviction(&mut self, i: usize, old: usize) -> Result<(), Misfit> {
        let r = self.replica_index(i);
        let ready = |s: usize| self.drivers[s].as_ref().is_some_and(|d| d.replica().phase() == Status::Ready);
        let others_ready = (0..3).filter(|&x| x != r).filter_map(|x| self.current[x]).any(ready);
        let zombie = old != i && self.cursor[old] < self.streams[old].entries.len();
        if zombie && !(ready(old) && others_ready) {
            return Err(self.misfit(
                i,
                "the coordinator is superseded (its older instance steps on), but Supersede needs it ready and \
                 another replica ready"
                    .into(),
            ));
        }
        if !others_ready {
            self.fitted.evictions_alone += 1;
        }
        Ok(())
    }

    fn note(&mut self, i: usize) {
        if self.context.len() == CONTEXT {
            self.context.pop_front();
        }
        let line = describe(&self.streams[i], self.entry(i));
        self.context.push_back(line);
    }

    fn misfit(&self, i: usize, reason: String) -> Misfit {
        Misfit {
            at: self.fitted.steps,
            step: describe(&self.streams[i], self.entry(i)),
            reason,
            context: self.context.iter().cloned().collect(),
        }
    }
}

/// The current instance of each replica.
fn view<'a>(streams: &[Stream], current: &[Option<usize>; 3], drivers: &'a [Option<Driver>]) -> Current<'a> {
    let replica = |r: usize| current[r].and_then(|i| drivers[i].as_ref()).map(Driver::replica);
    let coordinator = streams.first().map_or(0, |s| usize::from(s.coordinator.0));
    Current { replicas: [replica(0), replica(1), replica(2)], coordinator }
}

/// A message's identity in the network: a hash of all of it.
fn key(m: &Message) -> u64 {
    foldhash::fast::FixedState::with_seed(0).hash_one(m)
}

/// One line: which object, which step, when, what.
pub fn describe(stream: &Stream, e: &Entry) -> String {
    let what = match &e.step {
        Step::Boot { seed, .. } => format!("boot (seed {seed:016x})"),
        Step::Handle(Input::Message(m)) => format!("receive {} from {}", message(m), m.from),
        Step::Handle(Input::Put { key, wid, .. }) => format!("client put {key} (wid {wid})"),
        Step::Handle(Input::Delete { key, wid, .. }) => format!("client delete {key} (wid {wid})"),
        Step::Handle(Input::Read { key, req }) => format!("client read {key} (req {})", req.0),
        Step::Handle(Input::List { prefix, req, .. }) => format!("client list {prefix:?} (req {})", req.0),
        Step::Handle(Input::Timer(t)) | Step::Fire(t) => format!("timer {t:?}"),
        Step::Refused(Input::Message(m)) => format!("refuse {} from {}", message(m), m.from),
        Step::Refused(_) => "refuse a client request".into(),
    };
    format!(
        "{} object {:016x} step {} at {} ms: {what} -> {:?}, epoch {}",
        stream.replica, stream.object, e.seq, e.now.0, e.phase, e.epoch.0
    )
}

fn message(m: &Message) -> String {
    match &m.body {
        Body::Push { key, record, .. } => format!("push {key} @ {}.{}", record.stamp.ep.0, record.stamp.ver.0),
        body => body.kind().to_string(),
    }
}

fn summary(outputs: &[Output]) -> String {
    let parts: Vec<String> = outputs
        .iter()
        .map(|o| match o {
            Output::Send(m) => format!("send {} to {}", message(m), m.to),
            Output::Reply { reply, .. } => format!("reply {reply:?}"),
            Output::ReadReply { read, .. } => format!("read reply {read:?}"),
            Output::ListReply { list, .. } => format!("list reply {list:?}"),
            Output::SetTimer { timer, at } => format!("arm {timer:?} at {}", at.0),
        })
        .collect();
    parts.join(", ")
}
