//! A 1:1 stateright mirror of `tla/RemoraClaimLeaseLoss.tla` (the loss of
//! the coordination store, added to RemoraClaimHeartbeat), built on the
//! RemoraClaimActivation mirror: the state is that mirror's [`remora::State`] plus
//! `leaseLost` ([`LossState`]), the base module's actions are that mirror's
//! own (`ReplayActivation` restated as the module restates it), and its
//! invariants and action properties are checked as the base mirror defines
//! them, on every step of this module.
//!
//! This is also the spec the claims implementation model refines
//! ([`crate::model::claim::ClaimImpl`]): its mapped steps are checked
//! against [`RemoraClaimLeaseLoss::successors`].

mod action;
mod model;
mod mutation;
mod next;
mod properties;
mod state;

use stateright::{Model, Property};

pub use action::LossAction;
pub use model::RemoraClaimLeaseLoss;
use model::{Check, StepCheck};
pub use mutation::Mutation;
pub use state::{LossState, LossViolations};

use crate::cfg::{CfgError, TlcConfig};
use crate::mirror::remora::{self, Constants, RemoraClaimActivation};
use crate::spec::{Mirror, check_mutation};

/// The formula the cfg's `SPECIFICATION` names (and, in a model's cfg, the
/// `PROPERTY` that asks for the refinement).
pub const LOSS_SPEC: &str = "LossSpec";

impl RemoraClaimLeaseLoss {
    /// The constants of the cfg.
    pub fn constants(&self) -> &'static Constants {
        self.k
    }

    /// The names of the checked invariants and action properties, in the
    /// order of `properties()`.
    pub fn property_names(&self) -> Vec<&'static str> {
        self.checks.iter().map(|(name, _)| *name).collect()
    }

    /// The action properties the step `s` → `t` violates.
    pub fn step_violations(&self, s: &LossState, t: &LossState) -> LossViolations {
        if s.base == t.base && s.lease_lost == t.lease_lost {
            // `[][A]_v` holds on a stuttering step.
            return LossViolations::default();
        }
        self.action_properties
            .iter()
            .filter(|(_, check)| match check {
                StepCheck::Base(holds) => !holds(&self.base, &s.base, &t.base),
                StepCheck::Own(holds) => !holds(self, s, t),
            })
            .map(|(name, _)| *name)
            .collect()
    }

    /// The successors of `s` by every action of `LossNext`, each marked
    /// with the action properties its step violates.
    pub fn successors(&self, s: &LossState) -> Vec<LossState> {
        self.instances.iter().filter_map(|&a| self.next_state(s, a)).collect()
    }

    /// Whether `s` passes check `i` of `properties()`.
    fn holds(&self, i: usize, s: &LossState) -> bool {
        match self.checks.get(i) {
            None => true,
            Some((_, Check::BaseInvariant(holds))) => holds(&self.base, &s.base),
            Some((_, Check::Invariant(holds))) => holds(self, s),
            Some((name, Check::Step)) => !s.step_violations.contains(name),
        }
    }
}

impl Mirror for RemoraClaimLeaseLoss {
    const MODULE: &'static str = "RemoraClaimLeaseLoss";
    const MUTATIONS: &'static [&'static str] = mutation::NAMES;

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        check_mutation(Self::MODULE, mutation::NAMES, mutation)?;
        cfg.expect_constants(Self::MODULE, remora::CONSTANTS)?;
        let invariant_names: Vec<&str> =
            remora::INVARIANTS.iter().map(|(n, _)| *n).chain(properties::INVARIANTS.iter().map(|(n, _)| *n)).collect();
        let property_names: Vec<&str> = remora::ACTION_PROPERTIES
            .iter()
            .map(|(n, ..)| *n)
            .chain(properties::ACTION_PROPERTIES.iter().map(|(n, _)| *n))
            .collect();
        cfg.expect_definitions(Self::MODULE, &invariant_names, &property_names)?;
        match (&cfg.specification, &cfg.init, &cfg.next) {
            (Some(spec), None, None) if spec == LOSS_SPEC => {}
            _ => {
                return Err(CfgError::Unsupported(format!(
                    "{} is mirrored as SPECIFICATION {LOSS_SPEC}",
                    Self::MODULE
                )));
            }
        }
        // The base mirror checks the base module's ASSUMEs; it is asked for
        // nothing else.
        let base_cfg =
            TlcConfig { specification: Some("Spec".into()), constants: cfg.constants.clone(), ..TlcConfig::default() };
        let base = RemoraClaimActivation::from_cfg(&base_cfg, None)?;

        let mut checks = Vec::new();
        for name in &cfg.invariants {
            if let Some((n, holds)) = remora::INVARIANTS.iter().find(|(n, _)| n == name) {
                checks.push((*n, Check::BaseInvariant(*holds)));
            } else if let Some((n, holds)) = properties::INVARIANTS.iter().find(|(n, _)| n == name) {
                checks.push((*n, Check::Invariant(*holds)));
            }
        }
        let mut action_properties = Vec::new();
        for name in &cfg.properties {
            if let Some((n, holds, _)) = remora::ACTION_PROPERTIES.iter().find(|(n, ..)| n == name) {
                action_properties.push((*n, StepCheck::Base(*holds)));
            } else if let Some((n, holds)) = properties::ACTION_PROPERTIES.iter().find(|(n, _)| n == name) {
                action_properties.push((*n, StepCheck::Own(*holds)));
            }
        }
        checks.extend(action_properties.iter().map(|(n, _)| (*n, Check::Step)));
        if checks.len() > SLOTS.len() {
            return Err(CfgError::Unsupported(format!("{} checks at most {} properties", Self::MODULE, SLOTS.len())));
        }
        let mut model = RemoraClaimLeaseLoss {
            k: base.constants(),
            base,
            instances: Vec::new(),
            checks,
            action_properties,
            mutation: mutation.and_then(Mutation::from_name),
        };
        model.instances = model.all_instances();
        Ok(model)
    }

    fn action_names(&self) -> Vec<&'static str> {
        LossAction::NAMES.to_vec()
    }

    fn action_kind(&self, action: &LossAction) -> usize {
        action.kind()
    }
}

impl Model for RemoraClaimLeaseLoss {
    type State = LossState;
    type Action = LossAction;

    fn init_states(&self) -> Vec<LossState> {
        self.init()
    }

    fn actions(&self, _: &LossState, actions: &mut Vec<LossAction>) {
        actions.extend_from_slice(&self.instances);
    }

    fn next_state(&self, s: &LossState, action: LossAction) -> Option<LossState> {
        let mut n = self.next(s, action)?;
        n.step_violations = self.step_violations(s, &n);
        Some(n)
    }

    fn format_action(&self, action: &LossAction) -> String {
        action.show(self.k)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        if self.checks.is_empty() {
            // stateright explores only the initial states of a model with
            // no properties; TLC with nothing to check explores them all.
            return vec![Property::always("TRUE", |_, _| true)];
        }
        self.checks.iter().zip(SLOTS).map(|((name, _), slot)| Property::always(name, slot)).collect()
    }
}

/// `always` properties are plain function pointers, so each check gets a
/// slot that finds it by position.
fn slot<const I: usize>(m: &RemoraClaimLeaseLoss, s: &LossState) -> bool {
    m.holds(I, s)
}

const SLOTS: [fn(&RemoraClaimLeaseLoss, &LossState) -> bool; 24] = [
    slot::<0>, slot::<1>, slot::<2>, slot::<3>, slot::<4>, slot::<5>, slot::<6>, slot::<7>, slot::<8>, slot::<9>,
    slot::<10>, slot::<11>, slot::<12>, slot::<13>, slot::<14>, slot::<15>, slot::<16>, slot::<17>, slot::<18>,
    slot::<19>, slot::<20>, slot::<21>, slot::<22>, slot::<23>,
];
