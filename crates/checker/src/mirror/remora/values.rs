//! The values the RemoraClaimActivation variables range over, as small
//! numbers: the elements of the constant sets as their positions in the
//! cfg's sets, the spec's strings as enums, and the model values that stand
//! alone (`NoResponse`, `Accepted`, `Rejected`) as indices in the model's
//! name table, [`Constants`], through which everything prints.

use std::hash::{Hash, Hasher};

use crate::compact::{Elem, Mv, Names, OrNone};
use crate::elem;
use crate::hash_as_byte;
use crate::spec::tla;

elem!(Claim, "Claims", "An element of `Claims`.");
elem!(Fence, "Fences", "An element of `Fences`.");
elem!(Worker, "Workers", "An element of `Workers`.");
elem!(Op, "Operations", "An element of `Operations`.");

/// The most claims or operations a cfg may have: functions over them are
/// arrays of this size.
pub const CAP: usize = 4;

/// A function over `Claims`.
pub type ClaimFunc<V> = crate::compact::Func<Claim, V, CAP>;
/// A function over `Operations`.
pub type OpFunc<V> = crate::compact::Func<Op, V, CAP>;

/// An element of `Workers \cup {NoWorker}` (ASSUME NoWorker \notin Workers).
pub type WorkerOrNone = OrNone<Worker>;

/// `NoWorker`.
pub const NO_WORKER: WorkerOrNone = OrNone::NONE;

/// An element of `DurableStates`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DurableState {
    #[default]
    Authorized,
    Executing,
    Reaped,
}

/// An element of `ActivationStages`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ActivationStage {
    #[default]
    Idle,
    Validated,
    LeaseCreated,
    Committed,
    Finished,
}

/// An element of `LockOwners == {NoOwner, "Activator", "Recovery"}`: the
/// model value `NoOwner` (never equal to a string) or one of the strings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockOwner {
    #[default]
    NoOwner,
    Activator,
    Recovery,
}

/// An element of `RequestKeys \cup {NoRequest}`: a triple
/// `Request(c, f, w) == <<c, f, w>>` or the model value `NoRequest` (which
/// the spec assumes is not a triple, and a model value never is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Request {
    #[default]
    NoRequest,
    Key(Claim, Fence, Worker),
}

hash_as_byte!(DurableState, ActivationStage, LockOwner);

/// A request hashes as one word.
impl Hash for Request {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u32(match *self {
            Request::NoRequest => 0,
            Request::Key(c, f, w) => 1 << 24 | u32::from(c.0) << 16 | u32::from(f.0) << 8 | u32::from(w.0),
        });
    }
}

impl Request {
    /// `r[1]`: the claim of a request triple.
    pub fn claim(&self) -> Option<Claim> {
        match self {
            Request::Key(c, _, _) => Some(*c),
            Request::NoRequest => None,
        }
    }
}

/// The constants of one cfg, and the names everything prints with.
#[derive(Debug)]
pub struct Constants {
    pub names: Names,
    pub claims: Vec<Claim>,
    pub fences: Vec<Fence>,
    pub workers: Vec<Worker>,
    pub operations: Vec<Op>,
    pub no_worker: Mv,
    pub no_owner: Mv,
    pub no_request: Mv,
    pub no_response: Mv,
    pub accepted: Mv,
    pub rejected: Mv,
}

impl Constants {
    pub fn name<E: Elem>(&self, e: E) -> &str {
        self.names.name(e)
    }

    pub fn worker_or_none(&self, w: WorkerOrNone) -> String {
        match w.get() {
            Some(w) => self.name(w).to_string(),
            None => self.names.model_value(self.no_worker).to_string(),
        }
    }

    pub fn lock_owner(&self, o: LockOwner) -> String {
        match o {
            LockOwner::NoOwner => self.names.model_value(self.no_owner).to_string(),
            LockOwner::Activator => tla::string("Activator"),
            LockOwner::Recovery => tla::string("Recovery"),
        }
    }

    pub fn request(&self, r: Request) -> String {
        match r {
            Request::Key(c, f, w) => format!("<<{}, {}, {}>>", self.name(c), self.name(f), self.name(w)),
            Request::NoRequest => self.names.model_value(self.no_request).to_string(),
        }
    }

    pub fn response(&self, r: Mv) -> String {
        self.names.model_value(r).to_string()
    }
}

/// The spec's string constants print as TLA+ strings (`"Authorized"`).
pub fn string_of(value: impl std::fmt::Debug) -> String {
    tla::string(&format!("{value:?}"))
}
