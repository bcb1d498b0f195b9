//! The coordinator: issues every write, commits on the first peer ack, and
//! recovers after a reboot in two phases (collect snapshots and known
//! epochs from both peers, chunk by chunk, choose `collectMax + 1`,
//! announce it to both peers) before serving.
//!
//! Only ready peers answer a collect (HandoffV2's `CanSeed`); recovering
//! ones decline. A coordinator with no generation whose collect was
//! declined by both peers, twice in a row by the same two peer instances,
//! knows that at some instant no replica was ready -- first boot, or all
//! three died -- and mints a new generation (at epoch 1). Within the
//! spec's regime (some replica always ready) that never happens.
//!
//! HandoffV2 lets the coordinator serve only while every peer knows its
//! epoch. No message can tell that (a peer may reboot right after acking),
//! so the announce runs in rounds: every ack names the acking peer's
//! instance, and the coordinator serves after two consecutive complete
//! rounds acked by the same two instances -- each lived from its first ack
//! to its second, so when the first round completed both peers knew the
//! epoch, and from then on every peer that boots learns it before serving.
//!
//! Zombie fencing: a peer that knows a newer epoch refuses this instance's
//! pushes and announces; on the first refusal the instance is `Fenced` --
//! it fails its waiting clients and never acknowledges a write again.
//!
//! HandoffScale: a write is admitted only within the namespace's budget
//! and the pending window (count and bytes); an unacknowledged write is
//! pushed again with a doubling wait; the coordinator raises the tombstone
//! floor to `(epoch, verCtr)` once nothing is pending and the newest
//! instance it heard from of each peer (`reg`) sent it a digest equal to
//! its own while knowing its epoch (`RaiseFloor`).
//!
//! HandoffReads: a read is answered only after a ready, unfenced peer
//! confirmed, after the read arrived, that this instance's epoch is still
//! the newest it knows (`ReadConfirm`). A superseded instance that does not
//! know it yet (a zombie) would otherwise answer from a memory that misses
//! writes its successor committed. One confirm round answers every read
//! that was waiting when it was sent; reads that arrive meanwhile wait for
//! the next round.

use std::collections::{BTreeMap, BTreeSet};

use super::error::HandleError;
use super::ids::{ClientRequestId, Epoch, Generation, Instance, Key, Millis, ReplicaId, Version, WriteId};
use super::interface::{Output, Read, Status, Timer, WriteReply};
use super::memory::{self, Digest};
use super::message::{Body, Message};
use super::node::Node;
use super::record::{Record, Stamp, Value};

/// The coordinator's recovery phase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Collecting snapshots from ready peers; `collected` = the spec's
    /// `seeded[Coordinator]`, `cursors` its `got[Coordinator]` (the key each
    /// peer's next chunk starts after). `declined` holds this round's
    /// declines (by peer instance) and `prev_declined` the last fully
    /// declined round's.
    Collect {
        collected: BTreeSet<ReplicaId>,
        cursors: BTreeMap<ReplicaId, Key>,
        round: u64,
        declined: BTreeMap<ReplicaId, Instance>,
        prev_declined: BTreeMap<ReplicaId, Instance>,
    },
    /// Announcing `epoch` in round `round`; `acked` (the spec's
    /// `seeded[Coordinator]`) maps each peer that acked this round to its
    /// instance, `prev` is the last complete round's.
    Announce { round: u64, acked: BTreeMap<ReplicaId, Instance>, prev: BTreeMap<ReplicaId, Instance> },
    /// Serving reads and writes.
    Ready,
    /// Superseded: a peer refused this instance's epoch.
    Fenced,
}

/// A write pushed to the peers and not yet acked by either.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pending {
    pub key: Key,
    pub record: Record,
    /// Client requests waiting for this write (a client may retry with the
    /// same write id before the first attempt commits).
    pub waiters: Vec<ClientRequestId>,
    /// When to push it again, and how many times it was pushed.
    next_push: Millis,
    pushes: u32,
}

/// A peer's digest that equalled this coordinator's own: from which
/// instance, at which `(epoch, verCtr)`, for which digest.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Match {
    instance: Instance,
    at: Stamp,
    digest: Digest,
}

/// Client reads waiting for a confirmation (HandoffReads' `reads` at this
/// instance).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Reads {
    /// The last confirm round sent.
    round: u64,
    /// While that round is in flight, the reads it answers.
    asked: Option<Vec<(ClientRequestId, Key)>>,
    /// Reads that arrived after that round was sent: the next round's.
    next: Vec<(ClientRequestId, Key)>,
}

/// The coordinator's state beyond the shared [`Node`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Coordinator {
    phase: Phase,
    /// The spec's `epoch` (0 until chosen).
    epoch: Epoch,
    /// The spec's `collectMax`: highest epoch heard during collect.
    collect_max: Epoch,
    /// The spec's `verCtr`.
    ver_ctr: Version,
    /// The spec's `pending`, by version (unique within the epoch).
    pending: BTreeMap<Version, Pending>,
    /// HandoffScale's `reg`: the newest instance of each peer heard from.
    reg: BTreeMap<ReplicaId, Instance>,
    /// Digests of peers that equalled this coordinator's (`RaiseFloor`).
    matched: BTreeMap<ReplicaId, Match>,
    reads: Reads,
}

/// Messages a coordinator never receives.
pub(super) fn check(msg: &Message) -> Result<(), HandleError> {
    match &msg.body {
        Body::Push { .. }
        | Body::Collect { .. }
        | Body::Announce { .. }
        | Body::ReseedReply { .. }
        | Body::ReseedDecline { .. }
        | Body::Confirm { .. } => Err(HandleError::UnexpectedMessage { kind: msg.body.kind(), role: "coordinator" }),
        Body::Digest { .. } | Body::Records { .. } | Body::CollectReply { .. } if msg.generation.is_none() => {
            Err(HandleError::MissingGeneration { kind: msg.body.kind() })
        }
        _ => Ok(()),
    }
}

impl Coordinator {
    /// A new instance starts collecting from both peers.
    pub(super) fn boot(node: &Node, now: Millis) -> (Coordinator, Vec<Output>) {
        let c = Coordinator {
            phase: Phase::Collect {
                collected: BTreeSet::new(),
                cursors: BTreeMap::new(),
                round: 0,
                declined: BTreeMap::new(),
                prev_declined: BTreeMap::new(),
            },
            epoch: Epoch::NONE,
            collect_max: Epoch::NONE,
            ver_ctr: Version(0),
            pending: BTreeMap::new(),
            reg: BTreeMap::new(),
            matched: BTreeMap::new(),
            reads: Reads::default(),
        };
        let mut out: Vec<Output> =
            node.send_others(Body::Collect { instance: node.instance, round: 0, after: None }).collect();
        out.extend(node.boot_timers(now));
        (c, out)
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    pub fn collect_max(&self) -> Epoch {
        self.collect_max
    }

    pub fn ver_ctr(&self) -> Version {
        self.ver_ctr
    }

    /// Uncommitted writes, in version order.
    pub fn pending(&self) -> impl Iterator<Item = &Pending> {
        self.pending.values()
    }

    /// Bytes the uncommitted writes hold.
    pub fn pending_bytes(&self) -> usize {
        self.pending.values().map(|p| memory::cost(&p.key, &p.record)).sum()
    }

    /// The confirm round in flight for waiting reads, if any.
    pub fn confirming(&self) -> Option<u64> {
        self.reads.asked.as_ref().map(|_| self.reads.round)
    }

    /// HandoffScale's `reg[p]`: the newest instance of peer `p` heard from.
    pub fn registered(&self, p: ReplicaId) -> Option<Instance> {
        self.reg.get(&p).copied()
    }

    pub(super) fn status(&self) -> Status {
        match self.phase {
            Phase::Collect { .. } => Status::Collect,
            Phase::Announce { .. } => Status::Announce,
            Phase::Ready => Status::Ready,
            Phase::Fenced => Status::Fenced,
        }
    }

    fn unavailable(&self, node: &Node) -> Option<WriteReply> {
        match self.phase {
            Phase::Ready => None,
            Phase::Fenced => Some(WriteReply::Superseded),
            Phase::Collect { .. } | Phase::Announce { .. } => {
                Some(WriteReply::Unavailable { status: self.status(), retry_after_ms: node.config.retry_after_ms })
            }
        }
    }

    /// `Heard(p, i)`: this coordinator heard from instance `i` of peer `p`.
    pub(super) fn heard(&mut self, p: ReplicaId, i: Instance) {
        let newest = self.reg.get(&p).map_or(i, |&r| r.max(i));
        self.reg.insert(p, newest);
    }

    /// `ClientWrite`: admitted within the budget and the pending window,
    /// buffered as pending (never served from there) and pushed to both
    /// peers. Not applied locally until a peer acks.
    pub(super) fn on_write(
        &mut self,
        node: &mut Node,
        now: Millis,
        req: ClientRequestId,
        key: Key,
        value: Value,
        wid: WriteId,
    ) -> Vec<Output> {
        let reply = |reply: WriteReply| vec![Output::Reply { req, reply }];
        if let Some(r) = self.unavailable(node) {
            return reply(r);
        }
        // A client retrying a write id: answer from the committed record,
        // or wait for the pending attempt, instead of writing twice.
        if let Some(held) = node.mem.get(&key).filter(|r| r.wid == wid) {
            return reply(WriteReply::Committed { key, stamp: held.stamp, wid });
        }
        if let Some(p) = self.pending.values_mut().find(|p| p.key == key && p.record.wid == wid) {
            p.waiters.push(req);
            return Vec::new();
        }
        let overloaded = WriteReply::Overloaded { retry_after_ms: node.config.retry_after_ms };
        let Some(ver) = self.ver_ctr.0.checked_add(1).map(Version) else { return reply(overloaded) };
        let record = Record { stamp: Stamp { ep: self.epoch, ver }, wid, value };
        let size = memory::cost(&key, &record);
        if self.pending.len() >= node.config.max_pending
            || self.pending_bytes().saturating_add(size) > node.config.max_pending_bytes
        {
            return reply(overloaded);
        }
        let (held, needed) = (self.held(node), self.grows(node, &key, size));
        if needed > 0 && held.saturating_add(needed) > node.config.budget_bytes {
            return reply(WriteReply::Full { held, needed, budget: node.config.budget_bytes });
        }
        self.ver_ctr = ver;
        let push = Body::Push { instance: node.instance, key: key.clone(), record: record.clone() };
        let next_push = now.plus(node.config.retry_ms);
        self.pending.insert(ver, Pending { key, record, waiters: vec![req], next_push, pushes: 1 });
        let mut out: Vec<Output> = node.send_others(push).collect();
        out.push(node.arm(now, Timer::Retry));
        #[cfg(feature = "mutations")]
        if node.config.mutated(super::config::Mutation::CommitBeforeAck)
            && let Some(key) = self.pending.get(&ver).map(|p| p.key.clone())
        {
            out.extend(self.commit(node, &key, Stamp { ep: self.epoch, ver }, wid));
        }
        out
    }

    /// The budget's count: bytes stored plus what the pending writes add
    /// (for each key, its latest pending write over what is stored).
    fn held(&self, node: &Node) -> usize {
        let mut latest: BTreeMap<&Key, usize> = BTreeMap::new();
        for p in self.pending.values() {
            latest.insert(&p.key, memory::cost(&p.key, &p.record));
        }
        let extra: usize = latest.iter().map(|(k, &size)| size.saturating_sub(self.stored(node, k))).sum();
        node.mem.bytes().saturating_add(extra)
    }

    /// What a write of `size` bytes to `key` adds to [`Coordinator::held`].
    fn grows(&self, node: &Node, key: &Key, size: usize) -> usize {
        let current =
            self.pending.values().rev().find(|p| p.key == *key).map_or_else(
                || self.stored(node, key),
                |p| memory::cost(&p.key, &p.record).max(self.stored(node, key)),
            );
        size.saturating_sub(current)
    }

    fn stored(&self, node: &Node, key: &Key) -> usize {
        node.mem.get(key).map_or(0, |r| memory::cost(key, r))
    }

    pub(super) fn on_message(&mut self, node: &mut Node, now: Millis, msg: Message) -> Vec<Output> {
        let mine = |instance: Instance| instance == node.instance;
        match msg.body {
            Body::PushAck { instance, key, stamp, wid } if mine(instance) => self.commit(node, &key, stamp, wid),
            Body::PushRefused { instance, known, .. }
            | Body::AnnounceRefused { instance, known, .. }
            | Body::ConfirmRefused { instance, known }
                if mine(instance) && known > self.epoch =>
            {
                self.fence()
            }
            Body::CollectReply { instance, peer, known, floor, chunk } if mine(instance) => {
                let Phase::Collect { collected, cursors, round, .. } = &mut self.phase else { return Vec::new() };
                if collected.contains(&msg.from) || chunk.after.as_ref() != cursors.get(&msg.from) {
                    return Vec::new();
                }
                let complete = chunk.last;
                #[cfg(feature = "mutations")]
                let complete = complete || node.config.mutated(super::config::Mutation::FinishOnPartialSnapshot);
                let next = chunk.next_after();
                if complete {
                    cursors.remove(&msg.from);
                    collected.insert(msg.from);
                } else if let Some(next) = next.clone() {
                    cursors.insert(msg.from, next);
                }
                let (done, round) = (collected.len() == node.config.peers().len(), *round);
                // ReseedChunkC: merge the chunk and the epochs it witnesses.
                self.collect_max = self.collect_max.max(node.absorb(&chunk, known, floor));
                node.adopt_generation(msg.generation);
                self.heard(msg.from, peer);
                if done {
                    vec![Node::step_now(now)]
                } else if complete {
                    Vec::new()
                } else {
                    // Ask for the next chunk at once.
                    vec![node.send(msg.from, Body::Collect { instance: node.instance, round, after: next })]
                }
            }
            Body::CollectDecline { instance, round, peer } if mine(instance) => {
                if let Phase::Collect { collected, round: current, declined, .. } = &mut self.phase
                    && round == *current
                    && !collected.contains(&msg.from)
                {
                    declined.insert(msg.from, peer);
                }
                Vec::new()
            }
            Body::AnnounceAck { instance, epoch, round, peer } if mine(instance) && epoch == self.epoch => {
                let Phase::Announce { round: current, acked, .. } = &mut self.phase else { return Vec::new() };
                if round != *current || acked.contains_key(&msg.from) {
                    return Vec::new();
                }
                acked.insert(msg.from, peer);
                if acked.len() == node.config.peers().len() { vec![Node::step_now(now)] } else { Vec::new() }
            }
            Body::Confirmed { instance, epoch, round }
                if mine(instance) && epoch == self.epoch && self.phase == Phase::Ready =>
            {
                self.confirmed(node, round)
            }
            // Stale or duplicate replies. (Reseed, digests, records and
            // heartbeats are the same for both roles: `Replica` answers
            // them.)
            _ => Vec::new(),
        }
    }

    /// `DigestRecv` at the coordinator, beyond what every replica does: it
    /// heard from the sender's instance, and a digest equal to its own,
    /// from a peer that knows its epoch, with nothing pending, is a match
    /// for `RaiseFloor` (run on the next retry step).
    pub(super) fn on_digest(
        &mut self,
        node: &Node,
        now: Millis,
        from: ReplicaId,
        instance: Instance,
        known: Epoch,
        theirs: &Digest,
    ) -> Vec<Output> {
        if self.phase != Phase::Ready {
            return Vec::new();
        }
        self.heard(from, instance);
        if known != self.epoch || !self.pending.is_empty() || node.mem.digest() != theirs {
            return Vec::new();
        }
        let at = self.at();
        self.matched.insert(from, Match { instance, at, digest: theirs.clone() });
        if self.floor_due(node) { vec![Node::step_now(now)] } else { Vec::new() }
    }

    /// `(epoch, verCtr)`: the floor this coordinator would raise now.
    fn at(&self) -> Stamp {
        Stamp { ep: self.epoch, ver: self.ver_ctr }
    }

    /// `RaiseFloor`'s guard: nothing pending, a floor above the current
    /// one, and for each peer a match from its newest instance at this
    /// `(epoch, verCtr)` for this memory.
    fn floor_due(&self, node: &Node) -> bool {
        let at = self.at();
        self.pending.is_empty()
            && at.wins(node.floor)
            && node.config.peers().iter().all(|p| {
                self.matched.get(p).is_some_and(|m| {
                    m.at == at && Some(m.instance) == self.reg.get(p).copied() && m.digest == *node.mem.digest()
                })
            })
    }

    /// `CommitWrite` on a peer's ack: apply locally, answer the clients.
    fn commit(&mut self, node: &mut Node, key: &Key, stamp: Stamp, wid: WriteId) -> Vec<Output> {
        let matches = |p: &Pending| p.key == *key && p.record.stamp == stamp && p.record.wid == wid;
        if stamp.ep != self.epoch || !self.pending.get(&stamp.ver).is_some_and(matches) {
            return Vec::new();
        }
        let Some(p) = self.pending.remove(&stamp.ver) else { return Vec::new() };
        node.mem.merge(&p.key, &p.record);
        let reply = WriteReply::Committed { key: p.key, stamp, wid };
        p.waiters.into_iter().map(|req| Output::Reply { req, reply: reply.clone() }).collect()
    }

    /// A peer knows a newer epoch: this instance is superseded.
    fn fence(&mut self) -> Vec<Output> {
        self.phase = Phase::Fenced;
        let waiters = std::mem::take(&mut self.pending).into_values().flat_map(|p| p.waiters);
        let mut out: Vec<Output> = waiters.map(|req| Output::Reply { req, reply: WriteReply::Superseded }).collect();
        let reads = std::mem::take(&mut self.reads);
        let readers = reads.asked.into_iter().flatten().chain(reads.next);
        out.extend(readers.map(|(req, _)| Output::ReadReply { req, read: Read::Superseded }));
        out
    }

    /// [`Timer::Retry`]: one internal step if one is enabled, else resend
    /// what is unanswered (an unacknowledged write when its wait is over).
    pub(super) fn on_retry(&mut self, node: &mut Node, now: Millis) -> Vec<Output> {
        let peers = node.config.peers();
        let instance = node.instance;
        let floor_due = self.phase == Phase::Ready && self.floor_due(node);
        let mut out: Vec<Output> = match &mut self.phase {
            Phase::Collect { collected, .. } if collected.len() == peers.len() => return self.choose_epoch(node, now),
            Phase::Collect { round, declined, prev_declined, cursors, .. }
                if node.generation.is_none() && declined.len() == peers.len() =>
            {
                if declined == prev_declined {
                    // Nobody was ready at some instant: a new namespace.
                    return self.choose_epoch(node, now);
                }
                *prev_declined = std::mem::take(declined);
                *round = round.saturating_add(1);
                let round = *round;
                peers
                    .iter()
                    .map(|&p| node.send(p, Body::Collect { instance, round, after: cursors.get(&p).cloned() }))
                    .collect()
            }
            Phase::Announce { acked, prev, .. } if acked.len() == peers.len() && acked == prev => {
                // FinishRecoveryC: two rounds acked by the same instances.
                self.phase = Phase::Ready;
                node.collect();
                return Vec::new();
            }
            Phase::Announce { round, acked, prev } if acked.len() == peers.len() => {
                // Some peer rebooted since the last complete round (or this
                // was the first): announce again.
                *prev = std::mem::take(acked);
                *round = round.saturating_add(1);
                let (epoch, round) = (self.epoch, *round);
                node.send_others(Body::Announce { instance, epoch, round }).collect()
            }
            // Ask again every peer not collected, from where its chunks
            // stopped: one that declined may be ready by now.
            Phase::Collect { collected, cursors, round, .. } => {
                let round = *round;
                peers
                    .iter()
                    .filter(|p| !collected.contains(p))
                    .map(|&p| node.send(p, Body::Collect { instance, round, after: cursors.get(&p).cloned() }))
                    .collect()
            }
            Phase::Announce { round, acked, .. } => {
                let (epoch, round) = (self.epoch, *round);
                peers
                    .iter()
                    .filter(|p| !acked.contains_key(p))
                    .map(|&p| node.send(p, Body::Announce { instance, epoch, round }))
                    .collect()
            }
            Phase::Ready if floor_due => {
                // RaiseFloor (a confirm round in flight keeps the timer
                // armed below).
                node.raise_floor(self.at());
                self.matched.clear();
                Vec::new()
            }
            Phase::Ready => {
                let mut out = self.repush(node, now);
                out.extend(self.reconfirm(node));
                out
            }
            Phase::Fenced => return Vec::new(),
        };
        if !out.is_empty() || !self.pending.is_empty() || self.reads.asked.is_some() {
            out.push(node.arm(now, Timer::Retry));
        }
        out
    }

    /// Pushes again the unacknowledged writes whose wait is over, and
    /// doubles their wait (up to `retry_max_ms`).
    fn repush(&mut self, node: &Node, now: Millis) -> Vec<Output> {
        let (base, max) = (node.config.retry_ms, node.config.retry_max_ms.max(node.config.retry_ms));
        let mut out = Vec::new();
        for p in self.pending.values_mut().filter(|p| p.next_push <= now) {
            let wait = base.saturating_mul(1u64 << p.pushes.min(20)).min(max);
            p.pushes = p.pushes.saturating_add(1);
            p.next_push = now.plus(wait);
            let push = Body::Push { instance: node.instance, key: p.key.clone(), record: p.record.clone() };
            out.extend(node.send_others(push));
        }
        out
    }

    /// `ChooseEpoch`: `epoch := collectMax + 1`; a coordinator that found
    /// no generation anywhere (first boot, or all three replicas died)
    /// mints one. Then announce.
    fn choose_epoch(&mut self, node: &mut Node, now: Millis) -> Vec<Output> {
        if node.generation.is_none() {
            node.generation = Some(Generation { minted_at: now.0, nonce: node.rng.next_u64() });
        }
        self.epoch = self.collect_max.next();
        self.phase = Phase::Announce { round: 1, acked: BTreeMap::new(), prev: BTreeMap::new() };
        let mut out: Vec<Output> =
            node.send_others(Body::Announce { instance: node.instance, epoch: self.epoch, round: 1 }).collect();
        out.push(node.arm(now, Timer::Retry));
        #[cfg(feature = "mutations")]
        if node.config.mutated(super::config::Mutation::ServeBeforeAnnounce) {
            self.phase = Phase::Ready;
        }
        out
    }

    /// `ReadStart`: a client read waits for the next confirm round (one is
    /// sent now unless one is in flight); nothing is served while
    /// recovering or once superseded.
    pub(super) fn on_read(&mut self, node: &Node, now: Millis, req: ClientRequestId, key: Key) -> Vec<Output> {
        let read = match self.phase {
            Phase::Ready => None,
            Phase::Fenced => Some(Read::Superseded),
            Phase::Collect { .. } | Phase::Announce { .. } => {
                Some(Read::Unavailable { status: self.status(), retry_after_ms: node.config.retry_after_ms })
            }
        };
        let waiting = self.reads.asked.as_ref().map_or(0, Vec::len).saturating_add(self.reads.next.len());
        let read = read.or_else(|| {
            (waiting >= node.config.max_reads)
                .then_some(Read::Overloaded { retry_after_ms: node.config.retry_after_ms })
        });
        #[cfg(feature = "mutations")]
        let read = read.or_else(|| {
            node.config
                .mutated(super::config::Mutation::ServeReadsUnconfirmed)
                .then(|| Read::Committed(node.mem.get(&key).cloned()))
        });
        if let Some(read) = read {
            return vec![Output::ReadReply { req, read }];
        }
        self.reads.next.push((req, key));
        if self.reads.asked.is_some() {
            return Vec::new();
        }
        let mut out = self.next_round(node);
        // The retry timer is armed while writes are pending or a round is
        // in flight; arming it again would only postpone their retries.
        if self.pending.is_empty() {
            out.push(node.arm(now, Timer::Retry));
        }
        out
    }

    /// Starts a confirm round for the reads waiting now.
    fn next_round(&mut self, node: &Node) -> Vec<Output> {
        if self.reads.next.is_empty() {
            return Vec::new();
        }
        self.reads.round = self.reads.round.saturating_add(1);
        self.reads.asked = Some(std::mem::take(&mut self.reads.next));
        self.reconfirm(node)
    }

    /// The round in flight, to both peers (again, on a retry: its
    /// confirmation may have been lost).
    fn reconfirm(&self, node: &Node) -> Vec<Output> {
        if self.reads.asked.is_none() {
            return Vec::new();
        }
        let (instance, epoch, round) = (node.instance, self.epoch, self.reads.round);
        node.send_others(Body::Confirm { instance, epoch, round }).collect()
    }

    /// `ReadConfirm` and `ReadFinish`: a peer confirmed round `round`;
    /// every read it covers is answered from this memory, now. Then the
    /// reads that arrived meanwhile get their round.
    /// The retry timer, armed for the round just answered, stays armed for
    /// the next one.
    fn confirmed(&mut self, node: &Node, round: u64) -> Vec<Output> {
        if round != self.reads.round {
            return Vec::new();
        }
        let Some(asked) = self.reads.asked.take() else { return Vec::new() };
        let mut out: Vec<Output> = asked
            .into_iter()
            .map(|(req, key)| Output::ReadReply { req, read: Read::Committed(node.mem.get(&key).cloned()) })
            .collect();
        out.extend(self.next_round(node));
        out
    }
}
