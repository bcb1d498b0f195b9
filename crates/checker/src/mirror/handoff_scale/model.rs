//! The model: the mirror it is built on, the constants from the cfg, the
//! checks it lists.

use super::state::{Ops, ScaleState};
use crate::mirror::handoff::KeySet;
use crate::mirror::handoff_ext::HandoffZombie;

/// A named state predicate.
pub(super) type Check = (&'static str, fn(&HandoffScale, &ScaleState) -> bool);

/// The mirror of `tla/HandoffScale.tla`, built from a cfg.
pub struct HandoffScale {
    /// The HandoffZombie mirror, from the same constants: it takes the
    /// steps HandoffScale takes over and evaluates HandoffZombie's checks.
    pub(super) zombie: HandoffZombie,
    pub(super) ops: Ops,
    pub(super) budget: u8,
    pub(super) max_gossip: u8,
    pub(super) max_writes: u8,
    pub(super) max_epoch: u8,
    /// `SUBSET Keys`, in a fixed order.
    pub(super) subsets: Vec<KeySet>,
    pub(super) no_served_regression: bool,
    /// The cfg's invariants and properties that are the module's own.
    pub(super) checks: Vec<Check>,
    /// Every invariant and property the cfg lists, in cfg order.
    pub(super) names: Vec<&'static str>,
}
