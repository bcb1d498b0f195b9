//! Which spec steps an implementation step most likely maps to. Only an
//! order for the refinement search (tried first, then every spec step):
//! a wrong hint costs time, never soundness.

use protocol::handoff::{Body, Timer};

use super::map::spec_wid;
use super::model::HandoffImpl;
use super::state::{ImplAction, ImplState, msg_key};
use crate::mirror::handoff::{PendingW, PushMsg};
use crate::mirror::handoff_cond::CondAction;
use crate::mirror::handoff_ext::{Ann, AnnAck};
use crate::mirror::handoff_reads::ReadsAction;
use crate::mirror::handoff_roll::RollAction;
use crate::mirror::handoff_scale::ScaleAction;

impl HandoffImpl {
    pub(super) fn hints(&self, s: &ImplState, action: &ImplAction) -> Vec<RollAction> {
        if let ImplAction::Keep(a) = action {
            return self.hints(s, a);
        }
        self.cond_hints(s, action).into_iter().map(RollAction).collect()
    }

    fn cond_hints(&self, s: &ImplState, action: &ImplAction) -> Vec<CondAction> {
        match action {
            ImplAction::Tick => vec![CondAction::Tick],
            ImplAction::Timer(_, Timer::Expire) => {
                self.scale().zombie().keys().iter().map(|&k| CondAction::Expire(k)).collect()
            }
            _ => self.reads_hints(s, action).into_iter().flat_map(|a| self.spec.cond().lift(a)).collect(),
        }
    }

    fn reads_hints(&self, s: &ImplState, action: &ImplAction) -> Vec<ReadsAction> {
        let peers = self.scale().zombie().peers();
        let epochs = 1..=self.max_evicts.saturating_add(1);
        match action {
            ImplAction::List | ImplAction::ZombieList { .. } => {
                let keys = self.scale().zombie().keys();
                keys.iter().flat_map(|&k| epochs.clone().map(move |e| ReadsAction::ReadStart(k, e))).collect()
            }
            ImplAction::Read { key } | ImplAction::ZombieRead { key, .. } => {
                let Some(&k) = self.scale().zombie().keys().get(*key) else { return Vec::new() };
                epochs.map(|e| ReadsAction::ReadStart(k, e)).collect()
            }
            ImplAction::Deliver(m) if matches!(m.body, Body::Confirm { .. }) => {
                peers.iter().flat_map(|&p| epochs.clone().map(move |e| ReadsAction::ReadConfirm(p, e))).collect()
            }
            ImplAction::Deliver(m) if matches!(m.body, Body::ReseedDecline { .. }) => {
                s.mapped.cond.reads.dsent.iter().map(|&d| ReadsAction::DeclineArrivesR(d)).collect()
            }
            // A request, maybe late: HandoffReads' Late*R.
            ImplAction::Deliver(m) if matches!(m.body, Body::Collect { .. } | Body::Reseed { .. }) => {
                let (from, to) = (self.spec_replica(m.from), self.spec_replica(m.to));
                let mut hints: Vec<ReadsAction> =
                    self.scale_hints(s, action).into_iter().map(ReadsAction::Scale).collect();
                hints.extend(epochs.map(|i| match m.body {
                    Body::Collect { .. } => ReadsAction::LateCollectR(to, i),
                    _ => ReadsAction::LateReseedR(from, i),
                }));
                hints
            }
            _ => self.scale_hints(s, action).into_iter().map(ReadsAction::Scale).collect(),
        }
    }

    fn scale_hints(&self, s: &ImplState, action: &ImplAction) -> Vec<ScaleAction> {
        let spec = &s.mapped.cond.reads.scale;
        let small = |n: u64| u8::try_from(n).unwrap_or(u8::MAX);
        let keys = self.scale().zombie().keys();
        match action {
            ImplAction::Put { key, .. } => {
                keys.get(*key).map(|&k| vec![ScaleAction::ClientWrite(k)]).unwrap_or_default()
            }
            ImplAction::ZombiePut { key, .. } => match keys.get(*key) {
                Some(&k) => spec.ext.zombies.iter().map(|z| ScaleAction::ZombieWrite(z.clone(), k)).collect(),
                None => Vec::new(),
            },
            ImplAction::Evict(r) => vec![ScaleAction::Evict(self.spec_replica(*r))],
            ImplAction::Supersede => vec![ScaleAction::Supersede],
            // HandoffReads' `ReadStart`, hinted by `reads_hints`; the
            // module's own steps, by `hints` or as several (`composite`).
            ImplAction::Read { .. }
            | ImplAction::ZombieRead { .. }
            | ImplAction::List
            | ImplAction::ZombieList { .. }
            | ImplAction::CondPut { .. }
            | ImplAction::ZombieCondPut { .. }
            | ImplAction::Tick
            | ImplAction::Timer(_, Timer::Expire) => Vec::new(),
            ImplAction::Timer(r, Timer::Retry) => vec![
                ScaleAction::ChooseEpoch,
                ScaleAction::AnnounceRound,
                ScaleAction::FinishRecoveryC,
                ScaleAction::FinishRecoveryPeer(self.spec_replica(*r)),
                ScaleAction::RaiseFloor,
            ],
            ImplAction::Timer(r, _) => vec![ScaleAction::DigestSend(self.spec_replica(*r))],
            ImplAction::Keep(a) => self.scale_hints(s, a),
            ImplAction::Deliver(m) => {
                let (from, to) = (self.spec_replica(m.from), self.spec_replica(m.to));
                match &m.body {
                    Body::Push { key, record, .. } => vec![ScaleAction::DeliverPush(PushMsg {
                        dst: to,
                        key: self.spec_key(key),
                        ep: small(record.stamp.ep.0),
                        ver: small(record.stamp.ver.0),
                        wid: spec_wid(record.wid, &s.cond.expiries),
                    })],
                    Body::PushAck { key, stamp, wid, .. } | Body::PushAckBy { key, stamp, wid, .. } => {
                        let pw = PendingW {
                            key: self.spec_key(key),
                            ep: small(stamp.ep.0),
                            ver: small(stamp.ver.0),
                            wid: spec_wid(*wid, &s.cond.expiries),
                        };
                        let mut hints = vec![ScaleAction::CommitWrite(pw)];
                        hints.extend(spec.ext.zombies.iter().map(|z| ScaleAction::ZombieCommit(z.clone(), pw)));
                        hints
                    }
                    Body::PushRefused { .. } => {
                        spec.ext.zombies.iter().map(|z| ScaleAction::ZombieFenced(z.clone())).collect()
                    }
                    Body::CollectReply { .. } | Body::ReseedReply { .. } => spec
                        .chunks
                        .iter()
                        .filter(|c| c.src == from && c.dst == to)
                        .flat_map(|c| [ScaleAction::ReseedChunkC(c.clone()), ScaleAction::ReseedChunkPeer(c.clone())])
                        .collect(),
                    Body::Announce { epoch, round, instance } => {
                        let cinc = self.incarnation_of(m.from, *instance) + 1;
                        vec![ScaleAction::AnnounceTo(to, Ann { ep: small(epoch.0), round: small(*round), cinc })]
                    }
                    Body::AnnounceAck { epoch, round, peer, .. } => {
                        let pinc = self.incarnation_of(m.from, *peer) + 1;
                        vec![ScaleAction::AnnounceAcked(AnnAck {
                            src: from,
                            ep: small(epoch.0),
                            round: small(*round),
                            pinc,
                        })]
                    }
                    // Answers: any split of the keys.
                    Body::Collect { .. } => {
                        self.scale().subsets().iter().map(|keys| ScaleAction::ChunkC(to, keys.clone())).collect()
                    }
                    Body::Reseed { .. } => {
                        let mut hints: Vec<ScaleAction> = self
                            .scale()
                            .subsets()
                            .iter()
                            .map(|keys| ScaleAction::ChunkPeer(to, from, keys.clone()))
                            .collect();
                        hints.push(ScaleAction::DeclinePeer(to, from));
                        hints
                    }
                    Body::Digest { .. } => match self.digest(s, msg_key(m), m) {
                        Some(d) => self
                            .scale()
                            .subsets()
                            .iter()
                            .map(|keys| ScaleAction::DigestRecv(d.clone(), keys.clone()))
                            .collect(),
                        None => Vec::new(),
                    },
                    Body::Records { .. } => spec
                        .gsp
                        .iter()
                        .filter(|g| g.src == from && g.dst == to)
                        .cloned()
                        .map(ScaleAction::GossipRecv)
                        .collect(),
                    Body::CollectDecline { .. }
                    | Body::ReseedDecline { .. }
                    | Body::AnnounceRefused { .. }
                    | Body::Confirm { .. }
                    | Body::Confirmed { .. }
                    | Body::ConfirmRefused { .. }
                    | Body::Heartbeat => Vec::new(),
                }
            }
        }
    }
}
