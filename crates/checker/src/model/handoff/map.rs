//! The refinement map: implementation state → HandoffZombie state.
//!
//! | spec variable | implementation |
//! | --- | --- |
//! | `mem[r]` | replica r's memory (the coordinator's: committed writes) |
//! | `status[r]` | coordinator phase collect/announce/ready; peer recovering/ready |
//! | `seeded[C]` | collect: peers collected; announce: peers that acked; ready: all peers |
//! | `seeded[p]` | recovering: sources merged; ready: those at the end of its recovery |
//! | `known[p]`, `epoch`, `collectMax`, `verCtr`, `pending` | the replicas' fields |
//! | `net` | every push message in the network, from any instance |
//! | `acks`, `anns`, `gossip` | every such message in the network |
//! | `annAcks` | announce acks addressed to the current coordinator instance |
//! | `inc[r]`, `curAck`, `prevAck` | boots of r (plus 1); the instances (as boot numbers) in the coordinator's announce state |
//! | `snaps`, `declines` | replies addressed to the requester's current instance, while it still waits for that source |
//! | `zombies` | superseded coordinator instances that are not fenced |
//! | `widCtr`, `acked`, `evictCount`, `supersedes` | ghost variables of the model |
//!
//! Ready replicas of the first boot map to `seeded = {}`, as in `Init`.

use std::collections::BTreeSet;

use protocol::handoff::coordinator::Phase;
use protocol::handoff::peer::PeerStatus;
use protocol::handoff::{Body, Memory, Message, Record, Replica, ReplicaId, RoleView};

use super::HandoffImpl;
use super::state::ImplState;
use crate::mirror::handoff::{Func, PendingW, PushMsg, Rec, Status, Val};
use crate::mirror::handoff_ext::{Ack, Ann, AnnAck, Decline, ExtState, GossipMsg, Snap, Zombie};

/// Numbers in a model run are small; anything larger than a byte maps to
/// 255 and fails `TypeOK` rather than wrapping.
fn small(n: impl TryInto<u8>) -> u8 {
    n.try_into().unwrap_or(u8::MAX)
}

fn rec(r: &Record) -> Rec {
    Rec { ep: small(r.stamp.ep.0), ver: small(r.stamp.ver.0), wid: small(r.wid.0) }
}

impl HandoffImpl {
    pub(super) fn mem(&self, m: &Memory) -> Func<Val> {
        Func::new(self.spec.keys(), |k| match m.get(self.key_of(k)) {
            Some(r) => Val::Rec(rec(r)),
            None => Val::NoVal(self.spec.no_val()),
        })
    }

    /// The spec state `s` maps to.
    pub(super) fn map(&self, s: &ImplState) -> ExtState {
        let replica = |r: ReplicaId| &s.replicas[usize::from(r.0)];
        let spec_r = |r: ReplicaId| self.spec_replica(r);
        let c = self.coordinator;
        let first_boot = |r: ReplicaId| s.incarnation[usize::from(r.0)] == 0;

        let mut base = self.spec.init().base;
        base.mem = Func::new(self.spec.replicas(), |r| self.mem(replica(self.replica_id(r)).memory()));
        let RoleView::Coordinator(coord) = replica(c).role() else { unreachable!("r{} is the coordinator", c.0) };
        let ids = |set: &BTreeSet<ReplicaId>| set.iter().map(|&r| spec_r(r)).collect::<BTreeSet<_>>();
        let all_peers = || self.peers.iter().map(|&p| spec_r(p)).collect::<BTreeSet<_>>();
        let (c_status, c_seeded) = match coord.phase() {
            Phase::Collect { collected, .. } => (Status::Collect, ids(collected)),
            Phase::Announce { acked, .. } => (Status::Announce, acked.keys().map(|&r| spec_r(r)).collect()),
            // A fenced current instance is reported by `fenced_current`.
            Phase::Ready | Phase::Fenced if first_boot(c) => (Status::Ready, BTreeSet::new()),
            Phase::Ready | Phase::Fenced => (Status::Ready, all_peers()),
        };
        base.status[spec_r(c)] = c_status;
        base.seeded[spec_r(c)] = c_seeded;
        base.epoch = small(coord.epoch().0);
        base.collect_max = small(coord.collect_max().0);
        base.ver_ctr = small(coord.ver_ctr().0);
        base.pending = coord
            .pending()
            .map(|p| {
                let r = rec(&p.record);
                PendingW { key: self.spec_key(&p.key), ep: r.ep, ver: r.ver, wid: r.wid }
            })
            .collect();
        for &p in &self.peers {
            let RoleView::Peer(peer) = replica(p).role() else { unreachable!("r{} is a peer", p.0) };
            base.known[spec_r(p)] = small(peer.known().0);
            let (status, seeded) = match peer.peer_status() {
                PeerStatus::Recovering { seeded, .. } => (Status::Recovering, ids(seeded)),
                PeerStatus::Ready => {
                    (Status::Ready, s.seeded_when_ready[usize::from(p.0)].as_ref().map(ids).unwrap_or_default())
                }
            };
            base.status[spec_r(p)] = status;
            base.seeded[spec_r(p)] = seeded;
        }
        base.wid_ctr = s.wid_ctr;
        base.acked = s.acked.clone();
        base.evict_count = s.evict_count;

        let mut t = ExtState { base, ..self.spec.init() };
        t.inc = Func::new(self.spec.replicas(), |r| s.incarnation[usize::from(self.replica_id(r).0)] + 1);
        if let Phase::Announce { round, acked, prev } = coord.phase() {
            t.ann_round = small(*round);
            for (&p, &i) in acked {
                t.cur_ack[spec_r(p)] = self.incarnation_of(p, i) + 1;
            }
            for (&p, &i) in prev {
                t.prev_ack[spec_r(p)] = self.incarnation_of(p, i) + 1;
            }
        }
        for m in s.net.values() {
            self.map_message(s, m, &mut t);
        }
        t.zombies = s.zombies.iter().filter_map(|z| self.zombie(z)).collect();
        t.supersedes = s.supersedes;
        t
    }

    /// Adds what message `m` stands for in the spec, if anything.
    fn map_message(&self, s: &ImplState, m: &Message, t: &mut ExtState) {
        let (from, to) = (self.spec_replica(m.from), self.spec_replica(m.to));
        let current = &s.replicas[usize::from(m.to.0)];
        let to_current = m.body.reply_to() == Some(current.instance());
        match &m.body {
            Body::Push { key, record, .. } => {
                let r = rec(record);
                t.base.net.insert(PushMsg { dst: to, key: self.spec_key(key), ep: r.ep, ver: r.ver, wid: r.wid });
            }
            Body::PushAck { key, stamp, wid, .. } => {
                let key = self.spec_key(key);
                t.acks.insert(Ack {
                    src: from,
                    key,
                    ep: small(stamp.ep.0),
                    ver: small(stamp.ver.0),
                    wid: small(wid.0),
                });
            }
            Body::Announce { epoch, round, instance } => {
                let cinc = self.incarnation_of(m.from, *instance) + 1;
                t.anns.insert(Ann { ep: small(epoch.0), round: small(*round), cinc });
            }
            Body::AnnounceAck { epoch, round, peer, .. } if to_current => {
                let pinc = self.incarnation_of(m.from, *peer) + 1;
                t.ann_acks.insert(AnnAck { src: from, ep: small(epoch.0), round: small(*round), pinc });
            }
            Body::Gossip { memory } => {
                t.gossip.insert(GossipMsg { src: from, dst: to, mem: self.mem(memory) });
            }
            Body::CollectReply { known, memory, .. } if to_current && waits_for(current, m.from) => {
                t.snaps.insert(Snap { src: from, dst: to, mem: self.mem(memory), know: small(known.0) });
            }
            Body::ReseedReply { known, memory, .. } if to_current && waits_for(current, m.from) => {
                t.snaps.insert(Snap { src: from, dst: to, mem: self.mem(memory), know: small(known.0) });
            }
            Body::ReseedDecline { .. } if to_current && waits_for(current, m.from) => {
                t.declines.insert(Decline { src: from, dst: to });
            }
            _ => {}
        }
    }

    /// A zombie that is not fenced, as the spec sees it.
    fn zombie(&self, z: &Replica) -> Option<Zombie> {
        let RoleView::Coordinator(c) = z.role() else { return None };
        if *c.phase() == Phase::Fenced {
            return None;
        }
        let pending = c
            .pending()
            .map(|p| {
                let r = rec(&p.record);
                PendingW { key: self.spec_key(&p.key), ep: r.ep, ver: r.ver, wid: r.wid }
            })
            .collect();
        Some(Zombie { epoch: small(c.epoch().0), ver_ctr: small(c.ver_ctr().0), pending })
    }
}

/// Whether replica instance `r` still takes a snapshot reply (or decline)
/// from `src`: the coordinator while collecting and not yet collected from
/// it; a peer while recovering and not yet seeded by it.
pub(super) fn waits_for(r: &Replica, src: ReplicaId) -> bool {
    match r.role() {
        RoleView::Coordinator(c) => matches!(c.phase(), Phase::Collect { collected, .. } if !collected.contains(&src)),
        RoleView::Peer(p) => matches!(p.peer_status(), PeerStatus::Recovering { seeded, .. } if !seeded.contains(&src)),
    }
}
