//! The model: the mirror it is built on, the constants from the cfg, the
//! checks it lists and the mutation it runs with.

use super::state::RollState;
use crate::mirror::handoff_cond::HandoffCond;

/// Every mutation by its `--mutation` name: the one list both
/// `Mirror::MUTATIONS` and the parse of a name come from.
pub(super) const MUTATIONS: [(&str, Mutation); 2] =
    [("count-stale-ack", Mutation::CountStaleAck), ("zombie-counts-stale-ack", Mutation::ZombieCountsStaleAck)];

/// A deliberate protocol bug of this module the checker must catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mutation {
    /// `AckedByLive` without `a.pinc >= rg[a.src]`.
    CountStaleAck,
    /// The same in `ZombieCommitRo` only.
    ZombieCountsStaleAck,
}

/// A named state predicate.
pub(super) type Check = (&'static str, fn(&HandoffRoll, &RollState) -> bool);

/// The mirror of `tla/HandoffRoll.tla`, built from a cfg.
pub struct HandoffRoll {
    /// The HandoffCond mirror, from the same constants but `Rolling`.
    pub(super) cond: HandoffCond,
    /// `Rolling`
    pub(super) rolling: bool,
    pub(super) max_writes: u8,
    /// `MaxEpoch == MaxEvicts + 1`
    pub(super) max_epoch: u8,
    pub(super) mutation: Option<Mutation>,
    /// The cfg's invariants and properties that are the module's own.
    pub(super) checks: Vec<Check>,
    /// Every invariant and property the cfg lists, in cfg order.
    pub(super) names: Vec<&'static str>,
}
