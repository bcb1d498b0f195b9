//! The values the Handoff variables range over, each printing itself in
//! TLA+ notation: model values, functions over model values, the record
//! types `Rec`, `PushMsg`, `PendingW`, `AckedW`, and replica statuses.

use std::fmt::{self, Display};
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use smallvec::SmallVec;

use crate::spec::tla;

/// A model value from the cfg (`r0`, `k1`, `NoVal`). Identity is its
/// position among the constant's elements in the cfg (so orders, and with
/// them the checker's exploration order, are the same on every run); the
/// name is carried as a number into the process's name table, only so that
/// states and actions print themselves. Four bytes, no pointer: a state
/// holds many.
#[derive(Clone, Copy)]
pub struct ModelValue {
    index: u8,
    name: u16,
}

impl ModelValue {
    pub(super) fn new(index: u8, name: &str) -> Self {
        ModelValue { index, name: intern(name) }
    }

    pub fn name(&self) -> &'static str {
        NAMES.lock().unwrap_or_else(PoisonError::into_inner).get(usize::from(self.name)).copied().unwrap_or("?")
    }
}

/// The names of every model value of every model built in this process.
/// Names live for the whole process because actions and states must print
/// themselves without the model at hand; interning bounds that to one copy
/// per distinct name however many models are built.
static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// The number of `name` in [`NAMES`]. A process that met more than 65,535
/// distinct names (no cfg comes near) prints the later ones as `?`.
fn intern(name: &str) -> u16 {
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = names.iter().position(|n| *n == name) {
        return u16::try_from(i).unwrap_or(u16::MAX);
    }
    names.push(Box::leak(name.into()));
    u16::try_from(names.len() - 1).unwrap_or(u16::MAX)
}

impl PartialEq for ModelValue {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}
impl Eq for ModelValue {}
impl Hash for ModelValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u8(self.index);
    }
}
impl PartialOrd for ModelValue {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ModelValue {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.index.cmp(&other.index)
    }
}
impl Display for ModelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
impl fmt::Debug for ModelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An element of `Replicas`.
pub type Replica = ModelValue;
/// An element of `Keys`.
pub type Key = ModelValue;

/// A TLA+ function whose domain is a set of model values, as its graph:
/// `[x \in D |-> v]`. Domains here have a handful of elements, so a lookup
/// is a short scan, and the graph lives inline in the state up to four
/// elements: a clone of a state is a copy, not a tree of allocations.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Func<V>(SmallVec<[(ModelValue, V); 4]>);

impl<V> Func<V> {
    /// `[x \in domain |-> f(x)]`
    pub fn new(domain: &[ModelValue], mut f: impl FnMut(ModelValue) -> V) -> Self {
        Func(domain.iter().map(|&x| (x, f(x))).collect())
    }

    pub fn iter(&self) -> impl Iterator<Item = (ModelValue, &V)> {
        self.0.iter().map(|(x, v)| (*x, v))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    /// `[x \in DOMAIN f |-> g(f[x])]`
    pub fn map<W>(&self, mut g: impl FnMut(&V) -> W) -> Func<W> {
        Func(self.0.iter().map(|(x, v)| (*x, g(v))).collect())
    }
}

impl<V> std::ops::Index<ModelValue> for Func<V> {
    type Output = V;
    fn index(&self, x: ModelValue) -> &V {
        self.0
            .iter()
            .find_map(|(y, v)| (*y == x).then_some(v))
            .unwrap_or_else(|| panic!("{x} is not in the function's domain"))
    }
}

impl<V> std::ops::IndexMut<ModelValue> for Func<V> {
    fn index_mut(&mut self, x: ModelValue) -> &mut V {
        self.0
            .iter_mut()
            .find_map(|(y, v)| (*y == x).then_some(v))
            .unwrap_or_else(|| panic!("{x} is not in the function's domain"))
    }
}

impl<V: Display> Display for Func<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&tla::func(self.0.iter().map(|(x, v)| (x, v))))
    }
}

/// `Rec == [ep: 1..MaxEpoch, ver: 1..MaxWrites, wid: 1..MaxWrites]`
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Rec {
    pub ep: u8,
    pub ver: u8,
    pub wid: u8,
}

impl Display for Rec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[ep |-> {}, ver |-> {}, wid |-> {}]", self.ep, self.ver, self.wid)
    }
}

/// `mem[r][k]`: a record, or the model value `NoVal`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Val {
    NoVal(ModelValue),
    Rec(Rec),
}

impl Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::NoVal(no_val) => no_val.fmt(f),
            Val::Rec(rec) => rec.fmt(f),
        }
    }
}

/// `PushMsg == [dst: Peers, key: Keys, ep, ver, wid]`
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct PushMsg {
    pub dst: Replica,
    pub key: Key,
    pub ep: u8,
    pub ver: u8,
    pub wid: u8,
}

/// `PendingW == [key: Keys, ep, ver, wid]`
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct PendingW {
    pub key: Key,
    pub ep: u8,
    pub ver: u8,
    pub wid: u8,
}

/// `AckedW == [key: Keys, ep, ver, wid, doomed: BOOLEAN]`
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct AckedW {
    pub key: Key,
    pub ep: u8,
    pub ver: u8,
    pub wid: u8,
    pub doomed: bool,
}

/// A write's identity wherever it lives, normalized as the spec's
/// `Universe` does: `[key, ep, ver, wid]`. Also what `Holds` compares.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct WriteRec {
    pub key: Key,
    pub rec: Rec,
}

impl PushMsg {
    pub fn write(&self) -> WriteRec {
        WriteRec::new(self.key, self.ep, self.ver, self.wid)
    }
}
impl PendingW {
    pub fn write(&self) -> WriteRec {
        WriteRec::new(self.key, self.ep, self.ver, self.wid)
    }
}
impl AckedW {
    pub fn write(&self) -> WriteRec {
        WriteRec::new(self.key, self.ep, self.ver, self.wid)
    }
}
impl WriteRec {
    pub fn new(key: Key, ep: u8, ver: u8, wid: u8) -> Self {
        WriteRec { key, rec: Rec { ep, ver, wid } }
    }
}

impl Display for PushMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PushMsg { dst, key, ep, ver, wid } = self;
        write!(f, "[dst |-> {dst}, key |-> {key}, ep |-> {ep}, ver |-> {ver}, wid |-> {wid}]")
    }
}
impl Display for PendingW {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PendingW { key, ep, ver, wid } = self;
        write!(f, "[key |-> {key}, ep |-> {ep}, ver |-> {ver}, wid |-> {wid}]")
    }
}
impl Display for AckedW {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let AckedW { key, ep, ver, wid, doomed } = self;
        let doomed = if *doomed { "TRUE" } else { "FALSE" };
        write!(f, "[key |-> {key}, ep |-> {ep}, ver |-> {ver}, wid |-> {wid}, doomed |-> {doomed}]")
    }
}

/// `status[r]`: a peer is "ready" or "recovering"; the coordinator is
/// "ready", "collect" or "announce".
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Status {
    Ready,
    Recovering,
    Collect,
    Announce,
}

impl Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&tla::string(match self {
            Status::Ready => "ready",
            Status::Recovering => "recovering",
            Status::Collect => "collect",
            Status::Announce => "announce",
        }))
    }
}
