//! The lease lock a host holds per claim, as the model sees it: which
//! procedure holds it, and whether another one does.

use protocol::claim::{ActivatorStep, CompletionStep, ExecutingReaperStep, HeartbeatStep};

use super::state::ImplState;

/// A procedure, as the holder of a claim's lease lock.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Holder<'a> {
    Activator(&'a protocol::claim::OperationId),
    Heartbeat(&'a protocol::claim::ClaimId),
    Completion(&'a protocol::claim::ClaimId),
    ExecutingReaper,
}

/// Whether `next`, a procedure's next request, is a lease request on a
/// claim whose lease lock another procedure holds. A host holds a claim's
/// lock from a lease request to the durable request that records what it
/// found (`RecordLease`: the deadline granted or read; `RecordRejection`:
/// the lease lost, or compensated; `ReapExecuting`: the lease read;
/// `RecordCompletionRefusal`), so a procedure at such a step holds it, and
/// other lease requests on the claim wait. A completion holds it from its
/// lease read to the release of the lease (at `Commit` and `Release`).
pub(super) fn lease_lock_held_by_another(
    s: &ImplState,
    me: Holder<'_>,
    next: Option<protocol::claim::Request>,
) -> bool {
    let Some(protocol::claim::Request::Lease(request)) = next else {
        return false;
    };
    let claim = request.claim();
    let activators = s.clients.iter().filter_map(|c| c.run.as_ref()).filter(|run| {
        run.request.claim == *claim
            && matches!(run.step, ActivatorStep::RecordLease { .. } | ActivatorStep::RecordRejection { .. })
            && me != Holder::Activator(&run.operation)
    });
    let heartbeats = s.heartbeats.iter().flatten().filter(|h| {
        h.request.claim == *claim
            && matches!(h.step, HeartbeatStep::Record { .. })
            && me != Holder::Heartbeat(&h.request.claim)
    });
    let completions = s.completions.iter().flatten().filter(|c| {
        c.request.claim == *claim
            && matches!(
                c.step,
                CompletionStep::Commit { .. } | CompletionStep::RecordRefusal { .. } | CompletionStep::Release { .. }
            )
            && me != Holder::Completion(&c.request.claim)
    });
    let reaper = matches!(&s.executing_reaper.step, ExecutingReaperStep::Reap { claim: c, .. } if c == claim)
        && me != Holder::ExecutingReaper;
    activators.count() + heartbeats.count() + completions.count() + usize::from(reaper) > 0
}
