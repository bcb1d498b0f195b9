//! HandoffCond's actions, named and ordered as in `NextC`: HandoffReads'
//! (that mirror's steps, with what they do to the module's variables;
//! `ConfirmC` in the place of `ReadConfirm`), then the conditional writes,
//! `Expire` and `Tick`.

use std::fmt::{self, Display};

use super::model::{HandoffCond, Mutation};
use super::state::{ABSENT, CondState, CondW, ExpIssued, Issued};
use crate::mirror::handoff::{Key, Replica, Val};
use crate::mirror::handoff_ext::Zombie;
use crate::mirror::handoff_reads::{Read, ReadsAction, stale};
use crate::mirror::handoff_scale::ScaleAction;

/// One instance of a HandoffCond action, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum CondAction {
    /// `ClientWriteC(k, t)`
    ClientWrite(Key, u8),
    /// A HandoffReads action as its `...C` wrapper (neither a write nor a
    /// confirmation nor a read's answer, which have their own).
    Reads(ReadsAction),
    /// `ZombieWriteC(z, k, t)`
    ZombieWrite(Zombie, Key, u8),
    ConfirmC(Replica, u8),
    ReadFinishC(Read),
    CondStart(Key, u8, u8, u8),
    CondIssue(CondW),
    CondFail(CondW),
    Expire(Key),
    Tick,
}

impl CondAction {
    /// The spec's action names, in `NextC` order, for the coverage counts:
    /// HandoffReads' in its order (`ReadsAction::NAMES`, renamed), then the
    /// module's own.
    pub const NAMES: [&'static str; 34] = [
        "ClientWriteC",
        "CommitWriteC",
        "EvictC",
        "ChunkCC",
        "FinishRecoveryPeerC",
        "ReseedChunkCC",
        "ReseedChunkPeerC",
        "ChooseEpochC",
        "AnnounceAckedC",
        "AnnounceRoundC",
        "FinishRecoveryCC",
        "ChunkPeerC",
        "DeclinePeerC",
        "DigestSendC",
        "DigestRecvC",
        "GossipRecvC",
        "RaiseFloorC",
        "DeliverPushC",
        "AnnounceToC",
        "SupersedeC",
        "ZombieWriteC",
        "ZombieCommitC",
        "ZombieFencedC",
        "ReadStartC",
        "ConfirmC",
        "ReadFinishC",
        "DeclineArrivesC",
        "LateReseedC",
        "LateCollectC",
        "CondStart",
        "CondIssue",
        "CondFail",
        "Expire",
        "Tick",
    ];

    /// The position of this action's name in [`CondAction::NAMES`]: a
    /// HandoffReads action keeps its position in `ReadsAction::NAMES`.
    pub fn kind(&self) -> usize {
        match self {
            CondAction::ClientWrite(..) => 0,
            CondAction::Reads(a) => a.kind(),
            CondAction::ZombieWrite(..) => 20,
            CondAction::ConfirmC(..) => 24,
            CondAction::ReadFinishC(_) => 25,
            CondAction::CondStart(..) => 29,
            CondAction::CondIssue(_) => 30,
            CondAction::CondFail(_) => 31,
            CondAction::Expire(_) => 32,
            CondAction::Tick => 33,
        }
    }
}

impl Display for CondAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = CondAction::NAMES[self.kind()];
        match self {
            CondAction::ClientWrite(k, t) => write!(f, "{name}({k}, {t})"),
            CondAction::Reads(a) => {
                // HandoffReads' action with its parameters, under the name
                // of its wrapper here.
                let shown = a.to_string();
                f.write_str(name)?;
                f.write_str(shown.find('(').map_or("", |i| &shown[i..]))
            }
            CondAction::ZombieWrite(z, k, t) => write!(f, "{name}({z}, {k}, {t})"),
            CondAction::ConfirmC(p, e) => write!(f, "{name}({p}, {e})"),
            CondAction::ReadFinishC(r) => write!(f, "{name}({r})"),
            CondAction::CondStart(k, e, c, t) => write!(f, "{name}({k}, {e}, {c}, {t})"),
            CondAction::CondIssue(x) | CondAction::CondFail(x) => write!(f, "{name}({x})"),
            CondAction::Expire(k) => write!(f, "{name}({k})"),
            CondAction::Tick => f.write_str(name),
        }
    }
}

impl HandoffCond {
    /// The disjuncts of `NextC` with quantifiers unrolled, in a fixed order.
    pub fn next(&self, s: &CondState, actions: &mut Vec<CondAction>) {
        let mut reads = Vec::new();
        self.reads.next(&s.reads, &mut reads);
        for a in reads {
            actions.extend(self.lift(a));
        }
        let ttls = || std::iter::once(0).chain(self.ttls.iter().copied());
        let zombie = self.reads.scale().zombie();
        for &k in zombie.keys() {
            for e in 1..=self.max_epoch {
                for c in std::iter::once(ABSENT).chain(1..=self.max_writes) {
                    actions.extend(ttls().map(|t| CondAction::CondStart(k, e, c, t)));
                }
            }
        }
        actions.extend(s.conds.iter().map(|x| CondAction::CondIssue(x.clone())));
        actions.extend(s.conds.iter().map(|x| CondAction::CondFail(x.clone())));
        actions.extend(zombie.keys().iter().map(|&k| CondAction::Expire(k)));
        actions.push(CondAction::Tick);
    }

    /// The instances of HandoffCond's actions that restate HandoffReads'
    /// action `a` (a write, with each time to live it may carry).
    pub fn lift(&self, a: ReadsAction) -> Vec<CondAction> {
        let ttls = || std::iter::once(0).chain(self.ttls.iter().copied());
        match a {
            ReadsAction::Scale(ScaleAction::ClientWrite(k)) => ttls().map(|t| CondAction::ClientWrite(k, t)).collect(),
            ReadsAction::Scale(ScaleAction::ZombieWrite(z, k)) => {
                ttls().map(|t| CondAction::ZombieWrite(z.clone(), k, t)).collect()
            }
            ReadsAction::ReadConfirm(p, e) => vec![CondAction::ConfirmC(p, e)],
            ReadsAction::ReadFinish(r) => vec![CondAction::ReadFinishC(r)],
            other => vec![CondAction::Reads(other)],
        }
    }

    /// The successor of `s` by `action`, `None` where it is not enabled.
    pub fn step(&self, s: &CondState, action: &CondAction) -> Option<CondState> {
        let base = &s.reads.scale.ext.base;
        let c = self.reads.scale().zombie().coordinator();
        match action {
            CondAction::ClientWrite(k, t) => {
                let wid = base.wid_ctr;
                if !self.ttls_for(wid).contains(t) {
                    return None;
                }
                let reads = self.reads.step(&s.reads, &ReadsAction::Scale(ScaleAction::ClientWrite(*k)))?;
                let mut u = CondState { reads, ..s.clone() };
                self.set_exp_at(&mut u, wid, *t);
                Some(u)
            }
            CondAction::ZombieWrite(z, k, t) => {
                let wid = base.wid_ctr;
                if !self.ttls_for(wid).contains(t) {
                    return None;
                }
                let reads = self.reads.step(&s.reads, &ReadsAction::Scale(ScaleAction::ZombieWrite(z.clone(), *k)))?;
                let mut u = CondState { reads, ..s.clone() };
                self.set_exp_at(&mut u, wid, *t);
                Some(u)
            }
            CondAction::Reads(a) => {
                let reads = self.reads.step(&s.reads, a)?;
                let mut u = CondState { reads, ..s.clone() };
                match a {
                    ReadsAction::Scale(ScaleAction::Evict(r)) if *r == c => u.conds.retain(|x| x.ep != base.epoch),
                    ReadsAction::Scale(ScaleAction::ZombieFenced(z)) => u.conds.retain(|x| x.ep != z.epoch),
                    _ => {}
                }
                Some(u)
            }
            CondAction::ConfirmC(p, e) => {
                let waiting = s.reads.reads.iter().any(|r| r.ep == *e && !r.conf)
                    || s.conds.iter().any(|x| x.ep == *e && !x.conf);
                let enabled = base.is_ready(*p) && s.reads.fenced[*p] == 0 && base.known[*p] == *e && waiting;
                enabled.then(|| {
                    self.with(s, |u| {
                        u.reads.reads =
                            s.reads.reads.iter().map(|r| Read { conf: r.conf || r.ep == *e, ..r.clone() }).collect();
                        u.conds = s.conds.iter().map(|x| CondW { conf: x.conf || x.ep == *e, ..x.clone() }).collect();
                    })
                })
            }
            CondAction::ReadFinishC(r) => {
                let v = self.reads.inst_mem(&s.reads.scale, &s.reads.zmem, r.ep).map(|m| m[r.key]);
                let reads = self.reads.step(&s.reads, &ReadsAction::ReadFinish(r.clone()))?;
                let mut u = CondState { reads, ..s.clone() };
                u.served_expired = s.served_expired || v.is_some_and(|v| s.expired(self.visible(s, v)));
                Some(u)
            }
            CondAction::CondStart(k, e, cond, t) => {
                let wid = base.wid_ctr;
                let enabled = s.cond_ctr < self.max_conds
                    && self.reads.alive(&s.reads, *e)
                    && wid <= self.max_writes
                    && self.conds_for(wid, *cond)
                    && self.ttls_for(wid).contains(t);
                enabled.then(|| {
                    self.with(s, |u| {
                        let seen = base.acked.iter().filter(|w| w.key == *k).map(|w| w.wid).collect();
                        u.conds.insert(CondW { key: *k, ep: *e, wid, cond: *cond, ttl: *t, seen, conf: false });
                        u.cond_ctr = s.cond_ctr + 1;
                        u.reads.scale.ext.base.wid_ctr = wid + 1;
                    })
                })
            }
            CondAction::CondIssue(x) => {
                let v = self.evaluable(s, x, self.mutation != Some(Mutation::CondIgnoresPending))?;
                if !self.matches(s, x.cond, v) {
                    return None;
                }
                // The write is issued as the instance issues any write:
                // HandoffReads' step for it, with x's write id.
                let issue = if self.reads.serves(&s.reads.scale, x.ep) {
                    ScaleAction::ClientWrite(x.key)
                } else {
                    let z = s.reads.scale.ext.zombies.iter().find(|z| z.epoch == x.ep)?;
                    ScaleAction::ZombieWrite(z.clone(), x.key)
                };
                let mut from = s.reads.clone();
                from.scale.ext.base.wid_ctr = x.wid;
                let mut reads = self.reads.step(&from, &ReadsAction::Scale(issue))?;
                reads.scale.ext.base.wid_ctr = base.wid_ctr;
                let mut u = CondState { reads, ..s.clone() };
                self.set_exp_at(&mut u, x.wid, x.ttl);
                u.conds.remove(x);
                u.cond_issued.insert(Issued { wid: x.wid, val: v, seen: x.seen.clone() });
                u.served_expired = s.served_expired || s.expired(self.visible(s, v));
                Some(u)
            }
            CondAction::CondFail(x) => {
                let confirmed = x.conf || self.mutation == Some(Mutation::CondUnconfirmed);
                if !confirmed {
                    return None;
                }
                let v = self.evaluable(s, x, true)?;
                if self.matches(s, x.cond, v) {
                    return None;
                }
                Some(self.with(s, |u| {
                    u.conds.remove(x);
                    let read = Read { key: x.key, ep: x.ep, seen: x.seen.clone(), conf: x.conf };
                    u.bad_cond = s.bad_cond || stale(&base.acked, &self.reads.scale().ops().deletes, &read, v);
                    u.served_expired = s.served_expired || s.expired(self.visible(s, v));
                }))
            }
            CondAction::Expire(k) => {
                let v = base.mem[c][*k];
                let Val::Rec(rec) = v else { return None };
                let due = s.expired(v) || self.mutation == Some(Mutation::ExpireUnexpired);
                let enabled = base.is_ready(c)
                    && self.reads.scale().ops().deletes.contains(&base.wid_ctr)
                    && !self.reads.scale().ops().is_tomb(v)
                    && due
                    && !base.pending.iter().any(|pw| pw.key == *k);
                if !enabled {
                    return None;
                }
                let reads = self.reads.step(&s.reads, &ReadsAction::Scale(ScaleAction::ClientWrite(*k)))?;
                let mut u = CondState { reads, ..s.clone() };
                u.exp_issued.insert(ExpIssued { wid: base.wid_ctr, val: rec, at: s.now });
                Some(u)
            }
            CondAction::Tick => (s.now < self.max_time).then(|| self.with(s, |u| u.now = s.now + 1)),
        }
    }

    /// A step that leaves HandoffReads' variables as they are: `change`
    /// applied to `s`, the step marker clear (no memory changed).
    fn with(&self, s: &CondState, change: impl FnOnce(&mut CondState)) -> CondState {
        let mut u = s.clone();
        u.reads.scale.ext.base.served_regression = false;
        change(&mut u);
        u
    }

    /// `expAt[w] := ExpiryOf(t)`
    fn set_exp_at(&self, u: &mut CondState, wid: u8, t: u8) {
        let at = if t == 0 { 0 } else { u.now + t };
        if let Some(slot) = usize::from(wid).checked_sub(1).and_then(|i| u.exp_at.get_mut(i)) {
            *slot = at;
        }
    }

    /// `TTLsFor(w)`
    fn ttls_for(&self, wid: u8) -> Vec<u8> {
        let mut ttls = vec![0];
        if !self.reads.scale().ops().deletes.contains(&wid) {
            ttls.extend(self.ttls.iter().copied());
        }
        ttls
    }

    /// `c \in CondsFor(w)`
    fn conds_for(&self, wid: u8, cond: u8) -> bool {
        let is_delete = self.reads.scale().ops().deletes.contains(&wid);
        (cond == ABSENT && !is_delete) || (1..wid).contains(&cond)
    }

    /// `Visible(v)` (the mutation `serve-expired` sees expired records).
    fn visible(&self, s: &CondState, v: Val) -> Val {
        if s.expired(v) && self.mutation != Some(Mutation::ServeExpired) { self.reads.scale().ops().no_val } else { v }
    }

    /// `Matches(c, v)`
    fn matches(&self, s: &CondState, cond: u8, v: Val) -> bool {
        let u = self.visible(s, v);
        let absent = self.reads.scale().ops().is_tomb(u) || matches!(u, Val::NoVal(_));
        match u {
            _ if cond == ABSENT => absent,
            Val::Rec(r) => !absent && r.wid == cond,
            Val::NoVal(_) => false,
        }
    }

    /// The record conditional write `x` is evaluated against, if it can be
    /// now: `x` waits at an instance that is alive and (unless `quiet` is
    /// false) has nothing pending on its key (`InstPending`).
    fn evaluable(&self, s: &CondState, x: &CondW, quiet: bool) -> Option<Val> {
        if !(s.conds.contains(x) && self.reads.alive(&s.reads, x.ep)) {
            return None;
        }
        let scale = &s.reads.scale;
        let pending = if self.reads.serves(scale, x.ep) {
            &scale.ext.base.pending
        } else {
            &scale.ext.zombies.iter().find(|z| z.epoch == x.ep)?.pending
        };
        if quiet && pending.iter().any(|pw| pw.key == x.key) {
            return None;
        }
        self.reads.inst_mem(scale, &s.reads.zmem, x.ep).map(|m| m[x.key])
    }
}
