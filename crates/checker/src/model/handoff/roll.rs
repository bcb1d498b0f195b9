//! A rolling restart (`RollingRestart = TRUE`, a constant of the model):
//! the platform evicts the roles one at a time in the order a deploy
//! restarts them (`cargo xtask deploy`, `cargo xtask dev roll`): the peers
//! in turn, then the coordinator, and each only once every replica is
//! ready again. It maps to HandoffRoll with `Rolling = TRUE`, whose
//! `EvictRo` waits for every replica (in any order: the roll's order is one
//! of them) and whose `RollLosesNothing` says that no acknowledged write is
//! then doomed.

use protocol::handoff::ReplicaId;

use super::model::HandoffImpl;
use super::state::ImplState;
use super::view::is_ready;

impl HandoffImpl {
    /// The role a rolling restart evicts next: r1, r2, ..., then the
    /// coordinator, round after round.
    fn next_in_roll(&self, s: &ImplState) -> Option<ReplicaId> {
        let mut order: Vec<ReplicaId> = self.replica_ids.iter().copied().filter(|&r| r != self.coordinator).collect();
        order.push(self.coordinator);
        order.get(usize::from(s.evict_count) % order.len()).copied()
    }

    /// Whether the platform may evict `r` now: always, as the spec allows,
    /// unless the cfg asks for a rolling restart, which evicts the next
    /// role of the roll once every replica is ready.
    pub(super) fn may_evict(&self, s: &ImplState, r: ReplicaId) -> bool {
        if !self.rolling {
            return true;
        }
        self.next_in_roll(s) == Some(r) && s.replicas.iter().all(|x| is_ready(x))
    }
}
