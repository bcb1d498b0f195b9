//! A 1:1 stateright mirror of `tla/RemoraClaimActivation.tla`: the
//! split-store refinement of JobProtocol's atomic `ActivateAttempt`, in
//! which the durable commit, not lease creation, is the linearization point.
//!
//! The state is exactly the module's variables, so the number of distinct
//! states equals TLC's on the same `.cfg`. Each TLA+ action is one
//! [`Action`] variant and one method in `next.rs`; invariants and action
//! properties keep their spec names (`properties.rs`).

mod action;
mod config;
mod mutation;
mod next;
mod properties;
mod state;
mod values;

use stateright::{Model, Property};

pub use action::Action;
pub use mutation::Mutation;
/// For the extension's mirror (`mirror::remora_loss`), which checks the
/// base module's invariants and action properties on its own steps.
pub(crate) use properties::{ACTION_PROPERTIES, INVARIANTS};
pub use state::State;
pub use values::{ActivationStage, DurableState, Func, LockOwner, ModelValue, Request};

use crate::cfg::{CfgError, TlcConfig};
use crate::spec::Mirror;
pub(crate) use properties::StepPredicate;

/// The model with the constants of one `.cfg`.
pub struct RemoraClaimActivation {
    claims: Vec<ModelValue>,
    fences: Vec<ModelValue>,
    workers: Vec<ModelValue>,
    operations: Vec<ModelValue>,
    no_worker: ModelValue,
    no_owner: LockOwner,
    no_request: Request,
    no_response: ModelValue,
    accepted: ModelValue,
    rejected: ModelValue,
    /// The cfg's invariants, an `always` reading the step marker for each
    /// of its action properties, and `Deadlock` if the cfg asks for it.
    properties: Vec<Property<Self>>,
    /// The cfg's action properties, evaluated on every step.
    action_properties: Vec<(&'static str, StepPredicate)>,
    mutation: Option<Mutation>,
}

impl RemoraClaimActivation {
    fn mutated(&self, mutation: Mutation) -> bool {
        self.mutation == Some(mutation)
    }
}

impl Mirror for RemoraClaimActivation {
    const MODULE: &'static str = "RemoraClaimActivation";
    const MUTATIONS: &'static [&'static str] = mutation::NAMES;

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        config::from_cfg(cfg, mutation)
    }
}

impl Model for RemoraClaimActivation {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        self.init()
    }

    fn actions(&self, _: &State, actions: &mut Vec<Action>) {
        self.instances(actions);
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut n = self.next(s, action)?;
        // `[][A]_vars` holds on a step when A holds or the variables are
        // unchanged (`n` is a copy of `s` with its marker, so `==` is
        // UNCHANGED vars).
        n.step_violations = self
            .action_properties
            .iter()
            .filter(|(_, holds)| !(n == *s || holds(self, s, &n)))
            .map(|(name, _)| *name)
            .collect();
        Some(n)
    }

    /// The web explorer lists actions as TLA+ action instances.
    fn format_action(&self, action: &Self::Action) -> String {
        action.to_string()
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.properties.clone()
    }
}
