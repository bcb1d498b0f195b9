//! HandoffReads' actions, named and ordered as in `NextR`: HandoffScale's
//! (the HandoffScale mirror's steps, with what they do to the module's
//! variables) and the three read actions.

use std::collections::BTreeSet;
use std::fmt::{self, Display};

use super::state::{Read, ReadsState, ZombieMem};
use super::{HandoffReads, Mutation};
use crate::mirror::handoff::{AckedW, Func, Key, Rec, Replica, Val, WriteSet, merge_val, wins};
use crate::mirror::handoff_scale::{ScaleAction, ScaleState};

/// One instance of a HandoffReads action, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadsAction {
    /// A HandoffScale action, as its `...R` wrapper.
    Scale(ScaleAction),
    ReadStart(Key, u8),
    ReadConfirm(Replica, u8),
    ReadFinish(Read),
}

impl ReadsAction {
    /// The spec's action names, in `NextR` order, for the coverage counts:
    /// HandoffScale's in its order (`ScaleAction::NAMES`), then the reads'.
    pub const NAMES: [&'static str; 26] = [
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
    ];

    /// The position of this action's name in [`ReadsAction::NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            ReadsAction::Scale(a) => a.kind(),
            ReadsAction::ReadStart(..) => 23,
            ReadsAction::ReadConfirm(..) => 24,
            ReadsAction::ReadFinish(_) => 25,
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
        }
    }
}

impl HandoffReads {
    /// The disjuncts of `NextR` with quantifiers unrolled, in a fixed order.
    pub(super) fn next(&self, s: &ReadsState, actions: &mut Vec<ReadsAction>) {
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
    }

    /// The successor of `s` by `action`, `None` where it is not enabled.
    pub(super) fn step(&self, s: &ReadsState, action: &ReadsAction) -> Option<ReadsState> {
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
                let mut t = ReadsState { scale, ..s.clone() };
                match a {
                    ScaleAction::Evict(r) if *r == c => t.reads.retain(|x| x.ep != base.epoch),
                    ScaleAction::Evict(p) => t.fenced[*p] = 0,
                    ScaleAction::ChunkC(p, _) => t.fenced[*p] = s.scale.ext.inc[c],
                    ScaleAction::DeclinePeer(q, p) if *q == c => t.fenced[*p] = s.scale.ext.inc[c],
                    ScaleAction::ReseedChunkPeer(ch) if ch.src == c && ch.inc >= s.fenced[ch.dst] => {
                        t.fenced[ch.dst] = 0
                    }
                    ScaleAction::AnnounceTo(p, ann) if ann.cinc >= s.fenced[*p] => t.fenced[*p] = 0,
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
    fn serves(&self, s: &ScaleState, e: u8) -> bool {
        s.ext.base.is_ready(self.scale.zombie().coordinator()) && s.ext.base.epoch == e
    }

    /// `Alive(e)`
    fn alive(&self, s: &ReadsState, e: u8) -> bool {
        self.serves(&s.scale, e) || s.zmem.iter().any(|z| z.epoch == e)
    }

    /// `InstMem(e)`; `None` unless `Alive(e)`.
    fn inst_mem<'a>(
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
