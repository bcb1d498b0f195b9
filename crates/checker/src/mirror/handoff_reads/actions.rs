//! HandoffReads' actions, named and ordered as in `NextR`: HandoffScale's
//! (the HandoffScale mirror's steps, with what they do to the module's
//! variables), the three read actions, `DeclineArrivesR`, and the late
//! requests (`LateReseedR`, `LateCollectR`).

use std::collections::BTreeSet;
use std::fmt::{self, Display};

use super::model::{HandoffReads, Mutation};
use super::state::{Decl, Read, ReadsState, ZombieMem};
use crate::mirror::handoff::{AckedW, Func, Key, Rec, Replica, Status, Val, WriteSet, merge_val, wins};
use crate::mirror::handoff_scale::{ScaleAction, ScaleState};

/// One instance of a HandoffReads action, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadsAction {
    /// A HandoffScale action, as its `...R` wrapper.
    Scale(ScaleAction),
    ReadStart(Key, u8),
    ReadConfirm(Replica, u8),
    ReadFinish(Read),
    DeclineArrivesR(Decl),
    /// `LateReseedR(p, i)`: a late reseed request of peer p's incarnation i.
    LateReseedR(Replica, u8),
    /// `LateCollectR(p, c)`: a late collect of coordinator incarnation c.
    LateCollectR(Replica, u8),
}

impl ReadsAction {
    /// The spec's action names, in `NextR` order, for the coverage counts:
    /// HandoffScale's in its order (`ScaleAction::NAMES`), then the reads'.
    pub const NAMES: [&'static str; 29] = [
        "ClientWriteR",
        "CommitWriteR",
        "EvictR",
        "ChunkCR",
        "FinishRecoveryPeerR",
        "ReseedChunkCR",
        "ReseedChunkPeerR",
        "ChooseEpochR",
        "AnnounceAckedR",
        "AnnounceRoundR",
        "FinishRecoveryCR",
        "ChunkPeerR",
        "DeclinePeerR",
        "DigestSendR",
        "DigestRecvR",
        "GossipRecvR",
        "RaiseFloorR",
        "DeliverPushR",
        "AnnounceToR",
        "SupersedeR",
        "ZombieWriteR",
        "ZombieCommitR",
        "ZombieFencedR",
        "ReadStart",
        "ReadConfirm",
        "ReadFinish",
        "DeclineArrivesR",
        "LateReseedR",
        "LateCollectR",
    ];

    /// The position of this action's name in [`ReadsAction::NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            ReadsAction::Scale(a) => a.kind(),
            ReadsAction::ReadStart(..) => 23,
            ReadsAction::ReadConfirm(..) => 24,
            ReadsAction::ReadFinish(_) => 25,
            ReadsAction::DeclineArrivesR(_) => 26,
            ReadsAction::LateReseedR(..) => 27,
            ReadsAction::LateCollectR(..) => 28,
        }
    }
}

impl Display for ReadsAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = ReadsAction::NAMES[self.kind()];
        match self {
            ReadsAction::Scale(a) => {
                // HandoffScale's action with its parameters, under the name
                // of its wrapper here.
                let shown = a.to_string();
                f.write_str(name)?;
                f.write_str(shown.find('(').map_or("", |i| &shown[i..]))
            }
            ReadsAction::ReadStart(k, e) => write!(f, "{name}({k}, {e})"),
            ReadsAction::ReadConfirm(p, e) => write!(f, "{name}({p}, {e})"),
            ReadsAction::ReadFinish(r) => write!(f, "{name}({r})"),
            ReadsAction::DeclineArrivesR(d) => write!(f, "{name}({d})"),
            ReadsAction::LateReseedR(p, i) | ReadsAction::LateCollectR(p, i) => write!(f, "{name}({p}, {i})"),
        }
    }
}

impl HandoffReads {
    /// The disjuncts of `NextR` with quantifiers unrolled, in a fixed order.
    pub fn next(&self, s: &ReadsState, actions: &mut Vec<ReadsAction>) {
        let mut scale = Vec::new();
        self.scale.next(&s.scale, &mut scale);
        actions.extend(scale.into_iter().map(ReadsAction::Scale));
        let zombie = self.scale.zombie();
        for &k in zombie.keys() {
            actions.extend((1..=self.max_epoch).map(|e| ReadsAction::ReadStart(k, e)));
        }
        for &p in zombie.peers() {
            actions.extend((1..=self.max_epoch).map(|e| ReadsAction::ReadConfirm(p, e)));
        }
        actions.extend(s.reads.iter().map(|r| ReadsAction::ReadFinish(r.clone())));
        actions.extend(s.dsent.iter().map(|&d| ReadsAction::DeclineArrivesR(d)));
        // `2..MaxEvicts + 1`, less the incarnations above the current one.
        for &p in zombie.peers() {
            actions.extend((2..=s.scale.ext.inc[p]).map(|i| ReadsAction::LateReseedR(p, i)));
        }
        for &p in zombie.peers() {
            let c = zombie.coordinator();
            actions.extend((2..=s.scale.ext.inc[c]).map(|inc| ReadsAction::LateCollectR(p, inc)));
        }
    }

    /// The successor of `s` by `action`, `None` where it is not enabled.
    pub fn step(&self, s: &ReadsState, action: &ReadsAction) -> Option<ReadsState> {
        let c = self.scale.zombie().coordinator();
        let base = &s.scale.ext.base;
        match action {
            ReadsAction::Scale(a) => {
                if let ScaleAction::DeliverPush(m) = a
                    && s.fenced[m.dst] != 0
                {
                    return None;
                }
                let scale = self.scale.step(&s.scale, a)?;
                // A peer that finishes on the coordinator's decline got it
                // (a peer: HandoffScale's step is enabled).
                if let ScaleAction::FinishRecoveryPeer(p) = a
                    && !(base.seeded[*p].contains(&c) || s.decl_recv[*p])
                {
                    return None;
                }
                let mut t = ReadsState { scale, ..s.clone() };
                match a {
                    ScaleAction::Evict(r) => {
                        if *r == c {
                            t.reads.retain(|x| x.ep != base.epoch);
                        } else {
                            t.fenced[*r] = 0;
                            t.newest[*r] = 0;
                            t.decl_recv[*r] = false;
                        }
                        t.dsent.retain(|d| d.dst != *r);
                    }
                    ScaleAction::ChunkC(p, _) => {
                        t.fenced[*p] = s.scale.ext.inc[c];
                        t.newest[*p] = s.scale.ext.inc[c];
                    }
                    ScaleAction::FinishRecoveryPeer(p) => {
                        t.dsent.retain(|d| d.dst != *p);
                        t.decl_recv[*p] = false;
                    }
                    ScaleAction::DeclinePeer(q, p) if *q == c => {
                        t.dsent.insert(Decl { dst: *p, inc: s.scale.ext.inc[c] });
                    }
                    ScaleAction::ReseedChunkPeer(ch) if ch.src == c => {
                        if ch.inc >= s.fenced[ch.dst] {
                            t.fenced[ch.dst] = 0;
                        }
                        t.newest[ch.dst] = s.newest[ch.dst].max(ch.inc);
                        // Seeded by the coordinator: its decline is moot.
                        if t.scale.ext.base.seeded[ch.dst].contains(&c) {
                            t.decl_recv[ch.dst] = false;
                        }
                    }
                    ScaleAction::AnnounceTo(p, ann) => {
                        if ann.cinc >= s.fenced[*p] {
                            t.fenced[*p] = 0;
                        }
                        t.newest[*p] = s.newest[*p].max(ann.cinc);
                    }
                    ScaleAction::Supersede => {
                        t.zmem.insert(ZombieMem { epoch: base.epoch, mem: base.mem[c].clone() });
                    }
                    ScaleAction::ZombieCommit(z, pw) => {
                        let rec = Val::Rec(Rec { ep: pw.ep, ver: pw.ver, wid: pw.wid });
                        t.zmem = s
                            .zmem
                            .iter()
                            .map(|y| {
                                let mut y = y.clone();
                                if y.epoch == z.epoch {
                                    y.mem[pw.key] = merge_val(y.mem[pw.key], rec);
                                }
                                y
                            })
                            .collect();
                    }
                    ScaleAction::ZombieFenced(z) => {
                        t.zmem.retain(|y| y.epoch != z.epoch);
                        t.reads.retain(|x| x.ep != z.epoch);
                    }
                    _ => {}
                }
                if self.mutation == Some(Mutation::NoCollectFence) {
                    t.fenced = s.fenced.clone();
                }
                Some(t)
            }
            ReadsAction::ReadStart(k, e) => {
                if !(s.read_ctr < self.max_reads && self.alive(s, *e)) {
                    return None;
                }
                let seen = base.acked.iter().filter(|w| w.key == *k).map(|w| w.wid).collect();
                Some(self.with(s, |t| {
                    t.reads.insert(Read { key: *k, ep: *e, seen, conf: false });
                    t.read_ctr = s.read_ctr + 1;
                }))
            }
            ReadsAction::ReadConfirm(p, e) => {
                let enabled = base.is_ready(*p)
                    && s.fenced[*p] == 0
                    && base.known[*p] == *e
                    && s.reads.iter().any(|r| r.ep == *e && !r.conf);
                enabled.then(|| {
                    self.with(s, |t| {
                        t.reads = s.reads.iter().map(|r| Read { conf: r.conf || r.ep == *e, ..r.clone() }).collect();
                    })
                })
            }
            ReadsAction::DeclineArrivesR(d) => {
                if !(s.dsent.contains(d) && base.status[d.dst] == Status::Recovering) {
                    return None;
                }
                Some(self.with(s, |t| {
                    // Seeded by the coordinator, the peer ignores its decline
                    // (but for the fence).
                    if !base.seeded[d.dst].contains(&c) {
                        t.decl_recv[d.dst] = true;
                    }
                    let fences = !matches!(self.mutation, Some(Mutation::NoCollectFence | Mutation::NoDeclineFence));
                    if d.inc > s.newest[d.dst] && fences {
                        t.fenced[d.dst] = d.inc;
                        t.newest[d.dst] = d.inc;
                    }
                }))
            }
            ReadsAction::LateReseedR(p, i) => {
                let current = s.scale.ext.inc[*p];
                let late = *i < current || base.status[*p] != Status::Recovering || base.seeded[*p].contains(&c);
                if !(*i <= current && late) {
                    return None;
                }
                let recovering = base.status[*p] == Status::Recovering;
                let declines = *i == current && recovering && !base.can_seed(c);
                Some(self.with(s, |t| {
                    t.scale.reg[*p] = s.scale.reg[*p].max(*i);
                    if declines {
                        t.dsent.insert(Decl { dst: *p, inc: s.scale.ext.inc[c] });
                    }
                }))
            }
            ReadsAction::LateCollectR(p, inc) => {
                let current = s.scale.ext.inc[c];
                let late = *inc < current || base.status[c] != Status::Collect;
                let enabled = base.is_ready(*p) && *inc <= current && late && *inc > s.newest[*p];
                enabled.then(|| {
                    self.with(s, |t| {
                        if self.mutation != Some(Mutation::NoCollectFence) {
                            t.fenced[*p] = *inc;
                            t.newest[*p] = *inc;
                        }
                    })
                })
            }
            ReadsAction::ReadFinish(r) => {
                let confirmed = r.conf || self.mutation == Some(Mutation::ServeReadsUnconfirmed);
                if !(s.reads.contains(r) && confirmed) {
                    return None;
                }
                let v = self.inst_mem(&s.scale, &s.zmem, r.ep)?[r.key];
                Some(self.with(s, |t| {
                    t.reads.remove(r);
                    t.bad_read = s.bad_read || self.stale(&s.scale, r, v);
                }))
            }
        }
    }

    /// A read step: `change` applied to `s`; HandoffScale's variables are
    /// unchanged (the step marker clear: the memories did not change).
    fn with(&self, s: &ReadsState, change: impl FnOnce(&mut ReadsState)) -> ReadsState {
        let mut t = s.clone();
        t.scale.ext.base.served_regression = false;
        change(&mut t);
        t
    }

    /// `Serves(e)`
    pub(crate) fn serves(&self, s: &ScaleState, e: u8) -> bool {
        s.ext.base.is_ready(self.scale.zombie().coordinator()) && s.ext.base.epoch == e
    }

    /// `Alive(e)`
    pub(crate) fn alive(&self, s: &ReadsState, e: u8) -> bool {
        self.serves(&s.scale, e) || s.zmem.iter().any(|z| z.epoch == e)
    }

    /// `InstMem(e)`; `None` unless `Alive(e)`.
    pub(crate) fn inst_mem<'a>(
        &self,
        s: &'a ScaleState,
        zmem: &'a crate::mirror::handoff::Msgs<ZombieMem>,
        e: u8,
    ) -> Option<&'a Func<Val>> {
        if self.serves(s, e) {
            return Some(&s.ext.base.mem[self.scale.zombie().coordinator()]);
        }
        zmem.iter().find(|z| z.epoch == e).map(|z| &z.mem)
    }

    /// `Stale(r, v)`
    fn stale(&self, s: &ScaleState, r: &Read, v: Val) -> bool {
        stale(&s.ext.base.acked, &self.scale.ops().deletes, r, v)
    }
}

/// `Stale(r, v)` over `acked` and `Deletes`: value `v` is older than read
/// `r` may return. One rule for the mirror and the implementation model.
pub fn stale(acked: &WriteSet<AckedW>, deletes: &BTreeSet<u8>, r: &Read, v: Val) -> bool {
    let is_delete = |wid: u8| deletes.contains(&wid);
    let must_see = acked.iter().filter(|w| w.key == r.key && r.seen.contains(&w.wid) && !w.doomed);
    let seen_tombs = || acked.iter().filter(|t| t.key == r.key && r.seen.contains(&t.wid) && is_delete(t.wid));
    let mut stale = must_see.filter(|w| match v {
        Val::NoVal(_) => !is_delete(w.wid) && !seen_tombs().any(|t| wins(t.write().rec, w.write().rec)),
        Val::Rec(held) => wins(w.write().rec, held),
    });
    stale.next().is_some()
}
