//! A 1:1 stateright mirror of `tla/RemoraJobs.tla` (completion, retries up
//! to `MaxAttempts`, dead claims, the reaping of executing attempts
//! without a lease), built on the RemoraClaimLeaseLoss mirror: the state
//! is that mirror's [`LossState`] plus `outcome` and `usedFences`
//! ([`JobsState`]), `LossNext`'s actions are that mirror's steps, and the
//! cfg's invariants and action properties of the modules below are that
//! mirror's checks, evaluated on every step of this module.
//!
//! `tla/RemoraJobsLiveness.tla` (no claim executing without a live or
//! restorable lease) is temporal: the TLA+ checker checks it, this mirror
//! has no fairness.

mod action;
mod model;
mod mutation;
mod next;
mod properties;
mod state;

use stateright::{Model, Property};

pub use action::JobsAction;
use model::Check;
pub use model::RemoraJobs;
pub use mutation::Mutation;
pub use state::{FenceSet, JOBS_ACTION_PROPERTY_NAMES, JobsState, MAX_FENCES, Outcome};

use crate::cfg::{CfgError, TlcConfig};
use crate::mirror::remora::{self, Constants};
use crate::mirror::remora_loss::{LOSS_SPEC, LossState, RemoraClaimLeaseLoss};
use crate::properties::{self as numbered, NumberedChecks};
use crate::spec::{Mirror, check_mutation};

/// The formula the cfg's `SPECIFICATION` names.
pub const JOBS_SPEC: &str = "JobsSpec";
/// The constant this module adds.
const MAX_ATTEMPTS: &str = "MaxAttempts";

impl RemoraJobs {
    /// The constants of the cfg.
    pub fn constants(&self) -> &'static Constants {
        self.k
    }

    /// The mirror of the modules below, which takes their steps.
    pub fn loss(&self) -> &RemoraClaimLeaseLoss {
        &self.loss
    }

    /// The successors of `s` by every action of `JobsNext`, each marked
    /// with the action properties its step violates.
    pub fn successors(&self, s: &JobsState) -> Vec<JobsState> {
        self.instances.iter().filter_map(|&a| self.next_state(s, a)).collect()
    }

    /// The names of the checked invariants and action properties, in the
    /// order of `properties()`.
    pub fn property_names(&self) -> Vec<&'static str> {
        self.names.clone()
    }

    /// `t` marked with the action properties (this module's and the
    /// modules' below) that the step `s` → `t` violates.
    pub fn marked(&self, s: &JobsState, t: JobsState) -> JobsState {
        let loss = LossState { step_violations: self.loss.step_violations(&s.loss, &t.loss), ..t.loss };
        JobsState { step_violations: self.own_step_violations(s, &t), loss, ..t }
    }

    /// This module's action properties the step `s` → `t` violates, as
    /// [`JobsState::step_violations`] bits.
    fn own_step_violations(&self, s: &JobsState, t: &JobsState) -> u8 {
        if s.loss == t.loss && s.outcome == t.outcome && s.used_fences == t.used_fences {
            // `[][A]_jobVars` holds on a stuttering step.
            return 0;
        }
        self.action_properties
            .iter()
            .filter(|(_, holds)| !holds(self, s, t))
            .filter_map(|(name, _)| JOBS_ACTION_PROPERTY_NAMES.iter().position(|n| n == name))
            .fold(0, |bits, i| bits | 1 << i)
    }
}

impl Mirror for RemoraJobs {
    const MODULE: &'static str = "RemoraJobs";
    const MUTATIONS: &'static [&'static str] = mutation::NAMES;

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        check_mutation(Self::MODULE, mutation::NAMES, mutation)?;
        let mut constants: Vec<&str> = remora::CONSTANTS.to_vec();
        constants.push(MAX_ATTEMPTS);
        cfg.expect_constants(Self::MODULE, &constants)?;
        match (&cfg.specification, &cfg.init, &cfg.next) {
            (Some(spec), None, None) if spec == JOBS_SPEC => {}
            _ => {
                return Err(CfgError::Unsupported(format!(
                    "{} is mirrored as SPECIFICATION {JOBS_SPEC}",
                    Self::MODULE
                )));
            }
        }
        let max_attempts = cfg.nat(MAX_ATTEMPTS)?;
        // ASSUME MaxAttempts \in Nat /\ MaxAttempts >= 1
        if max_attempts < 1 {
            return Err(CfgError::Unsupported(format!("{MAX_ATTEMPTS} must be at least 1 (the module's ASSUME)")));
        }
        let own_invariant = |name: &str| properties::INVARIANTS.iter().find(|(n, _)| *n == name);
        let own_step = |name: &str| properties::ACTION_PROPERTIES.iter().find(|(n, _)| *n == name);
        // The modules below check the rest; they refuse what none defines.
        let loss_cfg = TlcConfig {
            specification: Some(LOSS_SPEC.into()),
            constants: cfg.constants.iter().filter(|(n, _)| n != MAX_ATTEMPTS).cloned().collect(),
            invariants: cfg.invariants.iter().filter(|n| own_invariant(n).is_none()).cloned().collect(),
            properties: cfg.properties.iter().filter(|n| own_step(n).is_none()).cloned().collect(),
            ..TlcConfig::default()
        };
        let loss = RemoraClaimLeaseLoss::from_cfg(&loss_cfg, None).map_err(|e| match e {
            CfgError::UnknownDefinition { name, .. } => {
                CfgError::UnknownDefinition { module: Self::MODULE.into(), name }
            }
            other => other,
        })?;
        let k = loss.constants();
        if k.fences.len() > MAX_FENCES {
            return Err(CfgError::Unsupported(format!("{} checks at most {MAX_FENCES} fences", Self::MODULE)));
        }
        let loss_properties = if loss.property_names().is_empty() { Vec::new() } else { loss.properties() };
        let loss_names = loss.property_names();
        let mut names = Vec::new();
        let mut checks = Vec::new();
        let mut action_properties = Vec::new();
        for name in &cfg.invariants {
            if let Some(&(n, holds)) = own_invariant(name) {
                names.push(n);
                checks.push(Check::Invariant(holds));
            } else if let Some(i) = loss_names.iter().position(|n| n == name) {
                names.push(loss_names[i]);
                checks.push(Check::Inherited(i));
            }
        }
        for name in &cfg.properties {
            if let Some(&(n, holds)) = own_step(name) {
                names.push(n);
                checks.push(Check::Step);
                action_properties.push((n, holds));
            } else if let Some(i) = loss_names.iter().position(|n| n == name) {
                names.push(loss_names[i]);
                checks.push(Check::Inherited(i));
            }
        }
        if names.len() > numbered::MOST {
            return Err(CfgError::Unsupported(format!(
                "{} checks at most {} properties",
                Self::MODULE,
                numbered::MOST
            )));
        }
        let mut model = RemoraJobs {
            loss,
            loss_properties,
            k,
            max_attempts,
            instances: Vec::new(),
            names,
            checks,
            action_properties,
            mutation: mutation.and_then(Mutation::from_name),
        };
        model.instances = model.all_instances();
        Ok(model)
    }

    fn action_names(&self) -> Vec<&'static str> {
        JobsAction::NAMES.to_vec()
    }

    fn action_kind(&self, action: &JobsAction) -> usize {
        action.kind()
    }
}

impl Model for RemoraJobs {
    type State = JobsState;
    type Action = JobsAction;

    fn init_states(&self) -> Vec<JobsState> {
        self.init()
    }

    fn actions(&self, _: &JobsState, actions: &mut Vec<JobsAction>) {
        actions.extend_from_slice(&self.instances);
    }

    fn next_state(&self, s: &JobsState, action: JobsAction) -> Option<JobsState> {
        // The modules' below action properties, on their variables (each
        // holds on a step that leaves them unchanged), then this module's.
        Some(self.marked(s, self.next(s, action)?))
    }

    fn format_action(&self, action: &JobsAction) -> String {
        action.show(self.k)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        numbered::always(self)
    }
}

impl NumberedChecks for RemoraJobs {
    fn check_names(&self) -> &[&'static str] {
        &self.names
    }

    fn holds(&self, i: usize, s: &JobsState) -> bool {
        match self.checks.get(i) {
            None => true,
            Some(Check::Inherited(j)) => {
                let below: &LossState = &s.loss;
                self.loss_properties.get(*j).is_none_or(|p| (p.condition)(&self.loss, below))
            }
            Some(Check::Invariant(holds)) => holds(self, s),
            Some(Check::Step) => !s.violates(self.names[i]),
        }
    }
}
