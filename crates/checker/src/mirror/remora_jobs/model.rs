//! The model with the constants of one `.cfg`, the checks it runs and the
//! shapes of the predicates they are.

use stateright::Property;

use super::action::JobsAction;
use super::mutation::Mutation;
use super::state::JobsState;
use crate::mirror::remora::Constants;
use crate::mirror::remora_loss::RemoraClaimLeaseLoss;

/// A state predicate (`INVARIANT`).
pub type Invariant = fn(&RemoraJobs, &JobsState) -> bool;

/// The action `A` of a `PROPERTY [][A]_jobVars`, on a step from the first
/// state to the second.
pub type StepPredicate = fn(&RemoraJobs, &JobsState, &JobsState) -> bool;

/// One check of the cfg.
#[derive(Clone, Copy)]
pub(super) enum Check {
    /// A check of the modules below: that mirror's property of this index.
    Inherited(usize),
    Invariant(Invariant),
    /// This module's action property: read from the marker `next_state`
    /// leaves.
    Step,
}

/// The model with the constants of one `.cfg`.
pub struct RemoraJobs {
    /// The RemoraClaimLeaseLoss mirror, with the same constants and the
    /// cfg's checks of the modules below.
    pub(super) loss: RemoraClaimLeaseLoss,
    /// Its properties (one per inherited check, in cfg order).
    pub(super) loss_properties: Vec<Property<RemoraClaimLeaseLoss>>,
    pub(super) k: &'static Constants,
    pub(super) max_attempts: u32,
    /// Every instance of every action (`JobsNext`'s quantifiers unrolled).
    pub(super) instances: Vec<JobsAction>,
    /// The cfg's checks: invariants, then action properties, in cfg order.
    pub(super) names: Vec<&'static str>,
    pub(super) checks: Vec<Check>,
    /// The cfg's action properties this module defines.
    pub(super) action_properties: Vec<(&'static str, StepPredicate)>,
    pub(super) mutation: Option<Mutation>,
}

impl RemoraJobs {
    pub(super) fn mutated(&self, mutation: Mutation) -> bool {
        self.mutation == Some(mutation)
    }
}
