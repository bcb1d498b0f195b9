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
mod model;
mod mutation;
mod next;
mod properties;
mod state;
mod values;

use stateright::{Model, Property};

pub use action::Action;
pub use model::RemoraClaimActivation;
pub use mutation::Mutation;
pub use state::{ACTION_PROPERTY_NAMES, State, Violations};
pub use values::{
    ActivationStage, CAP, Claim, ClaimFunc, Constants, DurableState, Fence, LockOwner, NO_WORKER, Op, OpFunc, Request,
    Worker, WorkerOrNone,
};

use crate::cfg::{CfgError, TlcConfig};
use crate::spec::Mirror;
/// For the extension's mirror (`mirror::remora_loss`), which checks the
/// base module's invariants and action properties on its own steps.
pub(crate) use config::CONSTANTS;
pub(crate) use model::{Invariant, StepPredicate};
pub(crate) use properties::{ACTION_PROPERTIES, INVARIANTS};
pub(crate) use values::string_of;

impl Mirror for RemoraClaimActivation {
    const MODULE: &'static str = "RemoraClaimActivation";
    const MUTATIONS: &'static [&'static str] = mutation::NAMES;

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        config::from_cfg(cfg, mutation)
    }

    fn action_names(&self) -> Vec<&'static str> {
        Action::NAMES.to_vec()
    }

    fn action_kind(&self, action: &Action) -> usize {
        action.kind()
    }
}

impl Model for RemoraClaimActivation {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        self.init()
    }

    fn actions(&self, _: &State, actions: &mut Vec<Action>) {
        actions.extend_from_slice(&self.instances);
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut n = self.next(s, action)?;
        // `[][A]_vars` holds on a step when A holds or the variables are
        // unchanged (`n` is a copy of `s` with its marker, so `==` is
        // UNCHANGED vars).
        let unchanged = n == *s;
        n.step_violations = self
            .action_properties
            .iter()
            .filter(|(_, holds)| !(unchanged || holds(self, s, &n)))
            .map(|(name, _)| *name)
            .collect();
        Some(n)
    }

    /// The web explorer lists actions as TLA+ action instances.
    fn format_action(&self, action: &Self::Action) -> String {
        action.show(self.k)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.properties.clone()
    }
}
