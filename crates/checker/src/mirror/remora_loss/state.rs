//! A state of RemoraClaimLeaseLoss: RemoraClaimActivation's eleven
//! variables (the base mirror's [`State`]) and `leaseLost`.

use std::fmt;

use crate::mirror::remora::{Func, State};
use crate::spec::{TlaState, fmt_variables, tla};

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LossState {
    /// The base module's variables; its own marker is always empty (the
    /// action properties are marked below).
    pub base: State,
    /// `leaseLost`: the claim's lease, lost with the store while in force,
    /// can be restored.
    pub lease_lost: Func<bool>,
    /// The action properties the step into this state violated (see the
    /// base mirror's `State::step_violations`).
    pub step_violations: Vec<&'static str>,
}

impl TlaState for LossState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = self.base.variables();
        vars.push(("leaseLost", lease_lost(&self.lease_lost)));
        vars
    }
}

fn lease_lost(f: &Func<bool>) -> String {
    tla::func(f.iter().map(|(c, lost)| (c, if *lost { "TRUE" } else { "FALSE" })))
}

impl fmt::Debug for LossState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)?;
        if !self.step_violations.is_empty() {
            write!(f, "\n\\* the step here violates {}", self.step_violations.join(", "))?;
        }
        Ok(())
    }
}
