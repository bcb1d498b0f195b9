//! The values the RemoraClaimActivation variables range over, each printing
//! itself in TLA+ notation.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Display};
use std::ops::{Index, IndexMut};
use std::sync::{Mutex, PoisonError};

use crate::spec::tla;

/// A TLC model value (`c1`, `w2`, `NoWorker`). As in TLC it equals only
/// itself, so its name is its identity: a cfg that gives two constants the
/// same model value (say `NoResponse = Accepted`) gets the same collision
/// the spec would see.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ModelValue(&'static str);

impl ModelValue {
    /// The model value called `name`.
    pub fn new(name: &str) -> Self {
        ModelValue(intern(name))
    }
}

/// States and actions must print themselves without the model at hand, so
/// names live for the whole process; interning keeps one copy per distinct
/// name however many models are built.
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(interned) = names.get(name) {
        return interned;
    }
    let leaked: &'static str = Box::leak(name.into());
    names.insert(leaked);
    leaked
}

impl Display for ModelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for ModelValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// A TLA+ function whose domain is one of the constant sets. Indexing
/// outside the domain is a bug in the mirror, so it panics.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Func<V>(BTreeMap<ModelValue, V>);

impl<V: Clone> Func<V> {
    /// `[x \in domain |-> value]`
    pub fn constant(domain: &[ModelValue], value: V) -> Self {
        Func(domain.iter().map(|x| (*x, value.clone())).collect())
    }

    /// Every function in `[domain -> range]`, in a fixed order.
    pub fn all(domain: &[ModelValue], range: &[V]) -> Vec<Self> {
        domain.iter().fold(vec![Func(BTreeMap::new())], |partial, x| {
            partial
                .iter()
                .flat_map(|f| {
                    range.iter().map(|v| {
                        let mut g = f.clone();
                        g.0.insert(*x, v.clone());
                        g
                    })
                })
                .collect()
        })
    }

    /// The pairs `x |-> f[x]`, in domain order.
    pub fn iter(&self) -> impl Iterator<Item = (&ModelValue, &V)> {
        self.0.iter()
    }

    /// `self \in [domain -> range]`, with `range` as a membership test.
    pub fn is_in(&self, domain: &[ModelValue], range: impl Fn(&V) -> bool) -> bool {
        self.0.len() == domain.len() && domain.iter().all(|x| self.0.get(x).is_some_and(&range))
    }
}

impl<V> Index<&ModelValue> for Func<V> {
    type Output = V;
    fn index(&self, x: &ModelValue) -> &V {
        self.0.get(x).unwrap_or_else(|| panic!("{x} is outside the function's domain"))
    }
}

impl<V> IndexMut<&ModelValue> for Func<V> {
    fn index_mut(&mut self, x: &ModelValue) -> &mut V {
        self.0.get_mut(x).unwrap_or_else(|| panic!("{x} is outside the function's domain"))
    }
}

impl<V: Display> Display for Func<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&tla::func(&self.0))
    }
}

/// An element of `DurableStates`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DurableState {
    Authorized,
    Executing,
    Reaped,
}

/// An element of `ActivationStages`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActivationStage {
    Idle,
    Validated,
    LeaseCreated,
    Committed,
    Finished,
}

/// An element of `LockOwners == {NoOwner, Activator, Recovery}`: the model
/// value `NoOwner` or one of the two strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockOwner {
    NoOwner(ModelValue),
    Activator,
    Recovery,
}

/// An element of `RequestKeys \cup {NoRequest}`: a triple
/// `Request(c, f, w) == <<c, f, w>>` or the model value `NoRequest` (which
/// the spec assumes is not a triple, and a model value never is).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    Key(ModelValue, ModelValue, ModelValue),
    NoRequest(ModelValue),
}

impl Request {
    /// `r[1]`: the claim of a request triple.
    pub fn claim(&self) -> Option<ModelValue> {
        match self {
            Request::Key(c, _, _) => Some(*c),
            Request::NoRequest(_) => None,
        }
    }
}

/// The spec's string constants print as TLA+ strings (`"Authorized"`).
macro_rules! display_as_tla_string {
    ($($t:ty),*) => {$(
        impl Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&tla::string(&format!("{self:?}")))
            }
        }
    )*};
}
display_as_tla_string!(DurableState, ActivationStage);

impl Display for LockOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockOwner::NoOwner(m) => write!(f, "{m}"),
            LockOwner::Activator => f.write_str(&tla::string("Activator")),
            LockOwner::Recovery => f.write_str(&tla::string("Recovery")),
        }
    }
}

impl Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Key(c, fence, w) => write!(f, "<<{c}, {fence}, {w}>>"),
            Request::NoRequest(m) => write!(f, "{m}"),
        }
    }
}
