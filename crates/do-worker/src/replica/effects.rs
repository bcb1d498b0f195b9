//! What the replica's state asks its shell to do: every piece of I/O, every
//! timer and every task. The state queues them while it handles an entry
//! point; the shell performs them, in order, once the state's borrow has
//! ended (quinn's `poll_*`, as one queue).

use futures_channel::oneshot;

use super::client::Answer;
use crate::hop::{Link, Via};
use crate::names::ReplicaName;

/// One effect.
pub(super) enum Effect {
    /// Carry `body` (an encoded batch) to replica `to` on `lane`; report
    /// with `Shell::delivered`.
    Deliver(Delivery),
    /// Open the socket `id` of the link to `to`; report with
    /// `Shell::socket_opened`, then its answers and end.
    OpenSocket { to: ReplicaName, id: u64, link: std::rc::Rc<Link> },
    /// Call `Shell::woke(token)` at `at` (unix ms).
    WakeAt { token: u64, at: u64 },
    /// Call `Shell::hold_ended(to, lane)` at `at`.
    HoldUntil { to: ReplicaName, lane: usize, at: u64 },
    /// Answer a waiting client request.
    Answer { tx: oneshot::Sender<Answer>, answer: Answer },
    /// Wake the client requests that waited for the coordinator to be ready.
    Ready(Vec<oneshot::Sender<()>>),
    /// Append rows (encoded `protocol::handoff::trace::Row`s) to the trace.
    Record(Vec<Vec<u8>>),
    /// Reset this object through the runtime: a superseded coordinator
    /// ends its instance (the state dropped its records already).
    Reset { why: &'static str },
    /// Renew the replica's state (`ReplicaState::renew`): its memory goes.
    Renew { why: &'static str },
    /// The idle expiry passed: mark the namespace idle, stop the peers,
    /// then reset this replica; report a failure with `Shell::stop_failed`.
    StopNamespace { ns: String },
}

/// A batch on its way to another replica.
pub(super) struct Delivery {
    pub to: ReplicaName,
    pub lane: usize,
    pub body: Vec<u8>,
    pub via: Via,
}
