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

/// One recovery pass.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reaper {
    pub step: ReaperStep,
    /// The claims this pass has reaped, in order: its outcome once done.
    pub reaped: Vec<ClaimId>,
}

impl Procedure for Reaper {
    type Outcome = Vec<ClaimId>;
    const NAME: &'static str = "reaper";

    /// Every request is a durable one; `now` is the durable store's to read.
    fn poll_request(&self, _now: Millis) -> Option<Request> {
        let request = match &self.step {
            ReaperStep::Scan => DurableRequest::ListAwaitingRecovery,
            ReaperStep::Lock { claim, .. } => DurableRequest::AcquireRecoveryLock { claim: claim.clone() },
            ReaperStep::Reap { claim, .. } => DurableRequest::FinishRecovery { claim: claim.clone() },
            ReaperStep::Done => return None,
        };
        Some(Request::Durable(request))
    }

    /// A claim recovery cannot lock or reap (an activation holds the lock,
    /// or it committed first) is skipped: the next pass looks again. A pass
    /// never waits.
    fn handle_reply(&mut self, reply: Reply) -> Result<Progress, ProcedureError> {
        let step = match (&self.step, reply) {
            (_, Reply::Durable(DurableReply::Failed { error })) => return Err(error.into()),
            (ReaperStep::Scan, Reply::Durable(DurableReply::AwaitingRecovery { claims })) => next(claims.into()),
            (ReaperStep::Lock { claim, queue }, Reply::Durable(DurableReply::RecoveryLocked)) => {
                ReaperStep::Reap { claim: claim.clone(), queue: queue.clone() }
            }
            (
                ReaperStep::Lock { queue, .. } | ReaperStep::Reap { queue, .. },
                Reply::Durable(DurableReply::RecoveryRefused { .. }),
            ) => next(queue.clone()),
            (ReaperStep::Reap { claim, queue }, Reply::Durable(DurableReply::Reaped)) => {
                self.reaped.push(claim.clone());
                next(queue.clone())
            }
            (step, reply) => {
                return Err(ProcedureError::UnexpectedReply {
                    procedure: Self::NAME,
                    step: step.name(),
                    reply: format!("{reply:?}"),
                });
            }
        };
        self.step = step;
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
        assert_eq!(pass(&mut stores, R - 1), (vec![durable(DurableRequest::ListAwaitingRecovery)], vec![]));
        let c1 = ClaimId::from("c1");
        let sent = vec![
            durable(DurableRequest::ListAwaitingRecovery),
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
            Reaper { step: ReaperStep::Reap { claim: c1.clone(), queue: VecDeque::new() }, reaped: Vec::new() };
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
    fn an_unexpected_reply_is_an_error() {
        let mut reaper = Reaper::default();
        assert!(reaper.handle_reply(Reply::Durable(DurableReply::Reaped)).is_err());
        let lease = Reply::Lease(crate::claim::lease::LeaseReply::Deleted);
        assert!(reaper.handle_reply(lease).is_err(), "a reaper never asks the coordination store");
        assert_eq!(reaper, Reaper::default());
    }
}
