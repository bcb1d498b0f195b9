//! The model: which module of the family it mirrors ([`Version`]), the
//! constants from the cfg, the checks it lists and the mutation it runs
//! with.

use std::marker::PhantomData;

use super::state::State;
use super::values::{Key, ModelValue, Replica};

/// Which module of the Handoff family a model mirrors; the modules differ
/// only in what is said here.
pub trait Version: Send + Sync + 'static {
    const MODULE: &'static str;
    /// HandoffV2's recovery (docs/handoff.md section 2): `ReseedC` and
    /// `ReseedPeer` read only a replica that `CanSeed`; a peer finishes
    /// recovery once reseeded from every replica that `CanSeed`; the
    /// coordinator serves only once every peer knows its epoch.
    const V2_RECOVERY: bool;
}

/// `tla/Handoff.tla`, the user's spec.
pub enum Original {}

impl Version for Original {
    const MODULE: &'static str = "Handoff";
    const V2_RECOVERY: bool = false;
}

/// `tla/HandoffV2.tla`: recovery reads only from replicas that know the
/// current epoch.
pub enum V2 {}

impl Version for V2 {
    const MODULE: &'static str = "HandoffV2";
    const V2_RECOVERY: bool = true;
}

/// A named state predicate of the model.
pub(super) type Check<V> = fn(&HandoffModel<V>, &State) -> bool;

/// A Handoff-family model, built from a cfg by [`Mirror::from_cfg`](crate::spec::Mirror::from_cfg).
pub struct HandoffModel<V> {
    pub(super) replicas: Vec<Replica>,
    pub(super) coordinator: Replica,
    /// `Peers == Replicas \ {Coordinator}`
    pub(super) peers: Vec<Replica>,
    pub(super) keys: Vec<Key>,
    pub(super) max_writes: u8,
    pub(super) max_evicts: u8,
    pub(super) no_val: ModelValue,
    /// The invariants the cfg lists, in cfg order.
    pub(super) invariants: Vec<(&'static str, Check<V>)>,
    /// Whether the cfg lists `PROPERTY NoServedRegression`.
    pub(super) no_served_regression: bool,
    /// TLC's `CHECK_DEADLOCK` (default `TRUE`).
    pub(super) check_deadlock: bool,
    pub(super) mutation: Option<Mutation>,
    pub(super) version: PhantomData<V>,
}

/// A deliberate protocol bug the checker must catch (`--mutation NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mutation {
    /// `ChooseEpoch` goes straight to "ready": no announce phase.
    NoAnnounce,
    /// `CoordinatorHoldsOwnCommits` without its `w.ep = epoch =>` guard.
    StrongCoordinatorCompleteness,
    /// `Gossip` swaps the two memories instead of max-merging them.
    GossipOverwrite,
}

/// Every mutation by its `--mutation` name: the one list both
/// `Mirror::MUTATIONS` and the parse of a name come from.
pub(super) const MUTATIONS: [(&str, Mutation); 3] = [
    ("no-announce", Mutation::NoAnnounce),
    (STRONG_COORDINATOR_COMPLETENESS, Mutation::StrongCoordinatorCompleteness),
    ("gossip-overwrite", Mutation::GossipOverwrite),
];

/// The mutation that changes `CoordinatorHoldsOwnCommits`, named where the
/// cfg must list it.
pub(super) const STRONG_COORDINATOR_COMPLETENESS: &str = "strong-coordinator-completeness";
