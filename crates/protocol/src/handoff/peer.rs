//! A peer: stores pushed writes and acks them, answers the coordinator's
//! collect and announce, reseeds itself from both other replicas after a
//! reboot, and gossips.
//!
//! HandoffV2's recovery: only a replica that `CanSeed` (a ready one, or
//! the coordinator announcing) hands out snapshots; the others decline,
//! and a recovering peer is ready once it has a snapshot and every other
//! replica has either seeded it or declined.
//!
//! Zombie fencing lives here: a push or announce from an epoch older than
//! the peer knows is refused, so a superseded coordinator instance can
//! never collect the ack it would need to acknowledge a client.

use std::collections::BTreeSet;

use super::error::HandleError;
use super::ids::{Epoch, Millis, ReplicaId};
use super::interface::{Output, Status, Timer};
use super::message::{Body, Message};
use super::node::Node;

/// Whether the peer serves (the spec's `status[p]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeerStatus {
    /// Reseeding; `seeded` = the spec's `seeded[p]`; `declined` = the
    /// replicas that answered they cannot seed (HandoffV2: a peer need not
    /// wait for a replica that does not know the epoch).
    Recovering {
        seeded: BTreeSet<ReplicaId>,
        declined: BTreeSet<ReplicaId>,
    },
    Ready,
}

/// The peer's state beyond the shared [`Node`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The spec's `known[p]`: the highest coordinator epoch heard of.
    known: Epoch,
    status: PeerStatus,
}

/// Messages a peer never receives, and messages that only the coordinator
/// may send or that must name a generation.
pub(super) fn check(node: &Node, msg: &Message) -> Result<(), HandleError> {
    let kind = msg.body.kind();
    match &msg.body {
        Body::PushAck { .. }
        | Body::PushRefused { .. }
        | Body::CollectReply { .. }
        | Body::CollectDecline { .. }
        | Body::AnnounceAck { .. }
        | Body::AnnounceRefused { .. } => return Err(HandleError::UnexpectedMessage { kind, role: "peer" }),
        Body::Push { .. } | Body::Collect { .. } | Body::Announce { .. } if msg.from != node.config.coordinator() => {
            return Err(HandleError::NotFromCoordinator { kind, from: msg.from });
        }
        _ => {}
    }
    match &msg.body {
        Body::Push { .. } | Body::Announce { .. } | Body::Gossip { .. } | Body::ReseedReply { .. }
            if msg.generation.is_none() =>
        {
            Err(HandleError::MissingGeneration { kind })
        }
        _ => Ok(()),
    }
}

impl Peer {
    /// A new instance asks both other replicas for snapshots.
    pub(super) fn boot(node: &Node, now: Millis) -> (Peer, Vec<Output>) {
        let p = Peer {
            known: Epoch::NONE,
            status: PeerStatus::Recovering { seeded: BTreeSet::new(), declined: BTreeSet::new() },
        };
        let mut out: Vec<Output> = node.send_others(Body::Reseed { instance: node.instance }).collect();
        out.extend(node.boot_timers(now));
        (p, out)
    }

    pub fn known(&self) -> Epoch {
        self.known
    }

    pub fn peer_status(&self) -> &PeerStatus {
        &self.status
    }

    pub(super) fn status(&self) -> Status {
        match self.status {
            PeerStatus::Recovering { .. } => Status::Recovering,
            PeerStatus::Ready => Status::Ready,
        }
    }

    pub(super) fn on_message(&mut self, node: &mut Node, now: Millis, msg: Message) -> Vec<Output> {
        let from = msg.from;
        match msg.body {
            // A booting replica takes no writes until it knows which
            // generation it belongs to; the coordinator retries.
            Body::Push { .. } if node.generation.is_none() => Vec::new(),
            Body::Push { instance, key, record } => {
                let stamp = record.stamp;
                #[cfg(feature = "mutations")]
                let stale = stamp.ep < self.known && !node.config.mutated(super::config::Mutation::AcceptStalePush);
                #[cfg(not(feature = "mutations"))]
                let stale = stamp.ep < self.known;
                if stale {
                    return vec![node.send(from, Body::PushRefused { instance, key, stamp, known: self.known })];
                }
                // DeliverPush: max-merge (late, duplicate and ghost pushes
                // are harmless) and absorb the epoch; then ack.
                node.mem.merge(&key, &record);
                self.known = self.known.max(stamp.ep);
                vec![node.send(from, Body::PushAck { instance, key, stamp, wid: record.wid })]
            }
            Body::Collect { instance, round } => vec![match self.status {
                PeerStatus::Ready => {
                    node.send(from, Body::CollectReply { instance, known: self.known, memory: node.mem.clone() })
                }
                PeerStatus::Recovering { .. } => {
                    node.send(from, Body::CollectDecline { instance, round, peer: node.instance })
                }
            }],
            Body::Announce { instance, epoch, round } => {
                if epoch < self.known {
                    return vec![node.send(from, Body::AnnounceRefused { instance, epoch, known: self.known })];
                }
                // AnnounceTo: install the epoch. A booting peer learns its
                // generation here; it still reseeds before serving.
                node.adopt_generation(msg.generation);
                self.known = epoch;
                vec![node.send(from, Body::AnnounceAck { instance, epoch, round, peer: node.instance })]
            }
            Body::ReseedReply { instance, known, memory } if instance == node.instance => {
                let PeerStatus::Recovering { seeded, declined } = &mut self.status else { return Vec::new() };
                if seeded.contains(&from) {
                    return Vec::new();
                }
                // A booting peer joins the generation of its first source.
                node.adopt_generation(msg.generation);
                // ReseedPeer: merge the snapshot and the epochs it witnesses.
                self.known = self.known.max(node.absorb(&memory, known));
                seeded.insert(from);
                if finished(seeded, declined) { vec![Node::step_now(now)] } else { Vec::new() }
            }
            Body::ReseedDecline { instance } if instance == node.instance => {
                let PeerStatus::Recovering { seeded, declined } = &mut self.status else { return Vec::new() };
                if seeded.contains(&from) || !declined.insert(from) {
                    return Vec::new();
                }
                if finished(seeded, declined) { vec![Node::step_now(now)] } else { Vec::new() }
            }
            // Stale replies. (Reseed, gossip and heartbeats are the same for
            // both roles: `Replica` answers them.)
            _ => Vec::new(),
        }
    }

    /// [`Timer::Retry`]: `FinishRecoveryPeer` once every other replica
    /// answered, else ask again.
    pub(super) fn on_retry(&mut self, node: &Node, now: Millis) -> Vec<Output> {
        let PeerStatus::Recovering { seeded, declined } = &self.status else { return Vec::new() };
        if finished(seeded, declined) {
            // FinishRecoveryPeer
            self.status = PeerStatus::Ready;
            return Vec::new();
        }
        // Ask again everyone who has not seeded us: a replica that
        // declined may be able to seed by now (at first boot, nobody can
        // until the coordinator has announced).
        let instance = node.instance;
        let mut out: Vec<Output> = node
            .config
            .others(node.me)
            .filter(|q| !seeded.contains(q))
            .map(|q| node.send(q, Body::Reseed { instance }))
            .collect();
        out.push(node.arm(now, Timer::Retry));
        out
    }
}

/// HandoffV2's `FinishRecoveryPeer`: a snapshot from at least one replica,
/// and an answer (a snapshot or a decline) from both others.
fn finished(seeded: &BTreeSet<ReplicaId>, declined: &BTreeSet<ReplicaId>) -> bool {
    !seeded.is_empty() && seeded.union(declined).count() == 2
}
