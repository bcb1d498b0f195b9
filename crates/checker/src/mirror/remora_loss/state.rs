//! A state of RemoraClaimLeaseLoss: RemoraClaimActivation's eleven
//! variables (the base mirror's [`State`]) and `leaseLost`.

use std::fmt;

use crate::mirror::remora::{self, ClaimFunc, State};
use crate::spec::{TlaState, fmt_variables};

/// The base state, `leaseLost` and the step marker: no heap, like the base.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LossState {
    /// The base module's variables; its own marker is always empty (the
    /// action properties are marked below).
    pub base: State,
    /// `leaseLost`: the claim's lease, lost with the store while in force,
    /// can be restored.
    pub lease_lost: ClaimFunc<bool>,
    /// The action properties the step into this state violated (see the
    /// base mirror's `State::step_violations`).
    pub step_violations: LossViolations,
}

/// The action properties this module adds, by name: RemoraClaimHeartbeat's
/// three, then its own two (`properties::ACTION_PROPERTIES` gives each its
/// predicate).
pub const LOSS_ACTION_PROPERTY_NAMES: [&str; 5] = [
    "LeaseIsNeverRevived",
    "LeaseHolderIsStable",
    "RejectionIsFinal",
    "ExpiredLeaseIsNeverRevived",
    "LeaseIsLostOnlyInForce",
];

/// Every action property this mirror checks, by name: the base module's,
/// then [`LOSS_ACTION_PROPERTY_NAMES`].
fn all_action_properties() -> impl Iterator<Item = &'static str> {
    remora::ACTION_PROPERTY_NAMES.iter().chain(&LOSS_ACTION_PROPERTY_NAMES).copied()
}

/// A set of action properties (of [`all_action_properties`]), by position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LossViolations(u8);

impl LossViolations {
    pub fn insert(&mut self, name: &str) {
        if let Some(i) = all_action_properties().position(|n| n == name) {
            self.0 |= 1 << i;
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        all_action_properties().position(|n| n == name).is_some_and(|i| self.0 & (1 << i) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    pub fn clear(&mut self) {
        self.0 = 0;
    }

    /// The names, in the modules' order.
    pub fn names(&self) -> Vec<&'static str> {
        all_action_properties().enumerate().filter(|(i, _)| self.0 & (1 << i) != 0).map(|(_, n)| n).collect()
    }
}

impl FromIterator<&'static str> for LossViolations {
    fn from_iter<I: IntoIterator<Item = &'static str>>(names: I) -> Self {
        let mut v = LossViolations::default();
        for name in names {
            v.insert(name);
        }
        v
    }
}

impl TlaState for LossState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let k = &*self.base.k;
        let mut vars = self.base.variables();
        let boolean = |lost: bool| if lost { "TRUE" } else { "FALSE" }.to_string();
        vars.push(("leaseLost", self.lease_lost.show(&k.names, &k.claims, boolean)));
        vars
    }
}

impl fmt::Debug for LossState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)?;
        if !self.step_violations.is_empty() {
            write!(f, "\n\\* the step here violates {}", self.step_violations.names().join(", "))?;
        }
        Ok(())
    }
}
