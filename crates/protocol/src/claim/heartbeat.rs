//! The heartbeat: the executing worker renews its lease.
//!
//! The durable store is asked first whether the request comes from the
//! attempt that executes the claim (a lease alone does not say so: before
//! the commit it stands for an activation, not for execution); then the
//! coordination store renews the lease if it is still live. An expired lease
//! is never renewed, so a worker whose lease lapsed learns it must stop, and
//! no earlier answer comes back into force (`tla/RemoraClaimHeartbeat.tla`).
//!
//! If the coordination store has lost the lease (a deploy, the loss of its
//! replicas), the durable store's record of the lease's deadline decides:
//! while it is ahead, the heartbeat restores the lease; once it has passed,
//! the lease has expired for good (`tla/RemoraClaimLeaseLoss.tla`). Before
//! it answers, the heartbeat records the new deadline in the durable store,
//! so that a loss right after the answer can be restored too. A host holds
//! the claim's lease lock from the lease request to that recording (see
//! [`DurableRequest::RecordLease`]).

use serde::{Deserialize, Serialize};

use super::durable::{DurableReply, DurableRequest};
use super::error::{HeartbeatRefused, LeaseRefused, ProcedureError};
use super::lease::{LeaseReply, LeaseRequest};
use super::message::{Reply, Request};
use super::procedure::{Procedure, Progress};
use super::types::{Millis, RequestKey, deadline};

/// Where a heartbeat is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum HeartbeatStep {
    CheckExecuting,
    Renew,
    /// The store has no record of the lease: restore it, if the durable
    /// store recorded a deadline for it that is still ahead.
    Restore,
    /// Record the lease's new deadline in the durable store.
    Record {
        expires_at: Millis,
    },
    Done {
        outcome: HeartbeatOutcome,
    },
}

impl HeartbeatStep {
    /// The step's name (`snake_case`, as serialized).
    pub fn name(&self) -> &'static str {
        match self {
            HeartbeatStep::CheckExecuting => "check_executing",
            HeartbeatStep::Renew => "renew",
            HeartbeatStep::Restore => "restore",
            HeartbeatStep::Record { .. } => "record",
            HeartbeatStep::Done { .. } => "done",
        }
    }
}

/// The answer to a heartbeat.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HeartbeatOutcome {
    Renewed { expires_at: Millis },
    Refused { reason: HeartbeatRefused },
}

/// One heartbeat request in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Heartbeat {
    pub request: RequestKey,
    /// The lease's new lifetime, from the time of the renewal.
    pub lease_ttl: Millis,
    pub step: HeartbeatStep,
}

impl Heartbeat {
    pub fn new(request: RequestKey, lease_ttl: Millis) -> Heartbeat {
        Heartbeat { request, lease_ttl, step: HeartbeatStep::CheckExecuting }
    }
}

impl Procedure for Heartbeat {
    type Outcome = HeartbeatOutcome;
    const NAME: &'static str = "heartbeat";

    fn poll_request(&self, now: Millis) -> Option<Request> {
        let key = &self.request;
        match self.step {
            HeartbeatStep::CheckExecuting => {
                Some(Request::Durable(DurableRequest::CheckExecuting { request: key.clone() }))
            }
            HeartbeatStep::Renew => Some(Request::Lease(LeaseRequest::Renew {
                claim: key.claim.clone(),
                fence: key.fence,
                worker: key.worker.clone(),
                expires_at: deadline(now, self.lease_ttl),
            })),
            HeartbeatStep::Restore => Some(Request::Lease(LeaseRequest::Restore {
                claim: key.claim.clone(),
                fence: key.fence,
                worker: key.worker.clone(),
                expires_at: deadline(now, self.lease_ttl),
            })),
            HeartbeatStep::Record { expires_at } => {
                Some(Request::Durable(DurableRequest::RecordLease { request: key.clone(), expires_at }))
            }
            HeartbeatStep::Done { .. } => None,
        }
    }

    /// A heartbeat never waits.
    fn handle_reply(&mut self, reply: Reply) -> Result<Progress, ProcedureError> {
        let refused = |reason| HeartbeatStep::Done { outcome: HeartbeatOutcome::Refused { reason } };
        let step = match (&self.step, reply) {
            (_, Reply::Durable(DurableReply::Failed { error })) => return Err(error.into()),
            (HeartbeatStep::CheckExecuting, Reply::Durable(DurableReply::Executing)) => HeartbeatStep::Renew,
            (
                HeartbeatStep::CheckExecuting | HeartbeatStep::Record { .. },
                Reply::Durable(DurableReply::NotExecuting { refused: reason }),
            ) => refused(reason),
            (HeartbeatStep::Renew | HeartbeatStep::Restore, Reply::Lease(LeaseReply::Granted { lease })) => {
                HeartbeatStep::Record { expires_at: lease.expires_at }
            }
            // No record of this attempt: the store lost it. Restore it if
            // the durable store's record of its deadline is still ahead (the
            // host serves the restoration with the durable row).
            (HeartbeatStep::Renew, Reply::Lease(LeaseReply::Refused { refused: LeaseRefused::NotHeld })) => {
                HeartbeatStep::Restore
            }
            (HeartbeatStep::Renew | HeartbeatStep::Restore, Reply::Lease(LeaseReply::Refused { refused: why })) => {
                refused(match why {
                    LeaseRefused::Superseded => HeartbeatRefused::StaleFence,
                    _ => HeartbeatRefused::LeaseLost,
                })
            }
            (HeartbeatStep::Record { expires_at }, Reply::Durable(DurableReply::LeaseRecorded)) => {
                HeartbeatStep::Done { outcome: HeartbeatOutcome::Renewed { expires_at: *expires_at } }
            }
            (step, reply) => return Err(ProcedureError::unexpected(Self::NAME, step.name(), &reply)),
        };
        self.step = step;
        Ok(Progress::Advanced)
    }

    fn outcome(&self) -> Option<&HeartbeatOutcome> {
        match &self.step {
            HeartbeatStep::Done { outcome } => Some(outcome),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::testing::{R, Stores, key, op, run};
    use crate::claim::types::{Answer, ClaimId};
    use crate::claim::{Activator, ActivatorConfig};

    const NOW: Millis = 100;
    const TTL: Millis = 500;

    fn beat(stores: &mut Stores, fence: u64, worker: &str, now: Millis) -> HeartbeatOutcome {
        run(stores, &mut Heartbeat::new(key(fence, worker), TTL), now)
    }

    fn refused(reason: HeartbeatRefused) -> HeartbeatOutcome {
        HeartbeatOutcome::Refused { reason }
    }

    fn executing() -> Stores {
        let mut stores = Stores::new();
        let config = ActivatorConfig { lease_ttl: TTL, lock_ttl: 50 };
        let mut a = Activator::new(op("o1"), key(1, "w1"), config);
        assert_eq!(run(&mut stores, &mut a, NOW), Answer::Accepted);
        stores
    }

    #[test]
    fn the_executing_worker_renews_its_lease() {
        let mut stores = executing();
        let later = NOW + TTL - 1;
        assert_eq!(beat(&mut stores, 1, "w1", later), HeartbeatOutcome::Renewed { expires_at: later + TTL });
        assert_eq!(stores.leases.leases[&ClaimId::from("c1")].expires_at, later + TTL);
        let replay = Activator::new(op("o1"), key(1, "w1"), ActivatorConfig { lease_ttl: TTL, lock_ttl: 50 });
        assert_eq!(run(&mut stores, &mut replay.clone(), NOW + TTL), Answer::Accepted, "the renewed lease holds");
    }

    #[test]
    fn an_expired_lease_is_not_renewed() {
        let mut stores = executing();
        assert_eq!(beat(&mut stores, 1, "w1", NOW + TTL), refused(HeartbeatRefused::LeaseLost));
        assert_eq!(stores.leases.leases[&ClaimId::from("c1")].expires_at, NOW + TTL);
    }

    #[test]
    fn only_the_executing_attempt_heartbeats() {
        let mut stores = executing();
        assert_eq!(beat(&mut stores, 2, "w1", NOW), refused(HeartbeatRefused::StaleFence));
        assert_eq!(beat(&mut stores, 1, "w2", NOW), refused(HeartbeatRefused::WrongWorker));
        let mut authorized = Stores::new();
        assert_eq!(beat(&mut authorized, 1, "w1", NOW), refused(HeartbeatRefused::NotExecuting));
        let row = &authorized.durable.claims[&ClaimId::from("c1")];
        let reaped = row.acquire_recovery_lock(R).and_then(|row| row.finish_recovery()).unwrap();
        authorized.durable.claims.insert(ClaimId::from("c1"), reaped);
        assert_eq!(beat(&mut authorized, 1, "w1", R), refused(HeartbeatRefused::Reaped));
    }

    #[test]
    fn a_renewal_is_recorded_in_the_durable_store_before_it_is_answered() {
        let mut stores = executing();
        let c1 = ClaimId::from("c1");
        assert_eq!(stores.durable.claims[&c1].lease_until, Some(NOW + TTL), "the activation recorded it");
        assert_eq!(beat(&mut stores, 1, "w1", NOW + 100), HeartbeatOutcome::Renewed { expires_at: NOW + 100 + TTL });
        assert_eq!(stores.durable.claims[&c1].lease_until, Some(NOW + 100 + TTL));
    }

    #[test]
    fn a_lost_lease_is_restored_for_the_executing_attempt_only_while_its_recorded_deadline_holds() {
        let mut stores = executing();
        let c1 = ClaimId::from("c1");
        stores.leases.leases.clear();
        assert_eq!(beat(&mut stores, 1, "w2", NOW + 10), refused(HeartbeatRefused::WrongWorker));
        assert_eq!(beat(&mut stores, 2, "w1", NOW + 10), refused(HeartbeatRefused::StaleFence));
        assert!(stores.leases.leases.is_empty(), "a stranger restores nothing");
        assert_eq!(beat(&mut stores, 1, "w1", NOW + 10), HeartbeatOutcome::Renewed { expires_at: NOW + 10 + TTL });
        assert_eq!(stores.leases.leases[&c1].expires_at, NOW + 10 + TTL, "restored");

        stores.leases.leases.clear();
        let lapsed = NOW + 10 + TTL;
        assert_eq!(beat(&mut stores, 1, "w1", lapsed), refused(HeartbeatRefused::LeaseLost));
        assert!(stores.leases.leases.is_empty(), "a lease whose recorded deadline passed stays lost");
    }

    #[test]
    fn an_expired_lease_still_on_record_is_not_restored() {
        let mut stores = executing();
        assert_eq!(beat(&mut stores, 1, "w1", NOW + TTL), refused(HeartbeatRefused::LeaseLost));
        // Even with a durable record ahead of it (it never is: the record
        // is a copy of a granted deadline), the expired lease stays expired.
        stores.durable.claims.get_mut(&ClaimId::from("c1")).unwrap().lease_until = Some(NOW + 10 * TTL);
        assert_eq!(beat(&mut stores, 1, "w1", NOW + TTL), refused(HeartbeatRefused::LeaseLost));
    }
}
