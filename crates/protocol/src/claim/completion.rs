//! The completion: the executing attempt reports how it ended.
//!
//! Only the attempt that executes the claim completes it, and only while
//! its lease is in force: the durable store checks the attempt
//! (`ValidateCompletion`), the coordination store shows the lease
//! (`Holder`), and the durable commit (`CommitCompletion`) checks both again
//! in one transaction (the lease's deadline compared with `now`, as the
//! activation's commit does) and stores the answer with the operation. The
//! commit is the completion's one instant: the claim goes from Executing to
//! Succeeded, Failed, or Dead (a failed last attempt). Then the lease is
//! released (delete if owner); a completion that stops before that leaves
//! the lease to expire, and its retry under the same key is answered from
//! the stored answer and releases it.
//!
//! Answers: `Completed` (stored, final; a replay under the same key gets it
//! again and releases the lease again, which is a no-op), `Refused` (stored,
//! final: `stale_fence`, `wrong_worker`, `not_executing`, `reaped`,
//! `lease_lost`), `Conflict` (the key is bound to another request).

use serde::{Deserialize, Serialize};

use super::durable::{CompletionAnswer, DurableReply, DurableRequest};
use super::error::{CompletionRefused, ProcedureError};
use super::lease::{LeaseReply, LeaseRequest};
use super::message::{Reply, Request};
use super::procedure::{Procedure, Progress};
use super::types::{Millis, OperationId, Outcome, RequestBody, RequestKey};

/// Where a completion is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum CompletionStep {
    Bind,
    Validate,
    /// Read the lease: the attempt must hold it.
    CheckLease,
    /// Commit, proving the lease live until `lease_expires_at`.
    Commit {
        lease_expires_at: Millis,
    },
    /// Store the refusal `reason` (the lease was not in force).
    RecordRefusal {
        reason: CompletionRefused,
    },
    /// Release the attempt's lease, then answer `outcome`.
    Release {
        outcome: Outcome,
    },
    Done {
        answer: CompletionOutcome,
    },
}

impl CompletionStep {
    /// The step's name (`snake_case`, as serialized).
    pub fn name(&self) -> &'static str {
        match self {
            CompletionStep::Bind => "bind",
            CompletionStep::Validate => "validate",
            CompletionStep::CheckLease => "check_lease",
            CompletionStep::Commit { .. } => "commit",
            CompletionStep::RecordRefusal { .. } => "record_refusal",
            CompletionStep::Release { .. } => "release",
            CompletionStep::Done { .. } => "done",
        }
    }
}

/// The answer to a completion request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CompletionOutcome {
    Completed {
        outcome: Outcome,
    },
    Refused {
        reason: CompletionRefused,
    },
    /// The key is bound to `bound` with `body` (HTTP 409).
    Conflict {
        bound: RequestKey,
        body: RequestBody,
    },
}

impl From<CompletionAnswer> for CompletionOutcome {
    fn from(answer: CompletionAnswer) -> Self {
        match answer {
            CompletionAnswer::Completed { outcome } => CompletionOutcome::Completed { outcome },
            CompletionAnswer::Refused { reason } => CompletionOutcome::Refused { reason },
        }
    }
}

/// One completion request in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Completion {
    pub operation: OperationId,
    pub request: RequestKey,
    pub outcome: Outcome,
    /// The result's JSON text.
    pub result: Option<String>,
    pub step: CompletionStep,
}

impl Completion {
    pub fn new(operation: OperationId, request: RequestKey, outcome: Outcome, result: Option<String>) -> Completion {
        Completion { operation, request, outcome, result, step: CompletionStep::Bind }
    }

    fn body(&self) -> RequestBody {
        RequestBody::Complete { outcome: self.outcome, result: self.result.clone() }
    }
}

impl Procedure for Completion {
    type Outcome = CompletionOutcome;
    const NAME: &'static str = "completion";

    fn poll_request(&self, _now: Millis) -> Option<Request> {
        let key = &self.request;
        let claim = key.claim.clone();
        let operation = self.operation.clone();
        let durable = |r| Some(Request::Durable(r));
        match &self.step {
            CompletionStep::Bind => {
                durable(DurableRequest::Bind { operation, request: key.clone(), body: self.body() })
            }
            CompletionStep::Validate => durable(DurableRequest::ValidateCompletion { claim, operation }),
            CompletionStep::CheckLease => Some(Request::Lease(LeaseRequest::Holder { claim })),
            CompletionStep::Commit { lease_expires_at } => {
                durable(DurableRequest::CommitCompletion { claim, operation, lease_expires_at: *lease_expires_at })
            }
            CompletionStep::RecordRefusal { reason } => {
                durable(DurableRequest::RecordCompletionRefusal { claim, operation, reason: *reason })
            }
            CompletionStep::Release { .. } => {
                Some(Request::Lease(LeaseRequest::Delete { claim, fence: key.fence, worker: key.worker.clone() }))
            }
            CompletionStep::Done { .. } => None,
        }
    }

    /// A completion never waits.
    fn handle_reply(&mut self, reply: Reply) -> Result<Progress, ProcedureError> {
        use CompletionStep as S;
        let answered = |answer: CompletionAnswer| match answer {
            CompletionAnswer::Completed { outcome } => S::Release { outcome },
            refused => S::Done { answer: refused.into() },
        };
        let step = match (&self.step, reply) {
            (_, Reply::Durable(DurableReply::Failed { error })) => return Err(error.into()),
            (S::Bind, Reply::Durable(DurableReply::Bound)) => S::Validate,
            (S::Bind, Reply::Durable(DurableReply::Conflict { bound, body })) => {
                S::Done { answer: CompletionOutcome::Conflict { bound, body } }
            }
            (S::Validate, Reply::Durable(DurableReply::Completion { answer: None })) => S::CheckLease,
            (
                S::Validate | S::Commit { .. } | S::RecordRefusal { .. },
                Reply::Durable(DurableReply::Completion { answer: Some(answer) }),
            ) => answered(answer),
            (S::CheckLease, Reply::Lease(LeaseReply::Holder { lease })) => match lease {
                Some(lease) if lease.fence == self.request.fence && lease.worker == self.request.worker => {
                    S::Commit { lease_expires_at: lease.expires_at }
                }
                _ => S::RecordRefusal { reason: CompletionRefused::LeaseLost },
            },
            // Deleted, or the record is another attempt's: either way this
            // attempt holds no lease now.
            (S::Release { outcome }, Reply::Lease(LeaseReply::Deleted | LeaseReply::Refused { .. })) => {
                S::Done { answer: CompletionOutcome::Completed { outcome: *outcome } }
            }
            (step, reply) => return Err(ProcedureError::unexpected(Self::NAME, step.name(), &reply)),
        };
        self.step = step;
        Ok(Progress::Advanced)
    }

    fn outcome(&self) -> Option<&CompletionOutcome> {
        match &self.step {
            CompletionStep::Done { answer } => Some(answer),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::activator::{Activator, ActivatorConfig, ActivatorStep};
    use crate::claim::testing::{R, Stores, key, op, run, step};
    use crate::claim::types::{Answer, ClaimId, ClaimState, Fence, WorkerId};
    use crate::claim::{DurableRows, Reaper, durable};

    const NOW: Millis = 100;
    const CONFIG: ActivatorConfig = ActivatorConfig { lease_ttl: 500, lock_ttl: 50 };

    fn c1() -> ClaimId {
        ClaimId::from("c1")
    }

    fn activated() -> Stores {
        let mut stores = Stores::new();
        let mut activator = Activator::new(op("a1"), key(1, "w1"), CONFIG);
        assert_eq!(run(&mut stores, &mut activator, NOW), Answer::Accepted);
        stores
    }

    fn complete(id: &str, fence: u64, worker: &str, outcome: Outcome) -> Completion {
        Completion::new(op(id), key(fence, worker), outcome, Some("{\"n\":1}".into()))
    }

    fn refused(reason: CompletionRefused) -> CompletionOutcome {
        CompletionOutcome::Refused { reason }
    }

    #[test]
    fn the_executing_attempt_completes_and_releases_its_lease() {
        let mut stores = activated();
        let answer = run(&mut stores, &mut complete("k1", 1, "w1", Outcome::Succeeded), NOW + 1);
        assert_eq!(answer, CompletionOutcome::Completed { outcome: Outcome::Succeeded });
        let row = &stores.durable.claims[&c1()];
        assert_eq!(
            (row.state, row.outcome, row.result.as_deref()),
            (ClaimState::Succeeded, Some(Outcome::Succeeded), Some("{\"n\":1}"))
        );
        assert!(stores.leases.leases.is_empty(), "the lease is released");
        // A replay gets the same answer; the same key with another outcome is a conflict.
        let again = run(&mut stores, &mut complete("k1", 1, "w1", Outcome::Succeeded), NOW + 2);
        assert_eq!(again, answer);
        let reuse = run(&mut stores, &mut complete("k1", 1, "w1", Outcome::Failed), NOW + 2);
        assert!(matches!(reuse, CompletionOutcome::Conflict { .. }), "{reuse:?}");
        // Nobody completes it again, nor activates or heartbeats it.
        let other = run(&mut stores, &mut complete("k2", 1, "w1", Outcome::Failed), NOW + 3);
        assert_eq!(other, refused(CompletionRefused::NotExecuting));
        assert_eq!(stores.durable.claims[&c1()].state, ClaimState::Succeeded);
    }

    #[test]
    fn only_the_executing_attempt_with_its_lease_completes() {
        let mut stores = Stores::new();
        let early = run(&mut stores, &mut complete("k0", 1, "w1", Outcome::Succeeded), NOW);
        assert_eq!(early, refused(CompletionRefused::NotExecuting));
        let mut stores = activated();
        assert_eq!(
            run(&mut stores, &mut complete("k1", 2, "w1", Outcome::Succeeded), NOW),
            refused(CompletionRefused::StaleFence)
        );
        assert_eq!(
            run(&mut stores, &mut complete("k2", 1, "w2", Outcome::Succeeded), NOW),
            refused(CompletionRefused::WrongWorker)
        );
        // The lease (until NOW + 500) has lapsed: lease_lost, stored.
        let late = NOW + CONFIG.lease_ttl + 1;
        assert_eq!(
            run(&mut stores, &mut complete("k3", 1, "w1", Outcome::Succeeded), late),
            refused(CompletionRefused::LeaseLost)
        );
        assert_eq!(stores.durable.claims[&c1()].state, ClaimState::Executing);
    }

    /// A completion that validated while another one committed and released
    /// the lease finds no lease, and is refused as not executing (the
    /// claim completed), not for the lease.
    #[test]
    fn a_completion_overtaken_by_another_is_refused_as_not_executing() {
        let mut stores = activated();
        let mut late = complete("k2", 1, "w1", Outcome::Failed);
        while !matches!(late.step, CompletionStep::CheckLease) {
            assert_eq!(step(&mut stores, &mut late, NOW + 1), Progress::Advanced);
        }
        let first = run(&mut stores, &mut complete("k1", 1, "w1", Outcome::Succeeded), NOW + 1);
        assert_eq!(first, CompletionOutcome::Completed { outcome: Outcome::Succeeded });
        assert_eq!(run(&mut stores, &mut late, NOW + 1), refused(CompletionRefused::NotExecuting));
    }

    /// RemoraJobs' CompleteWithLostLease: a completion that read the lease
    /// commits after the store lost it only while the deadline recorded in
    /// the durable store is ahead (the lease is restorable). Before the
    /// activation recorded it (the worker was not told it executes), the
    /// commit refuses: the durable store never completes on a deadline it
    /// has not seen.
    #[test]
    fn a_completion_commits_on_a_lost_lease_only_while_it_is_restorable() {
        let read_then_lose = |stores: &mut Stores| {
            let mut completion = complete("k1", 1, "w1", Outcome::Succeeded);
            while !matches!(completion.step, CompletionStep::Commit { .. }) {
                assert_eq!(step(stores, &mut completion, NOW + 1), Progress::Advanced);
            }
            stores.leases.leases.clear();
            run(stores, &mut completion, NOW + 1)
        };
        let mut stores = activated();
        assert_eq!(read_then_lose(&mut stores), CompletionOutcome::Completed { outcome: Outcome::Succeeded });
        assert_eq!(stores.durable.claims[&c1()].state, ClaimState::Succeeded);

        // Committed on the grant, its deadline not recorded yet.
        let mut stores = Stores::new();
        let mut activator = Activator::new(op("a1"), key(1, "w1"), CONFIG);
        while !matches!(activator.step, ActivatorStep::RecordGrant { .. }) {
            assert_eq!(step(&mut stores, &mut activator, NOW), Progress::Advanced);
        }
        assert_eq!(stores.durable.claims[&c1()].lease_until, None);
        assert_eq!(read_then_lose(&mut stores), refused(CompletionRefused::LeaseLost));
        assert_eq!(stores.durable.claims[&c1()].state, ClaimState::Executing);
    }

    #[test]
    fn a_failed_attempt_allows_another_until_the_last_then_the_claim_is_dead() {
        let mut stores = activated();
        let failed = run(&mut stores, &mut complete("k1", 1, "w1", Outcome::Failed), NOW);
        assert_eq!(failed, CompletionOutcome::Completed { outcome: Outcome::Failed });
        assert_eq!(stores.durable.claims[&c1()].state, ClaimState::Failed);
        for (attempt, fence) in [(2u32, 2u64), (3, 3)] {
            let existing = stores.durable.claims.get(&c1()).cloned();
            let row = durable::ClaimRow::authorize_attempt(
                existing.as_ref(),
                &c1(),
                Fence(fence),
                &WorkerId::from("w1"),
                R,
                9,
            )
            .unwrap();
            assert_eq!((row.attempt, row.max_attempts), (attempt, 3), "the claim keeps its limit");
            stores.durable.put_claim(row);
            let id = format!("a{fence}");
            assert_eq!(run(&mut stores, &mut Activator::new(op(&id), key(fence, "w1"), CONFIG), NOW), Answer::Accepted);
            let id = format!("k{fence}");
            run(&mut stores, &mut complete(&id, fence, "w1", Outcome::Failed), NOW);
        }
        let row = stores.durable.claims[&c1()].clone();
        assert_eq!((row.state, row.outcome), (ClaimState::Dead, Some(Outcome::Failed)));
        let refused = durable::ClaimRow::authorize_attempt(Some(&row), &c1(), Fence(4), &WorkerId::from("w1"), R, 3);
        assert!(matches!(refused, Err(crate::claim::AuthorizeRefused::Dead { attempts: 3, .. })), "{refused:?}");
    }

    #[test]
    fn the_last_attempt_reaped_makes_the_claim_dead() {
        let mut stores = Stores::new();
        let row = durable::ClaimRow { max_attempts: 1, ..stores.durable.claims[&c1()].clone() };
        stores.durable.put_claim(row);
        let reaped = run(&mut stores, &mut Reaper::new(10), R);
        assert_eq!(reaped, vec![c1()]);
        let row = &stores.durable.claims[&c1()];
        assert_eq!((row.state, row.outcome), (ClaimState::Dead, None));
        let done = run(&mut stores, &mut complete("k1", 1, "w1", Outcome::Succeeded), R);
        assert_eq!(done, refused(CompletionRefused::Reaped));
    }

    #[test]
    fn a_key_binds_the_whole_request_and_old_rows_their_attempt() {
        use crate::claim::durable::{Binding, OperationRow};
        let activate = |ttl| RequestBody::Activate { lease_ttl_ms: ttl };
        let (row, _) = OperationRow::bind(None, &op("k"), &key(1, "w1"), &activate(500));
        let (_, again) = OperationRow::bind(Some(&row), &op("k"), &key(1, "w1"), &activate(500));
        assert_eq!(again, Binding::Bound);
        let (_, other) = OperationRow::bind(Some(&row), &op("k"), &key(1, "w1"), &activate(250));
        assert_eq!(other, Binding::Conflict { bound: key(1, "w1"), body: activate(500) });
        let complete = RequestBody::Complete { outcome: Outcome::Succeeded, result: None };
        let (_, crossed) = OperationRow::bind(Some(&row), &op("k"), &key(1, "w1"), &complete);
        assert!(matches!(crossed, Binding::Conflict { .. }));
        // A row stored before whole requests were bound decodes as binding
        // the attempt only: any activation of it matches, a completion not.
        let old =
            r#"{"operation":"k","request":{"claim":"c1","fence":1,"worker":"w1"},"rejection":null,"conflict":null}"#;
        let old: OperationRow = serde_json::from_str(old).unwrap();
        assert_eq!((old.body.clone(), old.completion.clone()), (RequestBody::Attempt, None));
        assert_eq!(OperationRow::bind(Some(&old), &op("k"), &key(1, "w1"), &activate(7)).1, Binding::Bound);
        assert!(matches!(
            OperationRow::bind(Some(&old), &op("k"), &key(1, "w1"), &complete).1,
            Binding::Conflict { .. }
        ));
    }

    #[test]
    fn a_claim_row_of_an_older_version_decodes_with_the_defaults() {
        let old =
            r#"{"claim":"c1","fence":1,"worker":"w1","state":"reaped","reservation":null,"lock":null,"activations":0}"#;
        let row: durable::ClaimRow = serde_json::from_str(old).unwrap();
        assert_eq!((row.attempt, row.max_attempts, row.outcome, row.result.clone()), (1, 3, None, None));
        let next = durable::ClaimRow::authorize_attempt(Some(&row), &c1(), Fence(2), &WorkerId::from("w1"), R, 1);
        assert_eq!(next.map(|r| (r.attempt, r.max_attempts)), Ok((2, 3)));
    }
}
