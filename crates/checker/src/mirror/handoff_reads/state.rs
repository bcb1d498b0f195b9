//! A HandoffReads state: HandoffScale's variables, then the module's four.

use std::fmt::{self, Display};

use crate::compact::SortedSet;
use crate::mirror::handoff::{Func, Key, Msgs, Val};
use crate::mirror::handoff_scale::ScaleState;
use crate::spec::{TlaState, fmt_variables, tla};

/// A zombie's memory `[epoch, mem]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ZombieMem {
    pub epoch: u8,
    pub mem: Func<Val>,
}

/// Write ids (`SUBSET 1..MaxWrites`).
pub type Wids = SortedSet<u8, 4>;

/// A read in progress `[key, ep, seen, conf]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Read {
    pub key: Key,
    pub ep: u8,
    pub seen: Wids,
    pub conf: bool,
}

/// One HandoffReads state.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ReadsState {
    pub scale: ScaleState,
    pub zmem: Msgs<ZombieMem>,
    pub reads: Msgs<Read>,
    pub read_ctr: u8,
    pub bad_read: bool,
    pub fenced: Func<u8>,
}

impl Display for ZombieMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[epoch |-> {}, mem |-> {}]", self.epoch, self.mem)
    }
}

impl Display for Read {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Read { key, ep, seen, conf } = self;
        write!(f, "[key |-> {key}, ep |-> {ep}, seen |-> {}, conf |-> {}]", tla::set(seen), tla::boolean(*conf))
    }
}

impl TlaState for ReadsState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = self.scale.variables();
        vars.extend([
            ("zmem", tla::set(&self.zmem)),
            ("reads", tla::set(&self.reads)),
            ("readCtr", self.read_ctr.to_string()),
            ("badRead", tla::boolean(self.bad_read).to_string()),
            ("fenced", self.fenced.to_string()),
        ]);
        vars
    }
}

impl fmt::Debug for ReadsState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
