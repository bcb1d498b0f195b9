//! A state of RemoraJobs: RemoraClaimLeaseLoss's variables (that mirror's
//! [`LossState`]), `outcome` and `usedFences`.

use std::fmt;

use crate::hash_as_byte;
use crate::mirror::remora::{ClaimFunc, Fence, string_of};
use crate::mirror::remora_loss::LossState;
use crate::spec::{TlaState, fmt_variables};

/// An element of `Outcomes == {"Pending", "Succeeded", "Failed"}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Outcome {
    #[default]
    Pending,
    Succeeded,
    Failed,
}

hash_as_byte!(Outcome);

/// A subset of `Fences`, one bit per fence (its position in the cfg's set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FenceSet(pub u64);

/// The most fences a cfg may have: [`FenceSet`] has a bit for each.
pub const MAX_FENCES: usize = 64;

impl FenceSet {
    pub fn of(f: Fence) -> FenceSet {
        FenceSet(1 << f.0)
    }

    pub fn contains(self, f: Fence) -> bool {
        self.0 & (1 << f.0) != 0
    }

    pub fn with(self, f: Fence) -> FenceSet {
        FenceSet(self.0 | 1 << f.0)
    }

    /// `Cardinality(S)`.
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The base state, the two variables and the marker of this module's
/// action properties: no heap.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobsState {
    /// RemoraClaimLeaseLoss's variables. Its marker records the inherited
    /// action properties the step into this state violated.
    pub loss: LossState,
    /// `outcome`: how the current attempt ended, `"Pending"` until it
    /// completes.
    pub outcome: ClaimFunc<Outcome>,
    /// `usedFences`: the fences of the claim's attempts so far.
    pub used_fences: ClaimFunc<FenceSet>,
    /// This module's action properties ([`JOBS_ACTION_PROPERTY_NAMES`],
    /// by position) that the step into this state violated: empty on
    /// every state of a correct run.
    pub step_violations: u8,
}

/// The action properties this module defines.
pub const JOBS_ACTION_PROPERTY_NAMES: [&str; 2] = ["ActivationAppliesAtMostOncePerAttempt", "DeadClaimStaysDead"];

impl JobsState {
    /// Whether the step into this state violated this module's action
    /// property `name`.
    pub fn violates(&self, name: &str) -> bool {
        JOBS_ACTION_PROPERTY_NAMES.iter().position(|n| *n == name).is_some_and(|i| self.step_violations & (1 << i) != 0)
    }

    /// The names of every action property the step into this state
    /// violated, inherited ones first.
    pub fn violation_names(&self) -> Vec<&'static str> {
        let own = JOBS_ACTION_PROPERTY_NAMES.iter().enumerate().filter(|(i, _)| self.step_violations & (1 << i) != 0);
        self.loss.step_violations.names().into_iter().chain(own.map(|(_, n)| *n)).collect()
    }
}

impl TlaState for JobsState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let k = &*self.loss.base.k;
        let mut vars = self.loss.variables();
        vars.push(("outcome", self.outcome.show(&k.names, &k.claims, string_of)));
        let set = |s: FenceSet| {
            let names: Vec<&str> = k.fences.iter().filter(|&&f| s.contains(f)).map(|&f| k.name(f)).collect();
            format!("{{{}}}", names.join(", "))
        };
        vars.push(("usedFences", self.used_fences.show(&k.names, &k.claims, set)));
        vars
    }
}

impl fmt::Debug for JobsState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)?;
        let names = self.violation_names();
        if !names.is_empty() {
            write!(f, "\n\\* the step here violates {}", names.join(", "))?;
        }
        Ok(())
    }
}
