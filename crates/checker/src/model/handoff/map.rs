//! The refinement map: implementation state → HandoffReads state.
//!
//! | spec variable | implementation |
//! | --- | --- |
//! | `mem[r]` | replica r's memory (the coordinator's: committed writes), plus the tombstones its floor collected (a ghost: the code forgets them, the spec keeps what the floor stands for) |
//! | `status[r]` | coordinator phase collect/announce/ready; peer recovering/ready |
//! | `seeded[C]` | collect: peers collected; announce: peers that acked; ready: all peers |
//! | `seeded[p]` | recovering: sources whose last chunk it merged; ready: those at the end of its recovery |
//! | `known[p]`, `epoch`, `collectMax`, `verCtr`, `pending`, `floor` | the replicas' fields |
//! | `got[r][q]` | the keys up to r's cursor for q (its next chunk starts after it) |
//! | `reg[p]` | the coordinator's newest instance of p, as a boot number (0: none) |
//! | `net`, `acks`, `anns` | every such message in the network, from any instance |
//! | `digs` | every digest in the network, with the memory it summarises (a ghost) |
//! | `gsp` | every records message in the network |
//! | `annAcks` | announce acks addressed to the current coordinator instance |
//! | `chunks`, `declines` | replies addressed to the requester's current instance while it still waits for that source (a chunk: from where its cursor stands) |
//! | `inc[r]`, `curAck`, `prevAck` | boots of r (plus 1); the instances (as boot numbers) in the coordinator's announce state |
//! | `snaps`, `gossip` | empty (HandoffScale sends chunks and records instead) |
//! | `zombies` | superseded coordinator instances that are not fenced |
//! | `widCtr`, `acked`, `evictCount`, `supersedes` | ghost variables of the model |
//! | `fenced[p]`, `newest[p]` | peer p's collect fence: the coordinator instance it waits for, and the newest that fenced, announced to or reseeded it (boot numbers; 0: none) |
//! | `dsent` | the coordinator's declines in the network to a recovering peer's current instance, with the declining instance's boot number |
//! | `declRecv[p]` | p is recovering and counts the coordinator as declined |
//! | `zmem` | the memory of each zombie in `zombies` (plus what its floor had collected, a ghost) |
//! | `reads` | the client reads waiting at an instance that is current or a zombie: key, that instance's epoch, the acked writes of the key when it began (a ghost), and whether a peer confirmed that epoch since it began (a ghost) |
//! | `readCtr`, `badRead` | reads started (a ghost); `FALSE` (a stale answer of the code is a violation of its own, `ReadsLinearizable`) |
//! | `now` | the model's clock, in ms (what the replicas are told) |
//! | `expAt` | when each write's record expires, from the record the coordinator issued (a ghost; every record any instance holds must carry it) |
//! | `conds`, `condCtr` | the conditional writes waiting at an instance that is current or a zombie (a ghost, as `reads`); started so far |
//! | `condIssued`, `expIssued` | the conditional writes issued with the record they were evaluated against, and the expiry deletes with the record they delete and when (ghosts) |
//! | `badCond`, `servedExpired` | `FALSE` (a stale failure, or an expired record served, is a violation of the model's own: `CondLinearizable`, `ExpiredNeverServed`) |
//!
//! A write id maps to itself (the model's clients use 1, 2, ...), but an
//! expiry delete's, which the coordinator derives, maps to the spec write
//! id it took when it was issued (a ghost).
//!
//! Ready replicas of the first boot map to `seeded = {}`, as in `Init`.

use std::collections::{BTreeMap, BTreeSet};

use protocol::handoff::coordinator::Phase;
use protocol::handoff::peer::PeerStatus;
use protocol::handoff::{
    Body, Chunk, Key, Memory, Message, Record, Records, Replica, ReplicaId, RoleView, Stamp, WriteId,
};

use super::model::HandoffImpl;
use super::state::ImplState;
use super::view::{is_recovering, takes_chunk, waits_for};
use crate::mirror::handoff::{Func, KeySet, PendingW, PushMsg, Rec, Replica as SpecReplica, Replicas, Status, Val};
use crate::mirror::handoff_ext::{Ack, Ann, AnnAck, Decline, ExtState, Zombie};
use crate::mirror::handoff_reads::{Decl, ReadsState, ZombieMem};
use crate::mirror::handoff_roll::{AckBy, RollState, ZombieReg};
use crate::mirror::handoff_scale::{
    Chunk as SpecChunk, Digest as SpecDigest, Records as SpecRecords, ScaleState, Stamp as SpecStamp,
};

/// Numbers in a model run are small; anything larger than a byte maps to
/// 255 and fails `TypeOK` rather than wrapping.
pub(super) fn small(n: impl TryInto<u8>) -> u8 {
    n.try_into().unwrap_or(u8::MAX)
}

/// The expiry deletes' write ids, by the ids the coordinator derived.
pub(super) type Expiries = BTreeMap<WriteId, u8>;

/// The spec write id of write id `wid`.
pub(super) fn spec_wid(wid: WriteId, expiries: &Expiries) -> u8 {
    expiries.get(&wid).copied().unwrap_or_else(|| small(wid.0))
}

pub(super) fn rec(r: &Record, expiries: &Expiries) -> Rec {
    Rec { ep: small(r.stamp.ep.0), ver: small(r.stamp.ver.0), wid: spec_wid(r.wid, expiries) }
}

fn stamp(s: Stamp) -> SpecStamp {
    SpecStamp { ep: small(s.ep.0), ver: small(s.ver.0) }
}

impl HandoffImpl {
    /// A memory as the spec's function from keys.
    pub(super) fn mem(&self, m: &Memory, expiries: &Expiries) -> Func<Val> {
        Func::new(self.scale().zombie().keys(), |k| match m.get(self.key_of(k)) {
            Some(r) => Val::Rec(rec(r, expiries)),
            None => Val::NoVal(self.scale().zombie().no_val()),
        })
    }

    /// Records in transit as the spec's function from keys (`NoVal` for
    /// the keys they do not carry).
    fn records(&self, rs: &Records, expiries: &Expiries) -> Func<Val> {
        let by_key: BTreeMap<&Key, &Record> = rs.0.iter().map(|(k, r)| (k, r)).collect();
        Func::new(self.scale().zombie().keys(), |k| match by_key.get(self.key_of(k)) {
            Some(r) => Val::Rec(rec(r, expiries)),
            None => Val::NoVal(self.scale().zombie().no_val()),
        })
    }

    /// A replica's memory with the tombstones its floor collected: the
    /// spec's `mem[r]`.
    fn abstract_mem(&self, replica: &Replica, collected: &BTreeMap<Key, Record>, expiries: &Expiries) -> Func<Val> {
        let mut m = self.mem(replica.memory(), expiries);
        for (k, r) in collected {
            let key = self.spec_key(k);
            if matches!(m[key], Val::NoVal(_)) {
                m[key] = Val::Rec(rec(r, expiries));
            }
        }
        m
    }

    /// `got[r][q]` for a cursor: every key up to it.
    fn got(&self, cursor: Option<&Key>) -> KeySet {
        self.keys.iter().filter(|k| cursor.is_some_and(|c| *k <= c)).map(|k| self.spec_key(k)).collect()
    }

    /// The keys a chunk covers: after its cursor, up to its last record, or
    /// to the end if it is the last.
    fn chunk_keys(&self, chunk: &Chunk) -> KeySet {
        let upto = chunk.records.0.last().map(|(k, _)| k);
        self.keys
            .iter()
            .filter(|k| chunk.after.as_ref().is_none_or(|a| *k > a))
            .filter(|k| chunk.last || upto.is_some_and(|u| *k <= u))
            .map(|k| self.spec_key(k))
            .collect()
    }

    /// The spec state `s` maps to.
    pub(super) fn map(&self, s: &ImplState) -> RollState {
        let cond = self.map_cond(s, self.map_reads(s));
        let expiries = &s.cond.expiries;
        let acks_by = s
            .net
            .values()
            .filter_map(|m| match &m.body {
                Body::PushAckBy { peer, key, stamp, wid, .. } => Some(AckBy {
                    src: self.spec_replica(m.from),
                    key: self.spec_key(key),
                    ep: small(stamp.ep.0),
                    ver: small(stamp.ver.0),
                    wid: spec_wid(*wid, expiries),
                    pinc: self.incarnation_of(m.from, *peer) + 1,
                }),
                _ => None,
            })
            .collect();
        let zreg = s.zombies.iter().filter_map(|z| self.zombie_reg(z)).collect();
        RollState { cond, acks_by, zreg }
    }

    /// HandoffScale's `reg` as coordinator instance `c` keeps it.
    fn reg(&self, c: &protocol::handoff::coordinator::Coordinator) -> Func<u8> {
        let mut reg = Func::new(self.scale().zombie().peers(), |_| 0);
        for &p in &self.peers {
            reg[self.spec_replica(p)] = c.registered(p).map_or(0, |i| self.incarnation_of(p, i) + 1);
        }
        reg
    }

    /// A zombie's `zreg` element: its epoch and its `reg`, if it is one of
    /// `zombies` (not fenced).
    fn zombie_reg(&self, z: &Replica) -> Option<ZombieReg> {
        let c = unfenced(z)?;
        Some(ZombieReg { epoch: small(c.epoch().0), reg: self.reg(c) })
    }

    /// The HandoffReads part of the spec state `s` maps to.
    fn map_reads(&self, s: &ImplState) -> ReadsState {
        let c = self.coordinator;
        let boot = |i| self.incarnation_of(c, i) + 1;
        let peer = |p: SpecReplica| match s.replicas[usize::from(self.replica_id(p).0)].role() {
            RoleView::Peer(view) => Some(view),
            RoleView::Coordinator(_) => None,
        };
        let peers = self.scale().zombie().peers();
        let fenced = Func::new(peers, |p| peer(p).and_then(|v| v.fence()).map_or(0, boot));
        let newest = Func::new(peers, |p| peer(p).and_then(|v| v.fence_newest()).map_or(0, boot));
        let decl_recv = Func::new(peers, |p| {
            peer(p).is_some_and(
                |v| matches!(v.peer_status(), PeerStatus::Recovering { declined, .. } if declined.contains(&c)),
            )
        });
        // The coordinator's declines to a recovering peer's current instance.
        let dsent = s
            .net
            .values()
            .filter_map(|m| {
                let Body::ReseedDecline { instance, source } = m.body else { return None };
                let to = &s.replicas[usize::from(m.to.0)];
                (m.from == c && to.instance() == instance && is_recovering(to))
                    .then(|| Decl { dst: self.spec_replica(m.to), inc: boot(source) })
            })
            .collect();
        let zmem = s
            .zombies
            .iter()
            .filter_map(|z| {
                let epoch = self.zombie(z, &s.cond.expiries)?.epoch;
                let none = BTreeMap::new();
                let collected = s.zombie_collected.get(&z.instance()).unwrap_or(&none);
                Some(ZombieMem { epoch, mem: self.abstract_mem(z, collected, &s.cond.expiries) })
            })
            .collect();
        ReadsState {
            scale: self.map_scale(s),
            zmem,
            reads: s.reads.values().map(|(_, r)| r.clone()).collect(),
            read_ctr: s.read_ctr,
            bad_read: false,
            fenced,
            newest,
            dsent,
            decl_recv,
        }
    }

    /// The HandoffScale part of the spec state `s` maps to.
    fn map_scale(&self, s: &ImplState) -> ScaleState {
        let replica = |r: ReplicaId| &s.replicas[usize::from(r.0)];
        let spec_r = |r: ReplicaId| self.spec_replica(r);
        let c = self.coordinator;
        let first_boot = |r: ReplicaId| s.incarnation[usize::from(r.0)] == 0;
        let zombie_spec = self.scale().zombie();

        let mut base = zombie_spec.init().base;
        base.mem = Func::new(zombie_spec.replicas(), |r| {
            let id = self.replica_id(r);
            self.abstract_mem(replica(id), &s.collected[usize::from(id.0)], &s.cond.expiries)
        });
        let RoleView::Coordinator(coord) = replica(c).role() else { unreachable!("r{} is the coordinator", c.0) };
        let ids = |set: &BTreeSet<ReplicaId>| set.iter().map(|&r| spec_r(r)).collect::<Replicas>();
        let all_peers = || self.peers.iter().map(|&p| spec_r(p)).collect::<Replicas>();
        let (c_status, c_seeded) = match coord.phase() {
            Phase::Collect { collected, .. } => (Status::Collect, collected.keys().map(|&r| spec_r(r)).collect()),
            Phase::Announce { acked, .. } => (Status::Announce, acked.keys().map(|&r| spec_r(r)).collect()),
            // A fenced current instance is reported by `fenced_current`.
            Phase::Ready | Phase::Fenced if first_boot(c) => (Status::Ready, Replicas::default()),
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
                let r = rec(&p.record, &s.cond.expiries);
                PendingW { key: self.spec_key(&p.key), ep: r.ep, ver: r.ver, wid: r.wid }
            })
            .collect();
        let mut scale = self.scale().init();
        let none_got = scale.got[spec_r(c)].clone();
        if let Phase::Collect { cursors, .. } = coord.phase() {
            for (&p, cursor) in cursors {
                scale.got[spec_r(c)][spec_r(p)] = self.got(Some(cursor));
            }
        }
        for &p in &self.peers {
            let RoleView::Peer(peer) = replica(p).role() else { unreachable!("r{} is a peer", p.0) };
            base.known[spec_r(p)] = small(peer.known().0);
            let (status, seeded) = match peer.peer_status() {
                PeerStatus::Recovering { seeded, cursors, .. } => {
                    let mut got = none_got.clone();
                    for (&q, cursor) in cursors {
                        got[spec_r(q)] = self.got(Some(cursor));
                    }
                    scale.got[spec_r(p)] = got;
                    (Status::Recovering, ids(seeded))
                }
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

        let mut t = ExtState { base, ..zombie_spec.init() };
        t.inc = Func::new(zombie_spec.replicas(), |r| s.incarnation[usize::from(self.replica_id(r).0)] + 1);
        if let Phase::Announce { round, acked, prev } = coord.phase() {
            t.ann_round = small(*round);
            for (&p, &i) in acked {
                t.cur_ack[spec_r(p)] = self.incarnation_of(p, i) + 1;
            }
            for (&p, &i) in prev {
                t.prev_ack[spec_r(p)] = self.incarnation_of(p, i) + 1;
            }
        }
        t.zombies = s.zombies.iter().filter_map(|z| self.zombie(z, &s.cond.expiries)).collect();
        t.supersedes = s.supersedes;
        scale.ext = t;
        for &r in &self.replica_ids {
            scale.floor[spec_r(r)] = stamp(replica(r).floor());
        }
        scale.reg = self.reg(coord);
        for (key, m) in &s.net {
            self.map_message(s, *key, m, &mut scale);
        }
        scale
    }

    /// Adds what message `m` stands for in the spec, if anything.
    fn map_message(&self, s: &ImplState, net_key: u64, m: &Message, t: &mut ScaleState) {
        let (from, to) = (self.spec_replica(m.from), self.spec_replica(m.to));
        let current = &s.replicas[usize::from(m.to.0)];
        let to_current = m.body.reply_to() == Some(current.instance());
        let expiries = &s.cond.expiries;
        match &m.body {
            Body::Push { key, record, .. } => {
                let r = rec(record, expiries);
                t.ext.base.net.insert(PushMsg { dst: to, key: self.spec_key(key), ep: r.ep, ver: r.ver, wid: r.wid });
            }
            Body::PushAck { key, stamp, wid, .. } | Body::PushAckBy { key, stamp, wid, .. } => {
                let key = self.spec_key(key);
                t.ext.acks.insert(Ack {
                    src: from,
                    key,
                    ep: small(stamp.ep.0),
                    ver: small(stamp.ver.0),
                    wid: spec_wid(*wid, expiries),
                });
            }
            Body::Announce { epoch, round, instance } => {
                let cinc = self.incarnation_of(m.from, *instance) + 1;
                t.ext.anns.insert(Ann { ep: small(epoch.0), round: small(*round), cinc });
            }
            Body::AnnounceAck { epoch, round, peer, .. } if to_current => {
                let pinc = self.incarnation_of(m.from, *peer) + 1;
                t.ext.ann_acks.insert(AnnAck { src: from, ep: small(epoch.0), round: small(*round), pinc });
            }
            Body::Digest { .. } => {
                if let Some(d) = self.digest(s, net_key, m) {
                    t.digs.insert(d);
                }
            }
            Body::Records { floor, records } => {
                t.gsp.insert(SpecRecords {
                    src: from,
                    dst: to,
                    mem: self.records(records, expiries),
                    floor: stamp(*floor),
                });
            }
            Body::CollectReply { peer: source, known, floor, chunk, .. }
            | Body::ReseedReply { source, known, floor, chunk, .. }
                if to_current && takes_chunk(current, m.from, chunk.after.as_ref()) =>
            {
                t.chunks.insert(SpecChunk {
                    src: from,
                    dst: to,
                    keys: self.chunk_keys(chunk),
                    mem: self.records(&chunk.records, expiries),
                    know: small(known.0),
                    floor: stamp(*floor),
                    inc: self.incarnation_of(m.from, *source) + 1,
                });
            }
            Body::ReseedDecline { .. } if to_current && waits_for(current, m.from) => {
                t.ext.declines.insert(Decline { src: from, dst: to });
            }
            _ => {}
        }
    }

    /// A digest in the network as the spec's `digs` element: with the
    /// memory it summarises (a ghost of the model).
    pub(super) fn digest(&self, s: &ImplState, net_key: u64, m: &Message) -> Option<SpecDigest> {
        let Body::Digest { instance, known, floor, .. } = &m.body else { return None };
        let mem = s.digests.get(&net_key)?;
        Some(SpecDigest {
            src: self.spec_replica(m.from),
            dst: self.spec_replica(m.to),
            mem: self.mem(mem, &s.cond.expiries),
            floor: stamp(*floor),
            know: small(known.0),
            inc: self.incarnation_of(m.from, *instance) + 1,
        })
    }

    /// A zombie that is not fenced, as the spec sees it.
    fn zombie(&self, z: &Replica, expiries: &Expiries) -> Option<Zombie> {
        let c = unfenced(z)?;
        let pending = c
            .pending()
            .map(|p| {
                let r = rec(&p.record, expiries);
                PendingW { key: self.spec_key(&p.key), ep: r.ep, ver: r.ver, wid: r.wid }
            })
            .collect();
        Some(Zombie { epoch: small(c.epoch().0), ver_ctr: small(c.ver_ctr().0), pending })
    }
}

/// A zombie's coordinator state while it is one of `zombies` (not fenced).
fn unfenced(z: &Replica) -> Option<&protocol::handoff::coordinator::Coordinator> {
    match z.role() {
        RoleView::Coordinator(c) if *c.phase() != Phase::Fenced => Some(c),
        _ => None,
    }
}
