//! HandoffRoll's actions: HandoffCond's, in `NextC`'s order, each as its
//! `...Ro` wrapper. Four of them do more than leave `acksBy` and `zreg` as
//! they are: `DeliverPushRo` records the ack with its incarnation,
//! `CommitWriteRo` and `ZombieCommitRo` commit only on an ack of an
//! incarnation not seen replaced (`AckedByLive`), and `EvictRo` and
//! `SupersedeRo` wait for every replica under a rolling restart
//! (`RollWaits`); `SupersedeRo` also keeps the zombie's `reg`, which
//! `ZombieFencedRo` drops.

use std::fmt::{self, Display};

use super::model::{HandoffRoll, Mutation};
use super::state::{AckBy, RollState, ZombieReg};
use crate::mirror::handoff::{Func, PendingW};
use crate::mirror::handoff_cond::CondAction;
use crate::mirror::handoff_reads::ReadsAction;
use crate::mirror::handoff_scale::ScaleAction;

/// One instance of a HandoffRoll action: the HandoffCond action it wraps.
#[derive(Clone, Debug, PartialEq)]
pub struct RollAction(pub CondAction);

impl RollAction {
    /// The spec's action names, in `NextRo` order (`CondAction::NAMES`'s,
    /// each wrapper renamed).
    pub const NAMES: [&'static str; 34] = [
        "ClientWriteRo",
        "CommitWriteRo",
        "EvictRo",
        "ChunkCRo",
        "FinishRecoveryPeerRo",
        "ReseedChunkCRo",
        "ReseedChunkPeerRo",
        "ChooseEpochRo",
        "AnnounceAckedRo",
        "AnnounceRoundRo",
        "FinishRecoveryCRo",
        "ChunkPeerRo",
        "DeclinePeerRo",
        "DigestSendRo",
        "DigestRecvRo",
        "GossipRecvRo",
        "RaiseFloorRo",
        "DeliverPushRo",
        "AnnounceToRo",
        "SupersedeRo",
        "ZombieWriteRo",
        "ZombieCommitRo",
        "ZombieFencedRo",
        "ReadStartRo",
        "ConfirmRo",
        "ReadFinishRo",
        "DeclineArrivesRo",
        "LateReseedRo",
        "LateCollectRo",
        "CondStartRo",
        "CondIssueRo",
        "CondFailRo",
        "ExpireRo",
        "TickRo",
    ];

    /// The position of this action's name in [`RollAction::NAMES`]: that
    /// of the HandoffCond action it wraps.
    pub fn kind(&self) -> usize {
        self.0.kind()
    }

    /// HandoffScale's action this one wraps, if it is one.
    fn scale(&self) -> Option<&ScaleAction> {
        match &self.0 {
            CondAction::Reads(ReadsAction::Scale(a)) => Some(a),
            _ => None,
        }
    }
}

impl Display for RollAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // HandoffCond's action with its parameters, under its wrapper's name.
        let shown = self.0.to_string();
        f.write_str(RollAction::NAMES[self.kind()])?;
        f.write_str(shown.find('(').map_or("", |i| &shown[i..]))
    }
}

impl HandoffRoll {
    /// The disjuncts of `NextRo`: `NextC`'s, wrapped.
    pub fn next(&self, s: &RollState, actions: &mut Vec<RollAction>) {
        let mut cond = Vec::new();
        self.cond.next(&s.cond, &mut cond);
        actions.extend(cond.into_iter().map(RollAction));
    }

    /// `AckedByLive(pw, rg)`; with `any_incarnation`, an ack of pw from
    /// whichever incarnation (a mutation).
    fn acked_by_live(&self, s: &RollState, pw: &PendingW, rg: &Func<u8>, any_incarnation: bool) -> bool {
        s.acks_by.iter().any(|a| {
            a.key == pw.key
                && a.ep == pw.ep
                && a.ver == pw.ver
                && a.wid == pw.wid
                && (a.pinc >= rg[a.src] || any_incarnation)
        })
    }

    /// `RollWaits`
    fn roll_waits(&self, s: &RollState) -> bool {
        let base = &s.cond.reads.scale.ext.base;
        !self.rolling || self.cond.reads().scale().zombie().replicas().iter().all(|&r| base.is_ready(r))
    }

    /// The successor of `s` by `action`, `None` where it is not enabled.
    pub fn step(&self, s: &RollState, action: &RollAction) -> Option<RollState> {
        let scale = &s.cond.reads.scale;
        let enabled = match action.scale() {
            Some(ScaleAction::CommitWrite(pw)) => {
                self.acked_by_live(s, pw, &scale.reg, self.mutation == Some(Mutation::CountStaleAck))
            }
            Some(ScaleAction::ZombieCommit(z, pw)) => {
                let any = matches!(self.mutation, Some(Mutation::CountStaleAck | Mutation::ZombieCountsStaleAck));
                s.zreg.iter().any(|zr| zr.epoch == z.epoch && self.acked_by_live(s, pw, &zr.reg, any))
            }
            Some(ScaleAction::Evict(_) | ScaleAction::Supersede) => self.roll_waits(s),
            _ => true,
        };
        if !enabled {
            return None;
        }
        let cond = self.cond.step(&s.cond, &action.0)?;
        let mut u = RollState { cond, ..s.clone() };
        match action.scale() {
            Some(ScaleAction::DeliverPush(m)) => {
                let pinc = scale.ext.inc[m.dst];
                u.acks_by.insert(AckBy { src: m.dst, key: m.key, ep: m.ep, ver: m.ver, wid: m.wid, pinc });
            }
            Some(ScaleAction::Supersede) => {
                u.zreg.insert(ZombieReg { epoch: scale.ext.base.epoch, reg: scale.reg.clone() });
            }
            Some(ScaleAction::ZombieFenced(z)) => u.zreg.retain(|zr| zr.epoch != z.epoch),
            _ => {}
        }
        Some(u)
    }
}
