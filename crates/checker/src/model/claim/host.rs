//! The host: serves a procedure's requests with the real store code, at the
//! model's `now`, and injects the mutations. The procedures are run by the
//! protocol's own driver (`protocol::claim::procedure::step`), one request
//! per model step.

use protocol::claim::procedure::{self, Host};
use protocol::claim::{
    ClaimId, ClaimRow, ClaimState, DurableLock, DurableReply, DurableRequest, Lease, LeaseReply, LeaseRequest, Millis,
    Procedure, ProcedureError, Progress, Reply, Request, RequestKey, durable, lease,
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
    /// The completion serving this request key.
    Completion(&'a RequestKey),
    ExecutingReaper,
    /// A client's create (`Authorize`).
    Client,
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
    /// Serves the next request of `procedure`, sent as `origin`: whether it
    /// advanced or waits. A reply it cannot take (or none to take) is a
    /// violation, never skipped.
    pub(super) fn step<P: Procedure>(
        &self,
        s: &mut ImplState,
        procedure: &mut P,
        origin: Origin<'_>,
    ) -> Option<Progress> {
        let mut host = ModelHost { model: self, state: s, origin };
        match procedure::ready(procedure::step(procedure, &mut host)) {
            Some(Ok(procedure::Step::Served(progress))) => Some(progress),
            Some(Ok(procedure::Step::Done)) => None,
            _ => {
                s.step_violations.push(PROCEDURES_TAKE_EVERY_REPLY);
                None
            }
        }
    }

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
            (Some(ReaperReapsCompleted), Origin::ExecutingReaper, Request::Durable(r)) => {
                Reply::Durable(as_if_executing(s, r))
            }
            (Some(RetryBeyondLimit), Origin::Client, Request::Durable(create @ DurableRequest::Authorize { .. })) => {
                Reply::Durable(with_one_more_attempt(s, create))
            }
            (Some(CompleteWithoutLeaseCheck), Origin::Completion(key), Request::Lease(LeaseRequest::Holder { .. })) => {
                Reply::Lease(LeaseReply::Holder {
                    lease: Some(Lease { fence: key.fence, worker: key.worker.clone(), expires_at: Millis::MAX }),
                })
            }
            (
                Some(CompleteWithoutLeaseCheck | CommitIgnoresRecordedDeadline),
                Origin::Completion(_),
                Request::Durable(commit @ DurableRequest::CommitCompletion { .. }),
            ) => Reply::Durable(commit_as_if_recorded(s, commit)),
            (Some(CompletionKeepsLease), Origin::Completion(_), Request::Lease(LeaseRequest::Delete { .. })) => {
                Reply::Lease(LeaseReply::Deleted)
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

/// Serves a completion's commit as if the durable store had recorded a
/// lease deadline that never passes; the row is left as it was unless the
/// commit goes through (which drops the record).
fn commit_as_if_recorded(s: &mut ImplState, commit: &DurableRequest) -> DurableReply {
    let DurableRequest::CommitCompletion { claim, .. } = commit else {
        return durable::apply(&mut s.durable, commit, NOW);
    };
    let Some(row) = s.durable.claims.get_mut(claim) else {
        return durable::apply(&mut s.durable, commit, NOW);
    };
    let real = row.lease_until.replace(Millis::MAX);
    let reply = durable::apply(&mut s.durable, commit, NOW);
    if let Some(row) = s.durable.claims.get_mut(claim)
        && row.lease_until == Some(Millis::MAX)
    {
        row.lease_until = real;
    }
    reply
}

/// Serves `request` as if every completed attempt still executed: the
/// completed rows are shown Executing, and keep that state only if the
/// request reaped them.
fn as_if_executing(s: &mut ImplState, request: &DurableRequest) -> DurableReply {
    let completed: Vec<(ClaimId, ClaimState)> = s
        .durable
        .claims
        .values()
        .filter(|row| row.outcome.is_some())
        .map(|row| (row.claim.clone(), row.state))
        .collect();
    for (claim, _) in &completed {
        if let Some(row) = s.durable.claims.get_mut(claim) {
            row.state = ClaimState::Executing;
        }
    }
    let reply = durable::apply(&mut s.durable, request, NOW);
    for (claim, state) in completed {
        if let Some(row) = s.durable.claims.get_mut(&claim)
            && row.state == ClaimState::Executing
        {
            row.state = state;
        }
    }
    reply
}

/// Serves a create as if the claim allowed one attempt more than it does
/// (a dead claim is shown failed, or reaped); the row is left as it was
/// unless the create goes through.
fn with_one_more_attempt(s: &mut ImplState, create: &DurableRequest) -> DurableReply {
    let DurableRequest::Authorize { claim, .. } = create else {
        return durable::apply(&mut s.durable, create, NOW);
    };
    let Some(real) = s.durable.claims.get(claim).cloned() else {
        return durable::apply(&mut s.durable, create, NOW);
    };
    let state = match (real.state, real.outcome) {
        (ClaimState::Dead, Some(_)) => ClaimState::Failed,
        (ClaimState::Dead, None) => ClaimState::Reaped,
        (state, _) => state,
    };
    s.durable.claims.insert(claim.clone(), ClaimRow { state, max_attempts: real.max_attempts + 1, ..real.clone() });
    let reply = durable::apply(&mut s.durable, create, NOW);
    if !matches!(reply, DurableReply::Authorized { .. }) {
        s.durable.claims.insert(claim.clone(), real);
    }
    reply
}
