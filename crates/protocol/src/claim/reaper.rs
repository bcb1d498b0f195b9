//! The reaper: one recovery pass over the durable store (the host runs one
//! per alarm). It finds the claims whose reservation expired unactivated,
//! takes the recovery lock of each and reaps it. The lease is left to the
//! activation that created it (compensation): a lease is not authority, so
//! a reaped claim's lease cannot make anything execute meanwhile.
//!
//! Sans-IO like the activator: [`Reaper::poll_request`], then
//! [`Reaper::handle_reply`], until [`Reaper::is_done`].

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::durable::{DurableReply, DurableRequest};
use super::error::ProcedureError;
use super::types::ClaimId;

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
}

impl Reaper {
    /// The request to send next; `None` when the pass is over.
    #[must_use]
    pub fn poll_request(&self) -> Option<DurableRequest> {
        match &self.step {
            ReaperStep::Scan => Some(DurableRequest::ListAwaitingRecovery),
            ReaperStep::Lock { claim, .. } => Some(DurableRequest::AcquireRecoveryLock { claim: claim.clone() }),
            ReaperStep::Reap { claim, .. } => Some(DurableRequest::FinishRecovery { claim: claim.clone() }),
            ReaperStep::Done => None,
        }
    }

    /// Takes the reply to the last polled request. A claim recovery cannot
    /// lock or reap (an activation holds the lock, or it committed first) is
    /// skipped: the next pass looks again.
    pub fn handle_reply(&mut self, reply: DurableReply) -> Result<(), ProcedureError> {
        let step = match (&self.step, reply) {
            (_, DurableReply::Failed { error }) => return Err(error.into()),
            (ReaperStep::Scan, DurableReply::AwaitingRecovery { claims }) => next(claims.into()),
            (ReaperStep::Lock { claim, queue }, DurableReply::RecoveryLocked) => {
                ReaperStep::Reap { claim: claim.clone(), queue: queue.clone() }
            }
            (ReaperStep::Lock { queue, .. } | ReaperStep::Reap { queue, .. }, DurableReply::RecoveryRefused { .. }) => {
                next(queue.clone())
            }
            (ReaperStep::Reap { queue, .. }, DurableReply::Reaped) => next(queue.clone()),
            (step, reply) => {
                return Err(ProcedureError::UnexpectedReply {
                    procedure: "reaper",
                    step: step.name(),
                    reply: format!("{reply:?}"),
                });
            }
        };
        self.step = step;
        Ok(())
    }

    /// Whether the pass is over.
    pub fn is_done(&self) -> bool {
        self.step == ReaperStep::Done
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
    use crate::claim::durable::{self, ClaimRow, DurableRows, MemoryDurable};
    use crate::claim::error::RecoveryRefused;
    use crate::claim::testing::{R, claim_row, op};
    use crate::claim::types::{ClaimState, Fence, Millis, WorkerId};

    fn pass(rows: &mut MemoryDurable, now: Millis) -> Vec<DurableRequest> {
        let mut reaper = Reaper::default();
        let mut sent = Vec::new();
        while let Some(request) = reaper.poll_request() {
            let reply = durable::apply(rows, &request, now);
            sent.push(request);
            reaper.handle_reply(reply).unwrap();
        }
        sent
    }

    fn rows() -> MemoryDurable {
        let mut rows = MemoryDurable::default();
        rows.put_claim(claim_row());
        rows.put_claim(ClaimRow::authorize(ClaimId::from("c2"), Fence(1), WorkerId::from("w2"), R + 500));
        rows
    }

    #[test]
    fn a_pass_reaps_only_expired_reservations() {
        let mut rows = rows();
        assert_eq!(pass(&mut rows, R - 1), [DurableRequest::ListAwaitingRecovery]);
        let c1 = ClaimId::from("c1");
        assert_eq!(
            pass(&mut rows, R),
            [
                DurableRequest::ListAwaitingRecovery,
                DurableRequest::AcquireRecoveryLock { claim: c1.clone() },
                DurableRequest::FinishRecovery { claim: c1.clone() },
            ]
        );
        assert_eq!(rows.claims[&c1].state, ClaimState::Reaped);
        assert_eq!(rows.claims[&ClaimId::from("c2")].state, ClaimState::Authorized);
    }

    #[test]
    fn a_claim_whose_lock_an_activation_holds_is_skipped() {
        let mut rows = rows();
        let (c1, c2) = (ClaimId::from("c1"), ClaimId::from("c2"));
        rows.put_claim(ClaimRow::authorize(c2.clone(), Fence(1), WorkerId::from("w2"), R));
        let locked = rows.claims[&c1].acquire_activation_lock(&op("o1"), R + 10, R - 1).unwrap();
        rows.put_claim(locked);
        pass(&mut rows, R + 5);
        assert_eq!(rows.claims[&c1].state, ClaimState::Authorized, "skipped");
        assert_eq!(rows.claims[&c2].state, ClaimState::Reaped, "the rest of the pass goes on");
        pass(&mut rows, R + 10);
        assert_eq!(rows.claims[&c1].state, ClaimState::Reaped, "the activation's lock expired");
    }

    #[test]
    fn a_claim_locked_by_an_earlier_pass_is_finished_by_the_next() {
        let mut reaper = Reaper { step: ReaperStep::Reap { claim: ClaimId::from("c1"), queue: VecDeque::new() } };
        reaper.handle_reply(DurableReply::RecoveryRefused { refused: RecoveryRefused::NotRecoveryLocked }).unwrap();
        assert!(reaper.is_done());
        let mut rows = rows();
        let c1 = ClaimId::from("c1");
        let locked = rows.claims[&c1].acquire_recovery_lock(R).unwrap();
        rows.put_claim(locked);
        pass(&mut rows, R);
        assert_eq!(rows.claims[&c1].state, ClaimState::Reaped);
    }

    #[test]
    fn an_unexpected_reply_is_an_error() {
        let mut reaper = Reaper::default();
        assert!(reaper.handle_reply(DurableReply::Reaped).is_err());
        assert_eq!(reaper, Reaper::default());
    }
}
