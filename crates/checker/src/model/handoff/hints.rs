//! Which spec steps an implementation step most likely maps to. Only an
//! order for the refinement search (tried first, then every spec step):
//! a wrong hint costs time, never soundness.

use protocol::handoff::{Body, Timer};

use super::HandoffImpl;
use super::state::{ImplAction, ImplState};
use crate::mirror::handoff::{PendingW, PushMsg};
use crate::mirror::handoff_ext::{Ann, AnnAck, ExtAction, GossipMsg, Snap};

impl HandoffImpl {
    pub(super) fn hints(&self, s: &ImplState, action: &ImplAction) -> Vec<ExtAction> {
        let spec = &s.mapped;
        let small = |n: u64| u8::try_from(n).unwrap_or(u8::MAX);
        match action {
            ImplAction::Put { key } => {
                self.spec.keys().get(*key).map(|&k| vec![ExtAction::ClientWrite(k)]).unwrap_or_default()
            }
            ImplAction::ZombiePut { key, .. } => match self.spec.keys().get(*key) {
                Some(&k) => spec.zombies.iter().map(|z| ExtAction::ZombieWrite(z.clone(), k)).collect(),
                None => Vec::new(),
            },
            ImplAction::Evict(r) => vec![ExtAction::Evict(self.spec_replica(*r))],
            ImplAction::Supersede => vec![ExtAction::Supersede],
            ImplAction::Timer(r, Timer::Retry) => vec![
                ExtAction::ChooseEpoch,
                ExtAction::AnnounceRound,
                ExtAction::FinishRecoveryC,
                ExtAction::FinishRecoveryPeer(self.spec_replica(*r)),
            ],
            ImplAction::Timer(r, _) => vec![ExtAction::GossipSend(self.spec_replica(*r))],
            ImplAction::Deliver(m) => {
                let (from, to) = (self.spec_replica(m.from), self.spec_replica(m.to));
                match &m.body {
                    Body::Push { key, record, .. } => vec![ExtAction::DeliverPush(PushMsg {
                        dst: to,
                        key: self.spec_key(key),
                        ep: small(record.stamp.ep.0),
                        ver: small(record.stamp.ver.0),
                        wid: u8::try_from(record.wid.0).unwrap_or(u8::MAX),
                    })],
                    Body::PushAck { key, stamp, wid, .. } => {
                        let pw = PendingW {
                            key: self.spec_key(key),
                            ep: small(stamp.ep.0),
                            ver: small(stamp.ver.0),
                            wid: u8::try_from(wid.0).unwrap_or(u8::MAX),
                        };
                        let mut hints = vec![ExtAction::CommitWrite(pw)];
                        hints.extend(spec.zombies.iter().map(|z| ExtAction::ZombieCommit(z.clone(), pw)));
                        hints
                    }
                    Body::PushRefused { .. } => {
                        spec.zombies.iter().map(|z| ExtAction::ZombieFenced(z.clone())).collect()
                    }
                    Body::Collect { .. } => vec![ExtAction::SnapC(to)],
                    Body::CollectReply { known, memory, .. } | Body::ReseedReply { known, memory, .. } => {
                        let snap = Snap { src: from, dst: to, mem: self.mem(memory), know: small(known.0) };
                        vec![ExtAction::ReseedC(snap.clone()), ExtAction::ReseedPeer(snap)]
                    }
                    Body::Announce { epoch, round, instance } => {
                        let cinc = self.incarnation_of(m.from, *instance) + 1;
                        vec![ExtAction::AnnounceTo(to, Ann { ep: small(epoch.0), round: small(*round), cinc })]
                    }
                    Body::AnnounceAck { epoch, round, peer, .. } => {
                        let pinc = self.incarnation_of(m.from, *peer) + 1;
                        vec![ExtAction::AnnounceAcked(AnnAck {
                            src: from,
                            ep: small(epoch.0),
                            round: small(*round),
                            pinc,
                        })]
                    }
                    Body::Reseed { .. } => vec![ExtAction::SnapPeer(to, from), ExtAction::DeclinePeer(to, from)],
                    Body::Gossip { memory } => {
                        vec![ExtAction::GossipRecv(GossipMsg { src: from, dst: to, mem: self.mem(memory) })]
                    }
                    Body::CollectDecline { .. }
                    | Body::ReseedDecline { .. }
                    | Body::AnnounceRefused { .. }
                    | Body::Heartbeat => Vec::new(),
                }
            }
        }
    }
}
