//! The extensions' actions, named and ordered as in `UnfencedA`, `NextA`
//! and `NextZ`.
//!
//! HandoffV2's own actions are taken by the HandoffV2 mirror's
//! `next_state`, never re-transcribed. An action that HandoffAcks turns
//! into "the same step, from a message" runs the mirror's step on the state
//! the message witnessed -- the source's memory and epoch knowledge as the
//! snapshot (or ack, or gossip) carries them, the source able to seed --
//! and then puts the source's real fields back: `ReseedCA(s)` is
//! `ReseedC(s.src)` with `mem[s.src] = s.mem, known[s.src] = s.know`.
//! Only what HandoffAcks adds (sending a reply, counting an ack, the
//! zombies) is written here.

use std::fmt::{self, Display};

use stateright::Model;

use super::model::{ExtModel, Extension};
use super::state::{Ack, Ann, AnnAck, Decline, ExtState, GossipMsg, Snap, Zombie};
use crate::mirror::handoff::{
    AckedW, Action as V2Action, Func, Key, PendingW, PushMsg, Rec, Replica, State, Status, Val,
};

/// One instance of an extension action, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum ExtAction {
    ClientWrite(Key),
    CommitWrite(PendingW),
    Evict(Replica),
    SnapC(Replica),
    FinishRecoveryPeer(Replica),
    ReseedC(Snap),
    ReseedPeer(Snap),
    ChooseEpoch,
    AnnounceAcked(AnnAck),
    AnnounceRound,
    FinishRecoveryC,
    SnapPeer(Replica, Replica),
    DeclinePeer(Replica, Replica),
    GossipSend(Replica),
    GossipRecv(GossipMsg),
    DeliverPush(PushMsg),
    AnnounceTo(Replica, Ann),
    Supersede,
    ZombieWrite(Zombie, Key),
    ZombieCommit(Zombie, PendingW),
    ZombieFenced(Zombie),
}

impl Display for ExtAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExtAction::ClientWrite(k) => write!(f, "ClientWriteA({k})"),
            ExtAction::CommitWrite(pw) => write!(f, "CommitWriteA({pw})"),
            ExtAction::Evict(r) => write!(f, "EvictA({r})"),
            ExtAction::SnapC(p) => write!(f, "SnapC({p})"),
            ExtAction::AnnounceAcked(a) => write!(f, "AnnounceAcked({a})"),
            ExtAction::AnnounceRound => f.write_str("AnnounceRound"),
            ExtAction::FinishRecoveryPeer(p) => write!(f, "FinishRecoveryPeerA({p})"),
            ExtAction::ReseedC(s) => write!(f, "ReseedCA({s})"),
            ExtAction::ReseedPeer(s) => write!(f, "ReseedPeerA({s})"),
            ExtAction::ChooseEpoch => f.write_str("ChooseEpochA"),
            ExtAction::FinishRecoveryC => f.write_str("FinishRecoveryCA"),
            ExtAction::SnapPeer(q, p) => write!(f, "SnapPeer({q}, {p})"),
            ExtAction::DeclinePeer(q, p) => write!(f, "DeclinePeer({q}, {p})"),
            ExtAction::GossipSend(a) => write!(f, "GossipSend({a})"),
            ExtAction::GossipRecv(g) => write!(f, "GossipRecv({g})"),
            ExtAction::DeliverPush(m) => write!(f, "DeliverPush({m})"),
            ExtAction::AnnounceTo(p, a) => write!(f, "AnnounceTo({p}, {a})"),
            ExtAction::Supersede => f.write_str("Supersede"),
            ExtAction::ZombieWrite(z, k) => write!(f, "ZombieWrite({z}, {k})"),
            ExtAction::ZombieCommit(z, pw) => write!(f, "ZombieCommit({z}, {pw})"),
            ExtAction::ZombieFenced(z) => write!(f, "ZombieFenced({z})"),
        }
    }
}

impl ExtAction {
    /// The position of this action's kind in the module's action names
    /// ([`ExtModel::action_names`]): `UnfencedA`'s actions, the two that
    /// HandoffZombie fences, then HandoffZombie's own.
    pub fn kind(&self) -> usize {
        match self {
            ExtAction::ClientWrite(_) => 0,
            ExtAction::CommitWrite(_) => 1,
            ExtAction::Evict(_) => 2,
            ExtAction::SnapC(_) => 3,
            ExtAction::FinishRecoveryPeer(_) => 4,
            ExtAction::ReseedC(_) => 5,
            ExtAction::ReseedPeer(_) => 6,
            ExtAction::ChooseEpoch => 7,
            ExtAction::AnnounceAcked(_) => 8,
            ExtAction::AnnounceRound => 9,
            ExtAction::FinishRecoveryC => 10,
            ExtAction::SnapPeer(..) => 11,
            ExtAction::DeclinePeer(..) => 12,
            ExtAction::GossipSend(_) => 13,
            ExtAction::GossipRecv(_) => 14,
            ExtAction::DeliverPush(_) => 15,
            ExtAction::AnnounceTo(..) => 16,
            ExtAction::Supersede => 17,
            ExtAction::ZombieWrite(..) => 18,
            ExtAction::ZombieCommit(..) => 19,
            ExtAction::ZombieFenced(_) => 20,
        }
    }
}

/// The names of [`ExtAction::kind`]s, as the module spells them.
pub(super) const UNFENCED_NAMES: [&str; 15] = [
    "ClientWriteA",
    "CommitWriteA",
    "EvictA",
    "SnapC",
    "FinishRecoveryPeerA",
    "ReseedCA",
    "ReseedPeerA",
    "ChooseEpochA",
    "AnnounceAcked",
    "AnnounceRound",
    "FinishRecoveryCA",
    "SnapPeer",
    "DeclinePeer",
    "GossipSend",
    "GossipRecv",
];
pub(super) const ZOMBIE_NAMES: [&str; 4] = ["Supersede", "ZombieWrite", "ZombieCommit", "ZombieFenced"];

impl<E: Extension> ExtModel<E> {
    /// The disjuncts of the module's Next with quantifiers unrolled, in a
    /// fixed order (stateright replays paths by index).
    pub fn next(&self, s: &ExtState, actions: &mut Vec<ExtAction>) {
        actions.extend(self.keys.iter().map(|&k| ExtAction::ClientWrite(k)));
        actions.extend(s.base.pending.iter().map(|&pw| ExtAction::CommitWrite(pw)));
        actions.extend(self.replicas.iter().map(|&r| ExtAction::Evict(r)));
        for &p in &self.peers {
            actions.extend([ExtAction::SnapC(p), ExtAction::FinishRecoveryPeer(p)]);
        }
        for snap in &s.snaps {
            actions.extend([ExtAction::ReseedC(snap.clone()), ExtAction::ReseedPeer(snap.clone())]);
        }
        actions.push(ExtAction::ChooseEpoch);
        actions.extend(s.ann_acks.iter().map(|&a| ExtAction::AnnounceAcked(a)));
        actions.extend([ExtAction::AnnounceRound, ExtAction::FinishRecoveryC]);
        for &p in &self.peers {
            for &q in &self.replicas {
                actions.extend([ExtAction::SnapPeer(q, p), ExtAction::DeclinePeer(q, p)]);
            }
        }
        actions.extend(self.replicas.iter().map(|&a| ExtAction::GossipSend(a)));
        actions.extend(s.gossip.iter().map(|g| ExtAction::GossipRecv(g.clone())));
        actions.extend(s.base.net.iter().map(|&m| ExtAction::DeliverPush(m)));
        for &p in &self.peers {
            actions.extend(s.anns.iter().map(|&a| ExtAction::AnnounceTo(p, a)));
        }
        if E::ZOMBIES {
            actions.push(ExtAction::Supersede);
            for z in &s.zombies {
                actions.extend(self.keys.iter().map(|&k| ExtAction::ZombieWrite(z.clone(), k)));
                actions.extend(z.pending.iter().map(|&pw| ExtAction::ZombieCommit(z.clone(), pw)));
                actions.push(ExtAction::ZombieFenced(z.clone()));
            }
        }
    }

    /// The successor of `s` by `action`, `None` where it is not enabled.
    pub fn step(&self, s: &ExtState, action: &ExtAction) -> Option<ExtState> {
        let c = self.coordinator;
        match action {
            ExtAction::ClientWrite(k) => self.v2(s, V2Action::ClientWrite(*k)),
            ExtAction::CommitWrite(pw) => {
                let ack = s.acks.iter().find(|a| a.acks(pw))?;
                // CommitWrite as the mirror takes it, with the acking peer
                // holding the write as it did when it acked.
                let rec = Val::Rec(Rec { ep: pw.ep, ver: pw.ver, wid: pw.wid });
                self.v2_witnessed(s, ack.src, |pre| pre.mem[ack.src][pw.key] = rec, V2Action::CommitWrite(*pw))
            }
            ExtAction::Evict(r) => self.evict(s, *r),
            ExtAction::SnapC(p) => {
                if !(s.base.status[c] == Status::Collect && !s.base.seeded[c].contains(p) && s.base.can_seed(*p)) {
                    return None;
                }
                let snap = Snap { src: *p, dst: c, mem: s.base.mem[*p].clone(), know: s.base.known[*p] };
                Some(direct(s, |t| {
                    t.snaps.insert(snap);
                }))
            }
            ExtAction::ReseedC(snap) => {
                if snap.dst != c {
                    return None;
                }
                let mut t =
                    self.v2_witnessed(s, snap.src, |pre| self.witness(pre, snap), V2Action::ReseedC(snap.src))?;
                t.snaps.retain(|x| !(x.src == snap.src && x.dst == c));
                Some(t)
            }
            ExtAction::ReseedPeer(snap) => {
                if snap.dst == c {
                    return None;
                }
                let action = V2Action::ReseedPeer(snap.dst, snap.src);
                let mut t = self.v2_witnessed(s, snap.src, |pre| self.witness(pre, snap), action)?;
                t.snaps.retain(|x| !(x.src == snap.src && x.dst == snap.dst));
                t.declines.retain(|x| !(x.src == snap.src && x.dst == snap.dst));
                Some(t)
            }
            ExtAction::ChooseEpoch => {
                let mut t = self.v2(s, V2Action::ChooseEpoch)?;
                t.anns.insert(Ann { ep: t.base.epoch, round: 1, cinc: s.inc[c] });
                t.snaps.retain(|x| x.dst != c);
                t.ann_round = 1;
                Some(t)
            }
            ExtAction::AnnounceTo(p, a) => {
                if !s.anns.contains(a) || (E::ZOMBIES && a.ep < s.base.known[*p]) {
                    return None;
                }
                Some(direct(s, |t| {
                    t.base.known[*p] = s.base.known[*p].max(a.ep);
                    if a.cinc == s.inc[c] {
                        t.ann_acks.insert(AnnAck { src: *p, ep: a.ep, round: a.round, pinc: s.inc[*p] });
                    }
                }))
            }
            ExtAction::AnnounceAcked(ack) => {
                let enabled = s.base.status[c] == Status::Announce
                    && s.ann_acks.contains(ack)
                    && ack.ep == s.base.epoch
                    && ack.round == s.ann_round
                    && !s.base.seeded[c].contains(&ack.src);
                enabled.then(|| {
                    direct(s, |t| {
                        t.base.seeded[c].insert(ack.src);
                        t.cur_ack[ack.src] = ack.pinc;
                    })
                })
            }
            ExtAction::AnnounceRound => {
                let enabled = s.base.status[c] == Status::Announce
                    && s.base.seeded[c].iter().eq(&self.peers)
                    && s.cur_ack != s.prev_ack;
                enabled.then(|| {
                    direct(s, |t| {
                        t.anns.insert(Ann { ep: s.base.epoch, round: s.ann_round + 1, cinc: s.inc[c] });
                        t.ann_round = s.ann_round + 1;
                        t.base.seeded[c].clear();
                        t.prev_ack = s.cur_ack.clone();
                        t.cur_ack = self.no_acks();
                    })
                })
            }
            ExtAction::FinishRecoveryC => {
                let enabled = s.base.status[c] == Status::Announce
                    && s.base.seeded[c].iter().eq(&self.peers)
                    && s.cur_ack == s.prev_ack;
                enabled.then(|| {
                    direct(s, |t| {
                        t.base.status[c] = Status::Ready;
                        t.ann_round = 0;
                        t.cur_ack = self.no_acks();
                        t.prev_ack = self.no_acks();
                    })
                })
            }
            ExtAction::SnapPeer(q, p) => {
                let asking = q != p && s.base.status[*p] == Status::Recovering && !s.base.seeded[*p].contains(q);
                if !(asking && s.base.can_seed(*q)) {
                    return None;
                }
                let know = if *q == c { s.base.epoch } else { s.base.known[*q] };
                let snap = Snap { src: *q, dst: *p, mem: s.base.mem[*q].clone(), know };
                Some(direct(s, |t| {
                    t.snaps.insert(snap);
                }))
            }
            ExtAction::DeclinePeer(q, p) => {
                let asking = q != p && s.base.status[*p] == Status::Recovering && !s.base.seeded[*p].contains(q);
                if !asking || s.base.can_seed(*q) {
                    return None;
                }
                Some(direct(s, |t| {
                    t.declines.insert(Decline { src: *q, dst: *p });
                }))
            }
            ExtAction::FinishRecoveryPeer(p) => {
                let seeded = &s.base.seeded[*p];
                let answered = |q: Replica| seeded.contains(&q) || s.declines.contains(&Decline { src: q, dst: *p });
                let enabled = s.base.status[*p] == Status::Recovering
                    && !seeded.is_empty()
                    && self.replicas.iter().filter(|&&q| q != *p).all(|&q| answered(q));
                enabled.then(|| {
                    direct(s, |t| {
                        t.base.status[*p] = Status::Ready;
                        t.snaps.retain(|x| x.dst != *p);
                        t.declines.retain(|x| x.dst != *p);
                    })
                })
            }
            ExtAction::GossipSend(a) => {
                (s.base.is_ready(*a) && s.gossip.len() < usize::from(self.max_gossip)).then(|| {
                    direct(s, |t| {
                        for &b in self.replicas.iter().filter(|&&b| b != *a) {
                            t.gossip.insert(GossipMsg { src: *a, dst: b, mem: s.base.mem[*a].clone() });
                        }
                    })
                })
            }
            ExtAction::GossipRecv(g) => {
                // Gossip(src, dst) with src's memory as the message carries
                // it: dst max-merges; src's own merge is undone below.
                let witnessed = |pre: &mut State| {
                    pre.mem[g.src] = g.mem.clone();
                    pre.status[g.src] = Status::Ready;
                };
                self.v2_witnessed(s, g.src, witnessed, V2Action::Gossip(g.src, g.dst))
            }
            ExtAction::DeliverPush(m) => {
                if E::ZOMBIES && m.ep < s.base.known[m.dst] {
                    return None;
                }
                let mut t = self.v2(s, V2Action::DeliverPush(*m))?;
                t.base.net.insert(*m);
                t.acks.insert(Ack { src: m.dst, key: m.key, ep: m.ep, ver: m.ver, wid: m.wid });
                Some(t)
            }
            ExtAction::Supersede => {
                if !(s.base.is_ready(c) && s.supersedes < self.max_zombies) {
                    return None;
                }
                let mut t = self.evict(s, c)?;
                t.zombies.insert(Zombie {
                    epoch: s.base.epoch,
                    ver_ctr: s.base.ver_ctr,
                    pending: s.base.pending.clone(),
                });
                t.supersedes = s.supersedes + 1;
                Some(t)
            }
            ExtAction::ZombieWrite(z, k) => {
                if !(s.zombies.contains(z) && s.base.wid_ctr <= self.max_writes) {
                    return None;
                }
                let pw = PendingW { key: *k, ep: z.epoch, ver: z.ver_ctr + 1, wid: s.base.wid_ctr };
                Some(direct(s, |t| {
                    let mut z2 = z.clone();
                    z2.ver_ctr = pw.ver;
                    z2.pending.insert(pw);
                    t.zombies.remove(z);
                    t.zombies.insert(z2);
                    t.base.net.extend(self.peers.iter().map(|&dst| PushMsg {
                        dst,
                        key: pw.key,
                        ep: pw.ep,
                        ver: pw.ver,
                        wid: pw.wid,
                    }));
                    t.base.wid_ctr = s.base.wid_ctr + 1;
                }))
            }
            ExtAction::ZombieCommit(z, pw) => {
                if !(s.zombies.contains(z) && z.pending.contains(pw) && s.acks.iter().any(|a| a.acks(pw))) {
                    return None;
                }
                // A zombie is no replica: its ack is backed only by the
                // replicas that hold the write now. If none does, an
                // eviction destroyed the last copy before the ack landed.
                let doomed = !self.replicas.iter().any(|&r| s.base.holds(r, pw.write()));
                Some(direct(s, |t| {
                    let mut z2 = z.clone();
                    z2.pending.remove(pw);
                    t.zombies.remove(z);
                    t.zombies.insert(z2);
                    let PendingW { key, ep, ver, wid } = *pw;
                    t.base.acked.insert(AckedW { key, ep, ver, wid, doomed });
                }))
            }
            ExtAction::ZombieFenced(z) => s.zombies.contains(z).then(|| {
                direct(s, |t| {
                    t.zombies.remove(z);
                })
            }),
        }
    }

    /// A HandoffV2 step; the message channels are unchanged.
    fn v2(&self, s: &ExtState, action: V2Action) -> Option<ExtState> {
        let base = self.base.next_state(&s.base, action)?;
        Some(ExtState { base, ..s.clone() })
    }

    /// A HandoffV2 step taken on the state a message witnessed (`witness`
    /// rewrites `src`'s fields to what the message carries), after which
    /// `src`'s real fields are put back.
    fn v2_witnessed(
        &self,
        s: &ExtState,
        src: Replica,
        witness: impl FnOnce(&mut State),
        action: V2Action,
    ) -> Option<ExtState> {
        let mut pre = s.base.clone();
        witness(&mut pre);
        let mut base = self.base.next_state(&pre, action)?;
        // None of these steps changes src's epoch knowledge; Gossip's merge
        // into src is the half of the symmetric spec step a one-way
        // message does not take.
        base.mem[src] = s.base.mem[src].clone();
        base.status[src] = s.base.status[src];
        if src == self.coordinator {
            base.epoch = s.base.epoch;
        } else {
            base.known[src] = s.base.known[src];
        }
        Some(ExtState { base, ..s.clone() })
    }

    /// A snapshot's source as the snapshot saw it: its memory, its epoch
    /// knowledge (`SrcKnow`), and able to seed.
    fn witness(&self, pre: &mut State, snap: &Snap) {
        pre.mem[snap.src] = snap.mem.clone();
        pre.status[snap.src] = Status::Ready;
        if snap.src == self.coordinator {
            pre.epoch = snap.know;
        } else {
            pre.known[snap.src] = snap.know;
        }
    }

    /// `EvictA(r)`: Evict, replies to r's dead incarnation dropped, and a
    /// new coordinator incarnation without announce state.
    fn evict(&self, s: &ExtState, r: Replica) -> Option<ExtState> {
        let mut t = self.v2(s, V2Action::Evict(r))?;
        t.snaps.retain(|x| x.dst != r);
        t.declines.retain(|x| x.dst != r);
        t.inc[r] = s.inc[r] + 1;
        if r == self.coordinator {
            t.ann_acks.clear();
            t.ann_round = 0;
            t.cur_ack = self.no_acks();
            t.prev_ack = self.no_acks();
        }
        Some(t)
    }

    /// `[p \in Peers |-> 0]`
    pub(super) fn no_acks(&self) -> Func<u8> {
        Func::new(&self.peers, |_| 0)
    }
}

/// A step written here (not a HandoffV2 step): it changes no memory of a
/// ready replica, so it never violates `NoServedRegressionStep`.
fn direct(s: &ExtState, change: impl FnOnce(&mut ExtState)) -> ExtState {
    let mut t = s.clone();
    t.base.served_regression = false;
    change(&mut t);
    t
}
