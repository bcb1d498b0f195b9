//! The timer loop every host runs around a replica, once: remember the
//! deadline of each armed timer ([`Output::SetTimer`] replaces it), feed a
//! timer in when it is due, and run a timer armed for `now` (recovery's
//! next internal step) before sleeping. The Durable Object and the test
//! network both drive their replicas through a [`Driver`]; the model
//! checker does not (there, firing a timer is a nondeterministic action).
//!
//! No clock: `now` is passed in. The host only performs the other outputs
//! and sleeps until [`Driver::next_deadline`].

use std::collections::BTreeMap;

use super::config::Config;
use super::error::{ConfigError, HandleError};
use super::ids::{Millis, ReplicaId};
use super::interface::{Input, Output, Timer};
use super::replica::Replica;
use super::trace::{Entry, Row, Step, outputs_digest};

/// A replica and its armed timers.
#[derive(Clone, Debug)]
pub struct Driver {
    replica: Replica,
    /// At most one deadline per timer.
    deadlines: BTreeMap<Timer, Millis>,
    /// The steps taken and not yet drained, when tracing.
    trace: Option<Tracer>,
}

/// Steps recorded and not yet drained ([`Driver::take_trace`]).
#[derive(Clone, Debug, Default)]
struct Tracer {
    seq: u64,
    entries: Vec<Entry>,
    /// Steps not recorded because `entries` was full.
    lost: u64,
}

/// Entries a tracing driver keeps undrained before it counts steps as
/// lost (a host drains after every call; one call takes at most one step
/// plus its due timers).
const MAX_UNDRAINED: usize = 4_096;

impl Driver {
    /// [`Replica::boot`], with the boot's timers armed; returns the other
    /// outputs to perform.
    pub fn boot(config: Config, me: ReplicaId, now: Millis, seed: u64) -> Result<(Driver, Vec<Output>), ConfigError> {
        Driver::boot_with(config, me, now, seed, None)
    }

    /// [`Driver::boot`], recording every step from the boot on
    /// ([`trace`](super::trace)).
    pub fn boot_traced(
        config: Config,
        me: ReplicaId,
        now: Millis,
        seed: u64,
    ) -> Result<(Driver, Vec<Output>), ConfigError> {
        Driver::boot_with(config, me, now, seed, Some(Tracer::default()))
    }

    fn boot_with(
        config: Config,
        me: ReplicaId,
        now: Millis,
        seed: u64,
        trace: Option<Tracer>,
    ) -> Result<(Driver, Vec<Output>), ConfigError> {
        let step = trace.is_some().then(|| Step::Boot { config: config.clone(), me, seed });
        let (replica, out) = Replica::boot(config, me, now, seed)?;
        let mut driver = Driver { replica, deadlines: BTreeMap::new(), trace };
        driver.record(now, step, &out);
        let out = driver.arm(out);
        Ok((driver, out))
    }

    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    /// [`Replica::handle`]; the timers among the outputs are armed, the
    /// other outputs returned in order. Feeding a timer disarms it. On
    /// `Err` nothing changed (a tracing driver records the refusal).
    pub fn handle(&mut self, now: Millis, input: Input) -> Result<Vec<Output>, HandleError> {
        let timer = match &input {
            Input::Timer(t) => Some(*t),
            _ => None,
        };
        let traced = self.trace.is_some().then(|| input.clone());
        let out = match self.replica.handle(now, input) {
            Ok(out) => out,
            Err(e) => {
                self.record(now, traced.map(Step::Refused), &[]);
                return Err(e);
            }
        };
        self.record(now, traced.map(Step::Handle), &out);
        if let Some(t) = timer {
            self.deadlines.remove(&t);
        }
        Ok(self.arm(out))
    }

    /// The earliest deadline: when the host should wake up next.
    pub fn next_deadline(&self) -> Option<Millis> {
        self.deadlines.values().min().copied()
    }

    /// Runs the earliest timer due at `now` (ties in [`Timer`] order), if
    /// any: one protocol step; returns its outputs.
    pub fn fire_next(&mut self, now: Millis) -> Option<Vec<Output>> {
        let timer = self.due(now)?;
        self.deadlines.remove(&timer);
        let out = self.replica.on_timer(now, timer);
        self.record(now, Some(Step::Fire(timer)), &out);
        Some(self.arm(out))
    }

    /// Runs the timers due at `now` until none is -- a timer one of them
    /// arms for `now` runs too -- or `max_steps` ran; returns their outputs
    /// in order. A timer still due after that stays armed (the next
    /// deadline is then in the past: the host wakes up again at once).
    pub fn run_due(&mut self, now: Millis, max_steps: usize) -> Vec<Output> {
        let mut out = Vec::new();
        for _ in 0..max_steps {
            match self.fire_next(now) {
                Some(step) => out.extend(step),
                None => break,
            }
        }
        out
    }

    /// When `timer` is armed to fire, if it is.
    pub fn deadline(&self, timer: Timer) -> Option<Millis> {
        self.deadlines.get(&timer).copied()
    }

    /// The timer [`Driver::fire_next`] would fire at `now`.
    pub fn due(&self, now: Millis) -> Option<Timer> {
        self.deadlines.iter().filter(|&(_, &at)| at <= now).min_by_key(|&(&t, &at)| (at, t)).map(|(&t, _)| t)
    }

    /// How many steps this driver has taken while tracing (the `seq` of
    /// its next entry); `None` unless booted with [`Driver::boot_traced`].
    /// A host names it when asked where its trace ends, so a trace cut
    /// short of it is found (docs/verification.md 1.6).
    pub fn traced_steps(&self) -> Option<u64> {
        self.trace.as_ref().map(|t| t.seq)
    }

    /// The steps recorded since the last call (none unless booted with
    /// [`Driver::boot_traced`]), and a [`Row::Lost`] if some were not kept.
    pub fn take_trace(&mut self) -> Vec<Row> {
        let Some(tracer) = self.trace.as_mut() else { return Vec::new() };
        let mut rows: Vec<Row> = tracer.entries.drain(..).map(|e| Row::Step(Box::new(e))).collect();
        if tracer.lost > 0 {
            rows.push(Row::Lost { steps: std::mem::take(&mut tracer.lost) });
        }
        rows
    }

    /// Records a step when tracing.
    fn record(&mut self, now: Millis, step: Option<Step>, out: &[Output]) {
        let (Some(tracer), Some(step)) = (self.trace.as_mut(), step) else { return };
        let seq = tracer.seq;
        tracer.seq += 1;
        if tracer.entries.len() >= MAX_UNDRAINED {
            tracer.lost += 1;
            return;
        }
        let replica = &self.replica;
        tracer.entries.push(Entry {
            seq,
            now,
            step,
            outputs: outputs_digest(out),
            instance: replica.instance(),
            phase: replica.phase(),
            epoch: replica.epoch(),
        });
    }

    /// Number of armed timers.
    pub fn armed(&self) -> usize {
        self.deadlines.len()
    }

    /// Arms the timers among `outputs`; returns the others.
    fn arm(&mut self, outputs: Vec<Output>) -> Vec<Output> {
        outputs
            .into_iter()
            .filter_map(|o| match o {
                Output::SetTimer { timer, at } => {
                    self.deadlines.insert(timer, at);
                    None
                }
                other => Some(other),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::ids::{Epoch, Generation};
    use crate::handoff::{Body, Memory, Message, Status};

    const C: ReplicaId = ReplicaId(0);
    const P: [ReplicaId; 2] = [ReplicaId(1), ReplicaId(2)];

    fn coordinator() -> (Driver, Vec<Output>) {
        Driver::boot(Config::new(C, P).unwrap(), C, Millis(1_000), 7).unwrap()
    }

    fn sends(out: &[Output]) -> Vec<&'static str> {
        out.iter()
            .filter_map(|o| match o {
                Output::Send(m) => Some(m.body.kind()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn boot_arms_the_three_timers_and_returns_the_rest() {
        let (d, out) = coordinator();
        assert_eq!(d.armed(), 3);
        assert_eq!(sends(&out), ["collect", "collect"]);
        assert!(out.iter().all(|o| !matches!(o, Output::SetTimer { .. })));
        let config = Config::new(C, P).unwrap();
        assert_eq!(d.next_deadline(), Some(Millis(1_000 + config.retry_ms)));
    }

    #[test]
    fn due_timers_run_in_deadline_order_and_rearm() {
        let (mut d, _) = coordinator();
        let config = Config::new(C, P).unwrap();
        assert!(d.run_due(Millis(1_000), 64).is_empty(), "nothing is due at boot");
        let at = Millis(1_000 + config.heartbeat_ms);
        // Retry (every 250 ms) fell due first, then the heartbeat; each ran
        // once and re-armed itself past `at`.
        let out = d.run_due(at, 64);
        assert_eq!(sends(&out), ["collect", "collect", "heartbeat", "heartbeat"]);
        assert_eq!(d.armed(), 3);
        assert!(d.next_deadline().is_some_and(|next| next > at));
    }

    #[test]
    fn a_step_armed_for_now_runs_before_returning_within_the_budget() {
        let (mut d, out) = coordinator();
        let instance = d.replica().instance();
        assert_eq!(out.len(), 2);
        let now = Millis(1_010);
        let generation = Some(Generation { minted_at: 1, nonce: 2 });
        for p in P {
            let reply = Body::CollectReply {
                instance,
                peer: instance,
                known: Epoch(3),
                floor: crate::handoff::Stamp::ZERO,
                chunk: Memory::default().chunk(None, 1),
            };
            let out = d.handle(now, Input::Message(Message::new(generation, p, C, reply))).unwrap();
            assert!(out.is_empty());
        }
        // The last reply armed the retry timer at `now`: ChooseEpoch is due.
        assert_eq!(d.next_deadline(), Some(now));
        assert!(d.run_due(now, 0).is_empty(), "no budget, no step");
        assert_eq!(d.next_deadline(), Some(now), "still due: the host wakes up at once");
        let out = d.run_due(now, 64);
        assert_eq!(sends(&out), ["announce", "announce"]);
        assert_eq!(d.replica().phase(), Status::Announce);
        assert_eq!(d.replica().status().epoch, Epoch(4));
        assert!(d.next_deadline().is_some_and(|next| next > now));
    }

    #[test]
    fn feeding_a_timer_disarms_it_and_refusals_change_nothing() {
        let (mut d, _) = coordinator();
        d.handle(Millis(1_000), Input::Timer(Timer::Gossip)).unwrap();
        assert_eq!(d.armed(), 3, "gossip re-armed itself");
        let foreign = Message::new(None, ReplicaId(9), C, Body::Heartbeat);
        let before = d.next_deadline();
        assert!(d.handle(Millis(1_000), Input::Message(foreign)).is_err());
        assert_eq!((d.armed(), d.next_deadline()), (3, before));
    }

    #[test]
    fn a_tracing_driver_records_refused_inputs_too() {
        let config = Config::new(C, P).unwrap();
        let (mut d, _) = Driver::boot_traced(config, C, Millis(1_000), 7).unwrap();
        let instance = d.replica().instance();
        assert!(matches!(d.take_trace().as_slice(), [Row::Step(e)] if matches!(e.step, Step::Boot { .. })));
        let foreign = Message::new(None, ReplicaId(9), C, Body::Heartbeat);
        assert!(d.handle(Millis(1_001), Input::Message(foreign.clone())).is_err());
        match d.take_trace().as_slice() {
            [Row::Step(e)] => {
                assert_eq!(e.step, Step::Refused(Input::Message(foreign)));
                assert_eq!((e.seq, e.now, e.outputs, e.instance), (1, Millis(1_001), outputs_digest(&[]), instance));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(d.deadline(Timer::Gossip).map(|at| at > Millis(1_000)), Some(true));
    }
}
