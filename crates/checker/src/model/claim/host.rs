//! The host: serves a procedure's requests with the real store code, at the
//! model's `now`, and injects the mutations. The procedures are run by the
//! protocol's own driver (`protocol::claim::procedure::step`), one request
//! per model step.

use protocol::claim::procedure::{self, Host};
use protocol::claim::{
    ClaimRow, ClaimState, DurableLock, DurableReply, DurableRequest, Lease, LeaseReply, LeaseRequest, Millis,
    Procedure, ProcedureError, Reply, Request, RequestKey, durable, lease,
};

use super::model::{ClaimImpl, PROCEDURES_TAKE_EVERY_REPLY};
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

/// The stores of one model state, serving the requests of one procedure.
struct ModelHost<'a> {
    model: &'a ClaimImpl,
    state: &'a mut ImplState,
    origin: Origin<'a>,
}

impl Host for ModelHost<'_> {
    type Error = ProcedureError;

    fn now(&self) -> Millis {
        NOW
    }

    async fn serve(&mut self, request: Request) -> Result<Reply, ProcedureError> {
        Ok(self.model.serve(self.state, &request, self.origin))
    }

    /// Never called: the model takes one step at a time (`procedure::step`),
    /// and a procedure that waits asks again at its next step, whichever
    /// other steps come first.
    async fn pause(&mut self) -> Result<(), ProcedureError> {
        Ok(())
    }
}

impl ClaimImpl {
    /// Serves the next request of `procedure`, sent as `origin`. A reply it
    /// cannot take (or none to take) is a violation, never skipped.
    pub(super) fn step<P: Procedure>(&self, s: &mut ImplState, procedure: &mut P, origin: Origin<'_>) {
        let mut host = ModelHost { model: self, state: s, origin };
        let served = procedure::ready(procedure::step(procedure, &mut host));
        if !matches!(served, Some(Ok(_))) {
            s.step_violations.push(PROCEDURES_TAKE_EVERY_REPLY);
        }
    }

    fn serve(&self, s: &mut ImplState, request: &Request, origin: Origin<'_>) -> Reply {
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
                Reply::Lease(serve_lease(s, renew, 0))
            }
            (Some(RestoreWithoutRecord), Origin::Heartbeat, Request::Lease(restore @ LeaseRequest::Restore { .. })) => {
                let authority = s
                    .durable
                    .claims
                    .get(restore.claim())
                    .map(|row| ClaimRow { lease_until: Some(Millis::MAX), ..row.clone() });
                Reply::Lease(lease::apply(&mut s.leases, restore, authority.as_ref(), NOW))
            }
            (
                Some(RestoreForStranger),
                Origin::Heartbeat,
                Request::Durable(DurableRequest::CheckExecuting { request }),
            ) => match s.durable.claims.get(&request.claim) {
                Some(row) if row.state == ClaimState::Executing => Reply::Durable(DurableReply::Executing),
                _ => Reply::Durable(durable::apply(
                    &mut s.durable,
                    &DurableRequest::CheckExecuting { request: request.clone() },
                    NOW,
                )),
            },
            (
                Some(RestoreForStranger),
                Origin::Heartbeat,
                Request::Lease(restore @ LeaseRequest::Restore { worker, .. }),
            ) => {
                let authority =
                    s.durable.claims.get(restore.claim()).map(|row| ClaimRow { worker: worker.clone(), ..row.clone() });
                Reply::Lease(lease::apply(&mut s.leases, restore, authority.as_ref(), NOW))
            }
            (Some(ReaperIgnoresReservation), Origin::Reaper, Request::Durable(r)) => {
                Reply::Durable(durable::apply(&mut s.durable, r, Millis::MAX))
            }
            (_, _, Request::Durable(r)) => Reply::Durable(durable::apply(&mut s.durable, r, NOW)),
            (_, _, Request::Lease(r)) => Reply::Lease(serve_lease(s, r, NOW)),
        }
    }
}

/// Serves a lease request with the claim's durable row, read in the same
/// step (as the claim object does).
fn serve_lease(s: &mut ImplState, request: &LeaseRequest, now: Millis) -> LeaseReply {
    let authority = s.durable.claims.get(request.claim()).cloned();
    lease::apply(&mut s.leases, request, authority.as_ref(), now)
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
