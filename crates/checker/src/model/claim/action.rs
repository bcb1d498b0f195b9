//! The model's steps: one request of one procedure served by one store, a
//! client sending a new request, or a deadline passing.

use std::fmt::{self, Display};

use crate::mirror::remora::ModelValue;

/// Where a deadline that can pass is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Deadline {
    Reservation(ModelValue),
    ActivatorLock(ModelValue),
    Lease(ModelValue),
    /// The lease deadline the durable store recorded for the claim.
    RecordedLease(ModelValue),
    /// Only in the activator of this operation (a copy whose original the
    /// stores no longer hold).
    CarriedBy(ModelValue),
    /// Only in the heartbeat in flight for this claim.
    CarriedByHeartbeat(ModelValue),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The client of `op` sends activate(c, f, w): a new activator, whose
    /// first request (binding the id) is served in the same step.
    Activate(ModelValue, ModelValue, ModelValue, ModelValue),
    /// While the activate request of `op` is in flight, its client sends
    /// another request (c, f, w) under the same id: a one-step activator
    /// that is answered at the binding (409).
    Reuse(ModelValue, ModelValue, ModelValue, ModelValue),
    /// The activator of an operation sends the request of its current step.
    Activator(ModelValue, &'static str),
    /// The reaper sends the request of its current step.
    Reaper(&'static str),
    /// A worker sends a heartbeat for (c, f, w); its first request (the
    /// durable check) is served in the same step.
    Heartbeat(ModelValue, ModelValue, ModelValue),
    /// The heartbeat in flight for a claim sends the request of its step.
    HeartbeatStep(ModelValue, &'static str),
    /// Time passes a deadline.
    Elapse(Deadline),
    /// The coordination store loses the claim's lease record (a deploy, the
    /// loss of the replicas that held it).
    LoseLease(ModelValue),
}

impl Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Activate(op, c, fence, w) => write!(f, "Activate({op}, {c}, {fence}, {w})"),
            Action::Reuse(op, c, fence, w) => write!(f, "Reuse({op}, {c}, {fence}, {w})"),
            Action::Activator(op, step) => write!(f, "Activator({op}).{step}"),
            Action::Reaper(step) => write!(f, "Reaper.{step}"),
            Action::Heartbeat(c, fence, w) => write!(f, "Heartbeat({c}, {fence}, {w})"),
            Action::HeartbeatStep(c, step) => write!(f, "Heartbeat({c}).{step}"),
            Action::LoseLease(c) => write!(f, "LoseLease({c})"),
            Action::Elapse(Deadline::Reservation(c)) => write!(f, "Elapse(reservation of {c})"),
            Action::Elapse(Deadline::ActivatorLock(c)) => {
                write!(f, "Elapse(activator lock of {c})")
            }
            Action::Elapse(Deadline::Lease(c)) => write!(f, "Elapse(lease of {c})"),
            Action::Elapse(Deadline::RecordedLease(c)) => write!(f, "Elapse(recorded lease of {c})"),
            Action::Elapse(Deadline::CarriedByHeartbeat(c)) => {
                write!(f, "Elapse(deadline carried by the heartbeat of {c})")
            }
            Action::Elapse(Deadline::CarriedBy(op)) => {
                write!(f, "Elapse(deadline carried by {op})")
            }
        }
    }
}
