//! The reaper: one recovery pass over the durable store (the host runs one
//! per alarm). It finds the claims whose reservation expired unactivated,
//! takes the recovery lock of each and reaps it. The lease is left to the
//! activation that created it (compensation): a lease is not authority, so
//! a reaped claim's lease cannot make anything execute meanwhile.
//!
//! A [`Procedure`] like the activator; its outcome is the claims the pass
//! reaped.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::durable::{DurableReply, DurableRequest};
use super::error::ProcedureError;
use super::lease::{Lease, LeaseReply, LeaseRequest};
use super::message::{Reply, Request};
use super::procedure::{Procedure, Progress};
use super::types::{ClaimId, Millis};

/// Where a pass is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum ReaperStep {
    /// List the claims awaiting recovery.
    #[default]
    Scan,
    /// Take the recovery lock of `claim`; `queue` is still to do.
    Lock {
        claim: ClaimId,
        queue: VecDeque<ClaimId>,
    },
    /// Reap `claim`, which recovery has locked.
    Reap {
        claim: ClaimId,
        queue: VecDeque<ClaimId>,
    },
    Done,
}

impl ReaperStep {
    /// The step's name (`snake_case`, as serialized).
    pub fn name(&self) -> &'static str {
        match self {
            ReaperStep::Scan => "scan",
            ReaperStep::Lock { .. } => "lock",
            ReaperStep::Reap { .. } => "reap",
            ReaperStep::Done => "done",
        }
    }
}

/// One recovery pass over at most `batch` claims. A pass is bounded so that
/// a host can let other work in between passes; a pass that found a full
/// batch says so (`more`), and the host runs another.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reaper {
    pub step: ReaperStep,
    /// How many claims one pass takes on.
    pub batch: usize,
    /// The claims this pass has reaped, in order: its outcome once done.
    pub reaped: Vec<ClaimId>,
    /// Whether the scan found a full batch: more claims may be waiting.
    pub more: bool,
}

impl Reaper {
    /// The claims a pass takes on when nothing else is said.
    pub const BATCH: usize = 100;

    pub fn new(batch: usize) -> Reaper {
        Reaper { step: ReaperStep::Scan, batch: batch.max(1), reaped: Vec::new(), more: false }
    }
}

impl Default for Reaper {
    fn default() -> Reaper {
        Reaper::new(Reaper::BATCH)
    }
}

impl Procedure for Reaper {
    type Outcome = Vec<ClaimId>;
    const NAME: &'static str = "reaper";

    /// Every request is a durable one; `now` is the durable store's to read.
    fn poll_request(&self, _now: Millis) -> Option<Request> {
        let request = match &self.step {
            ReaperStep::Scan => DurableRequest::ListAwaitingRecovery { limit: self.batch },
            ReaperStep::Lock { claim, .. } => DurableRequest::AcquireRecoveryLock { claim: claim.clone() },
            ReaperStep::Reap { claim, .. } => DurableRequest::FinishRecovery { claim: claim.clone() },
            ReaperStep::Done => return None,
        };
        Some(Request::Durable(request))
    }

    /// A claim recovery cannot lock or reap (an activation holds the lock,
    /// or it committed first) is skipped: the next pass looks again. A pass
    /// never waits.
    ///
    /// The queue moves from step to step; it is never copied, so a pass
    /// does work proportional to the claims it takes on.
    fn handle_reply(&mut self, reply: Reply) -> Result<Progress, ProcedureError> {
        let fits = matches!(
            (&self.step, &reply),
            (_, Reply::Durable(DurableReply::Failed { .. }))
                | (ReaperStep::Scan, Reply::Durable(DurableReply::AwaitingRecovery { .. }))
                | (ReaperStep::Lock { .. }, Reply::Durable(DurableReply::RecoveryLocked))
                | (
                    ReaperStep::Lock { .. } | ReaperStep::Reap { .. },
                    Reply::Durable(DurableReply::RecoveryRefused { .. })
                )
                | (ReaperStep::Reap { .. }, Reply::Durable(DurableReply::Reaped))
        );
        if !fits {
            return Err(ProcedureError::unexpected(Self::NAME, self.step.name(), &reply));
        }
        if let Reply::Durable(DurableReply::Failed { error }) = reply {
            return Err(error.into());
        }
        self.step = match (std::mem::take(&mut self.step), reply) {
            (ReaperStep::Scan, Reply::Durable(DurableReply::AwaitingRecovery { claims })) => {
                self.more = claims.len() >= self.batch;
                next(claims.into())
            }
            (ReaperStep::Lock { claim, queue }, Reply::Durable(DurableReply::RecoveryLocked)) => {
                ReaperStep::Reap { claim, queue }
            }
            (ReaperStep::Reap { claim, queue }, Reply::Durable(DurableReply::Reaped)) => {
                self.reaped.push(claim);
                next(queue)
            }
            (ReaperStep::Lock { queue, .. } | ReaperStep::Reap { queue, .. }, _) => next(queue),
            (step, _) => step,
        };
        Ok(Progress::Advanced)
    }

    fn outcome(&self) -> Option<&Vec<ClaimId>> {
        (self.step == ReaperStep::Done).then_some(&self.reaped)
    }
}

fn next(mut queue: VecDeque<ClaimId>) -> ReaperStep {
    match queue.pop_front() {
        Some(claim) => ReaperStep::Lock { claim, queue },
        None => ReaperStep::Done,
    }
}

/// Where a pass of the [`ExecutingReaper`] is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum ExecutingReaperStep {
    /// List the executing claims whose recorded lease deadline passed.
    #[default]
    Scan,
    /// Read `claim`'s lease record; `queue` is still to do.
    ReadLease {
        claim: ClaimId,
        queue: VecDeque<ClaimId>,
    },
    /// `ReapExecuting(claim)` with the lease record read.
    Reap {
        claim: ClaimId,
        lease: Option<Lease>,
        queue: VecDeque<ClaimId>,
    },
    Done,
}

impl ExecutingReaperStep {
    /// The step's name (`snake_case`, as serialized).
    pub fn name(&self) -> &'static str {
        match self {
            ExecutingReaperStep::Scan => "scan",
            ExecutingReaperStep::ReadLease { .. } => "read_lease",
            ExecutingReaperStep::Reap { .. } => "reap",
            ExecutingReaperStep::Done => "done",
        }
    }
}

/// One pass of recovery over executing claims (`ReapExecuting(c)` in
/// `tla/RemoraJobs.tla`): an executing attempt whose lease is neither live
/// nor restorable is reaped, so that no claim is left executing with nobody
/// told (its worker's heartbeat and completion answer `reaped`; a new
/// attempt may be authorized, or the claim is dead after its last one).
///
/// For each executing claim whose recorded lease deadline has passed (or
/// that has none recorded), the pass reads the lease record (`Holder`: the
/// lease in force) and the durable store decides with it
/// (`DurableRequest::ReapExecuting`). A host holds the claim's lease lock
/// from the read to that decision, as from a lease request to the
/// `RecordLease` after it: no renewal or restoration of the claim runs in
/// between. A live lease of the attempt is not reaped; its deadline is
/// recorded, and the pass looks again once it has passed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExecutingReaper {
    pub step: ExecutingReaperStep,
    pub batch: usize,
    /// The claims this pass has reaped, in order: its outcome once done.
    pub reaped: Vec<ClaimId>,
    /// Whether the scan found a full batch: more claims may be waiting.
    pub more: bool,
}

impl ExecutingReaper {
    pub fn new(batch: usize) -> ExecutingReaper {
        ExecutingReaper { step: ExecutingReaperStep::Scan, batch: batch.max(1), reaped: Vec::new(), more: false }
    }
}

impl Default for ExecutingReaper {
    fn default() -> ExecutingReaper {
        ExecutingReaper::new(Reaper::BATCH)
    }
}

impl Procedure for ExecutingReaper {
    type Outcome = Vec<ClaimId>;
    const NAME: &'static str = "executing_reaper";

    fn poll_request(&self, _now: Millis) -> Option<Request> {
        Some(match &self.step {
            ExecutingReaperStep::Scan => Request::Durable(DurableRequest::ListExecutingUnleased { limit: self.batch }),
            ExecutingReaperStep::ReadLease { claim, .. } => {
                Request::Lease(LeaseRequest::Holder { claim: claim.clone() })
            }
            ExecutingReaperStep::Reap { claim, lease, .. } => {
                Request::Durable(DurableRequest::ReapExecuting { claim: claim.clone(), lease: lease.clone() })
            }
            ExecutingReaperStep::Done => return None,
        })
    }

    /// A claim the durable store refuses to reap (it completed, its lease
    /// is live or restorable) is skipped. A pass never waits.
    fn handle_reply(&mut self, reply: Reply) -> Result<Progress, ProcedureError> {
        use ExecutingReaperStep as S;
        let step = match (std::mem::take(&mut self.step), reply) {
            (_, Reply::Durable(DurableReply::Failed { error })) => return Err(error.into()),
            (S::Scan, Reply::Durable(DurableReply::AwaitingRecovery { claims })) => {
                self.more = claims.len() >= self.batch;
                next_executing(claims.into())
            }
            (S::ReadLease { claim, queue }, Reply::Lease(LeaseReply::Holder { lease })) => {
                S::Reap { claim, lease, queue }
            }
            (S::Reap { claim, queue, .. }, Reply::Durable(DurableReply::Reaped)) => {
                self.reaped.push(claim);
                next_executing(queue)
            }
            (S::Reap { queue, .. }, Reply::Durable(DurableReply::RecoveryRefused { .. })) => next_executing(queue),
            (step, reply) => {
                let error = ProcedureError::unexpected(Self::NAME, step.name(), &reply);
                self.step = step;
                return Err(error);
            }
        };
        self.step = step;
        Ok(Progress::Advanced)
    }

    fn outcome(&self) -> Option<&Vec<ClaimId>> {
        (self.step == ExecutingReaperStep::Done).then_some(&self.reaped)
    }
}

fn next_executing(mut queue: VecDeque<ClaimId>) -> ExecutingReaperStep {
    match queue.pop_front() {
        Some(claim) => ExecutingReaperStep::ReadLease { claim, queue },
        None => ExecutingReaperStep::Done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::durable::{ClaimRow, DurableRows};
    use crate::claim::error::RecoveryRefused;
    use crate::claim::testing::{R, Stores, op, run};
    use crate::claim::types::{ClaimState, Fence, WorkerId};

    /// One pass at `now`: the requests it sent, and its outcome.
    fn pass(stores: &mut Stores, now: Millis) -> (Vec<Request>, Vec<ClaimId>) {
        let reaped = run(stores, &mut Reaper::default(), now);
        (std::mem::take(&mut stores.sent), reaped)
    }

    fn stores() -> Stores {
        let mut stores = Stores::new();
        stores.durable.put_claim(ClaimRow::authorize(ClaimId::from("c2"), Fence(1), WorkerId::from("w2"), R + 500));
        stores
    }

    fn durable(request: DurableRequest) -> Request {
        Request::Durable(request)
    }

    #[test]
    fn a_pass_reaps_only_expired_reservations() {
        let mut stores = stores();
        let list = || durable(DurableRequest::ListAwaitingRecovery { limit: Reaper::BATCH });
        assert_eq!(pass(&mut stores, R - 1), (vec![list()], vec![]));
        let c1 = ClaimId::from("c1");
        let sent = vec![
            list(),
            durable(DurableRequest::AcquireRecoveryLock { claim: c1.clone() }),
            durable(DurableRequest::FinishRecovery { claim: c1.clone() }),
        ];
        assert_eq!(pass(&mut stores, R), (sent, vec![c1.clone()]));
        assert_eq!(stores.durable.claims[&c1].state, ClaimState::Reaped);
        assert_eq!(stores.durable.claims[&ClaimId::from("c2")].state, ClaimState::Authorized);
    }

    #[test]
    fn a_claim_whose_lock_an_activation_holds_is_skipped() {
        let mut stores = stores();
        let (c1, c2) = (ClaimId::from("c1"), ClaimId::from("c2"));
        let rows = &mut stores.durable;
        rows.put_claim(ClaimRow::authorize(c2.clone(), Fence(1), WorkerId::from("w2"), R));
        let locked = rows.claims[&c1].acquire_activation_lock(&op("o1"), R + 10, R - 1).unwrap();
        rows.put_claim(locked);
        assert_eq!(pass(&mut stores, R + 5).1, std::slice::from_ref(&c2));
        assert_eq!(stores.durable.claims[&c1].state, ClaimState::Authorized, "skipped");
        assert_eq!(stores.durable.claims[&c2].state, ClaimState::Reaped, "the rest of the pass goes on");
        assert_eq!(pass(&mut stores, R + 10).1, std::slice::from_ref(&c1));
        assert_eq!(stores.durable.claims[&c1].state, ClaimState::Reaped, "the activation's lock expired");
    }

    #[test]
    fn a_claim_locked_by_an_earlier_pass_is_finished_by_the_next() {
        let c1 = ClaimId::from("c1");
        let mut reaper =
            Reaper { step: ReaperStep::Reap { claim: c1.clone(), queue: VecDeque::new() }, ..Reaper::default() };
        let refused = DurableReply::RecoveryRefused { refused: RecoveryRefused::NotRecoveryLocked };
        assert_eq!(reaper.handle_reply(Reply::Durable(refused)), Ok(Progress::Advanced));
        assert_eq!(reaper.outcome(), Some(&Vec::new()), "done, and nothing reaped");
        let mut stores = stores();
        let locked = stores.durable.claims[&c1].acquire_recovery_lock(R).unwrap();
        stores.durable.put_claim(locked);
        assert_eq!(pass(&mut stores, R).1, std::slice::from_ref(&c1));
        assert_eq!(stores.durable.claims[&c1].state, ClaimState::Reaped);
    }

    #[test]
    fn a_pass_takes_on_at_most_a_batch_and_says_when_more_wait() {
        let mut stores = Stores::new();
        for i in 0..5u64 {
            let claim = ClaimId(format!("x{i}"));
            stores.durable.put_claim(ClaimRow::authorize(claim, Fence(1), WorkerId::from("w"), R - 10 + i));
        }
        let mut first = Reaper::new(4);
        let reaped = run(&mut stores, &mut first, R + 10);
        assert_eq!(reaped.len(), 4);
        assert!(first.more, "a full batch: more may wait");
        let ids: Vec<&str> = reaped.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(ids, ["x0", "x1", "x2", "x3"], "earliest deadlines first");
        let mut second = Reaper::new(4);
        assert_eq!(run(&mut stores, &mut second, R + 10).len(), 2, "x4 and c1");
        assert!(!second.more);
    }

    #[test]
    fn an_unexpected_reply_is_an_error() {
        let mut reaper = Reaper::default();
        assert!(reaper.handle_reply(Reply::Durable(DurableReply::Reaped)).is_err());
        let lease = Reply::Lease(crate::claim::lease::LeaseReply::Deleted);
        assert!(reaper.handle_reply(lease).is_err(), "a reaper never asks the coordination store");
        assert_eq!(reaper, Reaper::default());
    }

    mod executing {
        use super::*;
        use crate::claim::error::HeartbeatRefused;
        use crate::claim::testing::key;
        use crate::claim::types::{Answer, Outcome};
        use crate::claim::{Activator, ActivatorConfig, Heartbeat, HeartbeatOutcome};

        const NOW: Millis = 100;
        const TTL: Millis = 500;

        fn c1() -> ClaimId {
            ClaimId::from("c1")
        }

        /// c1 executing for (1, w1), its lease until NOW + TTL, recorded.
        fn executing(max_attempts: u32) -> Stores {
            let mut stores = Stores::new();
            stores.durable.claims.get_mut(&c1()).unwrap().max_attempts = max_attempts;
            let config = ActivatorConfig { lease_ttl: TTL, lock_ttl: 50 };
            let mut a = Activator::new(op("o1"), key(1, "w1"), config);
            assert_eq!(run(&mut stores, &mut a, NOW), Answer::Accepted);
            stores
        }

        fn pass(stores: &mut Stores, now: Millis) -> Vec<ClaimId> {
            run(stores, &mut ExecutingReaper::default(), now)
        }

        fn state(stores: &Stores) -> ClaimState {
            stores.durable.claims[&c1()].state
        }

        #[test]
        fn an_executing_attempt_whose_lease_lapsed_is_reaped_as_a_failed_attempt() {
            let mut stores = executing(3);
            assert_eq!(pass(&mut stores, NOW + TTL - 1), Vec::<ClaimId>::new(), "the lease is live");
            assert_eq!(state(&stores), ClaimState::Executing);
            assert_eq!(pass(&mut stores, NOW + TTL), vec![c1()]);
            assert_eq!(state(&stores), ClaimState::Reaped);
            assert_eq!(stores.durable.claims[&c1()].lease_until, None);
            let beat = run(&mut stores, &mut Heartbeat::new(key(1, "w1"), TTL), NOW + TTL);
            assert_eq!(beat, HeartbeatOutcome::Refused { reason: HeartbeatRefused::Reaped });
            assert_eq!(pass(&mut stores, NOW + TTL + 1), Vec::<ClaimId>::new(), "reaped once");
        }

        #[test]
        fn on_the_last_attempt_it_is_dead() {
            let mut stores = executing(1);
            assert_eq!(pass(&mut stores, NOW + TTL), vec![c1()]);
            assert_eq!(state(&stores), ClaimState::Dead);
            assert_eq!(stores.durable.claims[&c1()].outcome, None);
        }

        #[test]
        fn a_lost_lease_is_left_to_its_worker_until_its_recorded_deadline_passes() {
            let mut stores = executing(3);
            stores.leases.leases.clear();
            assert_eq!(pass(&mut stores, NOW + TTL - 1), Vec::<ClaimId>::new(), "restorable");
            assert_eq!(pass(&mut stores, NOW + TTL), vec![c1()], "no longer restorable");
            assert_eq!(state(&stores), ClaimState::Reaped);
        }

        #[test]
        fn a_restored_lease_keeps_its_claim_executing() {
            let mut stores = executing(3);
            stores.leases.leases.clear();
            let beat = run(&mut stores, &mut Heartbeat::new(key(1, "w1"), TTL), NOW + 10);
            assert_eq!(beat, HeartbeatOutcome::Renewed { expires_at: NOW + 10 + TTL });
            assert_eq!(pass(&mut stores, NOW + TTL), Vec::<ClaimId>::new());
            assert_eq!(state(&stores), ClaimState::Executing);
        }

        #[test]
        fn a_live_lease_the_claim_store_has_not_recorded_is_recorded_not_reaped() {
            let mut stores = executing(3);
            // A renewal granted whose recording never happened.
            stores.leases.leases.get_mut(&c1()).unwrap().expires_at = NOW + 3 * TTL;
            assert_eq!(pass(&mut stores, NOW + TTL), Vec::<ClaimId>::new());
            assert_eq!(stores.durable.claims[&c1()].lease_until, Some(NOW + 3 * TTL), "caught up");
            assert_eq!(pass(&mut stores, NOW + 3 * TTL), vec![c1()]);
        }

        #[test]
        fn a_completed_attempt_is_never_reaped() {
            let mut stores = executing(3);
            let row = &stores.durable.claims[&c1()];
            let done = row.complete(&key(1, "w1"), Outcome::Succeeded, None, NOW + TTL, NOW + 1).unwrap();
            stores.durable.put_claim(done);
            assert_eq!(pass(&mut stores, NOW + 10 * TTL), Vec::<ClaimId>::new());
            assert_eq!(state(&stores), ClaimState::Succeeded);
            let row = stores.durable.claims[&c1()].clone();
            assert_eq!(row.reap_executing(None, NOW + 10 * TTL), Err(RecoveryRefused::NotExecuting));
        }
    }
}
