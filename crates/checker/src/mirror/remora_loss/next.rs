//! `LossInit` and `LossNext`: the base module's steps through the base
//! mirror, and one method per action the module adds, guard first.

use super::action::LossAction::{self, *};
use super::model::RemoraClaimLeaseLoss;
use super::mutation::Mutation;
use super::state::{LossState, LossViolations};
use crate::mirror::remora::ActivationStage::{Committed, LeaseCreated};
use crate::mirror::remora::DurableState::{Authorized, Executing};
use crate::mirror::remora::{Action, Claim, ClaimFunc, LockOwner, NO_WORKER, RemoraClaimActivation, Worker};

/// The successor of `s` to be updated when `guard` holds.
fn enabled(s: &LossState, guard: bool) -> Option<LossState> {
    guard.then_some(*s)
}

impl RemoraClaimLeaseLoss {
    pub(crate) fn init(&self) -> Vec<LossState> {
        self.base
            .init()
            .into_iter()
            .map(|base| LossState {
                base,
                lease_lost: ClaimFunc::constant(&self.k.claims, false),
                step_violations: LossViolations::default(),
            })
            .collect()
    }

    /// Every instance of every disjunct of `LossNext`, in the module's order
    /// (the same in every state: the quantifiers range over constants).
    pub(crate) fn all_instances(&self) -> Vec<LossAction> {
        let k = self.k;
        let mut base = Vec::new();
        RemoraClaimActivation::instances(k, &mut base);
        let mut actions: Vec<LossAction> = base.into_iter().map(Base).collect();
        let each_claim_worker = |a: fn(Claim, Worker) -> LossAction| {
            k.claims.iter().flat_map(move |&c| k.workers.iter().map(move |&w| a(c, w)))
        };
        actions.extend(each_claim_worker(RenewLease));
        // \E restorable \in BOOLEAN
        actions.extend(k.claims.iter().flat_map(|&c| [LoseLease(c, false), LoseLease(c, true)]));
        actions.extend(each_claim_worker(RestoreLease));
        actions.extend(k.claims.iter().map(|&c| ExpireLostLease(c)));
        actions.extend(k.claims.iter().map(|&c| RecreateLease(c)));
        actions.extend(k.claims.iter().map(|&c| CommitActivationWithLostLease(c)));
        actions
    }

    pub(crate) fn next(&self, s: &LossState, action: LossAction) -> Option<LossState> {
        match action {
            Base(a) => self.base_step(s, a),
            RenewLease(c, w) => enabled(s, self.renew_lease(s, c, w)),
            LoseLease(c, restorable) => self.lose_lease(s, c, restorable),
            RestoreLease(c, w) => self.restore_lease(s, c, w),
            ExpireLostLease(c) => self.expire_lost_lease(s, c),
            RecreateLease(c) => self.recreate_lease(s, c),
            CommitActivationWithLostLease(c) => self.commit_activation_with_lost_lease(s, c),
        }
    }

    /// `BaseNext /\ UNCHANGED leaseLost`, with `ReplayOfUnrejected` for
    /// `ReplayActivation`.
    fn base_step(&self, s: &LossState, a: Action) -> Option<LossState> {
        if let Action::ReplayActivation(op, ..) = a
            && !self.mutated(Mutation::ReplayOfRejected)
            && s.base.operation_response[op] == self.k.rejected
        {
            return None;
        }
        let base = self.base.next(&s.base, a)?;
        Some(LossState { base, ..*s })
    }

    /// `RenewLease(c, w)`'s guard (RemoraClaimHeartbeat); its effect is none.
    pub fn renew_lease(&self, s: &LossState, c: Claim, w: Worker) -> bool {
        let b = &s.base;
        b.durable_state[c] == Executing && w == b.attempt_worker[c] && b.lease[c] == w
    }

    fn lose_lease(&self, s: &LossState, c: Claim, restorable: bool) -> Option<LossState> {
        let mut n = enabled(s, s.base.lease[c] != NO_WORKER)?;
        n.base.lease[c] = NO_WORKER;
        n.lease_lost[c] = restorable && s.base.durable_state[c] == Executing;
        for &op in &self.k.operations {
            // `operationRequest[op][1] = c`, as in ExpireLease.
            if s.base.operation_response[op] == self.k.accepted && s.base.operation_request[op].claim() == Some(c) {
                n.base.operation_response[op] = self.k.no_response;
            }
        }
        Some(n)
    }

    fn restore_lease(&self, s: &LossState, c: Claim, w: Worker) -> Option<LossState> {
        let b = &s.base;
        let lost = if self.mutated(Mutation::RestoreExpiredLease) { b.lease[c] == NO_WORKER } else { s.lease_lost[c] };
        let mut n = enabled(
            s,
            b.durable_state[c] == Executing
                && (self.mutated(Mutation::RestoreForAnyWorker) || w == b.attempt_worker[c])
                && lost,
        )?;
        n.base.lease[c] = w.into();
        n.lease_lost[c] = false;
        Some(n)
    }

    fn expire_lost_lease(&self, s: &LossState, c: Claim) -> Option<LossState> {
        let mut n = enabled(s, s.lease_lost[c])?;
        n.lease_lost[c] = false;
        Some(n)
    }

    fn recreate_lease(&self, s: &LossState, c: Claim) -> Option<LossState> {
        let b = &s.base;
        let w = b.attempt_worker[c];
        let mut n = enabled(
            s,
            b.activation_stage[c] == LeaseCreated
                && b.durable_state[c] == Authorized
                && b.reservation[c] == w
                && b.lease[c] == NO_WORKER,
        )?;
        n.base.lease[c] = w.into();
        Some(n)
    }

    fn commit_activation_with_lost_lease(&self, s: &LossState, c: Claim) -> Option<LossState> {
        let b = &s.base;
        let w = b.attempt_worker[c];
        let mut n = enabled(
            s,
            b.activation_stage[c] == LeaseCreated
                && b.durable_lock[c] == LockOwner::Activator
                && b.durable_state[c] == Authorized
                && b.reservation[c] == w
                && b.lease[c] == NO_WORKER,
        )?;
        n.base.durable_state[c] = Executing;
        n.base.reservation[c] = NO_WORKER;
        n.base.activation_stage[c] = Committed;
        n.base.durable_lock[c] = LockOwner::NoOwner;
        n.base.activation_effect_count[c] += 1;
        Some(n)
    }
}
