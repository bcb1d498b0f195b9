//! A peer: stores pushed writes and acks them, answers the coordinator's
//! collect and announce, reseeds itself from both other replicas after a
//! reboot (chunk by chunk), and exchanges digests with the coordinator.
//!
//! HandoffV2's recovery: only a replica that `CanSeed` (a ready one, or
//! the coordinator announcing) hands out snapshots; the others decline,
//! and a recovering peer is ready once it has a whole snapshot from one
//! replica and every other replica has either seeded it or declined.
//!
//! HandoffScale: a recovering peer asks the coordinator first and the other
//! peer only once the coordinator answered (so the coordinator knows every
//! peer instance that may hold snapshot data before it raises a floor); it
//! takes no pushes while recovering (a fresh instance knows no floor and
//! would take any ghost); a ready peer refuses a push the floor refuses.
//!
//! Zombie fencing lives here: a push or announce from an epoch older than
//! the peer knows is refused, so a superseded coordinator instance can
//! never collect the ack it would need to acknowledge a client.
//!
//! HandoffReads: a ready peer confirms a coordinator's epoch for its reads
//! when it knows exactly that epoch. The collect fence: a peer that
//! answers a collecting coordinator instance, or is declined by one while
//! recovering, takes no push and confirms no read until that instance (or
//! a newer one) announces its epoch to it or reseeds it. A write an older
//! instance pushed after the peer's snapshot left would otherwise commit
//! without the new instance ever seeing it (the mutation
//! `no-collect-fence`).

use std::collections::{BTreeMap, BTreeSet};

use super::error::HandleError;
use super::ids::{Epoch, Instance, Key, Millis, ReplicaId};
use super::interface::{Output, Status, Timer};
use super::message::{Body, Message};
use super::node::Node;

/// Whether the peer serves (the spec's `status[p]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeerStatus {
    /// Reseeding; `seeded` = the spec's `seeded[p]`; `declined` = the
    /// replicas that answered they cannot seed (HandoffV2: a peer need not
    /// wait for a replica that does not know the epoch); `cursors` = the
    /// spec's `got[p]` (the key each source's next chunk starts after);
    /// `heard_from_c`: the coordinator answered this instance.
    Recovering {
        seeded: BTreeSet<ReplicaId>,
        declined: BTreeSet<ReplicaId>,
        cursors: BTreeMap<ReplicaId, Key>,
        heard_from_c: bool,
    },
    Ready,
}

/// The peer's state beyond the shared [`Node`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The spec's `known[p]`: the highest coordinator epoch heard of.
    known: Epoch,
    status: PeerStatus,
    fence: CollectFence,
}

/// HandoffReads' `fenced[p]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct CollectFence {
    /// The coordinator instance this peer answered a collect of (or was
    /// declined by) and that has not yet announced to it or reseeded it.
    waiting: Option<Instance>,
    /// The newest coordinator instance that fenced this peer: a collect of
    /// an older one is a ghost and fences nothing.
    newest: Option<Instance>,
}

impl CollectFence {
    /// `ChunkCR`, `DeclineArrivesR`: instance `c` may build its memory without
    /// what this peer takes from now on. Only an instance newer than any
    /// that fenced, announced to or reseeded this peer raises it: a late
    /// collect or decline of an instance that has announced to the peer
    /// would fence it for good (that instance never announces again).
    fn raise(&mut self, c: Instance) {
        if self.newest.is_none_or(|n| c > n) {
            self.newest = Some(c);
            self.waiting = Some(c);
        }
    }

    /// `AnnounceToR`, `ReseedChunkPeerR` from instance `c`: the fence of `c`
    /// or of an older instance is lifted.
    fn lift(&mut self, c: Instance) {
        if self.waiting.is_some_and(|f| f <= c) {
            self.waiting = None;
        }
        self.newest = Some(self.newest.map_or(c, |n| n.max(c)));
    }
}

/// Messages a peer never receives, and messages that only the coordinator
/// may send or that must name a generation.
pub(super) fn check(node: &Node, msg: &Message) -> Result<(), HandleError> {
    let kind = msg.body.kind();
    match &msg.body {
        Body::PushAck { .. }
        | Body::PushAckBy { .. }
        | Body::PushRefused { .. }
        | Body::CollectReply { .. }
        | Body::CollectDecline { .. }
        | Body::AnnounceAck { .. }
        | Body::AnnounceRefused { .. }
        | Body::Confirmed { .. }
        | Body::ConfirmRefused { .. } => return Err(HandleError::UnexpectedMessage { kind, role: "peer" }),
        Body::Push { .. }
        | Body::Collect { .. }
        | Body::Announce { .. }
        | Body::Confirm { .. }
        | Body::Digest { .. }
        | Body::Records { .. }
            if msg.from != node.config.coordinator() =>
        {
            return Err(HandleError::NotFromCoordinator { kind, from: msg.from });
        }
        _ => {}
    }
    match &msg.body {
        Body::Push { .. }
        | Body::Announce { .. }
        | Body::Confirm { .. }
        | Body::Digest { .. }
        | Body::Records { .. }
        | Body::ReseedReply { .. }
            if msg.generation.is_none() =>
        {
            Err(HandleError::MissingGeneration { kind })
        }
        _ => Ok(()),
    }
}

impl Peer {
    /// A new instance asks the coordinator for its snapshot (the other
    /// peer once the coordinator answered).
    pub(super) fn boot(node: &Node, now: Millis) -> (Peer, Vec<Output>) {
        let p = Peer {
            known: Epoch::NONE,
            status: PeerStatus::Recovering {
                seeded: BTreeSet::new(),
                declined: BTreeSet::new(),
                cursors: BTreeMap::new(),
                heard_from_c: false,
            },
            fence: CollectFence::default(),
        };
        let mut out = vec![node.send(node.config.coordinator(), Body::Reseed { instance: node.instance, after: None })];
        out.extend(node.boot_timers(now));
        (p, out)
    }

    pub fn known(&self) -> Epoch {
        self.known
    }

    pub fn peer_status(&self) -> &PeerStatus {
        &self.status
    }

    /// HandoffReads' `fenced[p]`, as the coordinator instance it waits for.
    pub fn fence(&self) -> Option<Instance> {
        self.fence.waiting
    }

    /// HandoffReads' `newest[p]`: the newest coordinator instance that
    /// fenced this peer, announced to it or reseeded it.
    pub fn fence_newest(&self) -> Option<Instance> {
        self.fence.newest
    }

    /// [`CollectFence::raise`], unless the mutation `NoCollectFence` is on.
    fn fence_for(&mut self, node: &Node, c: Instance) {
        #[cfg(feature = "mutations")]
        if node.config.mutated(super::config::Mutation::NoCollectFence) {
            return;
        }
        #[cfg(not(feature = "mutations"))]
        let _ = node; // only the mutation reads the config
        self.fence.raise(c);
    }

    /// The mutation `RefenceOnDigest`: a ready peer fences itself for
    /// coordinator instance `c` whose digest it takes.
    #[cfg(feature = "mutations")]
    pub(super) fn refence_on_digest(&mut self, node: &Node, c: Instance) {
        if node.config.mutated(super::config::Mutation::RefenceOnDigest) && self.status == PeerStatus::Ready {
            self.fence.waiting = Some(c);
        }
    }

    pub(super) fn status(&self) -> Status {
        match self.status {
            PeerStatus::Recovering { .. } => Status::Recovering,
            PeerStatus::Ready => Status::Ready,
        }
    }

    pub(super) fn on_message(&mut self, node: &mut Node, now: Millis, msg: Message) -> Vec<Output> {
        let from = msg.from;
        let coordinator = node.config.coordinator();
        match msg.body {
            // A recovering peer takes no writes: it may not know the floor
            // yet. The coordinator retries; the other peer acks meanwhile.
            Body::Push { .. } if self.status != PeerStatus::Ready || self.fence.waiting.is_some() => Vec::new(),
            Body::Push { instance, key, record } => {
                let stamp = record.stamp;
                #[cfg(feature = "mutations")]
                let stale = stamp.ep < self.known && !node.config.mutated(super::config::Mutation::AcceptStalePush);
                #[cfg(not(feature = "mutations"))]
                let stale = stamp.ep < self.known;
                if stale {
                    return vec![node.send(from, Body::PushRefused { instance, key, stamp, known: self.known })];
                }
                // A ghost below the floor of a key stored nothing for
                // (collected): refused, and not acked.
                if node.mem.refuses(&key, stamp, node.floor) {
                    return Vec::new();
                }
                // DeliverPush: max-merge (late, duplicate and ghost pushes
                // are harmless) and absorb the epoch; then ack, naming this
                // instance (HandoffRoll's `pinc`).
                node.mem.merge(&key, &record);
                self.known = self.known.max(stamp.ep);
                let ack = Body::PushAckBy { instance, peer: node.instance, key, stamp, wid: record.wid };
                vec![node.send(from, ack)]
            }
            Body::Collect { instance, round, after } => vec![match self.status {
                PeerStatus::Ready => {
                    self.fence_for(node, instance);
                    node.send(
                        from,
                        Body::CollectReply {
                            instance,
                            peer: node.instance,
                            known: self.known,
                            floor: node.floor,
                            chunk: node.collect_chunk(after.as_ref()),
                        },
                    )
                }
                PeerStatus::Recovering { .. } => {
                    node.send(from, Body::CollectDecline { instance, round, peer: node.instance })
                }
            }],
            Body::Announce { instance, epoch, round } => {
                if epoch < self.known {
                    return vec![node.send(from, Body::AnnounceRefused { instance, epoch, known: self.known })];
                }
                // A booting peer learns its generation from a reseed source
                // only: an announce may be a ghost of a dead generation.
                if node.generation.is_none() && msg.generation.is_some() {
                    return Vec::new();
                }
                self.known = epoch;
                self.fence.lift(instance);
                vec![node.send(from, Body::AnnounceAck { instance, epoch, round, peer: node.instance })]
            }
            Body::ReseedReply { instance, source, known, floor, chunk } if instance == node.instance => {
                let PeerStatus::Recovering { seeded, declined, cursors, heard_from_c } = &mut self.status else {
                    return Vec::new();
                };
                if seeded.contains(&from) || chunk.after.as_ref() != cursors.get(&from) {
                    return Vec::new();
                }
                // A booting peer joins the generation of its first source.
                node.adopt_generation(msg.generation);
                if from == coordinator {
                    self.fence.lift(source);
                }
                // ReseedChunkPeer: merge the chunk and the epochs it witnesses.
                self.known = self.known.max(node.absorb(&chunk, known, floor));
                let complete = chunk.last;
                #[cfg(feature = "mutations")]
                let complete = complete || node.config.mutated(super::config::Mutation::FinishOnPartialSnapshot);
                let next = chunk.next_after();
                let mut out = Vec::new();
                if complete {
                    cursors.remove(&from);
                    seeded.insert(from);
                    declined.remove(&from);
                } else if let Some(next) = next.clone() {
                    cursors.insert(from, next.clone());
                    out.push(node.send(from, Body::Reseed { instance: node.instance, after: Some(next) }));
                }
                if from == coordinator && !*heard_from_c {
                    *heard_from_c = true;
                    out.extend(ask_the_other_peer(node));
                }
                if finished(seeded, declined) {
                    out.push(Node::step_now(now));
                }
                out
            }
            Body::ReseedDecline { instance, source } if instance == node.instance => {
                if from == coordinator && matches!(self.status, PeerStatus::Recovering { .. }) {
                    self.fence_for(node, source);
                }
                let PeerStatus::Recovering { seeded, declined, heard_from_c, .. } = &mut self.status else {
                    return Vec::new();
                };
                if seeded.contains(&from) || declined.contains(&from) {
                    return Vec::new();
                }
                declined.insert(from);
                let mut out = Vec::new();
                if from == coordinator && !*heard_from_c {
                    *heard_from_c = true;
                    out.extend(ask_the_other_peer(node));
                }
                if finished(seeded, declined) {
                    out.push(Node::step_now(now));
                }
                out
            }
            // ReadConfirm: only a ready, unfenced peer that knows exactly
            // this epoch confirms; one that knows a newer epoch says so.
            Body::Confirm { instance, epoch, round } => {
                if self.known > epoch {
                    vec![node.send(from, Body::ConfirmRefused { instance, known: self.known })]
                } else if self.status == PeerStatus::Ready && self.fence.waiting.is_none() && self.known == epoch {
                    vec![node.send(from, Body::Confirmed { instance, epoch, round })]
                } else {
                    Vec::new()
                }
            }
            // Stale replies. (Reseed, digests, records and heartbeats are
            // the same for both roles: `Replica` answers them.)
            _ => Vec::new(),
        }
    }

    /// [`Timer::Retry`]: `FinishRecoveryPeer` once every other replica
    /// answered, else ask again.
    pub(super) fn on_retry(&mut self, node: &mut Node, now: Millis) -> Vec<Output> {
        let PeerStatus::Recovering { seeded, declined, cursors, heard_from_c } = &self.status else {
            return Vec::new();
        };
        if finished(seeded, declined) {
            // FinishRecoveryPeer: ready; what the floor stands for is
            // collected from now on.
            self.status = PeerStatus::Ready;
            node.collect();
            return Vec::new();
        }
        // Ask again everyone who has not seeded us, from where its chunks
        // stopped: a replica that declined may be able to seed by now (at
        // first boot, nobody can until the coordinator has announced). The
        // other peer only once the coordinator answered.
        let instance = node.instance;
        let coordinator = node.config.coordinator();
        let mut out: Vec<Output> = node
            .config
            .others(node.me)
            .filter(|q| !seeded.contains(q) && (*q == coordinator || *heard_from_c))
            .map(|q| node.send(q, Body::Reseed { instance, after: cursors.get(&q).cloned() }))
            .collect();
        out.push(node.arm(now, Timer::Retry));
        out
    }
}

/// The Reseed request to the peer other than this one.
fn ask_the_other_peer(node: &Node) -> Option<Output> {
    let coordinator = node.config.coordinator();
    let other = node.config.others(node.me).find(|&q| q != coordinator)?;
    Some(node.send(other, Body::Reseed { instance: node.instance, after: None }))
}

/// HandoffV2's `FinishRecoveryPeer`: a snapshot from at least one replica,
/// and an answer (a whole snapshot or a decline) from both others.
fn finished(seeded: &BTreeSet<ReplicaId>, declined: &BTreeSet<ReplicaId>) -> bool {
    !seeded.is_empty() && seeded.union(declined).count() == 2
}
