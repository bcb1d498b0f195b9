//! The refinement mapping: an implementation state to the eleven variables
//! of RemoraClaimActivation (which RemoraClaimHeartbeat keeps).
//!
//! Most variables are read off the stores. Four need an argument:
//!
//! - `reservation`, `durableLock`: a reservation or activator lock whose
//!   deadline has passed is none (`NoWorker`, `NoOwner`).
//! - `lease`: the lease record of the claim's attempt, read by the claim's
//!   durable state. *Executing*: the lease in force (an expired one is
//!   none). *Authorized*: the record, even expired: before the commit
//!   nothing but the commit looks at the lease, and the commit checks its
//!   deadline itself; an expired record is never replaced, so it stands for
//!   the lease the spec's activation created. *Reaped*: none while an
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
//!   AcceptedResponseIsExactReplay must see it.

use protocol::claim::{ActivationStage, ClaimState, DurableLock, MemoryDurable, MemoryLeases, lease::holder};

use super::ClaimImpl;
use super::state::{Client, ImplState};
use super::time::{NOW, is_live};
use crate::compact::Ctx;
use crate::mirror::remora::{self, ClaimFunc, Fence, LockOwner, NO_WORKER, OpFunc, Request, Worker};

impl ClaimImpl {
    pub(super) fn map(&self, s: &ImplState) -> remora::State {
        self.map_stores(&s.durable, &s.leases, &s.clients)
    }

    /// The mapping reads only the stores and the clients.
    pub(super) fn map_stores(
        &self,
        durable: &MemoryDurable,
        leases: &MemoryLeases,
        clients: &[Client],
    ) -> remora::State {
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
                ClaimState::Authorized => record,
                ClaimState::Executing => holder(record, NOW),
                ClaimState::Reaped if owes_compensation => None,
                ClaimState::Reaped => holder(record, NOW),
            };
            if let Some(lease) = lease {
                m.lease[c] = n.worker(&lease.worker).into();
            }
        }
        for (&op, client) in k.operations.iter().zip(clients) {
            let Some(row) = durable.operations.get(&n.operation_id(op)) else {
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
            if k.claims.contains(&claim) {
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
