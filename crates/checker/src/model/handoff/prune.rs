//! The reduction's rule: which messages the model may drop from the
//! network because delivering them can change nothing, ever. Without the
//! reductions (`--no-reduction`) nothing is dropped and the rule is checked
//! on every delivery of a message it would drop (`step`, `ReductionSound`).

use std::sync::Arc;

use protocol::handoff::coordinator::Phase;
use protocol::handoff::peer::PeerStatus;
use protocol::handoff::{Body, Instance, Message, Replica, ReplicaId, RoleView};

use super::view::{is_ready, is_recovering, live, takes_chunk, waits_for};

/// The rule the model prunes by: the sound one, or one of the unsound rules
/// it once had, kept as mutations so that the unreduced runs' catch stays
/// demonstrated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PruneRule {
    Sound,
    /// `PruneAnsweredRequests`: a collect or reseed request is dropped as
    /// soon as its sender is gone or answered.
    AnsweredIsEnough,
    /// `PruneDeclinedReseeds`: a late reseed request is dropped once the
    /// coordinator has heard from its sender, even while the coordinator
    /// collects and so declines it.
    DeclinedIsInert,
    /// `PruneRepliesByCurrent`: a collect or reseed reply is judged by its
    /// receiver's current instance only, so a reply dropped at a ready
    /// coordinator stops counting as droppable once that instance is
    /// superseded and lives on as a zombie.
    RepliesByCurrent,
}

/// Whether delivering `m` can change nothing, ever, given the current
/// instances and the zombies: a reply to an instance that is gone (except
/// acks, which the spec keeps) or that no longer waits for it, or a
/// request whose reply would be such and which changes nothing else.
/// `settled`: no replica can boot any more (the model's eviction budget is
/// spent), so the receivers are the last instances there will be.
/// `rule`: [`PruneRule::Sound`], or a mutation.
pub(crate) fn useless(
    replicas: &[Arc<Replica>],
    zombies: &[Arc<Replica>],
    m: &Message,
    settled: bool,
    rule: PruneRule,
) -> bool {
    let live = |r: ReplicaId, i| live(replicas, zombies, r, i);
    let current = |r: ReplicaId| replicas.get(usize::from(r.0)).map(|x| &**x);
    // The instance `i` of `r` a message is addressed to: current, or a zombie
    // (replies were once judged by the current instance only, so a reply
    // dropped at a ready coordinator stopped counting as droppable once that
    // instance was superseded: the unreduced run of
    // large/HandoffImplLivenessEvicts2.cfg found it, docs/verification.md 1.8;
    // that old rule is the mutation `PruneRepliesByCurrent`).
    let addressed = |r: ReplicaId, i: Instance| {
        let zombie = || zombies.iter().map(|z| &**z).find(|z| z.me() == r && z.instance() == i);
        current(r)
            .filter(|x| x.instance() == i)
            .or_else(|| (rule != PruneRule::RepliesByCurrent).then(zombie).flatten())
    };
    let cursor_of = |x: &Replica, src: ReplicaId| match x.role() {
        RoleView::Coordinator(c) => match c.phase() {
            Phase::Collect { cursors, .. } => cursors.get(&src).cloned(),
            _ => None,
        },
        RoleView::Peer(p) => match p.peer_status() {
            PeerStatus::Recovering { cursors, .. } => cursors.get(&src).cloned(),
            PeerStatus::Ready => None,
        },
    };
    // Whether instance `i` of `r` (current or zombie) waits for confirm round `round`.
    let confirming = |r: ReplicaId, i: Instance, round: u64| {
        let waits = |x: &Replica| {
            x.instance() == i && matches!(x.role(), RoleView::Coordinator(c) if c.confirming() == Some(round))
        };
        current(r).is_some_and(waits) || zombies.iter().any(|z| z.me() == r && waits(z))
    };
    match &m.body {
        Body::PushAck { .. } | Body::PushAckBy { .. } => false,
        Body::AnnounceAck { instance, .. } => !live(m.to, *instance),
        Body::CollectReply { instance, chunk, .. } | Body::ReseedReply { instance, chunk, .. } => {
            !live(m.to, *instance) || addressed(m.to, *instance).is_some_and(|x| !takes_chunk(x, m.from, chunk.after.as_ref()))
        }
        // A coordinator's decline still fences a recovering peer that no
        // longer waits for it (the collect fence, HandoffReads).
        Body::ReseedDecline { instance, .. } => {
            !live(m.to, *instance)
                || current(m.to).is_some_and(|x| {
                    let from_coordinator =
                        current(m.from).is_some_and(|f| matches!(f.role(), RoleView::Coordinator(_)));
                    x.instance() == *instance && !waits_for(x, m.from) && !(from_coordinator && is_recovering(x))
                })
        }
        Body::CollectDecline { instance, round, peer } => {
            !live(m.to, *instance) || current(m.to).is_some_and(|x| {
                x.instance() == *instance
                    && !matches!(x.role(), RoleView::Coordinator(c) if c.phase().takes_decline(x.config(), m.from, *round, *peer))
            })
        }
        Body::PushRefused { instance, .. }
        | Body::AnnounceRefused { instance, .. }
        | Body::ConfirmRefused { instance, .. } => !live(m.to, *instance),
        // A confirm matters while its sender lives, whether or not it
        // still waits for the round: a peer that knows a newer epoch
        // answers it with a refusal, which fences a zombie sender (found by
        // the unreduced run of HandoffImplReads.cfg: the reduced model had
        // dropped every confirm of a finished round, and with it that way
        // of fencing a zombie).
        Body::Confirm { instance, .. } => !live(m.from, *instance),
        Body::Confirmed { instance, round, .. } => !confirming(m.to, *instance, *round),
        // A request matters while its sender waits for the answer at that
        // cursor. Besides: a collect fences a ready peer -- this instance
        // or a later one -- that knows no coordinator instance as new as
        // its sender, live or not (HandoffReads' LateCollectR), so it is
        // dropped only once the peer is ready, knows one, and is the last
        // instance of it (a peer's `newest` only grows); a reseed request
        // makes the coordinator hear from its sender (`reg`; LateReseedR),
        // so it is dropped only once the coordinator, the last instance of
        // it, has heard from that instance or a newer one, and can seed:
        // a collecting coordinator answers with a decline, which fences a
        // recovering peer (the unreduced run of large/HandoffImpl.cfg found
        // that: r2 and then r0 evicted, r2's reseed request delivered a
        // second time to the collecting r0 while r2 still recovers). (The
        // rule once dropped both as soon as their sender was gone or done;
        // the model run without its reductions showed what that hid, issue
        // 30.)
        Body::Collect { instance, after, .. } | Body::Reseed { instance, after } => {
            let answered = current(m.from)
                .is_none_or(|x| x.instance() != *instance || !waits_for(x, m.to) || cursor_of(x, m.to) != *after);
            let inert = current(m.to).is_some_and(|x| match (&m.body, x.role()) {
                (Body::Collect { .. }, RoleView::Peer(p)) => {
                    settled && is_ready(x) && p.fence_newest().is_some_and(|n| n >= *instance)
                }
                (_, RoleView::Coordinator(c)) => {
                    let seeds = matches!(c.phase(), Phase::Ready | Phase::Announce { .. });
                    settled
                        && c.registered(m.from).is_some_and(|r| r >= *instance)
                        && (seeds || rule == PruneRule::DeclinedIsInert)
                }
                (_, RoleView::Peer(_)) => true,
            });
            answered && (inert || rule == PruneRule::AnsweredIsEnough)
        }
        Body::Push { .. } | Body::Announce { .. } | Body::Digest { .. } | Body::Records { .. } | Body::Heartbeat => {
            false
        }
    }
}
