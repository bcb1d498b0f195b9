//! The model with the constants of one `.cfg`, the checks it runs and the
//! shapes of the predicates they are.

use super::action::LossAction;
use super::mutation::Mutation;
use super::state::LossState;
use crate::mirror::remora::{self, Constants, RemoraClaimActivation};

/// A state predicate (`INVARIANT`).
pub type Invariant = fn(&RemoraClaimLeaseLoss, &LossState) -> bool;

/// The action `A` of a `PROPERTY [][A]_v`, on a step from the first state to
/// the second.
pub type StepPredicate = fn(&RemoraClaimLeaseLoss, &LossState, &LossState) -> bool;

/// One checked invariant or action property.
#[derive(Clone, Copy)]
pub(super) enum Check {
    BaseInvariant(remora::Invariant),
    Invariant(Invariant),
    /// An action property: read from the marker `next_state` leaves.
    Step,
}

/// An action property's predicate, the base module's or this module's.
#[derive(Clone, Copy)]
pub(super) enum StepCheck {
    Base(remora::StepPredicate),
    Own(StepPredicate),
}

/// The model with the constants of one `.cfg`.
pub struct RemoraClaimLeaseLoss {
    /// The base mirror, with the same constants: it takes the base
    /// module's steps and holds its predicates.
    pub(super) base: RemoraClaimActivation,
    /// The constants and names (the base mirror's).
    pub(super) k: &'static Constants,
    /// Every instance of every action (`LossNext`'s quantifiers unrolled).
    pub(super) instances: Vec<LossAction>,
    /// The cfg's invariants, then its action properties, in cfg order.
    pub(super) checks: Vec<(&'static str, Check)>,
    pub(super) action_properties: Vec<(&'static str, StepCheck)>,
    pub(super) mutation: Option<Mutation>,
}

impl RemoraClaimLeaseLoss {
    pub(super) fn mutated(&self, mutation: Mutation) -> bool {
        self.mutation == Some(mutation)
    }
}
