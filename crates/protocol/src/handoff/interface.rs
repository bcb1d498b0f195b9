//! The replica's vocabulary with its host: what goes in ([`Input`]), what
//! comes out ([`Output`]), the timers it arms, the answers to clients
//! ([`WriteReply`], [`Read`], [`List`]) and its status ([`Status`],
//! [`StatusReport`]).
//! Plain data: the behaviour is in [`replica`](super::replica) and the
//! roles.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::cond::Cond;
use super::ids::{ClientRequestId, Epoch, Generation, Key, Millis, ReplicaId, WriteId};
use super::message::Message;
use super::record::{Record, Stamp, Tag};

/// The most keys one page of a listing returns.
pub const MAX_LIST_LIMIT: usize = 1000;

/// Requests that wait for one write's answer at once (its first and the
/// retries that joined it under the same write id). A write that cannot
/// commit (no peer answers) is retried by its client, and each retry would
/// otherwise add one more for as long as it stays pending; beyond this a
/// retry is answered `Overloaded` (retry later) and joins nothing.
pub const MAX_JOINED: usize = 64;

/// What a host feeds in (serialized in a trace: [`trace`](super::trace)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// A message from another replica (already decoded).
    Message(Message),
    /// A client PUT, with the caller's write id; applied only if `cond`
    /// holds on the key's current record (none: always); the record expires
    /// `ttl_ms` after the coordinator issues the write (1 ms to
    /// [`MAX_TTL_MS`](super::cond::MAX_TTL_MS); none: never, which also
    /// clears an earlier write's expiry).
    Put { req: ClientRequestId, key: Key, value: Vec<u8>, wid: WriteId, cond: Option<Cond>, ttl_ms: Option<u64> },
    /// A client DELETE: a tombstone write, with the caller's write id;
    /// applied only if the key's current record has the tag `if_match`
    /// (none: always).
    Delete { req: ClientRequestId, key: Key, wid: WriteId, if_match: Option<Tag> },
    /// A client GET: answered ([`Output::ReadReply`]) once a peer confirmed
    /// that this coordinator instance is still current.
    Read { req: ClientRequestId, key: Key },
    /// A client listing: the keys with a visible value that start with
    /// `prefix` and come after `after`, in key order, at most `limit` (1 to
    /// [`MAX_LIST_LIMIT`]) of them, leaving out the keys that start with
    /// `hide` (a reserved prefix); answered ([`Output::ListReply`]) once a
    /// peer confirmed this instance, as reads are.
    List { req: ClientRequestId, prefix: String, after: Option<Key>, limit: usize, hide: Option<String> },
    /// A timer the replica armed is due.
    Timer(Timer),
}

/// What a host must do (serialized only for a trace's digest of a step's
/// outputs).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Output {
    /// Send a message to `message.to` (best effort: it may be lost).
    Send(Message),
    /// Answer the client write `req`.
    Reply { req: ClientRequestId, reply: WriteReply },
    /// Answer the client read `req`.
    ReadReply { req: ClientRequestId, read: Read },
    /// Answer the client listing `req`.
    ListReply { req: ClientRequestId, list: List },
    /// (Re)arm `timer` to fire at `at`, replacing its previous deadline.
    SetTimer { timer: Timer, at: Millis },
}

/// The replica's timers; each has at most one deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timer {
    /// Resend unanswered requests; run a pending internal step.
    Retry,
    /// Send keep-alives to both other replicas.
    Heartbeat,
    /// Anti-entropy: send this replica's digest (when ready) -- the
    /// coordinator to both peers, a peer to the coordinator.
    Gossip,
    /// The coordinator deletes the records whose expiry has passed
    /// (HandoffCond's `Expire`); armed for the earliest expiry.
    Expire,
}

/// The answer to a client write.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WriteReply {
    /// Held by at least two replicas (the coordinator and a peer): the
    /// record's tag, and when it expires (host ms; none: never). A retry of
    /// the same request (same write id, same fingerprint) gets this answer
    /// again while the record is the key's current one.
    Committed { key: Key, tag: Tag, expires_at: Option<Millis> },
    /// The condition does not hold on the key's latest committed record,
    /// as of a moment after a peer confirmed this instance's epoch; nothing
    /// was written, and nothing ever will be for this request. `current`:
    /// the tag of the key's visible record, if it has one (HTTP 412).
    PreconditionFailed { current: Option<Tag> },
    /// The write id names the key's current record, or a write still
    /// pending or waiting, made by a different request (other bytes, delete
    /// instead of put, another condition or time to live); nothing changed
    /// (HTTP 409).
    WriteIdReused,
    /// The coordinator is recovering (HTTP 503 + `Retry-After`).
    Unavailable { status: Status, retry_after_ms: u64 },
    /// Too many uncommitted writes, by count or bytes (HTTP 503 +
    /// `Retry-After`).
    Overloaded { retry_after_ms: u64 },
    /// The write would take the namespace beyond its memory budget; nothing
    /// changed (HTTP 507).
    Full { held: usize, needed: usize, budget: usize },
    /// This coordinator instance learned that a newer one exists; it never
    /// acknowledges a write again. The client retries and reaches the
    /// current instance.
    Superseded,
}

/// The answer to a client read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Read {
    /// The committed record for the key (a tombstone for a deleted key;
    /// its tag and `expires_at` are the record's), or `None` if the key was
    /// never written or its record has expired, as of a moment after a peer
    /// confirmed this instance's epoch.
    Committed(Option<Record>),
    /// The coordinator is recovering (HTTP 503 + `Retry-After`).
    Unavailable { status: Status, retry_after_ms: u64 },
    /// Too many reads waiting for a confirmation (HTTP 503 +
    /// `Retry-After`).
    Overloaded { retry_after_ms: u64 },
    /// A superseded coordinator instance.
    Superseded,
}

/// The answer to a client listing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum List {
    /// The keys, in key order, as of a moment after a peer confirmed this
    /// instance's epoch; `next`: the last key returned when more may follow
    /// (list again with `after` = it), none at the end.
    Page { entries: Vec<ListEntry>, next: Option<Key> },
    /// The coordinator is recovering (HTTP 503 + `Retry-After`).
    Unavailable { status: Status, retry_after_ms: u64 },
    /// Too many reads and listings waiting for a confirmation (HTTP 503 +
    /// `Retry-After`).
    Overloaded { retry_after_ms: u64 },
    /// A superseded coordinator instance.
    Superseded,
}

/// One key of a listing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ListEntry {
    pub key: Key,
    pub tag: Tag,
    /// Bytes of the value.
    pub bytes: usize,
    pub expires_at: Option<Millis>,
}

/// A replica's phase (the spec's `status[r]`, plus `Fenced`), as
/// [`Replica::phase`](super::replica::Replica::phase) returns it and
/// `GET /v1/{ns}/status` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ready,
    /// Coordinator recovery, phase 1.
    Collect,
    /// Coordinator recovery, phase 2.
    Announce,
    /// Peer recovery.
    Recovering,
    /// A coordinator instance that was superseded (a zombie that knows it).
    Fenced,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ready => "ready",
            Status::Collect => "collect",
            Status::Announce => "announce",
            Status::Recovering => "recovering",
            Status::Fenced => "fenced",
        })
    }
}

/// One replica's line of `GET /v1/{ns}/status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatusReport {
    pub replica: ReplicaId,
    /// `"coordinator"` or `"peer"`.
    pub role: &'static str,
    pub status: Status,
    /// The coordinator's epoch; for a peer, the coordinator epoch it knows.
    pub epoch: Epoch,
    /// The highest epoch heard of: a peer's `known`; the coordinator's
    /// `collectMax` from its last collect.
    pub known: Epoch,
    /// Keys with a live value.
    pub keys: usize,
    /// Tombstones held (not yet collected).
    pub tombstones: usize,
    /// Bytes of keys, values and tombstones held.
    pub bytes: usize,
    /// The namespace's memory budget.
    pub budget: usize,
    /// The tombstone floor.
    pub floor: Stamp,
    pub generation: Option<Generation>,
    /// Uncommitted writes, and their bytes (coordinator only).
    pub pending: usize,
    pub pending_bytes: usize,
}
