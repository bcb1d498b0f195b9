//! The model: the mirror it is built on, the constants from the cfg, the
//! checks it lists and the mutation it runs with.

use super::state::ReadsState;
use crate::mirror::handoff_scale::HandoffScale;

/// Every mutation by its `--mutation` name: the one list both
/// `Mirror::MUTATIONS` and the parse of a name come from.
pub(super) const MUTATIONS: [(&str, Mutation); 3] = [
    ("serve-reads-unconfirmed", Mutation::ServeReadsUnconfirmed),
    ("no-collect-fence", Mutation::NoCollectFence),
    ("no-decline-fence", Mutation::NoDeclineFence),
];

/// A deliberate protocol bug the checker must catch (`--mutation NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mutation {
    /// `ReadFinish` without `r.conf`: reads answered unconfirmed.
    ServeReadsUnconfirmed,
    /// No peer is ever `fenced` (it stays 0).
    NoCollectFence,
    /// `DeclineArrivesR` fences nothing.
    NoDeclineFence,
}

/// A named state predicate.
pub(super) type Check = (&'static str, fn(&HandoffReads, &ReadsState) -> bool);

/// The mirror of `tla/HandoffReads.tla`, built from a cfg.
pub struct HandoffReads {
    /// The HandoffScale mirror, from the same constants: it takes
    /// HandoffScale's steps and evaluates HandoffScale's checks.
    pub(super) scale: HandoffScale,
    pub(super) max_reads: u8,
    pub(super) max_writes: u8,
    /// `MaxEpoch == MaxEvicts + 1`
    pub(super) max_epoch: u8,
    pub(super) mutation: Option<Mutation>,
    /// The cfg's invariants and properties that are the module's own.
    pub(super) checks: Vec<Check>,
    /// Every invariant and property the cfg lists, in cfg order.
    pub(super) names: Vec<&'static str>,
}
