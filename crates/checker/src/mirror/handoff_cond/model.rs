//! The model: the mirror it is built on, the constants from the cfg, the
//! checks it lists and the mutation it runs with.

use super::state::CondState;
use crate::mirror::handoff_reads::HandoffReads;

/// Every mutation by its `--mutation` name: the one list both
/// `Mirror::MUTATIONS` and the parse of a name come from. `None`: a
/// mutation of HandoffReads, passed to its mirror.
pub(super) const MUTATIONS: [(&str, Option<Mutation>); 5] = [
    ("cond-unconfirmed", Some(Mutation::CondUnconfirmed)),
    ("cond-ignores-pending", Some(Mutation::CondIgnoresPending)),
    ("no-collect-fence", None),
    ("serve-expired", Some(Mutation::ServeExpired)),
    ("expire-unexpired", Some(Mutation::ExpireUnexpired)),
];

/// A deliberate protocol bug of this module the checker must catch
/// (`no-collect-fence` is HandoffReads', passed to its mirror).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mutation {
    /// `CondFail` without `x.conf`.
    CondUnconfirmed,
    /// `CondIssue` without the guard on pending writes.
    CondIgnoresPending,
    /// `Visible(v)` is `v`.
    ServeExpired,
    /// `Expire` without `Expired(v)`.
    ExpireUnexpired,
}

/// A named state predicate.
pub(super) type Check = (&'static str, fn(&HandoffCond, &CondState) -> bool);

/// The mirror of `tla/HandoffCond.tla`, built from a cfg.
pub struct HandoffCond {
    /// The HandoffReads mirror, from the same constants: it takes
    /// HandoffReads' steps and evaluates HandoffReads' checks.
    pub(super) reads: HandoffReads,
    pub(super) max_conds: u8,
    pub(super) max_time: u8,
    /// `TTLs`, in increasing order.
    pub(super) ttls: Vec<u8>,
    pub(super) max_writes: u8,
    /// `MaxEpoch == MaxEvicts + 1`
    pub(super) max_epoch: u8,
    pub(super) mutation: Option<Mutation>,
    /// The cfg's invariants and properties that are the module's own.
    pub(super) checks: Vec<Check>,
    /// Every invariant and property the cfg lists, in cfg order.
    pub(super) names: Vec<&'static str>,
}
