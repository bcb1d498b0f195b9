//! The model with the constants of one `.cfg`, and the shapes of the
//! predicates it checks.

use stateright::Property;

use super::action::Action;
use super::mutation::Mutation;
use super::state::State;
use super::values::Constants;

/// A state predicate (`INVARIANT`).
pub type Invariant = fn(&RemoraClaimActivation, &State) -> bool;

/// The action `A` of a `PROPERTY [][A]_vars`, on a step from the first
/// state to the second.
pub type StepPredicate = fn(&RemoraClaimActivation, &State, &State) -> bool;

/// The model with the constants of one `.cfg`.
pub struct RemoraClaimActivation {
    /// The constants and the names they print with (shared with every
    /// state).
    pub(super) k: &'static Constants,
    /// Every instance of every action (`Next`'s quantifiers unrolled).
    pub(super) instances: Vec<Action>,
    /// The cfg's invariants, an `always` reading the step marker for each
    /// of its action properties, and `Deadlock` if the cfg asks for it.
    pub(super) properties: Vec<Property<Self>>,
    /// The cfg's action properties, evaluated on every step.
    pub(super) action_properties: Vec<(&'static str, StepPredicate)>,
    pub(super) mutation: Option<Mutation>,
}

impl RemoraClaimActivation {
    pub(super) fn mutated(&self, mutation: Mutation) -> bool {
        self.mutation == Some(mutation)
    }

    /// The constants of the cfg.
    pub fn constants(&self) -> &'static Constants {
        self.k
    }
}
