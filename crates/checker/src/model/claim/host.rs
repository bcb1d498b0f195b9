//! The host: serves a procedure's request with the real store code, at the
//! model's `now`, and injects the mutations.

use protocol::claim::{
    DurableLock, DurableReply, DurableRequest, Lease, LeaseReply, LeaseRequest, Millis, Reply, Request, RequestKey,
    durable, lease,
};

use super::ClaimImpl;
use super::mutation::Mutation;
use super::state::ImplState;
use super::time::NOW;

/// Who sends a request.
#[derive(Clone, Copy)]
pub enum Origin<'a> {
    /// The activator serving this request key.
    Activator(&'a RequestKey),
    Reaper,
    Heartbeat,
}

impl ClaimImpl {
    pub(super) fn serve(&self, s: &mut ImplState, request: &Request, origin: Origin<'_>) -> Reply {
        use Mutation::*;
        match (self.mutation, origin, request) {
            (
                Some(CommitWithoutLock),
                Origin::Activator(_),
                Request::Durable(DurableRequest::AcquireActivationLock { .. }),
            ) => Reply::Durable(DurableReply::LockAcquired),
            (
                Some(CommitWithoutLock),
                Origin::Activator(_),
                Request::Durable(commit @ DurableRequest::CommitActivation { .. }),
            ) => Reply::Durable(commit_as_if_locked(s, commit)),
            (Some(ReplayWithoutLeaseCheck), Origin::Activator(key), Request::Lease(LeaseRequest::Holder { .. })) => {
                Reply::Lease(LeaseReply::Holder {
                    lease: Some(Lease { fence: key.fence, worker: key.worker.clone(), expires_at: Millis::MAX }),
                })
            }
            (Some(CompensationSkipped), Origin::Activator(_), Request::Lease(LeaseRequest::Delete { .. })) => {
                Reply::Lease(LeaseReply::Deleted)
            }
            (Some(RenewalRevivesLease), Origin::Heartbeat, Request::Lease(renew @ LeaseRequest::Renew { .. })) => {
                Reply::Lease(lease::apply(&mut s.leases, renew, 0))
            }
            (Some(ReaperIgnoresReservation), Origin::Reaper, Request::Durable(r)) => {
                Reply::Durable(durable::apply(&mut s.durable, r, Millis::MAX))
            }
            (_, _, Request::Durable(r)) => Reply::Durable(durable::apply(&mut s.durable, r, NOW)),
            (_, _, Request::Lease(r)) => Reply::Lease(lease::apply(&mut s.leases, r, NOW)),
        }
    }
}

/// Serves a commit as if the committing activation held the durable lock;
/// the row's real lock is left as it was unless the commit goes through
/// (which releases it).
fn commit_as_if_locked(s: &mut ImplState, commit: &DurableRequest) -> DurableReply {
    let DurableRequest::CommitActivation { claim, operation, .. } = commit else {
        return durable::apply(&mut s.durable, commit, NOW);
    };
    let Some(row) = s.durable.claims.get_mut(claim) else {
        return durable::apply(&mut s.durable, commit, NOW);
    };
    let real = row.lock.replace(DurableLock::Activator { operation: operation.clone(), expires_at: Millis::MAX });
    let reply = durable::apply(&mut s.durable, commit, NOW);
    if reply != DurableReply::Committed
        && let Some(row) = s.durable.claims.get_mut(claim)
    {
        row.lock = real;
    }
    reply
}
