//! What both roles share: the [`Node`] (identity, boot, generation,
//! memory, floor) and the behaviour that does not depend on the role --
//! the heartbeat and digest timers, the answer to a reseed request, taking
//! a snapshot chunk, anti-entropy by digest, the tombstone floor, and
//! adopting a generation. The roles ([`coordinator`](super::coordinator),
//! [`peer`](super::peer)) decide *when* (their phase); this module says
//! *what*.

use std::collections::BTreeMap;

use super::config::Config;
use super::ids::{Epoch, Generation, Instance, Key, Millis, ReplicaId, SplitMix64};
use super::interface::{Output, Timer};
use super::memory::{Chunk, Digest, Memory, Records};
use super::message::{Body, Message};
use super::record::Stamp;

/// Who this is, which boot, which generation, the memory (for the
/// coordinator: committed data only) and the tombstone floor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Node {
    pub(super) config: Config,
    pub(super) me: ReplicaId,
    pub(super) instance: Instance,
    pub(super) rng: SplitMix64,
    pub(super) generation: Option<Generation>,
    pub(super) mem: Memory,
    /// HandoffScale's `floor[r]`: tombstones at or below it are collected
    /// (once this replica is ready), and a record at or below it for a key
    /// it stores nothing for is refused.
    pub(super) floor: Stamp,
    /// Per other replica, where the next answer to its digest starts, if
    /// the last one was cut short (`Memory::differing`).
    pub(super) gossip_after: BTreeMap<ReplicaId, Key>,
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
            // The expiry timer's deadline is the earliest expiry; armed by
            // interval only to look again at what waits (coordinator).
            Timer::Retry | Timer::Expire => self.config.retry_ms,
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

    /// [`Timer::Gossip`]: a ready replica sends its digest, the epoch it
    /// knows and its floor (`DigestSend`) -- the coordinator to both peers,
    /// a peer to the coordinator; the timer is re-armed either way.
    pub(super) fn send_digest(&self, now: Millis, ready: bool, known: Epoch) -> Vec<Output> {
        let mut out = Vec::new();
        if ready {
            let body =
                Body::Digest { instance: self.instance, known, floor: self.floor, digest: self.mem.digest().clone() };
            let coordinator = self.config.coordinator();
            if self.me == coordinator {
                out.extend(self.send_others(body));
            } else {
                out.push(self.send(coordinator, body));
            }
        }
        out.push(self.arm(now, Timer::Gossip));
        out
    }

    /// `DigestRecv`: a ready replica takes the digest's floor, then answers
    /// with its records in the buckets where the digests differ (one
    /// chunk's worth; the next digest brings the next chunk). A recovering
    /// one ignores digests.
    pub(super) fn on_digest(&mut self, from: ReplicaId, floor: Stamp, theirs: &Digest, ready: bool) -> Vec<Output> {
        if !ready {
            return Vec::new();
        }
        self.raise_floor(floor);
        let (records, next) = self.mem.differing(theirs, self.config.chunk_bytes, self.gossip_after.get(&from));
        match next {
            // Kept for the other replicas only: one entry each at most.
            Some(key) if self.config.others(self.me).any(|r| r == from) => {
                self.gossip_after.insert(from, key);
            }
            _ => {
                self.gossip_after.remove(&from);
            }
        }
        if records.0.is_empty() {
            return Vec::new();
        }
        vec![self.send(from, Body::Records { floor: self.floor, records })]
    }

    /// `GossipRecv`: a ready replica takes the floor, then max-merges each
    /// record the floor does not refuse. A recovering one ignores gossip
    /// (it reseeds instead).
    pub(super) fn on_records(&mut self, floor: Stamp, records: &Records, ready: bool) {
        if ready {
            self.raise_floor(floor);
            for (k, r) in &records.0 {
                self.mem.merge_above(k, r, self.floor);
            }
        }
    }

    /// Takes `floor` if it is higher, and collects the tombstones at or
    /// below this replica's floor (callers are ready).
    pub(super) fn raise_floor(&mut self, floor: Stamp) {
        if floor.wins(self.floor) {
            self.floor = floor;
        }
        self.collect();
    }

    /// Drops the tombstones the floor stands for.
    pub(super) fn collect(&mut self) {
        #[cfg(feature = "mutations")]
        if self.config.mutated(super::config::Mutation::CollectAboveFloor) {
            let all = Stamp { ep: Epoch(u64::MAX), ver: super::ids::Version(u64::MAX) };
            self.mem.collect(all);
            return;
        }
        self.mem.collect(self.floor);
    }

    /// The answer to `Reseed` from `to` (its cursor `after`): a replica
    /// that `CanSeed` sends its next chunk, `SrcKnow` (`src_know`) and its
    /// floor; any other declines.
    pub(super) fn answer_reseed(
        &self,
        to: ReplicaId,
        instance: Instance,
        after: Option<&Key>,
        can_seed: bool,
        src_know: Epoch,
    ) -> Output {
        if can_seed {
            let chunk = self.mem.chunk(after, self.config.chunk_bytes);
            let body = Body::ReseedReply { instance, source: self.instance, known: src_know, floor: self.floor, chunk };
            self.send(to, body)
        } else {
            self.send(to, Body::ReseedDecline { instance, source: self.instance })
        }
    }

    /// The next chunk of this replica's memory for a collect.
    pub(super) fn collect_chunk(&self, after: Option<&Key>) -> Chunk {
        self.mem.chunk(after, self.config.chunk_bytes)
    }

    /// `ReseedChunkC` / `ReseedChunkPeer`: merges a chunk (a recovering
    /// replica stores everything), takes its floor, and returns the highest
    /// epoch it witnesses, `Max(know, MemEpMax(chunk))`.
    pub(super) fn absorb(&mut self, chunk: &Chunk, known: Epoch, floor: Stamp) -> Epoch {
        for (k, r) in &chunk.records.0 {
            self.mem.merge(k, r);
        }
        if floor.wins(self.floor) {
            self.floor = floor;
        }
        known.max(chunk.records.max_epoch())
    }

    /// A replica that has no generation yet (a booting one) joins the one
    /// its source names.
    pub(super) fn adopt_generation(&mut self, theirs: Option<Generation>) {
        if self.generation.is_none() {
            self.generation = theirs;
        }
    }
}
