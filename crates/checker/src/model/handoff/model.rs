//! The model of the implementation with the constants of one cfg, and
//! the words its steps share (which instance a step runs on).

use std::collections::BTreeSet;

use protocol::handoff::{Config, Key, ReplicaId};

use super::prune::PruneRule;
use super::state::ImplState;
use crate::cfg::Reduction;
use crate::mirror::handoff_roll::HandoffRoll;

/// The model of the implementation (module name `HandoffImpl`).
pub struct HandoffImpl {
    /// The spec the implementation refines, from the same constants.
    pub(super) spec: HandoffRoll,
    pub(super) config: Config,
    pub(super) coordinator: ReplicaId,
    pub(super) peers: [ReplicaId; 2],
    /// `ReplicaId(i)` is the i-th element of the cfg's `Replicas`.
    pub(super) replica_ids: Vec<ReplicaId>,
    /// The i-th element of the cfg's `Keys`, as a protocol key.
    pub(super) keys: Vec<Key>,
    pub(super) max_writes: u8,
    pub(super) max_evicts: u8,
    pub(super) max_zombies: u8,
    pub(super) max_gossip: u8,
    /// HandoffReads' `MaxReads` (0 when the cfg does not set it).
    pub(super) max_reads: u8,
    /// The model's own `GossipWhenDone` (FALSE when the cfg does not set
    /// it): gossip timers fire only once the environment is done
    /// ([`liveness`](super::liveness) says why the convergence check needs it).
    pub(super) gossip_when_done: bool,
    /// The model's own `MaxLists` (0 when absent): client listings started,
    /// at most; each is one of HandoffReads' reads per key (`cond`).
    pub(super) max_lists: u8,
    /// The model's own `RollingRestart` (FALSE when absent): evictions only
    /// as a rolling restart takes them ([`roll`](super::roll)); HandoffRoll's `Rolling`.
    pub(super) rolling: bool,
    /// The reduction's rule ([`PruneRule::Sound`] unless a mutation).
    pub(super) prune_rule: PruneRule,
    /// `Deletes`: the write ids that are deletes.
    pub(super) deletes: BTreeSet<u8>,
    /// `instances[r][n]`: the instance id of replica r's n-th boot.
    pub(super) instances: Vec<Vec<protocol::handoff::Instance>>,
    pub(super) init: ImplState,
    /// Whether the model drops what can change nothing ([`Reduction`];
    /// `step` says what it drops).
    pub(super) reduction: Reduction,
    /// Names of the properties checked, in order.
    pub(super) checks: Vec<&'static str>,
    /// Names of the liveness properties the cfg lists ([`liveness`](super::liveness)).
    pub(super) liveness: Vec<&'static str>,
    /// The kinds of step this cfg lets fire (`action_names`), and the
    /// position of each `ImplAction` kind among them.
    pub(super) kinds: Vec<&'static str>,
    pub(super) kind_index: Vec<usize>,
}

/// Which instance a step runs on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Current(ReplicaId),
    Zombie(usize),
}

/// HandoffReads' invariant, checked on what the real code answers.
pub(super) const READS_LINEARIZABLE: &str = "ReadsLinearizable";
