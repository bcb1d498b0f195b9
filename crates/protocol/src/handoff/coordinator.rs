//! The coordinator: issues every write, commits on the first peer ack, and
//! recovers after a reboot in two phases (collect snapshots and known
//! epochs from both peers, choose `collectMax + 1`, announce it to both
//! peers) before serving.
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

use std::collections::{BTreeMap, BTreeSet};

use super::error::HandleError;
use super::ids::{ClientRequestId, Epoch, Generation, Instance, Key, Millis, ReplicaId, Version, WriteId};
use super::interface::{Output, Read, Status, Timer, WriteReply};
use super::message::{Body, Message};
use super::node::Node;
use super::record::{Record, Stamp, Value};

/// The coordinator's recovery phase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Collecting snapshots from ready peers; `collected` = the spec's
    /// `seeded[Coordinator]`. `declined` holds this round's declines (by
    /// peer instance) and `prev_declined` the last fully declined round's.
    Collect {
        collected: BTreeSet<ReplicaId>,
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
}

/// Messages a coordinator never receives.
pub(super) fn check(msg: &Message) -> Result<(), HandleError> {
    match &msg.body {
        Body::Push { .. }
        | Body::Collect { .. }
        | Body::Announce { .. }
        | Body::ReseedReply { .. }
        | Body::ReseedDecline { .. } => {
            Err(HandleError::UnexpectedMessage { kind: msg.body.kind(), role: "coordinator" })
        }
        Body::Gossip { .. } | Body::CollectReply { .. } if msg.generation.is_none() => {
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
                round: 0,
                declined: BTreeMap::new(),
                prev_declined: BTreeMap::new(),
            },
            epoch: Epoch::NONE,
            collect_max: Epoch::NONE,
            ver_ctr: Version(0),
            pending: BTreeMap::new(),
        };
        let mut out: Vec<Output> = node.send_others(Body::Collect { instance: node.instance, round: 0 }).collect();
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

    /// `ClientWrite`: buffer as pending (never served from there) and push
    /// to both peers. Not applied locally until a peer acks.
    pub(super) fn on_write(
        &mut self,
        node: &mut Node,
        now: Millis,
        req: ClientRequestId,
        key: Key,
        value: Value,
        wid: WriteId,
    ) -> Vec<Output> {
        if let Some(reply) = self.unavailable(node) {
            return vec![Output::Reply { req, reply }];
        }
        // A client retrying a write id: answer from the committed record,
        // or wait for the pending attempt, instead of writing twice.
        if let Some(held) = node.mem.get(&key).filter(|r| r.wid == wid) {
            let reply = WriteReply::Committed { key, stamp: held.stamp, wid };
            return vec![Output::Reply { req, reply }];
        }
        if let Some(p) = self.pending.values_mut().find(|p| p.key == key && p.record.wid == wid) {
            p.waiters.push(req);
            return Vec::new();
        }
        let ver = match self.ver_ctr.0.checked_add(1) {
            Some(v) if self.pending.len() < node.config.max_pending => Version(v),
            _ => {
                return vec![Output::Reply {
                    req,
                    reply: WriteReply::Overloaded { retry_after_ms: node.config.retry_after_ms },
                }];
            }
        };
        self.ver_ctr = ver;
        let record = Record { stamp: Stamp { ep: self.epoch, ver }, wid, value };
        let push = Body::Push { instance: node.instance, key: key.clone(), record: record.clone() };
        self.pending.insert(ver, Pending { key, record, waiters: vec![req] });
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

    pub(super) fn on_message(&mut self, node: &mut Node, now: Millis, msg: Message) -> Vec<Output> {
        let mine = |instance: Instance| instance == node.instance;
        match msg.body {
            Body::PushAck { instance, key, stamp, wid } if mine(instance) => self.commit(node, &key, stamp, wid),
            Body::PushRefused { instance, known, .. } | Body::AnnounceRefused { instance, known, .. }
                if mine(instance) && known > self.epoch =>
            {
                self.fence()
            }
            Body::CollectReply { instance, known, memory } if mine(instance) => {
                let Phase::Collect { collected, .. } = &mut self.phase else { return Vec::new() };
                if !collected.insert(msg.from) {
                    return Vec::new();
                }
                // ReseedC: merge the snapshot and the epochs it witnesses.
                self.collect_max = self.collect_max.max(node.absorb(&memory, known));
                node.adopt_generation(msg.generation);
                if collected.len() == node.config.peers().len() { vec![Node::step_now(now)] } else { Vec::new() }
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
            // Stale or duplicate replies. (Reseed, gossip and heartbeats are
            // the same for both roles: `Replica` answers them.)
            _ => Vec::new(),
        }
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
        waiters.map(|req| Output::Reply { req, reply: WriteReply::Superseded }).collect()
    }

    /// [`Timer::Retry`]: one internal step if one is enabled, else resend
    /// what is unanswered.
    pub(super) fn on_retry(&mut self, node: &mut Node, now: Millis) -> Vec<Output> {
        let peers = node.config.peers();
        let instance = node.instance;
        let mut out: Vec<Output> = match &mut self.phase {
            Phase::Collect { collected, .. } if collected.len() == peers.len() => return self.choose_epoch(node, now),
            Phase::Collect { round, declined, prev_declined, .. }
                if node.generation.is_none() && declined.len() == peers.len() =>
            {
                if declined == prev_declined {
                    // Nobody was ready at some instant: a new namespace.
                    return self.choose_epoch(node, now);
                }
                *prev_declined = std::mem::take(declined);
                *round = round.saturating_add(1);
                let round = *round;
                node.send_others(Body::Collect { instance, round }).collect()
            }
            Phase::Announce { acked, prev, .. } if acked.len() == peers.len() && acked == prev => {
                // FinishRecoveryC: two rounds acked by the same instances.
                self.phase = Phase::Ready;
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
            // Ask again every peer not collected: one that declined may be
            // ready by now.
            Phase::Collect { collected, round, .. } => {
                let round = *round;
                unanswered(&peers, collected).map(|p| node.send(p, Body::Collect { instance, round })).collect()
            }
            Phase::Announce { round, acked, .. } => {
                let (epoch, round) = (self.epoch, *round);
                peers
                    .iter()
                    .filter(|p| !acked.contains_key(p))
                    .map(|&p| node.send(p, Body::Announce { instance, epoch, round }))
                    .collect()
            }
            Phase::Ready => self
                .pending
                .values()
                .flat_map(|p| node.send_others(Body::Push { instance, key: p.key.clone(), record: p.record.clone() }))
                .collect(),
            Phase::Fenced => return Vec::new(),
        };
        if !out.is_empty() {
            out.push(node.arm(now, Timer::Retry));
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

    /// Reads see committed data only; nothing while recovering.
    pub(super) fn read(&self, node: &Node, key: &Key) -> Read {
        match self.phase {
            Phase::Ready => Read::Committed(node.mem.get(key).cloned()),
            Phase::Fenced => Read::Superseded,
            Phase::Collect { .. } | Phase::Announce { .. } => {
                Read::Unavailable { status: self.status(), retry_after_ms: node.config.retry_after_ms }
            }
        }
    }
}

fn unanswered<'a>(
    peers: &'a [ReplicaId; 2],
    answered: &'a BTreeSet<ReplicaId>,
) -> impl Iterator<Item = ReplicaId> + 'a {
    peers.iter().copied().filter(|p| !answered.contains(p))
}
