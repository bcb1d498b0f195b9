//! What a history is made of: operations as clients saw them, what they
//! asked, what they were told, and the values a key holds.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a key holds, as a client can see it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Val {
    /// Never written, or deleted.
    Absent,
    /// The value of the PUT with this write id.
    Put(String),
}

/// What a client asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Call {
    /// GET.
    Read,
    /// PUT (`Val::Put`) or DELETE (`Val::Absent`).
    Write(Val),
    /// A conditional PUT (`write` is `Val::Put`) or DELETE (`Val::Absent`):
    /// it writes only if the key holds `expect` -- `Val::Put(wid)` for
    /// `If-Match` with the ETag of that write, `Val::Absent` for
    /// `If-None-Match: *`.
    CondWrite { expect: Val, write: Val },
}

/// What the answer says about the operation's effect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// A read returned this.
    Read(Val),
    /// A write was acknowledged.
    Written,
    /// A conditional write was answered 412: it wrote nothing, and the key
    /// held this (the write of the ETag the answer carried, or nothing).
    PreconditionFailed(Val),
    /// Refused before it was accepted: no effect.
    Refused,
    /// A write that may or may not have taken effect; a read that failed.
    Ambiguous,
}

/// One operation as a client saw it. Times are since the start of the run,
/// taken just before the request was sent and just after the answer came.
/// Serializable, so that a recorded history can be checked again.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Op {
    pub client: usize,
    pub key: String,
    pub call: Call,
    pub invoked: Duration,
    pub returned: Duration,
    pub outcome: Outcome,
    /// The answer, for people: `200`, `404`, `503 not_committed`, ...
    pub answer: String,
    /// The `(epoch, version)` the answer showed: an acknowledged write's,
    /// the record a read returned, the one a 412's ETag named (`stamps`).
    /// Histories saved before it have none.
    #[serde(default)]
    pub stamp: Option<(u64, u64)>,
}
