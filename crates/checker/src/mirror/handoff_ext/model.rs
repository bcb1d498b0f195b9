//! The model of an extension module: which one ([`Extension`]), the
//! HandoffV2 mirror it is built on, the constants from the cfg and the
//! checks it lists.

use std::marker::PhantomData;

use stateright::Property;

use super::state::ExtState;
use crate::mirror::handoff::{HandoffV2, Key, ModelValue, Replica, State};

/// Which extension module a model mirrors.
pub trait Extension: Send + Sync + 'static {
    const MODULE: &'static str;
    /// The formula the cfg's `SPECIFICATION` must name.
    const SPEC: &'static str;
    /// HandoffZombie: zombies, `MaxZombies`, and epoch fencing of pushes
    /// and announces.
    const ZOMBIES: bool;
}

/// `tla/HandoffAcks.tla`.
pub enum Acks {}

impl Extension for Acks {
    const MODULE: &'static str = "HandoffAcks";
    const SPEC: &'static str = "SpecA";
    const ZOMBIES: bool = false;
}

/// `tla/HandoffZombie.tla`.
pub enum Zombies {}

impl Extension for Zombies {
    const MODULE: &'static str = "HandoffZombie";
    const SPEC: &'static str = "SpecZ";
    const ZOMBIES: bool = true;
}

/// A model of an extension module, built from a cfg.
pub struct ExtModel<E> {
    /// The HandoffV2 mirror, built from the same constants: it takes
    /// HandoffV2's steps and evaluates HandoffV2's properties.
    pub(super) base: HandoffV2,
    pub(super) base_properties: Vec<Property<HandoffV2>>,
    pub(super) replicas: Vec<Replica>,
    pub(super) coordinator: Replica,
    pub(super) peers: Vec<Replica>,
    pub(super) keys: Vec<Key>,
    pub(super) max_writes: u8,
    pub(super) max_epoch: u8,
    pub(super) max_zombies: u8,
    pub(super) max_gossip: u8,
    /// HandoffV2's `Init` (the extensions' `Init` adds empty channels).
    pub(super) init_base: State,
    pub(super) no_val: ModelValue,
    /// The cfg's invariants and properties, in cfg order.
    pub(super) checks: Vec<Check<E>>,
    pub(super) extension: PhantomData<E>,
}

/// A named state predicate, as stateright's `Property` takes it.
pub(super) type Check<E> = (&'static str, fn(&ExtModel<E>, &ExtState) -> bool);
