//! A HandoffRoll state: HandoffCond's variables, then the module's two.

use std::fmt::{self, Display};

use crate::mirror::handoff::{Func, Key, Msgs, Replica};
use crate::mirror::handoff_cond::CondState;
use crate::spec::{TlaState, fmt_variables, tla};

/// A push ack naming its incarnation `[src, key, ep, ver, wid, pinc]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AckBy {
    pub src: Replica,
    pub key: Key,
    pub ep: u8,
    pub ver: u8,
    pub wid: u8,
    pub pinc: u8,
}

/// A zombie's `reg` when it was superseded `[epoch, reg]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ZombieReg {
    pub epoch: u8,
    pub reg: Func<u8>,
}

/// One HandoffRoll state.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RollState {
    pub cond: CondState,
    pub acks_by: Msgs<AckBy>,
    pub zreg: Msgs<ZombieReg>,
}

impl RollState {
    /// Equal but for HandoffScale's step marker.
    pub fn eq_unmarked(&self, other: &RollState) -> bool {
        self.cond.eq_unmarked(&other.cond) && self.acks_by == other.acks_by && self.zreg == other.zreg
    }
}

impl Display for AckBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let AckBy { src, key, ep, ver, wid, pinc } = self;
        write!(f, "[src |-> {src}, key |-> {key}, ep |-> {ep}, ver |-> {ver}, wid |-> {wid}, pinc |-> {pinc}]")
    }
}

impl Display for ZombieReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[epoch |-> {}, reg |-> {}]", self.epoch, self.reg)
    }
}

impl TlaState for RollState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = self.cond.variables();
        vars.extend([("acksBy", tla::set(&self.acks_by)), ("zreg", tla::set(&self.zreg))]);
        vars
    }
}

impl fmt::Debug for RollState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
