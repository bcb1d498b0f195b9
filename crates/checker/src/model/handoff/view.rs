//! What the model reads of a replica instance: predicates on the real
//! `Replica`, shared by the transitions, the map and the reduction.

use std::sync::Arc;

use protocol::handoff::coordinator::Phase;
use protocol::handoff::peer::PeerStatus;
use protocol::handoff::{Instance, Key, Replica, ReplicaId, RoleView, Status};

/// Whether instance `i` of replica `r` is current or a zombie.
pub(super) fn live(replicas: &[Arc<Replica>], zombies: &[Arc<Replica>], r: ReplicaId, i: Instance) -> bool {
    replicas.get(usize::from(r.0)).is_some_and(|x| x.instance() == i)
        || zombies.iter().any(|z| z.me() == r && z.instance() == i)
}

pub(super) fn is_ready(r: &Replica) -> bool {
    r.status().status == Status::Ready
}

/// A peer still recovering (the only role with that status).
pub(super) fn is_recovering(r: &Replica) -> bool {
    r.status().status == Status::Recovering
}

/// Whether replica instance `r` still asks `src` (for a snapshot or a
/// decline): the coordinator while collecting, as `Coordinator::asks` says;
/// a peer while recovering and not yet seeded by it.
pub(super) fn waits_for(r: &Replica, src: ReplicaId) -> bool {
    match r.role() {
        RoleView::Coordinator(c) => c.asks(src),
        RoleView::Peer(p) => matches!(p.peer_status(), PeerStatus::Recovering { seeded, .. } if !seeded.contains(&src)),
    }
}

/// Whether `r` takes a chunk from `src` that starts after `after`: it waits
/// for `src`, and its cursor for `src` stands there.
pub(super) fn takes_chunk(r: &Replica, src: ReplicaId, after: Option<&Key>) -> bool {
    let cursors = match r.role() {
        // A collected peer's successor is asked only for a decline.
        RoleView::Coordinator(c) => match c.phase() {
            Phase::Collect { cursors, collected, .. } if !collected.contains_key(&src) => cursors,
            _ => return false,
        },
        RoleView::Peer(p) => match p.peer_status() {
            PeerStatus::Recovering { cursors, .. } => cursors,
            PeerStatus::Ready => return false,
        },
    };
    waits_for(r, src) && cursors.get(&src) == after
}
