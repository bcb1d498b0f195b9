//! HandoffScale's actions, named and ordered as in `NextS`.
//!
//! An action HandoffScale takes over from HandoffZombie unchanged (or with
//! a guard and the new variables' changes added) is the HandoffZombie
//! mirror's step; only what HandoffScale adds is written here.

use std::fmt::{self, Display};

use super::model::HandoffScale;
use super::state::{Chunk, Digest, Records, ScaleState, Stamp};
use crate::mirror::handoff::{Func, Key, KeySet, PendingW, PushMsg, Rec, Replica, Status, Val, mem_ep_max, merge_mem};
use crate::mirror::handoff_ext::{Ann, AnnAck, Decline, ExtAction, ExtState, Zombie};
use crate::spec::tla;

/// One instance of a HandoffScale action, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum ScaleAction {
    ClientWrite(Key),
    CommitWrite(PendingW),
    Evict(Replica),
    ChunkC(Replica, KeySet),
    FinishRecoveryPeer(Replica),
    ReseedChunkC(Chunk),
    ReseedChunkPeer(Chunk),
    ChooseEpoch,
    AnnounceAcked(AnnAck),
    AnnounceRound,
    FinishRecoveryC,
    ChunkPeer(Replica, Replica, KeySet),
    DeclinePeer(Replica, Replica),
    DigestSend(Replica),
    DigestRecv(Digest, KeySet),
    GossipRecv(Records),
    RaiseFloor,
    DeliverPush(PushMsg),
    AnnounceTo(Replica, Ann),
    Supersede,
    ZombieWrite(Zombie, Key),
    ZombieCommit(Zombie, PendingW),
    ZombieFenced(Zombie),
}

impl ScaleAction {
    /// The spec's action names, in `NextS` order, for the coverage counts.
    pub const NAMES: [&'static str; 23] = [
        "ClientWriteS",
        "CommitWriteS",
        "EvictS",
        "ChunkC",
        "FinishRecoveryPeerS",
        "ReseedChunkC",
        "ReseedChunkPeer",
        "ChooseEpochS",
        "AnnounceAckedS",
        "AnnounceRoundS",
        "FinishRecoveryCS",
        "ChunkPeer",
        "DeclinePeerS",
        "DigestSend",
        "DigestRecv",
        "GossipRecvS",
        "RaiseFloor",
        "DeliverPushS",
        "AnnounceToS",
        "SupersedeS",
        "ZombieWriteS",
        "ZombieCommitS",
        "ZombieFencedS",
    ];

    /// The position of this action's name in [`ScaleAction::NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            ScaleAction::ClientWrite(_) => 0,
            ScaleAction::CommitWrite(_) => 1,
            ScaleAction::Evict(_) => 2,
            ScaleAction::ChunkC(..) => 3,
            ScaleAction::FinishRecoveryPeer(_) => 4,
            ScaleAction::ReseedChunkC(_) => 5,
            ScaleAction::ReseedChunkPeer(_) => 6,
            ScaleAction::ChooseEpoch => 7,
            ScaleAction::AnnounceAcked(_) => 8,
            ScaleAction::AnnounceRound => 9,
            ScaleAction::FinishRecoveryC => 10,
            ScaleAction::ChunkPeer(..) => 11,
            ScaleAction::DeclinePeer(..) => 12,
            ScaleAction::DigestSend(_) => 13,
            ScaleAction::DigestRecv(..) => 14,
            ScaleAction::GossipRecv(_) => 15,
            ScaleAction::RaiseFloor => 16,
            ScaleAction::DeliverPush(_) => 17,
            ScaleAction::AnnounceTo(..) => 18,
            ScaleAction::Supersede => 19,
            ScaleAction::ZombieWrite(..) => 20,
            ScaleAction::ZombieCommit(..) => 21,
            ScaleAction::ZombieFenced(_) => 22,
        }
    }
}

impl Display for ScaleAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScaleAction::ClientWrite(k) => write!(f, "ClientWriteS({k})"),
            ScaleAction::CommitWrite(pw) => write!(f, "CommitWriteS({pw})"),
            ScaleAction::Evict(r) => write!(f, "EvictS({r})"),
            ScaleAction::ChunkC(p, keys) => write!(f, "ChunkC({p}, {})", tla::set(keys)),
            ScaleAction::FinishRecoveryPeer(p) => write!(f, "FinishRecoveryPeerS({p})"),
            ScaleAction::ReseedChunkC(c) => write!(f, "ReseedChunkC({c})"),
            ScaleAction::ReseedChunkPeer(c) => write!(f, "ReseedChunkPeer({c})"),
            ScaleAction::ChooseEpoch => f.write_str("ChooseEpochS"),
            ScaleAction::AnnounceAcked(a) => write!(f, "AnnounceAckedS({a})"),
            ScaleAction::AnnounceRound => f.write_str("AnnounceRoundS"),
            ScaleAction::FinishRecoveryC => f.write_str("FinishRecoveryCS"),
            ScaleAction::ChunkPeer(q, p, keys) => write!(f, "ChunkPeer({q}, {p}, {})", tla::set(keys)),
            ScaleAction::DeclinePeer(q, p) => write!(f, "DeclinePeerS({q}, {p})"),
            ScaleAction::DigestSend(a) => write!(f, "DigestSend({a})"),
            ScaleAction::DigestRecv(d, keys) => write!(f, "DigestRecv({d}, {})", tla::set(keys)),
            ScaleAction::GossipRecv(g) => write!(f, "GossipRecvS({g})"),
            ScaleAction::RaiseFloor => f.write_str("RaiseFloor"),
            ScaleAction::DeliverPush(m) => write!(f, "DeliverPushS({m})"),
            ScaleAction::AnnounceTo(p, a) => write!(f, "AnnounceToS({p}, {a})"),
            ScaleAction::Supersede => f.write_str("SupersedeS"),
            ScaleAction::ZombieWrite(z, k) => write!(f, "ZombieWriteS({z}, {k})"),
            ScaleAction::ZombieCommit(z, pw) => write!(f, "ZombieCommitS({z}, {pw})"),
            ScaleAction::ZombieFenced(z) => write!(f, "ZombieFencedS({z})"),
        }
    }
}

impl HandoffScale {
    /// The disjuncts of `NextS` with quantifiers unrolled, in a fixed order
    /// (stateright replays paths by index).
    pub fn next(&self, s: &ScaleState, actions: &mut Vec<ScaleAction>) {
        let (replicas, peers) = (self.zombie.replicas(), self.zombie.peers());
        actions.extend(self.zombie.keys().iter().map(|&k| ScaleAction::ClientWrite(k)));
        actions.extend(s.ext.base.pending.iter().map(|&pw| ScaleAction::CommitWrite(pw)));
        actions.extend(replicas.iter().map(|&r| ScaleAction::Evict(r)));
        for &p in peers {
            actions.extend(self.subsets.iter().map(|keys| ScaleAction::ChunkC(p, keys.clone())));
        }
        actions.extend(peers.iter().map(|&p| ScaleAction::FinishRecoveryPeer(p)));
        for c in &s.chunks {
            actions.extend([ScaleAction::ReseedChunkC(c.clone()), ScaleAction::ReseedChunkPeer(c.clone())]);
        }
        actions.push(ScaleAction::ChooseEpoch);
        actions.extend(s.ext.ann_acks.iter().map(|&a| ScaleAction::AnnounceAcked(a)));
        actions.extend([ScaleAction::AnnounceRound, ScaleAction::FinishRecoveryC]);
        for &p in peers {
            for &q in replicas {
                actions.extend(self.subsets.iter().map(|keys| ScaleAction::ChunkPeer(q, p, keys.clone())));
            }
        }
        for &p in peers {
            actions.extend(replicas.iter().map(|&q| ScaleAction::DeclinePeer(q, p)));
        }
        actions.extend(replicas.iter().map(|&a| ScaleAction::DigestSend(a)));
        for d in &s.digs {
            actions.extend(self.subsets.iter().map(|keys| ScaleAction::DigestRecv(d.clone(), keys.clone())));
        }
        actions.extend(s.gsp.iter().map(|g| ScaleAction::GossipRecv(g.clone())));
        actions.push(ScaleAction::RaiseFloor);
        actions.extend(s.ext.base.net.iter().map(|&m| ScaleAction::DeliverPush(m)));
        for &p in peers {
            actions.extend(s.ext.anns.iter().map(|&a| ScaleAction::AnnounceTo(p, a)));
        }
        actions.push(ScaleAction::Supersede);
        for z in &s.ext.zombies {
            actions.extend(self.zombie.keys().iter().map(|&k| ScaleAction::ZombieWrite(z.clone(), k)));
        }
        for z in &s.ext.zombies {
            actions.extend(z.pending.iter().map(|&pw| ScaleAction::ZombieCommit(z.clone(), pw)));
        }
        actions.extend(s.ext.zombies.iter().map(|z| ScaleAction::ZombieFenced(z.clone())));
    }

    /// The successor of `s` by `action`, `None` where it is not enabled.
    pub fn step(&self, s: &ScaleState, action: &ScaleAction) -> Option<ScaleState> {
        let c = self.zombie.coordinator();
        let base = &s.ext.base;
        match action {
            ScaleAction::ClientWrite(k) => {
                if !self.budget_admits(s, *k) {
                    return None;
                }
                self.zombie_step(s, &ExtAction::ClientWrite(*k))
            }
            ScaleAction::CommitWrite(pw) => self.zombie_step(s, &ExtAction::CommitWrite(*pw)),
            ScaleAction::Evict(r) => {
                let mut t = self.zombie_step(s, &ExtAction::Evict(*r))?;
                self.forget(&mut t, *r);
                Some(t)
            }
            ScaleAction::ChunkC(p, keys) => {
                let enabled = base.status[c] == Status::Collect
                    && !base.seeded[c].contains(p)
                    && base.can_seed(*p)
                    && self.fresh(s, c, *p, keys);
                enabled.then(|| {
                    let chunk = self.chunk(s, *p, c, keys, base.known[*p]);
                    self.with(s, |t| {
                        t.chunks.insert(chunk);
                    })
                })
            }
            ScaleAction::ChunkPeer(q, p, keys) => {
                let enabled = q != p
                    && base.status[*p] == Status::Recovering
                    && !base.seeded[*p].contains(q)
                    && base.can_seed(*q)
                    && self.fresh(s, *p, *q, keys)
                    && (*q == c || self.heard_from_c(s, *p));
                enabled.then(|| {
                    let know = if *q == c { base.epoch } else { base.known[*q] };
                    let chunk = self.chunk(s, *q, *p, keys, know);
                    self.with(s, |t| {
                        t.chunks.insert(chunk);
                        if *q == c {
                            t.reg[*p] = s.reg[*p].max(s.ext.inc[*p]);
                        }
                    })
                })
            }
            ScaleAction::ReseedChunkC(ch) => {
                if !(s.chunks.contains(ch)
                    && ch.dst == c
                    && base.status[c] == Status::Collect
                    && !base.seeded[c].contains(&ch.src))
                {
                    return None;
                }
                Some(self.with(s, |t| {
                    t.ext.base.mem[c] = merge_mem(&base.mem[c], &ch.mem);
                    t.ext.base.collect_max = base.collect_max.max(ch.know.max(mem_ep_max(&ch.mem)));
                    self.advance(s, t, ch);
                    t.reg[ch.src] = s.reg[ch.src].max(ch.inc);
                }))
            }
            ScaleAction::ReseedChunkPeer(ch) => {
                let p = ch.dst;
                if !(s.chunks.contains(ch)
                    && self.zombie.peers().contains(&p)
                    && base.status[p] == Status::Recovering
                    && !base.seeded[p].contains(&ch.src))
                {
                    return None;
                }
                Some(self.with(s, |t| {
                    t.ext.base.mem[p] = merge_mem(&base.mem[p], &ch.mem);
                    t.ext.base.known[p] = base.known[p].max(ch.know.max(mem_ep_max(&ch.mem)));
                    if self.complete(s, ch) {
                        t.ext.declines.retain(|x| !(x.src == ch.src && x.dst == p));
                    }
                    self.advance(s, t, ch);
                }))
            }
            ScaleAction::ChooseEpoch => {
                let mut t = self.zombie_step(s, &ExtAction::ChooseEpoch)?;
                t.chunks.retain(|x| x.dst != c);
                Some(t)
            }
            ScaleAction::AnnounceAcked(a) => self.zombie_step(s, &ExtAction::AnnounceAcked(*a)),
            ScaleAction::AnnounceRound => self.zombie_step(s, &ExtAction::AnnounceRound),
            ScaleAction::FinishRecoveryC => self.zombie_step(s, &ExtAction::FinishRecoveryC),
            ScaleAction::DeclinePeer(q, p) => {
                let mut t = self.zombie_step(s, &ExtAction::DeclinePeer(*q, *p))?;
                if *q == c {
                    t.reg[*p] = s.reg[*p].max(s.ext.inc[*p]);
                }
                Some(t)
            }
            ScaleAction::FinishRecoveryPeer(p) => {
                let mut t = self.zombie_step(s, &ExtAction::FinishRecoveryPeer(*p))?;
                t.chunks.retain(|x| x.dst != *p);
                t.got[*p] = self.none_got();
                Some(t)
            }
            ScaleAction::DigestSend(a) => {
                if !(base.is_ready(*a) && self.gossip_room(s)) {
                    return None;
                }
                let know = if *a == c { base.epoch } else { base.known[*a] };
                let mem = self.ops.concrete(s, *a);
                let to: Vec<Replica> = if *a == c { self.zombie.peers().to_vec() } else { vec![c] };
                Some(self.with(s, |t| {
                    for dst in to {
                        let (floor, inc) = (s.floor[*a], s.ext.inc[*a]);
                        t.digs.insert(Digest { src: *a, dst, mem: mem.clone(), floor, know, inc });
                    }
                }))
            }
            ScaleAction::DigestRecv(d, keys) => {
                if !(s.digs.contains(d) && base.is_ready(d.dst)) {
                    return None;
                }
                if !keys.is_empty() && !self.gossip_room(s) {
                    return None;
                }
                let fl = s.floor[d.dst].max(d.floor);
                let reply = Records {
                    src: d.dst,
                    dst: d.src,
                    mem: self.ops.restrict(&self.ops.concrete_at(s, d.dst, fl), keys),
                    floor: fl,
                };
                Some(self.with(s, |t| {
                    t.floor[d.dst] = fl;
                    if !keys.is_empty() {
                        t.gsp.insert(reply);
                    }
                    if d.dst == c {
                        t.reg[d.src] = s.reg[d.src].max(d.inc);
                    }
                }))
            }
            ScaleAction::GossipRecv(g) => {
                if !(s.gsp.contains(g) && base.is_ready(g.dst)) {
                    return None;
                }
                let fl = s.floor[g.dst].max(g.floor);
                let mut t = self.with(s, |t| {
                    t.floor[g.dst] = fl;
                    for (k, &v) in g.mem.iter() {
                        t.ext.base.mem[g.dst][k] = self.ops.merge_val_at(base.mem[g.dst][k], fl, v);
                    }
                });
                t.ext.base.served_regression = self.regresses(&s.ext, &t.ext);
                Some(t)
            }
            ScaleAction::RaiseFloor => {
                let fl = Stamp { ep: base.epoch, ver: base.ver_ctr };
                let mem = self.ops.concrete(s, c);
                let matched = |p: &Replica| {
                    s.digs.iter().any(|d| {
                        d.src == *p && d.dst == c && d.inc == s.reg[*p] && d.know == base.epoch && d.mem == mem
                    })
                };
                let enabled = base.is_ready(c)
                    && base.pending.is_empty()
                    && fl.above(s.floor[c])
                    && self.zombie.peers().iter().all(matched);
                enabled.then(|| {
                    self.with(s, |t| {
                        t.floor[c] = fl;
                    })
                })
            }
            ScaleAction::DeliverPush(m) => {
                let rec = Rec { ep: m.ep, ver: m.ver, wid: m.wid };
                if !base.is_ready(m.dst) || self.ops.refused_at(base.mem[m.dst][m.key], s.floor[m.dst], rec) {
                    return None;
                }
                self.zombie_step(s, &ExtAction::DeliverPush(*m))
            }
            ScaleAction::AnnounceTo(p, a) => self.zombie_step(s, &ExtAction::AnnounceTo(*p, *a)),
            ScaleAction::Supersede => {
                let mut t = self.zombie_step(s, &ExtAction::Supersede)?;
                self.forget(&mut t, c);
                Some(t)
            }
            ScaleAction::ZombieWrite(z, k) => self.zombie_step(s, &ExtAction::ZombieWrite(z.clone(), *k)),
            ScaleAction::ZombieCommit(z, pw) => self.zombie_step(s, &ExtAction::ZombieCommit(z.clone(), *pw)),
            ScaleAction::ZombieFenced(z) => self.zombie_step(s, &ExtAction::ZombieFenced(z.clone())),
        }
    }

    /// A HandoffZombie step; HandoffScale's own variables are unchanged.
    fn zombie_step(&self, s: &ScaleState, action: &ExtAction) -> Option<ScaleState> {
        let ext = self.zombie.step(&s.ext, action)?;
        Some(ScaleState { ext, ..s.clone() })
    }

    /// A step written here: `change` applied to `s`, the step marker clear.
    fn with(&self, s: &ScaleState, change: impl FnOnce(&mut ScaleState)) -> ScaleState {
        let mut t = s.clone();
        t.ext.base.served_regression = false;
        change(&mut t);
        t
    }

    /// `Forget(r)`
    fn forget(&self, t: &mut ScaleState, r: Replica) {
        t.floor[r] = Stamp::default();
        t.got[r] = self.none_got();
        t.chunks.retain(|x| x.dst != r);
        if r == self.zombie.coordinator() {
            t.reg = Func::new(self.zombie.peers(), |_| 0);
        }
    }

    /// `Chunk(q, r, S, know)`
    fn chunk(&self, s: &ScaleState, q: Replica, r: Replica, keys: &KeySet, know: u8) -> Chunk {
        let mem = self.ops.restrict(&self.ops.concrete(s, q), keys);
        Chunk { src: q, dst: r, keys: keys.clone(), mem, know, floor: s.floor[q], inc: s.ext.inc[q] }
    }

    /// `S # {} /\ S \subseteq Keys \ got[r][q]`
    fn fresh(&self, s: &ScaleState, r: Replica, q: Replica, keys: &KeySet) -> bool {
        !keys.is_empty() && keys.iter().all(|k| !s.got[r][q].contains(k))
    }

    /// `HeardFromC(p)`
    fn heard_from_c(&self, s: &ScaleState, p: Replica) -> bool {
        let c = self.zombie.coordinator();
        s.ext.base.seeded[p].contains(&c)
            || !s.got[p][c].is_empty()
            || s.ext.declines.contains(&Decline { src: c, dst: p })
            || s.chunks.iter().any(|x| x.src == c && x.dst == p)
    }

    /// `Complete(c)`
    fn complete(&self, s: &ScaleState, ch: &Chunk) -> bool {
        let got = &s.got[ch.dst][ch.src];
        got.len() + ch.keys.iter().filter(|k| !got.contains(k)).count() == self.zombie.keys().len()
    }

    /// `Advance(c)`, applied to `t`.
    fn advance(&self, s: &ScaleState, t: &mut ScaleState, ch: &Chunk) {
        if self.complete(s, ch) {
            t.got[ch.dst][ch.src] = KeySet::default();
            t.ext.base.seeded[ch.dst].insert(ch.src);
        } else {
            t.got[ch.dst][ch.src].extend(ch.keys.iter().copied());
        }
        t.chunks.retain(|x| !(x.src == ch.src && x.dst == ch.dst));
        t.floor[ch.dst] = s.floor[ch.dst].max(ch.floor);
    }

    /// `BudgetAdmits(k)`
    fn budget_admits(&self, s: &ScaleState, k: Key) -> bool {
        let stored = self.ops.concrete(s, self.zombie.coordinator());
        let mut counted: KeySet = stored.iter().filter(|(_, v)| matches!(v, Val::Rec(_))).map(|(key, _)| key).collect();
        counted.extend(s.ext.base.pending.iter().map(|pw| pw.key));
        counted.contains(&k) || counted.len() < usize::from(self.budget)
    }

    /// `GossipRoom`
    fn gossip_room(&self, s: &ScaleState) -> bool {
        s.digs.len() + s.gsp.len() < usize::from(self.max_gossip)
    }

    /// `[q \in Replicas |-> {}]`
    pub(super) fn none_got(&self) -> Func<KeySet> {
        Func::new(self.zombie.replicas(), |_| KeySet::default())
    }

    /// `NoServedRegressionStep` failed on the step from `s` to `t`.
    fn regresses(&self, s: &ExtState, t: &ExtState) -> bool {
        self.no_served_regression
            && self.zombie.replicas().iter().any(|&r| {
                s.base.is_ready(r)
                    && t.base.is_ready(r)
                    && self.zombie.keys().iter().any(|&k| match (s.base.mem[r][k], t.base.mem[r][k]) {
                        (Val::NoVal(_), _) => false,
                        (Val::Rec(_), Val::NoVal(_)) => true,
                        (Val::Rec(a), Val::Rec(b)) => crate::mirror::handoff::wins(a, b),
                    })
            })
    }
}
