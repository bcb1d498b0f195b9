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
//! HandoffRoll: a peer's ack names the acking instance, and the
//! coordinator does not count an ack of an instance older than the newest
//! of that peer it heard from (`reg`): that instance is gone with what it
//! held, and the newer one reseeded without the pending write. Counting it
//! would acknowledge a write only the coordinator holds.
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
//!
//! HandoffCond: a conditional write is evaluated against this memory of
//! committed records only while no write to its key is pending here, and
//! evaluating and issuing are one step. A condition that holds is issued
//! at once like any write (it commits only on the ack of a peer that knows
//! this epoch, unfenced: no newer instance has committed anything then); a
//! condition that fails waits for a confirmation, as reads do, and is
//! evaluated again then. The coordinator deletes the records whose expiry
//! has passed with tombstones of its own. Listings are answered as reads
//! are. Client writes, conditions and expiry are in `writes`; reads,
//! listings and confirmation rounds in `serve`.

mod serve;
mod writes;

use std::collections::BTreeMap;

use super::cond::Cond;
use super::config::Config;
use super::error::HandleError;
use super::ids::{ClientRequestId, Epoch, Fingerprint, Generation, Instance, Key, Millis, ReplicaId, Version, WriteId};
use super::interface::{List, Output, Read, Status, Timer, WriteReply};
use super::memory::{self, Digest};
use super::message::{Body, Message};
use super::node::Node;
use super::record::{Record, Stamp, Value};

/// The coordinator's recovery phase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Collecting snapshots from ready peers; `collected` = the spec's
    /// `seeded[Coordinator]` (each with the instance whose snapshot it
    /// took), `cursors` its `got[Coordinator]` (the key each peer's next
    /// chunk starts after). `declined` holds this round's declines (by peer
    /// instance) and `prev_declined` the last fully declined round's.
    Collect {
        collected: BTreeMap<ReplicaId, Instance>,
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

impl Phase {
    /// Whether a collect decline of `round` by instance `peer` of `from`
    /// counts: one of this round, from a peer not collected or from a newer
    /// instance than the one collected (that snapshot's holder is gone, and
    /// its successor is recovering: `on_retry`'s total-loss rule), and from
    /// a newer instance than any that declined this round already. A late
    /// copy of a dead instance's decline must not replace its successor's:
    /// the two, delivered in turn again and again, would keep the round
    /// from ever being declined by the same instances twice (found by
    /// HandoffGenerations' `ServesAgain`).
    #[cfg_attr(not(feature = "mutations"), allow(unused_variables))]
    pub fn takes_decline(&self, config: &Config, from: ReplicaId, round: u64, peer: Instance) -> bool {
        let Phase::Collect { collected, round: current, declined, .. } = self else { return false };
        let newer = |than: &Instance| peer > *than;
        #[cfg(feature = "mutations")]
        if config.mutated(super::config::Mutation::TakeStaleDecline) {
            return round == *current && collected.get(&from).is_none_or(newer);
        }
        round == *current && collected.get(&from).is_none_or(newer) && declined.get(&from).is_none_or(newer)
    }
}

/// [`Coordinator::asks`] on the collecting phase's `collected` and `reg`.
fn asks(collected: &BTreeMap<ReplicaId, Instance>, reg: &BTreeMap<ReplicaId, Instance>, p: ReplicaId) -> bool {
    collected.get(&p).is_none_or(|took| reg.get(&p).is_some_and(|heard| heard > took))
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

/// A client request waiting for a confirmation of this instance's epoch
/// (HandoffReads' `reads`, HandoffCond's `conds` with `conf` false).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Waiter {
    Read {
        req: ClientRequestId,
        key: Key,
    },
    List {
        req: ClientRequestId,
        prefix: String,
        after: Option<Key>,
        limit: usize,
        hide: Option<String>,
    },
    /// A conditional write whose condition failed before a confirmation.
    Cond(CondWrite),
}

/// What a client write asks, beyond its key and value.
pub(super) struct Ask {
    pub(super) req: ClientRequestId,
    pub(super) wid: WriteId,
    pub(super) cond: Option<Cond>,
    pub(super) ttl_ms: Option<u64>,
}

/// What a listing asks: the keys after `after` that start with `prefix`,
/// at most `limit`, without those that start with `hide`.
pub(super) struct Listing {
    pub(super) prefix: String,
    pub(super) after: Option<Key>,
    pub(super) limit: usize,
    pub(super) hide: Option<String>,
}

/// The confirmation rounds: the requests each answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Confirms {
    /// The last confirm round sent.
    round: u64,
    /// While that round is in flight, the requests it answers.
    asked: Option<Vec<Waiter>>,
    /// Requests that arrived after that round was sent: the next round's.
    next: Vec<Waiter>,
}

/// A conditional write not yet issued nor answered (HandoffCond's
/// `conds`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct CondWrite {
    /// The request, and retries of it with the same write id.
    waiters: Vec<ClientRequestId>,
    key: Key,
    value: Value,
    wid: WriteId,
    cond: Cond,
    ttl_ms: Option<u64>,
    fp: Fingerprint,
    /// A peer confirmed this instance's epoch after the request arrived
    /// (`conf`): a failure may be answered.
    confirmed: bool,
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
    confirms: Confirms,
    /// Conditional writes waiting for the pending write to their key to
    /// commit, in arrival order.
    blocked: Vec<CondWrite>,
    /// When the expiry timer was last armed for, until it fires.
    expiry_armed: Option<Millis>,
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
                collected: BTreeMap::new(),
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
            confirms: Confirms::default(),
            blocked: Vec::new(),
            expiry_armed: None,
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

    /// The confirm round in flight for waiting requests, if any.
    pub fn confirming(&self) -> Option<u64> {
        self.confirms.asked.as_ref().map(|_| self.confirms.round)
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

    /// Whether this instance, collecting, still asks peer `p`: for its
    /// snapshot, or (collected from an instance it has since heard a newer
    /// one of) for a decline of the successor.
    pub fn asks(&self, p: ReplicaId) -> bool {
        matches!(&self.phase, Phase::Collect { collected, .. } if asks(collected, &self.reg, p))
    }

    /// `Heard(p, i)`: this coordinator heard from instance `i` of peer `p`.
    pub(super) fn heard(&mut self, p: ReplicaId, i: Instance) {
        let newest = self.reg.get(&p).map_or(i, |&r| r.max(i));
        self.reg.insert(p, newest);
    }

    pub(super) fn on_message(&mut self, node: &mut Node, now: Millis, msg: Message) -> Vec<Output> {
        let mine = |instance: Instance| instance == node.instance;
        match msg.body {
            Body::PushAckBy { instance, peer, key, stamp, wid } if mine(instance) => {
                let live = self.acked_by_live(msg.from, peer);
                #[cfg(feature = "mutations")]
                let live = live || node.config.mutated(super::config::Mutation::CountStaleAck);
                // A stale ack leaves the write pending: it is pushed again.
                if live { self.commit(node, now, &key, stamp, wid) } else { Vec::new() }
            }
            // An ack of a replica that writes wire version 4 or 3 (the first
            // roll of a deploy to version 5) names no instance: counted as
            // before version 5, so `AckedByLive` holds once every replica
            // writes version 5.
            Body::PushAck { instance, key, stamp, wid } if mine(instance) => self.commit(node, now, &key, stamp, wid),
            Body::PushRefused { instance, known, .. }
            | Body::AnnounceRefused { instance, known, .. }
            | Body::ConfirmRefused { instance, known }
                if mine(instance) && known > self.epoch =>
            {
                self.fence()
            }
            Body::CollectReply { instance, peer, known, floor, chunk } if mine(instance) => {
                let Phase::Collect { collected, cursors, round, .. } = &mut self.phase else { return Vec::new() };
                if collected.contains_key(&msg.from) || chunk.after.as_ref() != cursors.get(&msg.from) {
                    return Vec::new();
                }
                let complete = chunk.last;
                #[cfg(feature = "mutations")]
                let complete = complete || node.config.mutated(super::config::Mutation::FinishOnPartialSnapshot);
                let next = chunk.next_after();
                if complete {
                    cursors.remove(&msg.from);
                    collected.insert(msg.from, peer);
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
                // The mutation ignores a collected peer's successor too (a
                // duplicate of an old collect would reach it).
                #[cfg(feature = "mutations")]
                if node.config.mutated(super::config::Mutation::WaitForDeadSnapshot)
                    && matches!(&self.phase, Phase::Collect { collected, .. } if collected.contains_key(&msg.from))
                {
                    return Vec::new();
                }
                if self.phase.takes_decline(&node.config, msg.from, round, peer)
                    && let Phase::Collect { declined, .. } = &mut self.phase
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
                self.confirmed(node, now, round)
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

    /// HandoffRoll's `AckedByLive`: an ack of instance `peer` of `from`
    /// counts unless this coordinator heard from a newer instance of it
    /// (`reg`), which has not got the write: its reseed carried it at most
    /// as pending, i.e. not at all. Not counted, the write stays pending and
    /// is pushed again. Hearing the ack raises nothing (`CommitWrite` leaves
    /// `reg` as it is). A superseded instance (a zombie) judges by its own
    /// `reg`, as HandoffRoll's `ZombieCommitRo` does.
    fn acked_by_live(&self, from: ReplicaId, peer: Instance) -> bool {
        self.reg.get(&from).is_none_or(|&newest| newest <= peer)
    }

    /// `CommitWrite` on a peer's ack: apply locally, answer the clients;
    /// then the conditional writes that waited for this key.
    fn commit(&mut self, node: &mut Node, now: Millis, key: &Key, stamp: Stamp, wid: WriteId) -> Vec<Output> {
        let matches = |p: &Pending| p.key == *key && p.record.stamp == stamp && p.record.wid == wid;
        if stamp.ep != self.epoch || !self.pending.get(&stamp.ver).is_some_and(matches) {
            return Vec::new();
        }
        let Some(p) = self.pending.remove(&stamp.ver) else { return Vec::new() };
        node.mem.merge(&p.key, &p.record);
        let reply = WriteReply::Committed { key: p.key.clone(), tag: p.record.tag(), expires_at: p.record.expires_at };
        let mut out: Vec<Output> =
            p.waiters.into_iter().map(|req| Output::Reply { req, reply: reply.clone() }).collect();
        out.extend(self.unblock(node, now, &p.key));
        out
    }

    /// A peer knows a newer epoch: this instance is superseded. Every
    /// client waiting here is told so.
    fn fence(&mut self) -> Vec<Output> {
        self.phase = Phase::Fenced;
        let pending = std::mem::take(&mut self.pending).into_values().flat_map(|p| p.waiters);
        let blocked = std::mem::take(&mut self.blocked).into_iter().flat_map(|c| c.waiters);
        let superseded = |req| Output::Reply { req, reply: WriteReply::Superseded };
        let mut out: Vec<Output> = pending.chain(blocked).map(superseded).collect();
        let confirms = std::mem::take(&mut self.confirms);
        for w in confirms.asked.into_iter().flatten().chain(confirms.next) {
            match w {
                Waiter::Read { req, .. } => out.push(Output::ReadReply { req, read: Read::Superseded }),
                Waiter::List { req, .. } => out.push(Output::ListReply { req, list: List::Superseded }),
                Waiter::Cond(c) => out.extend(c.waiters.into_iter().map(superseded)),
            }
        }
        out
    }

    /// [`Timer::Retry`]: one internal step if one is enabled, else resend
    /// what is unanswered (an unacknowledged write when its wait is over).
    pub(super) fn on_retry(&mut self, node: &mut Node, now: Millis) -> Vec<Output> {
        let peers = node.config.peers();
        let instance = node.instance;
        let floor_due = self.phase == Phase::Ready && self.floor_due(node);
        #[cfg(feature = "mutations")]
        if node.config.mutated(super::config::Mutation::GoOnWhenUncollectedDeclined)
            && node.generation.is_some()
            && let Phase::Collect { collected, declined, .. } = &self.phase
            && collected.len() < peers.len()
            && peers.iter().all(|p| collected.contains_key(p) || declined.contains_key(p))
        {
            return self.choose_epoch(node, now);
        }
        let mut out: Vec<Output> = match &mut self.phase {
            Phase::Collect { collected, .. } if collected.len() == peers.len() => return self.choose_epoch(node, now),
            // Every peer declined this round (a collected one by a newer
            // instance than the one collected, when asked again below).
            // Twice in a row by the same instances: each was recovering
            // from its first answer to its second, so at the last first
            // answer no replica was ready (docs/handoff.md 5.8). With no
            // generation found, nothing exists: mint one. With one (a peer
            // collected before it died), what this instance collected is
            // all that any ready replica held: go on with it instead of
            // waiting for a snapshot no replica can give any more.
            Phase::Collect { round, declined, prev_declined, cursors, .. } if declined.len() == peers.len() => {
                if declined == prev_declined {
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
            // stopped: one that declined may be ready by now. And every
            // collected peer of which a newer instance was heard from: the
            // snapshot's holder is gone, and a decline of its successor is
            // what the rule above needs to see that no replica is ready.
            Phase::Collect { collected, cursors, round, .. } => {
                let round = *round;
                let reg = &self.reg;
                // The mutation hears of no collected peer's successor.
                #[cfg(feature = "mutations")]
                let none = BTreeMap::new();
                #[cfg(feature = "mutations")]
                let reg = if node.config.mutated(super::config::Mutation::WaitForDeadSnapshot) { &none } else { reg };
                peers
                    .iter()
                    .filter(|&&p| asks(collected, reg, p))
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
        if !out.is_empty() || !self.pending.is_empty() || self.confirms.asked.is_some() {
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
}
