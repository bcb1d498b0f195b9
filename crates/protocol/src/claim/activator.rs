//! The activator: one activate request, driven through the two stores.
//!
//! A [`Procedure`]: `poll_request` says what to ask next (with `now` passed
//! in to compute deadlines), the host asks that store and hands the reply to
//! `handle_reply`, until the answer (`outcome`) is set. Several activators
//! may run at once, for the same claim or not; they coordinate only through
//! the stores.
//!
//! The path of a first activation is the spec's stages: validate (Idle →
//! Validated), create the lease (→ LeaseCreated), take the durable lock,
//! commit (→ Committed), then answer from the lease (→ Finished), recording
//! the lease's deadline in the durable store before the acceptance goes out
//! (so that the worker's heartbeat can restore the lease if the coordination
//! store loses it: `tla/RemoraClaimLeaseLoss.tla`). The lease it answers
//! from is the one the store granted, if the activator has not waited since
//! the grant (one lease round trip: the host serves durable requests without
//! an await, so nothing ran in between, docs/remora.md 6.6); after a wait it
//! reads the lease again (`CheckLease`). A request
//! for a claim that already executes goes straight to the lease check: that
//! is the replay. An activation that finds its claim reaped removes the
//! lease it may have created (compensation) before it rejects.

use serde::{Deserialize, Serialize};

use super::durable::{DurableReply, DurableRequest, Validation};
use super::error::{CommitRefused, LeaseRefused, LockRefused, ProcedureError};
use super::lease::{Lease, LeaseReply, LeaseRequest};
use super::message::{Reply, Request};
use super::procedure::{Procedure, Progress};
use super::types::{
    ActivationStage, Answer, ClaimState, Millis, OperationId, Rejection, RequestBody, RequestKey, deadline,
};

/// How long the activator asks for the lease and the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ActivatorConfig {
    /// The lifetime of a lease the activator creates; the executing worker
    /// extends it by heartbeats.
    pub lease_ttl: Millis,
    /// How long the activator may hold the durable lock before commit.
    pub lock_ttl: Millis,
}

/// Where an activation is: the request it waits on, and what it carries to
/// the next one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum ActivatorStep {
    /// Bind the operation id to the request.
    Bind,
    /// Validate the bound request against the claim.
    Validate,
    /// Create the lease; it may not outlive the reservation's deadline.
    CreateLease {
        reservation_expires_at: Millis,
    },
    /// Take the durable lock, holding `lease`. `waited`: the activator has
    /// waited since the store granted `lease` (others ran meanwhile, and the
    /// store may have lost it).
    AcquireLock {
        lease: Lease,
        waited: bool,
    },
    /// Commit under the lock, proving `lease` is still live.
    Commit {
        lease: Lease,
        waited: bool,
    },
    /// The activation cannot proceed (`failure` says why); wait until the
    /// claim is reaped (then compensate) or found executing (then replay).
    AwaitRecovery {
        failure: Rejection,
    },
    /// The claim was reaped: remove the lease this attempt may hold.
    Compensate {
        failure: Rejection,
    },
    /// Answer from the lease: accepted while the worker holds it.
    CheckLease,
    /// Accepted: record `lease`'s deadline in the durable store, then answer.
    RecordLease {
        lease: Lease,
    },
    /// Committed on `lease`, granted with no wait since: record its
    /// deadline, and answer Accepted from the grant (the spec's
    /// ReplayActivation, with no second read of the lease store).
    RecordGrant {
        lease: Lease,
    },
    /// Store the rejection, so the operation is answered the same again.
    RecordRejection {
        reason: Rejection,
    },
    Done {
        answer: Answer,
    },
}

impl ActivatorStep {
    /// The step's name (`snake_case`, as serialized).
    pub fn name(&self) -> &'static str {
        match self {
            ActivatorStep::Bind => "bind",
            ActivatorStep::Validate => "validate",
            ActivatorStep::CreateLease { .. } => "create_lease",
            ActivatorStep::AcquireLock { .. } => "acquire_lock",
            ActivatorStep::Commit { .. } => "commit",
            ActivatorStep::AwaitRecovery { .. } => "await_recovery",
            ActivatorStep::Compensate { .. } => "compensate",
            ActivatorStep::CheckLease => "check_lease",
            ActivatorStep::RecordLease { .. } => "record_lease",
            ActivatorStep::RecordGrant { .. } => "record_grant",
            ActivatorStep::RecordRejection { .. } => "record_rejection",
            ActivatorStep::Done { .. } => "done",
        }
    }
}

/// One activate request in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Activator {
    pub operation: OperationId,
    pub request: RequestKey,
    pub config: ActivatorConfig,
    /// How far this activation has got.
    pub stage: ActivationStage,
    pub step: ActivatorStep,
}

impl Activator {
    /// Starts serving `request` under the id `operation`.
    pub fn new(operation: OperationId, request: RequestKey, config: ActivatorConfig) -> Activator {
        Activator { operation, request, config, stage: ActivationStage::Idle, step: ActivatorStep::Bind }
    }
}

impl Procedure for Activator {
    /// The answer to the activate request.
    type Outcome = Answer;
    const NAME: &'static str = "activator";

    fn poll_request(&self, now: Millis) -> Option<Request> {
        let key = &self.request;
        let operation = self.operation.clone();
        let durable = |r| Some(Request::Durable(r));
        let lease = |r| Some(Request::Lease(r));
        match &self.step {
            ActivatorStep::Bind => durable(DurableRequest::Bind {
                operation,
                request: key.clone(),
                body: RequestBody::Activate { lease_ttl_ms: self.config.lease_ttl },
            }),
            ActivatorStep::Validate => durable(DurableRequest::Validate { claim: key.claim.clone(), operation }),
            ActivatorStep::CreateLease { reservation_expires_at } => lease(LeaseRequest::Create {
                claim: key.claim.clone(),
                fence: key.fence,
                worker: key.worker.clone(),
                expires_at: deadline(now, self.config.lease_ttl),
                not_after: *reservation_expires_at,
            }),
            ActivatorStep::AcquireLock { .. } => durable(DurableRequest::AcquireActivationLock {
                claim: key.claim.clone(),
                operation,
                expires_at: deadline(now, self.config.lock_ttl),
            }),
            ActivatorStep::Commit { lease, .. } => durable(DurableRequest::CommitActivation {
                claim: key.claim.clone(),
                operation,
                lease_expires_at: lease.expires_at,
            }),
            ActivatorStep::AwaitRecovery { .. } => durable(DurableRequest::Inspect { claim: key.claim.clone() }),
            ActivatorStep::Compensate { .. } => {
                lease(LeaseRequest::Delete { claim: key.claim.clone(), fence: key.fence, worker: key.worker.clone() })
            }
            ActivatorStep::CheckLease => lease(LeaseRequest::Holder { claim: key.claim.clone() }),
            ActivatorStep::RecordLease { lease } | ActivatorStep::RecordGrant { lease } => {
                durable(DurableRequest::RecordLease { request: key.clone(), expires_at: lease.expires_at })
            }
            ActivatorStep::RecordRejection { reason } => {
                durable(DurableRequest::RecordRejection { claim: key.claim.clone(), operation, reason: *reason })
            }
            ActivatorStep::Done { .. } => None,
        }
    }

    /// Waits while another activation holds the durable lock, while the
    /// reservation has expired but the claim is not reaped yet (validating,
    /// or awaiting recovery).
    fn handle_reply(&mut self, reply: Reply) -> Result<Progress, ProcedureError> {
        use ActivationStage::{Finished, LeaseCreated, Validated};
        use ActivatorStep as S;
        let step = match (&self.step, reply) {
            (_, Reply::Durable(DurableReply::Failed { error })) => return Err(error.into()),

            (S::Bind, Reply::Durable(DurableReply::Bound)) => S::Validate,
            (S::Bind, Reply::Durable(DurableReply::Conflict { bound, body })) => done(Answer::Conflict { bound, body }),

            (S::Validate, Reply::Durable(DurableReply::Validated { validation })) => match validation {
                Validation::Start { reservation_expires_at } => {
                    self.stage = Validated;
                    S::CreateLease { reservation_expires_at }
                }
                Validation::Replay => S::CheckLease,
                Validation::Wait => return Ok(Progress::Waits),
            },
            (S::Validate, Reply::Durable(DurableReply::Rejected { reason })) => done(Answer::Rejected { reason }),

            (S::CreateLease { .. }, Reply::Lease(LeaseReply::Granted { lease })) => {
                self.stage = LeaseCreated;
                S::AcquireLock { lease, waited: false }
            }
            (S::CreateLease { .. }, Reply::Lease(LeaseReply::Refused { refused })) => S::AwaitRecovery {
                failure: match refused {
                    LeaseRefused::ReservationExpired => Rejection::ReservationExpired,
                    _ => Rejection::LeaseLost,
                },
            },

            (S::AcquireLock { lease, waited }, Reply::Durable(DurableReply::LockAcquired)) => {
                S::Commit { lease: lease.clone(), waited: *waited }
            }
            (S::AcquireLock { lease, .. }, Reply::Durable(DurableReply::LockRefused { refused })) => match refused {
                LockRefused::Held => {
                    // Others run while this activator waits: the grant may
                    // be lost by the time it commits.
                    self.step = S::AcquireLock { lease: lease.clone(), waited: true };
                    return Ok(Progress::Waits);
                }
                LockRefused::Executing => S::CheckLease,
                LockRefused::Reaped => compensate(Rejection::ReservationExpired),
                LockRefused::ReservationExpired => await_recovery(Rejection::ReservationExpired),
            },

            (S::Commit { lease, waited }, Reply::Durable(DurableReply::Committed)) => {
                self.stage = ActivationStage::Committed;
                if *waited { S::CheckLease } else { S::RecordGrant { lease: lease.clone() } }
            }
            (S::Commit { lease, waited }, Reply::Durable(DurableReply::CommitRefused { refused })) => match refused {
                CommitRefused::Executing => S::CheckLease,
                CommitRefused::Reaped => compensate(Rejection::ReservationExpired),
                CommitRefused::LockNotHeld => S::AcquireLock { lease: lease.clone(), waited: *waited },
                CommitRefused::ReservationExpired => await_recovery(Rejection::ReservationExpired),
                CommitRefused::LeaseExpired => await_recovery(Rejection::LeaseLost),
            },

            (S::AwaitRecovery { failure }, Reply::Durable(DurableReply::Status { state })) => match state {
                ClaimState::Authorized => return Ok(Progress::Waits),
                ClaimState::Executing | ClaimState::Succeeded | ClaimState::Failed => S::CheckLease,
                ClaimState::Reaped | ClaimState::Dead => compensate(*failure),
            },

            (S::Compensate { failure }, Reply::Lease(LeaseReply::Deleted | LeaseReply::Refused { .. })) => {
                // Deleted, or the lease belongs to someone else: either way
                // this attempt holds no lease any more.
                self.stage = Finished;
                S::RecordRejection { reason: *failure }
            }

            // The answer is decided here, where the spec's ReplayActivation
            // happens; recording the lease's deadline afterwards changes no
            // answer (it only lets a later loss of the lease be restored),
            // unless the attempt no longer executes by then (below).
            (S::CheckLease, Reply::Lease(LeaseReply::Holder { lease })) => match lease {
                Some(lease) if lease.fence == self.request.fence && lease.worker == self.request.worker => {
                    self.stage = Finished;
                    S::RecordLease { lease }
                }
                _ => S::RecordRejection { reason: Rejection::LeaseLost },
            },
            (S::RecordLease { .. }, Reply::Durable(DurableReply::LeaseRecorded)) => done(Answer::Accepted),
            // The answer is decided here: the grant is the lease in force.
            (S::RecordGrant { .. }, Reply::Durable(DurableReply::LeaseRecorded)) => {
                self.stage = Finished;
                done(Answer::Accepted)
            }
            // The attempt stopped executing after its commit (it completed,
            // or a newer attempt took the claim) while the lease it held was
            // still on record: no acceptance goes out for it.
            (S::RecordLease { .. } | S::RecordGrant { .. }, Reply::Durable(DurableReply::NotExecuting { .. })) => {
                S::RecordRejection { reason: Rejection::LeaseLost }
            }

            (S::RecordRejection { .. }, Reply::Durable(DurableReply::Rejected { reason })) => {
                done(Answer::Rejected { reason })
            }

            (step, reply) => return Err(ProcedureError::unexpected(Self::NAME, step.name(), &reply)),
        };
        self.step = step;
        Ok(Progress::Advanced)
    }

    fn outcome(&self) -> Option<&Answer> {
        match &self.step {
            ActivatorStep::Done { answer } => Some(answer),
            _ => None,
        }
    }
}

fn done(answer: Answer) -> ActivatorStep {
    ActivatorStep::Done { answer }
}

fn compensate(failure: Rejection) -> ActivatorStep {
    ActivatorStep::Compensate { failure }
}

fn await_recovery(failure: Rejection) -> ActivatorStep {
    ActivatorStep::AwaitRecovery { failure }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::durable;
    use crate::claim::durable::DurableLock;
    use crate::claim::error::DurableError;
    use crate::claim::testing::{R, Stores, key, op, run, step};
    use crate::claim::types::{ClaimId, Fence, WorkerId};

    const NOW: Millis = 100;
    const CONFIG: ActivatorConfig = ActivatorConfig { lease_ttl: 500, lock_ttl: 50 };

    fn activator(id: &str, fence: u64, worker: &str) -> Activator {
        Activator::new(op(id), key(fence, worker), CONFIG)
    }

    fn rejected(reason: Rejection) -> Answer {
        Answer::Rejected { reason }
    }

    fn c1() -> ClaimId {
        ClaimId::from("c1")
    }

    #[test]
    fn first_activation_is_accepted_and_applies_the_effect_once() {
        let mut stores = Stores::new();
        let mut a = activator("o1", 1, "w1");
        assert_eq!(run(&mut stores, &mut a, NOW), Answer::Accepted);
        assert_eq!(a.stage, ActivationStage::Finished);
        let row = &stores.durable.claims[&c1()];
        assert_eq!((row.state, row.activations, &row.reservation, &row.lock), (ClaimState::Executing, 1, &None, &None));
        assert_eq!(stores.leases.leases[&c1()].expires_at, NOW + CONFIG.lease_ttl);
    }

    #[test]
    fn the_stages_follow_the_spec() {
        let mut stores = Stores::new();
        let mut a = activator("o1", 1, "w1");
        let mut stages = vec![a.stage];
        while a.outcome().is_none() {
            assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced);
            if stages.last() != Some(&a.stage) {
                stages.push(a.stage);
            }
        }
        use ActivationStage::*;
        assert_eq!(stages, [Idle, Validated, LeaseCreated, Committed, Finished]);
    }

    #[test]
    fn a_first_activation_asks_the_lease_store_once() {
        let mut stores = Stores::new();
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), NOW), Answer::Accepted);
        let leases: Vec<&Request> = stores.sent.iter().filter(|r| matches!(r, Request::Lease(_))).collect();
        assert!(matches!(leases[..], [Request::Lease(LeaseRequest::Create { .. })]), "{leases:?}");
    }

    #[test]
    fn an_activation_that_waited_since_its_grant_reads_the_lease_again() {
        let mut stores = Stores::new();
        let (mut a, mut b) = (activator("o1", 1, "w1"), activator("o2", 1, "w1"));
        while !matches!(a.step, ActivatorStep::Commit { .. }) {
            assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced);
        }
        while !matches!(b.step, ActivatorStep::AcquireLock { .. }) {
            assert_eq!(step(&mut stores, &mut b, NOW), Progress::Advanced);
        }
        assert_eq!(step(&mut stores, &mut b, NOW), Progress::Waits, "a holds the lock");
        assert!(matches!(b.step, ActivatorStep::AcquireLock { waited: true, .. }));
        // a stops before its commit; while b waits, the store loses the lease.
        stores.leases.leases.clear();
        let later = NOW + CONFIG.lock_ttl;
        assert_eq!(run(&mut stores, &mut b, later), rejected(Rejection::LeaseLost));
        assert_eq!(stores.durable.claims[&c1()].activations, 1, "b committed, then found the lease lost");
        assert!(matches!(stores.sent.last(), Some(Request::Durable(DurableRequest::RecordRejection { .. }))));
        assert!(stores.sent.iter().any(|r| matches!(r, Request::Lease(LeaseRequest::Holder { .. }))));
    }

    #[test]
    fn an_exact_replay_is_accepted_while_the_lease_holds_then_rejected() {
        let mut stores = Stores::new();
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), NOW), Answer::Accepted);
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), NOW + 10), Answer::Accepted);
        assert_eq!(
            run(&mut stores, &mut activator("o2", 1, "w1"), NOW + 20),
            Answer::Accepted,
            "another id, same attempt"
        );
        let lapsed = NOW + CONFIG.lease_ttl;
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), lapsed), rejected(Rejection::LeaseLost));
        assert_eq!(stores.durable.claims[&c1()].activations, 1, "replays never apply the effect");
    }

    #[test]
    fn a_stored_rejection_is_answered_again() {
        let mut stores = Stores::new();
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), NOW), Answer::Accepted);
        let lapsed = NOW + CONFIG.lease_ttl;
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), lapsed), rejected(Rejection::LeaseLost));
        // Even if a lease for the attempt were in force again, the operation
        // keeps its answer.
        stores.leases.leases.get_mut(&c1()).unwrap().expires_at = lapsed + 100;
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), lapsed), rejected(Rejection::LeaseLost));
    }

    #[test]
    fn an_acceptance_records_the_lease_and_a_rejection_during_a_loss_stays_after_a_restore() {
        let mut stores = Stores::new();
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), NOW), Answer::Accepted);
        assert_eq!(stores.durable.claims[&c1()].lease_until, Some(NOW + CONFIG.lease_ttl));
        stores.leases.leases.clear();
        assert_eq!(run(&mut stores, &mut activator("o2", 1, "w1"), NOW + 1), rejected(Rejection::LeaseLost));
        let mut beat = crate::claim::Heartbeat::new(key(1, "w1"), CONFIG.lease_ttl);
        assert!(matches!(run(&mut stores, &mut beat, NOW + 2), crate::claim::HeartbeatOutcome::Renewed { .. }));
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), NOW + 3), Answer::Accepted, "restored");
        assert_eq!(
            run(&mut stores, &mut activator("o2", 1, "w1"), NOW + 3),
            rejected(Rejection::LeaseLost),
            "a rejection is final"
        );
    }

    #[test]
    fn another_attempt_is_rejected_with_a_reason() {
        let mut stores = Stores::new();
        assert_eq!(run(&mut stores, &mut activator("o1", 2, "w1"), NOW), rejected(Rejection::StaleFence));
        assert_eq!(run(&mut stores, &mut activator("o2", 1, "w2"), NOW), rejected(Rejection::WrongWorker));
        assert_eq!(stores.durable.claims[&c1()].state, ClaimState::Authorized);
        assert!(stores.leases.leases.is_empty());
    }

    #[test]
    fn a_reaped_claim_is_rejected() {
        let mut stores = Stores::new();
        reap(&mut stores);
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), R), rejected(Rejection::Reaped));
    }

    #[test]
    fn a_reused_operation_id_is_a_conflict() {
        let mut stores = Stores::new();
        assert_eq!(run(&mut stores, &mut activator("o1", 2, "w1"), NOW), rejected(Rejection::StaleFence));
        assert_eq!(
            run(&mut stores, &mut activator("o1", 1, "w1"), NOW),
            Answer::Conflict { bound: key(2, "w1"), body: RequestBody::Activate { lease_ttl_ms: CONFIG.lease_ttl } }
        );
        let row = &stores.durable.operations[&(c1(), op("o1"))];
        assert_eq!((&row.request, &row.conflict), (&key(2, "w1"), &Some(key(1, "w1"))));
    }

    #[test]
    fn an_activation_overtaken_by_recovery_removes_its_lease() {
        let mut stores = Stores::new();
        let mut a = activator("o1", 1, "w1");
        while a.stage != ActivationStage::LeaseCreated {
            assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced);
        }
        assert!(stores.leases.leases.contains_key(&c1()));
        reap(&mut stores);
        assert_eq!(run(&mut stores, &mut a, R), rejected(Rejection::ReservationExpired));
        assert!(stores.leases.leases.is_empty(), "compensated");
        assert_eq!(stores.durable.claims[&c1()].activations, 0);
    }

    /// Found by the implementation model checked against RemoraJobs
    /// (crates/checker/models/large/ClaimJobsImpl.cfg): a new attempt authorized
    /// while an activation of the reaped one was still on its way must not
    /// be committed by that activation, on the old attempt's lease.
    #[test]
    fn an_activation_of_an_earlier_attempt_never_commits_the_new_one() {
        let mut stores = Stores::new();
        let mut a = activator("o1", 1, "w1");
        while a.stage != ActivationStage::LeaseCreated {
            assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced);
        }
        reap(&mut stores);
        let retry = DurableRequest::Authorize {
            claim: c1(),
            fence: Fence(2),
            worker: WorkerId::from("w1"),
            reservation_expires_at: R + 500,
            max_attempts: 3,
        };
        assert!(matches!(durable::apply(&mut stores.durable, &retry, R), DurableReply::Authorized { .. }));
        assert_eq!(run(&mut stores, &mut a, R + 1), rejected(Rejection::ReservationExpired));
        let row = &stores.durable.claims[&c1()];
        assert_eq!((row.state, row.fence, row.activations, &row.lock), (ClaimState::Authorized, Fence(2), 0, &None));
        assert!(stores.leases.leases.is_empty(), "compensated");
    }

    /// Found by the implementation model checked against RemoraJobs: the
    /// attempt completed after a replay read its (not yet released) lease;
    /// the recording is refused, and the replay rejects instead of failing.
    #[test]
    fn a_replay_whose_attempt_completed_meanwhile_is_rejected() {
        let mut stores = Stores::new();
        assert_eq!(run(&mut stores, &mut activator("o1", 1, "w1"), NOW), Answer::Accepted);
        let mut replay = activator("o2", 1, "w1");
        while !matches!(replay.step, ActivatorStep::RecordLease { .. }) {
            assert_eq!(step(&mut stores, &mut replay, NOW), Progress::Advanced);
        }
        if let Some(row) = stores.durable.claims.get_mut(&c1()) {
            row.state = ClaimState::Succeeded;
        }
        assert_eq!(run(&mut stores, &mut replay, NOW), rejected(Rejection::LeaseLost));
    }

    #[test]
    fn an_activation_that_misses_its_reservation_waits_for_recovery() {
        let mut stores = Stores::new();
        let mut a = activator("o1", 1, "w1");
        assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced); // bind
        assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced); // validate
        // The lease is refused: the reservation expired.
        assert_eq!(step(&mut stores, &mut a, R), Progress::Advanced);
        assert_eq!(a.step, ActivatorStep::AwaitRecovery { failure: Rejection::ReservationExpired });
        assert_eq!(step(&mut stores, &mut a, R), Progress::Waits, "not reaped yet");
        assert_eq!(a.step, ActivatorStep::AwaitRecovery { failure: Rejection::ReservationExpired });
        reap(&mut stores);
        assert_eq!(run(&mut stores, &mut a, R), rejected(Rejection::ReservationExpired));
        assert!(stores.leases.leases.is_empty());
    }

    #[test]
    fn an_activation_that_starts_after_the_reservation_waits_for_recovery_to_decide() {
        let mut stores = Stores::new();
        let mut a = activator("o1", 1, "w1");
        assert_eq!(step(&mut stores, &mut a, R), Progress::Advanced); // bind
        assert_eq!(step(&mut stores, &mut a, R), Progress::Waits, "expired, not reaped yet");
        assert_eq!((a.step.clone(), a.stage), (ActivatorStep::Validate, ActivationStage::Idle));
        reap(&mut stores);
        assert_eq!(run(&mut stores, &mut a, R), rejected(Rejection::Reaped));
    }

    #[test]
    fn an_activation_whose_lease_expired_before_commit_does_not_commit() {
        let mut stores = Stores::new();
        let config = ActivatorConfig { lease_ttl: 10, lock_ttl: 50 };
        let mut a = Activator::new(op("o1"), key(1, "w1"), config);
        while !matches!(a.step, ActivatorStep::Commit { .. }) {
            assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced);
        }
        assert_eq!(step(&mut stores, &mut a, NOW + 10), Progress::Advanced);
        assert_eq!(a.step, ActivatorStep::AwaitRecovery { failure: Rejection::LeaseLost });
        assert_eq!(stores.durable.claims[&c1()].state, ClaimState::Authorized);
        reap(&mut stores);
        assert_eq!(run(&mut stores, &mut a, R), rejected(Rejection::LeaseLost));
    }

    #[test]
    fn two_activations_of_one_attempt_share_the_lease_and_commit_once() {
        let mut stores = Stores::new();
        let (mut a, mut b) = (activator("o1", 1, "w1"), activator("o2", 1, "w1"));
        while a.stage != ActivationStage::LeaseCreated {
            assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced);
        }
        while b.stage != ActivationStage::LeaseCreated {
            assert_eq!(step(&mut stores, &mut b, NOW), Progress::Advanced);
        }
        assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced, "a takes the lock");
        assert_eq!(step(&mut stores, &mut b, NOW), Progress::Waits, "b is refused it");
        assert!(matches!(b.step, ActivatorStep::AcquireLock { .. }));
        assert_eq!(run(&mut stores, &mut a, NOW), Answer::Accepted);
        assert_eq!(run(&mut stores, &mut b, NOW), Answer::Accepted);
        assert_eq!(b.stage, ActivationStage::Finished);
        assert_eq!(stores.durable.claims[&c1()].activations, 1);
    }

    #[test]
    fn a_lost_lock_is_taken_again() {
        let mut stores = Stores::new();
        let mut a = activator("o1", 1, "w1");
        while !matches!(a.step, ActivatorStep::Commit { .. }) {
            assert_eq!(step(&mut stores, &mut a, NOW), Progress::Advanced);
        }
        let lock_expired = NOW + CONFIG.lock_ttl;
        assert_eq!(step(&mut stores, &mut a, lock_expired), Progress::Advanced);
        assert!(matches!(a.step, ActivatorStep::AcquireLock { .. }));
        assert_eq!(run(&mut stores, &mut a, lock_expired), Answer::Accepted);
        assert_eq!(stores.durable.claims[&c1()].lock, None::<DurableLock>);
    }

    #[test]
    fn a_reply_to_another_request_is_an_error_and_changes_nothing() {
        let mut a = activator("o1", 1, "w1");
        let before = a.clone();
        let err = a.handle_reply(Reply::Lease(LeaseReply::Deleted)).unwrap_err();
        assert!(matches!(err, ProcedureError::UnexpectedReply { step: "bind", .. }));
        let failed = Reply::Durable(DurableReply::Failed { error: DurableError::UnknownClaim(c1()) });
        assert_eq!(a.handle_reply(failed), Err(ProcedureError::Durable(DurableError::UnknownClaim(c1()))));
        assert_eq!(a, before);
    }

    /// Recovery reaps `c1` at `R`, as the reaper would.
    fn reap(stores: &mut Stores) {
        let row = &stores.durable.claims[&c1()];
        let reaped = row.acquire_recovery_lock(R).and_then(|row| row.finish_recovery()).unwrap();
        stores.durable.claims.insert(c1(), reaped);
    }
}
