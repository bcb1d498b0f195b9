//! The model's steps: one request of one procedure served by one store, a
//! client sending a new request, a deadline passing, or the coordination
//! store losing a lease.

use protocol::claim::Outcome;

use super::names::Names;
use crate::mirror::remora::{Claim, Fence, Op, Worker};

/// Where a deadline that can pass is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Deadline {
    Reservation(Claim),
    ActivatorLock(Claim),
    Lease(Claim),
    /// The lease deadline the durable store recorded for the claim.
    RecordedLease(Claim),
    /// Only in the activator of this operation (a copy whose original the
    /// stores no longer hold).
    CarriedBy(Op),
    /// Only in the heartbeat in flight for this claim.
    CarriedByHeartbeat(Claim),
    /// Only in the completion in flight for this claim (the lease deadline
    /// its commit proves).
    CarriedByCompletion(Claim),
    /// Only in the executing reaper's pass (the lease it read).
    CarriedByExecutingReaper,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The client of `op` sends activate(c, f, w): a new activator, whose
    /// first request (binding the id) is served in the same step.
    Activate(Op, Claim, Fence, Worker),
    /// While the activate request of `op` is in flight, its client sends
    /// another request (c, f, w) under the same id: a one-step activator
    /// that is answered at the binding (409).
    Reuse(Op, Claim, Fence, Worker),
    /// The activator of an operation sends the request of its current step.
    Activator(Op, &'static str),
    /// The reaper sends the request of its current step.
    Reaper(&'static str),
    /// A worker sends a heartbeat for (c, f, w); its first request (the
    /// durable check) is served in the same step.
    Heartbeat(Claim, Fence, Worker),
    /// The heartbeat in flight for a claim sends the request of its step.
    HeartbeatStep(Claim, &'static str),
    /// Time passes a deadline.
    Elapse(Deadline),
    /// The coordination store loses the claim's lease record (a deploy, the
    /// loss of the replicas that held it).
    LoseLease(Claim),
    /// RemoraJobs only. The worker of (c, f, w) sends complete with an
    /// outcome: a new completion, whose first request (binding its id) is
    /// served in the same step.
    Complete(Claim, Fence, Worker, Outcome),
    /// The completion in flight for a claim sends the request of its step.
    Completion(Claim, &'static str),
    /// The reaper's pass over executing claims sends its next request.
    ExecutingReaper(&'static str),
    /// A client creates attempt (c, f, w): the durable store's `Authorize`
    /// (a retry of a failed or reaped claim; refused otherwise).
    Authorize(Claim, Fence, Worker),
}

impl Action {
    /// The kinds of step, for the coverage counts (a deadline per place):
    /// the first [`Action::LOSS_KINDS`] are those of a model checked against
    /// RemoraClaimLeaseLoss, the rest RemoraJobs' additions.
    pub const NAMES: [&'static str; 19] = [
        "Activate",
        "Reuse",
        "Activator",
        "Reaper",
        "Heartbeat",
        "HeartbeatStep",
        "Elapse(reservation)",
        "Elapse(activator lock)",
        "Elapse(lease)",
        "Elapse(recorded lease)",
        "Elapse(carried)",
        "Elapse(carried by heartbeat)",
        "LoseLease",
        "Complete",
        "Completion",
        "ExecutingReaper",
        "Authorize",
        "Elapse(carried by completion)",
        "Elapse(carried by executing reaper)",
    ];

    /// How many kinds a model checked against RemoraClaimLeaseLoss takes.
    pub const LOSS_KINDS: usize = 13;

    /// The position of this step's kind in [`Action::NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            Action::Activate(..) => 0,
            Action::Reuse(..) => 1,
            Action::Activator(..) => 2,
            Action::Reaper(_) => 3,
            Action::Heartbeat(..) => 4,
            Action::HeartbeatStep(..) => 5,
            Action::Elapse(Deadline::Reservation(_)) => 6,
            Action::Elapse(Deadline::ActivatorLock(_)) => 7,
            Action::Elapse(Deadline::Lease(_)) => 8,
            Action::Elapse(Deadline::RecordedLease(_)) => 9,
            Action::Elapse(Deadline::CarriedBy(_)) => 10,
            Action::Elapse(Deadline::CarriedByHeartbeat(_)) => 11,
            Action::LoseLease(_) => 12,
            Action::Complete(..) => 13,
            Action::Completion(..) => 14,
            Action::ExecutingReaper(_) => 15,
            Action::Authorize(..) => 16,
            Action::Elapse(Deadline::CarriedByCompletion(_)) => 17,
            Action::Elapse(Deadline::CarriedByExecutingReaper) => 18,
        }
    }

    /// The step, with the cfg's names.
    pub fn show(&self, names: &Names) -> String {
        let (claim, op) = (|c: Claim| names.k.name(c).to_string(), |o: Op| names.k.name(o).to_string());
        let (fence, worker) = (|f: Fence| names.k.name(f).to_string(), |w: Worker| names.k.name(w).to_string());
        match *self {
            Action::Activate(o, c, f, w) => format!("Activate({}, {}, {}, {})", op(o), claim(c), fence(f), worker(w)),
            Action::Reuse(o, c, f, w) => format!("Reuse({}, {}, {}, {})", op(o), claim(c), fence(f), worker(w)),
            Action::Activator(o, step) => format!("Activator({}).{step}", op(o)),
            Action::Reaper(step) => format!("Reaper.{step}"),
            Action::Heartbeat(c, f, w) => format!("Heartbeat({}, {}, {})", claim(c), fence(f), worker(w)),
            Action::HeartbeatStep(c, step) => format!("Heartbeat({}).{step}", claim(c)),
            Action::LoseLease(c) => format!("LoseLease({})", claim(c)),
            Action::Elapse(Deadline::Reservation(c)) => format!("Elapse(reservation of {})", claim(c)),
            Action::Elapse(Deadline::ActivatorLock(c)) => format!("Elapse(activator lock of {})", claim(c)),
            Action::Elapse(Deadline::Lease(c)) => format!("Elapse(lease of {})", claim(c)),
            Action::Elapse(Deadline::RecordedLease(c)) => format!("Elapse(recorded lease of {})", claim(c)),
            Action::Elapse(Deadline::CarriedByHeartbeat(c)) => {
                format!("Elapse(deadline carried by the heartbeat of {})", claim(c))
            }
            Action::Elapse(Deadline::CarriedBy(o)) => format!("Elapse(deadline carried by {})", op(o)),
            Action::Elapse(Deadline::CarriedByCompletion(c)) => {
                format!("Elapse(deadline carried by the completion of {})", claim(c))
            }
            Action::Elapse(Deadline::CarriedByExecutingReaper) => {
                "Elapse(deadline carried by the executing reaper)".to_string()
            }
            Action::Complete(c, f, w, o) => {
                format!("Complete({}, {}, {}, {})", claim(c), fence(f), worker(w), o.name())
            }
            Action::Completion(c, step) => format!("Completion({}).{step}", claim(c)),
            Action::ExecutingReaper(step) => format!("ExecutingReaper.{step}"),
            Action::Authorize(c, f, w) => format!("Authorize({}, {}, {})", claim(c), fence(f), worker(w)),
        }
    }
}
