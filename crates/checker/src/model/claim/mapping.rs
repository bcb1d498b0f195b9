//! The refinement mapping: an implementation state to the variables of
//! RemoraClaimLeaseLoss: RemoraClaimActivation's eleven, and `leaseLost`.
//!
//! Most variables are read off the stores. Five need an argument:
//!
//! - `reservation`, `durableLock`: a reservation or activator lock whose
//!   deadline has passed is none (`NoWorker`, `NoOwner`).
//! - `lease`: the lease record of the claim's attempt, read by the claim's
//!   durable state. *Authorized* and *Executing*: the lease in force (an
//!   expired record is none; before the commit an expired lease is as good
//!   as a lost one: nothing can commit on it, and the spec's LoseLease
//!   takes it away). *Reaped*: none while an
//!   activation that created or may have created the lease is still on its
//!   way to compensate (the spec's FinishRecovery clears the lease in the
//!   same step as it reaps; here the durable store reaps and the activation
//!   removes the lease later), otherwise the lease in force: a lease left
//!   behind once every activation is done is a lease the spec forbids.
//! - `activationStage`: the furthest stage any activation of the claim has
//!   reached (the clients' history: an activator that answers is gone).
//! - `operationResponse`: a stored rejection; otherwise `Accepted` if the
//!   operation was answered Accepted and the claim's lease, in force when
//!   the answer was given, still is (the spec's ExpireLease withdraws
//!   acceptances with the lease). An acceptance given while no lease was in
//!   force stays `Accepted`: it was wrong when given, and
//!   AcceptedResponseIsExactReplay must see it. The answer is the one the
//!   activator decided at its lease check (its stage is then Finished);
//!   the durable recording of the lease that follows changes no answer.
//! - `leaseLost`: the claim executes, the coordination store has no record
//!   of its attempt's lease, and a deadline of that lease that has not
//!   passed is recorded in the durable store (`lease_until`) or is on its
//!   way there (a heartbeat or an activator about to record a granted
//!   deadline): the heartbeat may restore the lease.

use protocol::claim::{
    ActivationStage, ActivatorStep, ClaimId, ClaimState, DurableLock, Heartbeat, HeartbeatStep, MemoryDurable,
    MemoryLeases, lease::holder,
};

use super::model::ClaimImpl;
use super::state::{Client, ImplState};
use super::time::{NOW, is_live};
use crate::compact::Ctx;
use crate::mirror::remora::{self, ClaimFunc, Fence, LockOwner, NO_WORKER, OpFunc, Request, Worker};
use crate::mirror::remora_loss::{LossState, LossViolations};

impl ClaimImpl {
    pub(super) fn map(&self, s: &ImplState) -> LossState {
        self.map_stores(&s.durable, &s.leases, &s.clients, &s.heartbeats)
    }

    /// The mapping reads only the stores and the procedures in flight.
    pub(super) fn map_stores(
        &self,
        durable: &MemoryDurable,
        leases: &MemoryLeases,
        clients: &[Client],
        heartbeats: &[Option<Heartbeat>],
    ) -> LossState {
        let base = self.map_base(durable, leases, clients);
        let n = &self.names;
        let mut lease_lost = ClaimFunc::constant(&n.claims, false);
        for &c in &n.claims {
            let id = n.claim_id(c);
            let Some(row) = durable.claims.get(&id) else {
                continue;
            };
            let recorded = leases.leases.get(&id).is_some_and(|l| l.fence >= row.fence);
            let on_its_way = heartbeats.iter().flatten().filter(|h| h.request.claim == id).any(|h| match h.step {
                HeartbeatStep::Record { expires_at } => is_live(expires_at),
                _ => false,
            }) || clients.iter().filter_map(|cl| cl.run.as_ref()).any(|run| match &run.step {
                ActivatorStep::RecordLease { lease } => run.request.claim == id && is_live(lease.expires_at),
                _ => false,
            });
            lease_lost[c] =
                row.state == ClaimState::Executing && !recorded && (row.lease_until.is_some_and(is_live) || on_its_way);
        }
        LossState { base, lease_lost, step_violations: LossViolations::default() }
    }

    fn map_base(&self, durable: &MemoryDurable, leases: &MemoryLeases, clients: &[Client]) -> remora::State {
        let n = &self.names;
        let k = n.k;
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
            m.durable_state[c] = match row.state {
                ClaimState::Authorized => remora::DurableState::Authorized,
                ClaimState::Executing => remora::DurableState::Executing,
                ClaimState::Reaped => remora::DurableState::Reaped,
                // RemoraClaimActivation has no completion and no attempt
                // limit, and this model takes neither step (no completion;
                // its claims allow the default 3 attempts and have one):
                // these states are not reached here. The completion and
                // dead-letter extension maps them (issue 32, item 7).
                ClaimState::Succeeded | ClaimState::Failed => remora::DurableState::Executing,
                ClaimState::Dead => remora::DurableState::Reaped,
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

            let record = leases.leases.get(&id);
            let owes_compensation = clients.iter().filter_map(|cl| cl.run.as_ref()).any(|run| {
                run.request.claim == id
                    && matches!(run.stage, ActivationStage::Validated | ActivationStage::LeaseCreated)
            });
            let lease = match row.state {
                ClaimState::Authorized | ClaimState::Executing => holder(record, NOW),
                ClaimState::Succeeded | ClaimState::Failed => holder(record, NOW),
                ClaimState::Reaped | ClaimState::Dead if owes_compensation => None,
                ClaimState::Reaped | ClaimState::Dead => holder(record, NOW),
            };
            if let Some(lease) = lease {
                m.lease[c] = n.worker(&lease.worker).into();
            }
        }
        for (&op, client) in n.operations.iter().zip(clients) {
            // An id is scoped to its claim: the model's clients use each id
            // on one claim at a time (the cfg has one claim), so the id's
            // row is the one of the claim it was last sent for.
            let Some(row) = n.claims.iter().find_map(|&c| operation_row(durable, &n.claim_id(c), &n.operation_id(op)))
            else {
                continue;
            };
            let claim = n.claim(&row.request.claim);
            m.operation_request[op] = n.request(&row.request);
            if let Some(conflict) = &row.conflict {
                m.conflict_request[op] = n.request(conflict);
            }
            let lease_in_force = leases.leases.get(&row.request.claim).is_some_and(|l| is_live(l.expires_at));
            m.operation_response[op] = if row.rejection.is_some() {
                k.rejected
            } else if client.accepted == Some(false) || (client.accepted == Some(true) && lease_in_force) {
                k.accepted
            } else {
                k.no_response
            };
            if n.claims.contains(&claim) {
                let stage = &mut m.activation_stage[claim];
                *stage = stage_max(*stage, client.progress);
            }
        }
        m
    }
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

fn operation_row<'a>(
    durable: &'a MemoryDurable,
    claim: &ClaimId,
    op: &protocol::claim::OperationId,
) -> Option<&'a protocol::claim::OperationRow> {
    durable.operations.get(&(claim.clone(), op.clone()))
}
