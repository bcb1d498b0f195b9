//! The refinement mapping: an implementation state to the variables of
//! RemoraJobs: RemoraClaimActivation's eleven, RemoraClaimLeaseLoss's
//! `leaseLost`, and `outcome`, `usedFences` (checked against
//! RemoraClaimLeaseLoss, the model compares all but these two).
//!
//! Most variables are read off the stores. `durableState` is the row's
//! state, a completed attempt's (Succeeded, Failed, Dead with an outcome)
//! mapping to Executing with its `outcome` (the spec's Complete leaves the
//! claim Executing), Dead without one to Reaped. `usedFences` is history:
//! the fences of the attempts the durable store authorized. Five need an
//! argument:
//!
//! - `reservation`, `durableLock`: a reservation or activator lock whose
//!   deadline has passed is none (`NoWorker`, `NoOwner`).
//! - `lease`: the lease record of the claim's current attempt (a record of
//!   an earlier attempt is no lease: no request of the current attempt
//!   accepts it), read by the claim's durable state. *Authorized* and
//!   *Executing*: the lease in force (an
//!   expired record is none; before the commit an expired lease is as good
//!   as a lost one: nothing can commit on it, and the spec's LoseLease
//!   takes it away). *Reaped*: none while an
//!   activation that created or may have created the lease is still on its
//!   way to compensate (the spec's FinishRecovery clears the lease in the
//!   same step as it reaps; here the durable store reaps and the activation
//!   removes the lease later), otherwise the lease in force: a lease left
//!   behind once every activation is done is a lease the spec forbids.
//!   *Completed*: likewise, none while the completion that committed is on
//!   its way to release the lease (the spec's Complete releases it in the
//!   same step as it completes), otherwise the lease in force.
//! - `activationStage`: the furthest stage any activation of the claim's
//!   attempt has reached (the clients' history: an activator that answers
//!   is gone); an activation of an earlier attempt is not the current
//!   attempt's (AuthorizeRetry starts the new one Idle).
//! - `operationResponse`: a stored rejection; otherwise `Accepted` if the
//!   operation was answered Accepted and the claim's lease, in force when
//!   the answer was given, still is (the spec's ExpireLease withdraws
//!   acceptances with the lease, and Complete with the lease it releases). An acceptance given while no lease was in
//!   force stays `Accepted`: it was wrong when given, and
//!   AcceptedResponseIsExactReplay must see it. The answer is the one the
//!   activator decided at its lease check (its stage is then Finished);
//!   the durable recording of the lease that follows changes no answer.
//! - `leaseLost`: the claim executes, the coordination store has no record
//!   of its attempt's lease, and a deadline of that lease that has not
//!   passed is recorded in the durable store (`lease_until`) or is on its
//!   way there (a heartbeat or an activator about to record a granted
//!   deadline, the executing reaper about to record the one it read): the
//!   heartbeat may restore the lease.

use protocol::claim::{
    ActivationStage, ActivatorStep, ClaimRow, ClaimState, CompletionStep, DurableLock, HeartbeatStep, Lease,
    MemoryLeases, Outcome, lease::holder,
};

use super::model::ClaimImpl;
use super::state::{ImplState, View};
use super::time::{NOW, is_live, reaper_carries};
use crate::compact::Ctx;
use crate::mirror::remora::{self, ClaimFunc, Fence, LockOwner, NO_WORKER, OpFunc, Request, Worker};
use crate::mirror::remora_jobs::{self, JobsState};
use crate::mirror::remora_loss::{LossState, LossViolations};

impl ClaimImpl {
    pub(super) fn map(&self, s: &ImplState) -> JobsState {
        self.map_view(&s.view())
    }

    /// The mapping reads only the stores, the procedures in flight and the
    /// clients' history.
    pub(super) fn map_view(&self, v: &View<'_>) -> JobsState {
        let n = &self.names;
        let loss = self.map_loss(v);
        let outcome =
            ClaimFunc::new(&n.claims, |c| match v.durable.claims.get(&n.claim_id(c)).and_then(|row| row.outcome) {
                None => remora_jobs::Outcome::Pending,
                Some(Outcome::Succeeded) => remora_jobs::Outcome::Succeeded,
                Some(Outcome::Failed) => remora_jobs::Outcome::Failed,
            });
        let used_fences = ClaimFunc::new(&n.claims, |c| {
            n.claims.iter().position(|x| *x == c).and_then(|i| v.attempts.get(i).copied()).unwrap_or_default()
        });
        JobsState { loss, outcome, used_fences, step_violations: 0 }
    }

    fn map_loss(&self, v: &View<'_>) -> LossState {
        let base = self.map_base(v);
        let n = &self.names;
        let mut lease_lost = ClaimFunc::constant(&n.claims, false);
        for &c in &n.claims {
            let id = n.claim_id(c);
            let Some(row) = v.durable.claims.get(&id) else {
                continue;
            };
            let recorded = v.leases.leases.get(&id).is_some_and(|l| l.fence >= row.fence);
            let on_its_way = v.heartbeats.iter().flatten().filter(|h| h.request.claim == id).any(|h| match h.step {
                HeartbeatStep::Record { expires_at } => is_live(expires_at),
                _ => false,
            }) || v.clients.iter().filter_map(|cl| cl.run.as_ref()).any(|run| match &run.step {
                ActivatorStep::RecordLease { lease } | ActivatorStep::RecordGrant { lease } => {
                    run.request.claim == id && is_live(lease.expires_at)
                }
                _ => false,
            }) || reaper_carries(v.executing_reaper, row).is_some_and(is_live);
            lease_lost[c] =
                row.state == ClaimState::Executing && !recorded && (row.lease_until.is_some_and(is_live) || on_its_way);
        }
        LossState { base, lease_lost, step_violations: LossViolations::default() }
    }

    fn map_base(&self, v: &View<'_>) -> remora::State {
        let n = &self.names;
        let k = n.k;
        let durable = v.durable;
        // A claim without a row has no attempt: elements outside their sets
        // stand for that, and fail TypeOK.
        let mut m = remora::State {
            k: Ctx(k),
            durable_state: ClaimFunc::constant(&k.claims, remora::DurableState::Authorized),
            attempt_fence: ClaimFunc::constant(&k.claims, Fence(u8::MAX)),
            attempt_worker: ClaimFunc::constant(&k.claims, Worker(u8::MAX)),
            reservation: ClaimFunc::constant(&k.claims, NO_WORKER),
            lease: ClaimFunc::constant(&k.claims, NO_WORKER),
            activation_stage: ClaimFunc::constant(&k.claims, remora::ActivationStage::Idle),
            durable_lock: ClaimFunc::constant(&k.claims, LockOwner::NoOwner),
            operation_request: OpFunc::constant(&k.operations, Request::NoRequest),
            operation_response: OpFunc::constant(&k.operations, k.no_response),
            conflict_request: OpFunc::constant(&k.operations, Request::NoRequest),
            activation_effect_count: ClaimFunc::constant(&k.claims, 0),
            step_violations: remora::Violations::default(),
        };
        for &c in &k.claims {
            let id = n.claim_id(c);
            let Some(row) = durable.claims.get(&id) else {
                continue;
            };
            m.durable_state[c] = match (row.state, row.outcome) {
                (ClaimState::Authorized, _) => remora::DurableState::Authorized,
                // A completed attempt stays Executing in the spec's terms;
                // `outcome` says how it ended.
                (ClaimState::Executing | ClaimState::Succeeded | ClaimState::Failed, _) => {
                    remora::DurableState::Executing
                }
                (ClaimState::Dead, Some(_)) => remora::DurableState::Executing,
                (ClaimState::Reaped | ClaimState::Dead, _) => remora::DurableState::Reaped,
            };
            m.attempt_fence[c] = n.fence_value(row.fence);
            m.attempt_worker[c] = n.worker(&row.worker);
            if let Some(worker) = row.reserved_for(NOW) {
                m.reservation[c] = n.worker(worker).into();
            }
            m.durable_lock[c] = match row.live_lock(NOW) {
                None => LockOwner::NoOwner,
                Some(DurableLock::Activator { .. }) => LockOwner::Activator,
                Some(DurableLock::Recovery) => LockOwner::Recovery,
            };
            m.activation_effect_count[c] = u8::try_from(row.activations).unwrap_or(u8::MAX);

            let record = attempt_lease(v.leases, row);
            let owes_compensation = v.clients.iter().filter_map(|cl| cl.run.as_ref()).any(|run| {
                run.request.claim == id
                    && matches!(run.stage, ActivationStage::Validated | ActivationStage::LeaseCreated)
            });
            let owes_release = v.completions.iter().flatten().any(|done| {
                done.request.claim == id
                    && done.request.fence == row.fence
                    && matches!(done.step, CompletionStep::Release { .. })
            });
            let lease = match row.state {
                ClaimState::Authorized | ClaimState::Executing => record,
                ClaimState::Reaped | ClaimState::Dead if owes_compensation && row.outcome.is_none() => None,
                _ if owes_release && row.outcome.is_some() => None,
                ClaimState::Succeeded | ClaimState::Failed | ClaimState::Reaped | ClaimState::Dead => record,
            };
            if let Some(lease) = lease {
                m.lease[c] = n.worker(&lease.worker).into();
            }
        }
        let earlier_attempt = |request: &protocol::claim::RequestKey| {
            let Some(row) = durable.claims.get(&request.claim) else {
                return false;
            };
            let c = n.claim(&request.claim);
            let used = n.claims.iter().position(|x| *x == c).and_then(|i| v.attempts.get(i).copied());
            let f = n.fence_value(request.fence);
            request.fence != row.fence && n.fences.contains(&f) && used.is_some_and(|u| u.contains(f))
        };
        for (&op, client) in n.operations.iter().zip(v.clients) {
            // An id is scoped to its claim: the model's clients use each id
            // on one claim at a time (the cfg has one claim), so the id's
            // row is the one of the claim it was last sent for.
            let Some(row) = n.claims.iter().find_map(|&c| durable.operations.get(&(n.claim_id(c), n.operation_id(op))))
            else {
                continue;
            };
            let claim = n.claim(&row.request.claim);
            m.operation_request[op] = n.request(&row.request);
            if let Some(conflict) = &row.conflict {
                m.conflict_request[op] = n.request(conflict);
            }
            m.operation_response[op] = if row.rejection.is_some() {
                k.rejected
            } else if client.accepted == Some(false)
                || (client.accepted == Some(true) && lease_in_force(durable.claims.get(&row.request.claim), v.leases))
            {
                k.accepted
            } else {
                k.no_response
            };
            if n.claims.contains(&claim) && !earlier_attempt(&row.request) {
                let stage = &mut m.activation_stage[claim];
                *stage = stage_max(*stage, client.progress);
            }
        }
        m
    }
}

/// The lease in force of the row's current attempt, if any.
fn attempt_lease<'a>(leases: &'a MemoryLeases, row: &ClaimRow) -> Option<&'a Lease> {
    holder(leases.leases.get(&row.claim), NOW).filter(|l| l.fence == row.fence)
}

/// Whether an acceptance for the claim of `row` stands: its attempt's lease
/// is in force and the attempt has not completed (a completion releases
/// the lease, whatever the coordination store still shows).
pub(super) fn lease_in_force(row: Option<&ClaimRow>, leases: &MemoryLeases) -> bool {
    row.is_some_and(|row| row.outcome.is_none() && attempt_lease(leases, row).is_some())
}

fn stage_max(spec: remora::ActivationStage, progress: ActivationStage) -> remora::ActivationStage {
    use remora::ActivationStage as S;
    let ours = match progress {
        ActivationStage::Idle => S::Idle,
        ActivationStage::Validated => S::Validated,
        ActivationStage::LeaseCreated => S::LeaseCreated,
        ActivationStage::Committed => S::Committed,
        ActivationStage::Finished => S::Finished,
    };
    let rank = |s: S| [S::Idle, S::Validated, S::LeaseCreated, S::Committed, S::Finished].iter().position(|x| *x == s);
    if rank(ours) > rank(spec) { ours } else { spec }
}
