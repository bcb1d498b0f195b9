//! `JobsInit` and `JobsNext`: RemoraClaimLeaseLoss's steps through that
//! mirror, and one method per action the module adds, guard first.

use super::action::JobsAction::{self, *};
use super::model::RemoraJobs;
use super::mutation::Mutation;
use super::state::{FenceSet, JobsState, Outcome};
use crate::mirror::remora::ActivationStage::{Committed, Finished, Idle};
use crate::mirror::remora::DurableState::{Authorized, Executing, Reaped};
use crate::mirror::remora::{Claim, ClaimFunc, Fence, LockOwner, NO_WORKER, Worker};
use crate::mirror::remora_loss::LossAction;

/// The successor of `s` to be updated when `guard` holds.
fn enabled(s: &JobsState, guard: bool) -> Option<JobsState> {
    guard.then_some(*s)
}

impl RemoraJobs {
    pub(super) fn init(&self) -> Vec<JobsState> {
        self.loss
            .init()
            .into_iter()
            .map(|loss| JobsState {
                outcome: ClaimFunc::constant(&self.k.claims, Outcome::Pending),
                // usedFences = [c \in Claims |-> {attemptFence[c]}]
                used_fences: ClaimFunc::new(&self.k.claims, |c| FenceSet::of(loss.base.attempt_fence[c])),
                loss,
                step_violations: 0,
            })
            .collect()
    }

    /// Every instance of every disjunct of `JobsNext`, in the module's
    /// order (the same in every state).
    pub(super) fn all_instances(&self) -> Vec<JobsAction> {
        let k = self.k;
        let mut actions: Vec<JobsAction> = self.loss.all_instances().into_iter().map(Loss).collect();
        // \E c \in Claims, w \in Workers, o \in {Succeeded, Failed}
        for &c in &k.claims {
            for &w in &k.workers {
                actions.extend([Outcome::Succeeded, Outcome::Failed].map(|o| Complete(c, w, o)));
            }
        }
        for &c in &k.claims {
            for &w in &k.workers {
                actions.extend([Outcome::Succeeded, Outcome::Failed].map(|o| CompleteWithLostLease(c, w, o)));
            }
        }
        actions.extend(k.claims.iter().map(|&c| ReapExecuting(c)));
        actions.extend(k.claims.iter().map(|&c| CompensateEndedAttempt(c)));
        // \E c \in Claims, f \in Fences, w \in Workers
        for &c in &k.claims {
            for &f in &k.fences {
                actions.extend(k.workers.iter().map(|&w| AuthorizeRetry(c, f, w)));
            }
        }
        actions
    }

    pub(super) fn next(&self, s: &JobsState, action: JobsAction) -> Option<JobsState> {
        match action {
            Loss(a) => self.loss_step(s, a),
            Complete(c, w, o) => self.complete(s, c, w, o),
            CompleteWithLostLease(c, w, o) => self.complete_with_lost_lease(s, c, w, o),
            ReapExecuting(c) => self.reap_executing(s, c),
            CompensateEndedAttempt(c) => self.compensate_ended_attempt(s, c),
            AuthorizeRetry(c, f, w) => self.authorize_retry(s, c, f, w),
        }
    }

    /// `LossNext /\ UNCHANGED <<outcome, usedFences>>`.
    fn loss_step(&self, s: &JobsState, a: LossAction) -> Option<JobsState> {
        let loss = self.loss.next(&s.loss, a)?;
        Some(JobsState { loss, ..*s })
    }

    /// `Attempts(c) == Cardinality(usedFences[c])`
    fn attempts(&self, s: &JobsState, c: Claim) -> u32 {
        s.used_fences[c].len()
    }

    /// `Dead(c)`: the claim's last allowed attempt failed or was reaped.
    pub fn dead(&self, s: &JobsState, c: Claim) -> bool {
        self.attempts(s, c) >= self.max_attempts
            && (s.outcome[c] == Outcome::Failed || s.loss.base.durable_state[c] == Reaped)
    }

    /// `WithdrawAcceptances(c)`: the acceptances that stood on c's lease
    /// are withdrawn.
    fn withdraw_acceptances(&self, s: &JobsState, n: &mut JobsState, c: Claim) {
        for &op in &self.k.operations {
            let b = &s.loss.base;
            if b.operation_response[op] == self.k.accepted && b.operation_request[op].claim() == Some(c) {
                n.loss.base.operation_response[op] = self.k.no_response;
            }
        }
    }

    fn complete(&self, s: &JobsState, c: Claim, w: Worker, o: Outcome) -> Option<JobsState> {
        let b = &s.loss.base;
        let mut n = enabled(
            s,
            b.durable_state[c] == Executing
                && s.outcome[c] == Outcome::Pending
                && w == b.attempt_worker[c]
                && b.lease[c] == w,
        )?;
        n.outcome[c] = o;
        n.loss.base.lease[c] = NO_WORKER;
        self.withdraw_acceptances(s, &mut n, c);
        if o == Outcome::Failed && self.mutated(Mutation::FailRequeuesAttempt) {
            // The same attempt, put back to be activated again.
            n.outcome[c] = Outcome::Pending;
            n.loss.base.durable_state[c] = Authorized;
            n.loss.base.reservation[c] = w.into();
            n.loss.base.activation_stage[c] = Idle;
        }
        Some(n)
    }

    fn complete_with_lost_lease(&self, s: &JobsState, c: Claim, w: Worker, o: Outcome) -> Option<JobsState> {
        let b = &s.loss.base;
        let mut n = enabled(
            s,
            b.durable_state[c] == Executing
                && s.outcome[c] == Outcome::Pending
                && w == b.attempt_worker[c]
                && b.lease[c] == NO_WORKER
                && s.loss.lease_lost[c],
        )?;
        n.outcome[c] = o;
        n.loss.lease_lost[c] = false;
        Some(n)
    }

    fn reap_executing(&self, s: &JobsState, c: Claim) -> Option<JobsState> {
        let b = &s.loss.base;
        let mut n = enabled(
            s,
            b.durable_state[c] == Executing
                && (s.outcome[c] == Outcome::Pending || self.mutated(Mutation::ReapCompleted))
                && b.lease[c] == NO_WORKER
                && !s.loss.lease_lost[c],
        )?;
        n.loss.base.durable_state[c] = Reaped;
        Some(n)
    }

    fn compensate_ended_attempt(&self, s: &JobsState, c: Claim) -> Option<JobsState> {
        let b = &s.loss.base;
        let mut n = enabled(
            s,
            (b.durable_state[c] == Reaped || s.outcome[c] != Outcome::Pending)
                && b.activation_stage[c] == Committed
                && b.lease[c] == NO_WORKER,
        )?;
        n.loss.base.activation_stage[c] = Finished;
        Some(n)
    }

    fn authorize_retry(&self, s: &JobsState, c: Claim, f: Fence, w: Worker) -> Option<JobsState> {
        let b = &s.loss.base;
        let fresh =
            !s.used_fences[c].contains(f) || (self.mutated(Mutation::RetrySameFence) && f == b.attempt_fence[c]);
        let mut n = enabled(
            s,
            (s.outcome[c] == Outcome::Failed || b.durable_state[c] == Reaped)
                && (self.attempts(s, c) < self.max_attempts || self.mutated(Mutation::RetryBeyondLimit))
                && fresh
                && b.lease[c] == NO_WORKER
                && b.durable_lock[c] == LockOwner::NoOwner,
        )?;
        let base = &mut n.loss.base;
        base.durable_state[c] = Authorized;
        base.attempt_fence[c] = f;
        base.attempt_worker[c] = w;
        base.reservation[c] = w.into();
        base.activation_stage[c] = Idle;
        base.activation_effect_count[c] = 0;
        n.outcome[c] = Outcome::Pending;
        n.used_fences[c] = s.used_fences[c].with(f);
        Some(n)
    }
}
