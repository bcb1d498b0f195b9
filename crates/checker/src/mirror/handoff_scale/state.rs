//! The state of `tla/HandoffScale.tla`: HandoffZombie's ([`ExtState`])
//! plus `floor`, `got`, `chunks`, `digs`, `gsp` and `reg`, and the
//! module's operators over them (`Concrete`, `RefusedAt`, `MergeValAt`,
//! `Restrict`).

use std::collections::BTreeSet;
use std::fmt::{self, Display};

use crate::mirror::handoff::{Func, KeySet, Msgs, Rec, Replica, Val, merge_val};
use crate::mirror::handoff_ext::ExtState;
use crate::spec::{TlaState, fmt_variables, tla};

/// A floor: the stamp `[ep, ver]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stamp {
    pub ep: u8,
    pub ver: u8,
}

impl Stamp {
    /// `MaxF(a, b)`
    pub fn max(self, other: Stamp) -> Stamp {
        if (other.ep, other.ver) > (self.ep, self.ver) { other } else { self }
    }

    /// `Wins(fl, floor)` for a floor.
    pub fn above(self, other: Stamp) -> bool {
        (self.ep, self.ver) > (other.ep, other.ver)
    }
}

/// `Wins(rec, fl)`: the record is above the floor.
pub fn above(rec: Rec, fl: Stamp) -> bool {
    (rec.ep, rec.ver) > (fl.ep, fl.ver)
}

/// A snapshot chunk `[src, dst, keys, mem, know, floor, inc]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Chunk {
    pub src: Replica,
    pub dst: Replica,
    pub keys: KeySet,
    pub mem: Func<Val>,
    pub know: u8,
    pub floor: Stamp,
    pub inc: u8,
}

/// A digest `[src, dst, mem, floor, know, inc]` (`mem`: what it summarises).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    pub src: Replica,
    pub dst: Replica,
    pub mem: Func<Val>,
    pub floor: Stamp,
    pub know: u8,
    pub inc: u8,
}

/// Gossiped records `[src, dst, mem, floor]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Records {
    pub src: Replica,
    pub dst: Replica,
    pub mem: Func<Val>,
    pub floor: Stamp,
}

/// One HandoffScale state: HandoffZombie's variables, then the module's.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ScaleState {
    pub ext: ExtState,
    pub floor: Func<Stamp>,
    pub got: Func<Func<KeySet>>,
    pub chunks: Msgs<Chunk>,
    pub digs: Msgs<Digest>,
    pub gsp: Msgs<Records>,
    pub reg: Func<u8>,
}

impl ScaleState {
    /// Equal but for the step marker. Without a copy when the markers
    /// agree, as they nearly always do (the implementation model compares
    /// millions of mapped states).
    pub fn eq_unmarked(&self, other: &ScaleState) -> bool {
        if self.ext.base.served_regression == other.ext.base.served_regression {
            return self == other;
        }
        let mut s = self.clone();
        s.ext.base.served_regression = other.ext.base.served_regression;
        s == *other
    }
}

/// The module's operators that need constants (`Deletes`, `NoVal`).
#[derive(Clone, Debug)]
pub struct Ops {
    pub deletes: BTreeSet<u8>,
    pub no_val: Val,
}

impl Ops {
    /// `IsTomb(v)`
    pub fn is_tomb(&self, v: Val) -> bool {
        matches!(v, Val::Rec(r) if self.deletes.contains(&r.wid))
    }

    /// `DeadAt(v, fl)`: a tombstone at or below the floor.
    pub fn dead_at(&self, v: Val, fl: Stamp) -> bool {
        matches!(v, Val::Rec(r) if self.deletes.contains(&r.wid) && !above(r, fl))
    }

    /// `ConcreteAt(r, fl)`
    pub fn concrete_at(&self, s: &ScaleState, r: Replica, fl: Stamp) -> Func<Val> {
        let ready = s.ext.base.is_ready(r);
        s.ext.base.mem[r].map(|&v| if ready && self.dead_at(v, fl) { self.no_val } else { v })
    }

    /// `Concrete(r)`
    pub fn concrete(&self, s: &ScaleState, r: Replica) -> Func<Val> {
        self.concrete_at(s, r, s.floor[r])
    }

    /// `RefusedAt(cur, fl, v)`
    pub fn refused_at(&self, cur: Val, fl: Stamp, v: Rec) -> bool {
        (matches!(cur, Val::NoVal(_)) || self.dead_at(cur, fl)) && !above(v, fl)
    }

    /// `MergeValAt(cur, fl, v)`
    pub fn merge_val_at(&self, cur: Val, fl: Stamp, v: Val) -> Val {
        match v {
            Val::Rec(rec) if !self.refused_at(cur, fl, rec) => merge_val(cur, v),
            _ => cur,
        }
    }

    /// `Restrict(m, S)`
    pub fn restrict(&self, m: &Func<Val>, keys: &KeySet) -> Func<Val> {
        let mut out = m.clone();
        for (k, _) in m.iter() {
            if !keys.contains(&k) {
                out[k] = self.no_val;
            }
        }
        out
    }
}

impl Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[ep |-> {}, ver |-> {}]", self.ep, self.ver)
    }
}
impl Display for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Chunk { src, dst, keys, mem, know, floor, inc } = self;
        write!(
            f,
            "[src |-> {src}, dst |-> {dst}, keys |-> {}, mem |-> {mem}, know |-> {know}, floor |-> {floor}, inc |-> {inc}]",
            tla::set(keys)
        )
    }
}
impl Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Digest { src, dst, mem, floor, know, inc } = self;
        write!(f, "[src |-> {src}, dst |-> {dst}, mem |-> {mem}, floor |-> {floor}, know |-> {know}, inc |-> {inc}]")
    }
}
impl Display for Records {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Records { src, dst, mem, floor } = self;
        write!(f, "[src |-> {src}, dst |-> {dst}, mem |-> {mem}, floor |-> {floor}]")
    }
}

impl TlaState for ScaleState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = self.ext.variables();
        vars.extend([
            ("floor", self.floor.to_string()),
            ("got", self.got.map(|row| row.map(|keys| tla::set(keys)).to_string()).to_string()),
            ("chunks", tla::set(&self.chunks)),
            ("digs", tla::set(&self.digs)),
            ("gsp", tla::set(&self.gsp)),
            ("reg", self.reg.to_string()),
        ]);
        vars
    }
}

impl fmt::Debug for ScaleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
