//! The Handoff state -- exactly the module's twelve variables -- and the
//! spec's operators over it (`Wins`, `MergeVal`, `MergeMem`, `MemEpMax`,
//! `IsReady`, `Holds`).

use std::fmt;

use super::values::{AckedW, Func, Key, PendingW, PushMsg, Rec, Replica, Status, Val, WriteRec};
use crate::compact::SortedSet;
use crate::spec::{TlaState, fmt_variables, tla};

/// One Handoff state. The twelve fields are the TLA+ variables, sets as
/// sets and functions as functions, so that distinct states here are
/// distinct states for TLC. `served_regression` is not a variable: it
/// marks a state reached by a step that violates `NoServedRegressionStep`
/// (stateright has no action properties). It is `false` on every state
/// while the property holds, so it does not change the state count.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct State {
    pub mem: Func<Func<Val>>,
    pub status: Func<Status>,
    pub seeded: Func<Replicas>,
    pub known: Func<u8>,
    pub epoch: u8,
    pub collect_max: u8,
    pub ver_ctr: u8,
    pub wid_ctr: u8,
    pub pending: WriteSet<PendingW>,
    pub net: SortedSet<PushMsg, 8>,
    pub acked: WriteSet<AckedW>,
    pub evict_count: u8,
    pub served_regression: bool,
}

/// A set of replicas (`seeded[r]`), inline in the state.
pub type Replicas = SortedSet<Replica, 4>;
/// A set of writes (`pending`, `acked`), inline up to four.
pub type WriteSet<W> = SortedSet<W, 4>;
/// A set of keys (a chunk's keys, the keys a recovering replica got).
pub type KeySet = SortedSet<Key, 4>;
/// A set of messages in flight (the extensions' snapshots, acks, ...):
/// inline up to two, the common case; more spill to the heap.
pub type Msgs<M> = SortedSet<M, 2>;

impl State {
    /// `IsReady(r) == status[r] = "ready"`
    pub fn is_ready(&self, r: Replica) -> bool {
        self.status[r] == Status::Ready
    }

    /// HandoffV2's `CanSeed(r)`: r knows the current epoch -- a ready
    /// replica, or the coordinator announcing the epoch it chose. A
    /// recovering peer or a collecting coordinator may know nothing yet.
    pub fn can_seed(&self, r: Replica) -> bool {
        matches!(self.status[r], Status::Ready | Status::Announce)
    }

    /// `Holds(r, w)`: r's record for w's key dominates w (holds it or
    /// something newer).
    pub fn holds(&self, r: Replica, w: WriteRec) -> bool {
        match self.mem[r][w.key] {
            Val::NoVal(_) => false,
            Val::Rec(held) => !wins(w.rec, held),
        }
    }
}

/// `Wins(a, b)`: lexicographic (ep, ver) order, the one merge rule.
pub fn wins(a: Rec, b: Rec) -> bool {
    a.ep > b.ep || (a.ep == b.ep && a.ver > b.ver)
}

/// `MergeVal(a, b)`: keep the winner; `NoVal` loses to any record.
pub fn merge_val(a: Val, b: Val) -> Val {
    match (a, b) {
        (Val::NoVal(_), _) => b,
        (_, Val::NoVal(_)) => a,
        (Val::Rec(ra), Val::Rec(rb)) => {
            if wins(rb, ra) {
                b
            } else {
                a
            }
        }
    }
}

/// `MergeMem(m, n) == [k \in Keys |-> MergeVal(m[k], n[k])]`
pub fn merge_mem(m: &Func<Val>, n: &Func<Val>) -> Func<Val> {
    let mut merged = m.clone();
    for (k, v) in n.iter() {
        merged[k] = merge_val(m[k], *v);
    }
    merged
}

/// `MemEpMax(m)`: the highest epoch tag in a memory, 0 if it is empty.
pub fn mem_ep_max(m: &Func<Val>) -> u8 {
    m.values()
        .filter_map(|v| match v {
            Val::Rec(rec) => Some(rec.ep),
            Val::NoVal(_) => None,
        })
        .max()
        .unwrap_or(0)
}

impl TlaState for State {
    fn variables(&self) -> Vec<(&'static str, String)> {
        vec![
            ("mem", self.mem.to_string()),
            ("status", self.status.to_string()),
            ("seeded", self.seeded.map(|s| tla::set(s)).to_string()),
            ("known", self.known.to_string()),
            ("epoch", self.epoch.to_string()),
            ("collectMax", self.collect_max.to_string()),
            ("verCtr", self.ver_ctr.to_string()),
            ("widCtr", self.wid_ctr.to_string()),
            ("pending", tla::set(&self.pending)),
            ("net", tla::set(&self.net)),
            ("acked", tla::set(&self.acked)),
            ("evictCount", self.evict_count.to_string()),
        ]
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
