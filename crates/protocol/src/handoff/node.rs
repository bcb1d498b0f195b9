//! What both roles share: the [`Node`] (identity, boot, generation,
//! memory) and the behaviour that does not depend on the role -- the
//! heartbeat and gossip timers, the answer to a reseed request, the gossip
//! merge, absorbing a snapshot, and adopting a generation. The roles
//! ([`coordinator`](super::coordinator), [`peer`](super::peer)) decide
//! *when* (their phase); this module says *what*.

use super::config::Config;
use super::ids::{Epoch, Generation, Instance, Millis, ReplicaId, SplitMix64};
use super::interface::{Output, Timer};
use super::memory::Memory;
use super::message::{Body, Message};

/// Who this is, which boot, which generation, and the memory (for the
/// coordinator: committed data only).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Node {
    pub(super) config: Config,
    pub(super) me: ReplicaId,
    pub(super) instance: Instance,
    pub(super) rng: SplitMix64,
    pub(super) generation: Option<Generation>,
    pub(super) mem: Memory,
}

impl Node {
    pub(super) fn send(&self, to: ReplicaId, body: Body) -> Output {
        Output::Send(Message::new(self.generation, self.me, to, body))
    }

    /// Sends `body` to both other replicas.
    pub(super) fn send_others(&self, body: Body) -> impl Iterator<Item = Output> + '_ {
        self.config.others(self.me).map(move |to| self.send(to, body.clone()))
    }

    /// Arms `timer` one interval from now.
    pub(super) fn arm(&self, now: Millis, timer: Timer) -> Output {
        let ms = match timer {
            Timer::Retry => self.config.retry_ms,
            Timer::Heartbeat => self.config.heartbeat_ms,
            Timer::Gossip => self.config.gossip_ms,
        };
        Output::SetTimer { timer, at: now.plus(ms) }
    }

    /// Asks for the next internal step: the retry timer, due now.
    pub(super) fn step_now(now: Millis) -> Output {
        Output::SetTimer { timer: Timer::Retry, at: now }
    }

    /// Timers every replica runs from boot.
    pub(super) fn boot_timers(&self, now: Millis) -> [Output; 3] {
        [self.arm(now, Timer::Retry), self.arm(now, Timer::Heartbeat), self.arm(now, Timer::Gossip)]
    }

    /// [`Timer::Heartbeat`]: keep-alives to both other replicas, re-armed.
    pub(super) fn heartbeat(&self, now: Millis) -> Vec<Output> {
        let mut out: Vec<Output> = self.send_others(Body::Heartbeat).collect();
        out.push(self.arm(now, Timer::Heartbeat));
        out
    }

    /// [`Timer::Gossip`]: the spec's `Gossip` needs both ends ready, so
    /// only a `ready` replica sends its memory; the timer is re-armed
    /// either way.
    pub(super) fn gossip(&self, now: Millis, ready: bool) -> Vec<Output> {
        let mut out: Vec<Output> =
            if ready { self.send_others(Body::Gossip { memory: self.mem.clone() }).collect() } else { Vec::new() };
        out.push(self.arm(now, Timer::Gossip));
        out
    }

    /// Gossip in: `MergeMem` at a `ready` replica; a recovering one
    /// ignores it (it reseeds instead).
    pub(super) fn merge_gossip(&mut self, memory: &Memory, ready: bool) {
        if ready {
            self.mem.merge_all(memory);
        }
    }

    /// The answer to `Reseed` from `to`: a replica that `CanSeed` sends its
    /// memory and `SrcKnow` (`src_know`), any other declines.
    pub(super) fn answer_reseed(&self, to: ReplicaId, instance: Instance, can_seed: bool, src_know: Epoch) -> Output {
        if can_seed {
            self.send(to, Body::ReseedReply { instance, known: src_know, memory: self.mem.clone() })
        } else {
            self.send(to, Body::ReseedDecline { instance })
        }
    }

    /// `ReseedC` / `ReseedPeer`: merges a snapshot and returns the highest
    /// epoch it witnesses, `Max(known, MemEpMax(memory))`.
    pub(super) fn absorb(&mut self, memory: &Memory, known: Epoch) -> Epoch {
        self.mem.merge_all(memory);
        known.max(memory.max_epoch())
    }

    /// A replica that has no generation yet (a booting one) joins the one
    /// its source names.
    pub(super) fn adopt_generation(&mut self, theirs: Option<Generation>) {
        if self.generation.is_none() {
            self.generation = theirs;
        }
    }
}
