//! A HandoffCond state: HandoffReads' variables, then the module's own.

use std::fmt::{self, Display};

use smallvec::SmallVec;

use crate::mirror::handoff::{Key, Msgs, Rec, Val};
use crate::mirror::handoff_reads::{ReadsState, Wids};
use crate::spec::{TlaState, fmt_variables, tla};

/// `Absent`: the condition IfAbsent (IfMatch(w) is the write id w).
pub const ABSENT: u8 = 0;

/// A conditional write waiting `[key, ep, wid, cond, ttl, seen, conf]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CondW {
    pub key: Key,
    pub ep: u8,
    pub wid: u8,
    pub cond: u8,
    pub ttl: u8,
    pub seen: Wids,
    pub conf: bool,
}

/// A conditional write issued `[wid, val, seen]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Issued {
    pub wid: u8,
    pub val: Val,
    pub seen: Wids,
}

/// An expiry delete issued `[wid, val, at]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExpIssued {
    pub wid: u8,
    pub val: Rec,
    pub at: u8,
}

/// One HandoffCond state.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CondState {
    pub reads: ReadsState,
    pub now: u8,
    /// `expAt`, by write id (`exp_at[w - 1]` is `expAt[w]`).
    pub exp_at: SmallVec<[u8; 4]>,
    pub conds: Msgs<CondW>,
    pub cond_ctr: u8,
    pub cond_issued: Msgs<Issued>,
    pub exp_issued: Msgs<ExpIssued>,
    pub bad_cond: bool,
    pub served_expired: bool,
}

impl CondState {
    /// `expAt[w]`
    pub fn exp_at(&self, wid: u8) -> u8 {
        usize::from(wid).checked_sub(1).and_then(|i| self.exp_at.get(i)).copied().unwrap_or(0)
    }

    /// `Expired(v)`
    pub fn expired(&self, v: Val) -> bool {
        match v {
            Val::NoVal(_) => false,
            Val::Rec(r) => {
                let at = self.exp_at(r.wid);
                at != 0 && at <= self.now
            }
        }
    }

    /// Equal but for HandoffScale's step marker.
    pub fn eq_unmarked(&self, other: &CondState) -> bool {
        self.reads.eq_unmarked(&other.reads)
            && self.now == other.now
            && self.exp_at == other.exp_at
            && self.conds == other.conds
            && self.cond_ctr == other.cond_ctr
            && self.cond_issued == other.cond_issued
            && self.exp_issued == other.exp_issued
            && self.bad_cond == other.bad_cond
            && self.served_expired == other.served_expired
    }
}

impl Display for CondW {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CondW { key, ep, wid, cond, ttl, seen, conf } = self;
        write!(
            f,
            "[key |-> {key}, ep |-> {ep}, wid |-> {wid}, cond |-> {cond}, ttl |-> {ttl}, seen |-> {}, conf |-> {}]",
            tla::set(seen),
            tla::boolean(*conf)
        )
    }
}

impl Display for Issued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[wid |-> {}, val |-> {}, seen |-> {}]", self.wid, self.val, tla::set(&self.seen))
    }
}

impl Display for ExpIssued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[wid |-> {}, val |-> {}, at |-> {}]", self.wid, self.val, self.at)
    }
}

impl TlaState for CondState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = self.reads.variables();
        let exp_at: Vec<String> = self.exp_at.iter().map(u8::to_string).collect();
        vars.extend([
            ("now", self.now.to_string()),
            ("expAt", format!("<<{}>>", exp_at.join(", "))),
            ("conds", tla::set(&self.conds)),
            ("condCtr", self.cond_ctr.to_string()),
            ("condIssued", tla::set(&self.cond_issued)),
            ("expIssued", tla::set(&self.exp_issued)),
            ("badCond", tla::boolean(self.bad_cond).to_string()),
            ("servedExpired", tla::boolean(self.served_expired).to_string()),
        ]);
        vars
    }
}

impl fmt::Debug for CondState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
