//! A HandoffReads state: HandoffScale's variables, then the module's own.

use std::fmt::{self, Display};

use crate::compact::SortedSet;
use crate::mirror::handoff::{Func, Key, Msgs, Replica, Val};
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

/// A coordinator's decline to a recovering peer `[dst, inc]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Decl {
    pub dst: Replica,
    pub inc: u8,
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
    pub newest: Func<u8>,
    pub dsent: Msgs<Decl>,
    pub decl_recv: Func<bool>,
}

impl ReadsState {
    /// Equal but for HandoffScale's step marker
    /// ([`ScaleState::eq_unmarked`]).
    pub fn eq_unmarked(&self, other: &ReadsState) -> bool {
        self.scale.eq_unmarked(&other.scale)
            && self.zmem == other.zmem
            && self.reads == other.reads
            && self.read_ctr == other.read_ctr
            && self.bad_read == other.bad_read
            && self.fenced == other.fenced
            && self.newest == other.newest
            && self.dsent == other.dsent
            && self.decl_recv == other.decl_recv
    }
}

impl Display for ZombieMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[epoch |-> {}, mem |-> {}]", self.epoch, self.mem)
    }
}

impl Display for Decl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[dst |-> {}, inc |-> {}]", self.dst, self.inc)
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
            ("newest", self.newest.to_string()),
            ("dsent", tla::set(&self.dsent)),
            ("declRecv", tla::func(self.decl_recv.iter().map(|(p, &b)| (p, tla::boolean(b))))),
        ]);
        vars
    }
}

impl fmt::Debug for ReadsState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
