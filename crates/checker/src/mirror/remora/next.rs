//! `Init` and `Next`: one method per TLA+ action, guard first, then the
//! primed variables that change (the rest are `UNCHANGED`: the clone).

use super::action::Action::{self, *};
use super::model::RemoraClaimActivation;
use super::mutation::Mutation;
use super::state::{State, Violations};
use super::values::ActivationStage::*;
use super::values::DurableState::*;
use super::values::{Claim, ClaimFunc, Constants, Fence, LockOwner, NO_WORKER, Op, OpFunc, Request, Worker};
use crate::compact::Ctx;

/// The successor of `s` to be updated when `guard` holds; `None` when the
/// action is not enabled.
fn enabled(s: &State, guard: bool) -> Option<State> {
    guard.then_some(*s)
}

/// `Request(c, f, w)`
fn request(c: Claim, f: Fence, w: Worker) -> Request {
    Request::Key(c, f, w)
}

impl RemoraClaimActivation {
    pub(crate) fn init(&self) -> Vec<State> {
        let k = self.k;
        let mut states = Vec::new();
        for attempt_fence in ClaimFunc::all(&k.claims, &k.fences) {
            for attempt_worker in ClaimFunc::all(&k.claims, &k.workers) {
                states.push(State {
                    k: Ctx(k),
                    durable_state: ClaimFunc::constant(&k.claims, Authorized),
                    attempt_fence,
                    reservation: ClaimFunc::new(&k.claims, |c| attempt_worker[c].into()),
                    attempt_worker,
                    lease: ClaimFunc::constant(&k.claims, NO_WORKER),
                    activation_stage: ClaimFunc::constant(&k.claims, Idle),
                    durable_lock: ClaimFunc::constant(&k.claims, LockOwner::NoOwner),
                    operation_request: OpFunc::constant(&k.operations, Request::NoRequest),
                    operation_response: OpFunc::constant(&k.operations, k.no_response),
                    conflict_request: OpFunc::constant(&k.operations, Request::NoRequest),
                    activation_effect_count: ClaimFunc::constant(&k.claims, 0),
                    step_violations: Violations::default(),
                });
            }
        }
        states
    }

    /// Every instance of every disjunct of `Next`, in the spec's order (the
    /// same in every state: the quantifiers range over constants).
    /// Instances that are not enabled are dropped by `next` returning `None`.
    pub(crate) fn instances(k: &Constants, actions: &mut Vec<Action>) {
        // \E op \in Operations, c \in Claims, f \in Fences, w \in Workers
        let each_request = |a: fn(Op, Claim, Fence, Worker) -> Action| {
            k.operations.iter().flat_map(move |&op| {
                k.claims.iter().flat_map(move |&c| {
                    k.fences.iter().flat_map(move |&f| k.workers.iter().map(move |&w| a(op, c, f, w)))
                })
            })
        };
        // \E c \in Claims
        let each_claim = |a: fn(Claim) -> Action| k.claims.iter().map(move |&c| a(c));
        actions.extend(each_request(BindOperation));
        actions.extend(each_request(RejectOperationReuse));
        actions.extend(each_request(StartActivation));
        actions.extend(each_claim(CreateLease));
        actions.extend(each_claim(AcquireActivationLock));
        actions.extend(each_claim(LoseActivatorLock));
        actions.extend(each_claim(CommitActivation));
        actions.extend(each_request(ReplayActivation));
        actions.extend(each_request(RejectPrecondition));
        actions.extend(each_claim(ExpireReservation));
        actions.extend(each_claim(ExpireLease));
        actions.extend(each_claim(AcquireRecoveryLock));
        actions.extend(each_claim(FinishRecovery));
        actions.extend(each_claim(CompensateRejectedActivation));
        actions.push(Done);
    }

    pub(crate) fn next(&self, s: &State, action: Action) -> Option<State> {
        match action {
            BindOperation(op, c, f, w) => self.bind_operation(s, op, c, f, w),
            RejectOperationReuse(op, c, f, w) => self.reject_operation_reuse(s, op, c, f, w),
            StartActivation(op, c, f, w) => self.start_activation(s, op, c, f, w),
            CreateLease(c) => self.create_lease(s, c),
            AcquireActivationLock(c) => self.acquire_activation_lock(s, c),
            LoseActivatorLock(c) => self.lose_activator_lock(s, c),
            CommitActivation(c) => self.commit_activation(s, c),
            ReplayActivation(op, c, f, w) => self.replay_activation(s, op, c, f, w),
            RejectPrecondition(op, c, f, w) => self.reject_precondition(s, op, c, f, w),
            ExpireReservation(c) => self.expire_reservation(s, c),
            ExpireLease(c) => self.expire_lease(s, c),
            AcquireRecoveryLock(c) => self.acquire_recovery_lock(s, c),
            FinishRecovery(c) => self.finish_recovery(s, c),
            CompensateRejectedActivation(c) => self.compensate_rejected_activation(s, c),
            Done => self.done(s),
        }
    }

    fn bind_operation(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n =
            enabled(s, self.mutated(Mutation::BindOverwritesRequest) || s.operation_request[op] == Request::NoRequest)?;
        n.operation_request[op] = request(c, f, w);
        Some(n)
    }

    fn reject_operation_reuse(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n =
            enabled(s, s.operation_request[op] != Request::NoRequest && s.operation_request[op] != request(c, f, w))?;
        n.conflict_request[op] = request(c, f, w);
        Some(n)
    }

    fn start_activation(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n = enabled(
            s,
            s.operation_request[op] == request(c, f, w)
                && s.operation_response[op] == self.k.no_response
                && request(c, f, w) == s.exact_request(c)
                && s.activation_stage[c] == Idle
                && s.durable_state[c] == Authorized
                && s.reservation[c] == w,
        )?;
        n.activation_stage[c] = Validated;
        Some(n)
    }

    fn create_lease(&self, s: &State, c: Claim) -> Option<State> {
        let w = s.attempt_worker[c];
        let mut n = enabled(
            s,
            s.activation_stage[c] == Validated
                && s.durable_state[c] == Authorized
                && s.reservation[c] == w
                && s.lease[c] == NO_WORKER,
        )?;
        n.lease[c] = w.into();
        n.activation_stage[c] = LeaseCreated;
        Some(n)
    }

    fn acquire_activation_lock(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(
            s,
            s.activation_stage[c] == LeaseCreated
                && s.durable_state[c] == Authorized
                && s.durable_lock[c] == LockOwner::NoOwner,
        )?;
        n.durable_lock[c] = LockOwner::Activator;
        Some(n)
    }

    fn lose_activator_lock(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(s, s.durable_lock[c] == LockOwner::Activator)?;
        n.durable_lock[c] = LockOwner::NoOwner;
        Some(n)
    }

    fn commit_activation(&self, s: &State, c: Claim) -> Option<State> {
        let w = s.attempt_worker[c];
        let mut n = enabled(
            s,
            (self.mutated(Mutation::CommitWithoutLock)
                || (s.activation_stage[c] == LeaseCreated
                    && s.durable_lock[c] == LockOwner::Activator
                    && s.durable_state[c] == Authorized
                    && s.reservation[c] == w))
                && s.lease[c] == w,
        )?;
        n.durable_state[c] = Executing;
        n.reservation[c] = NO_WORKER;
        n.activation_stage[c] = Committed;
        n.durable_lock[c] = LockOwner::NoOwner;
        n.activation_effect_count[c] += 1;
        Some(n)
    }

    fn replay_activation(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n = enabled(
            s,
            s.operation_request[op] == request(c, f, w)
                && request(c, f, w) == s.exact_request(c)
                && s.durable_state[c] == Executing
                && (self.mutated(Mutation::ReplayWithoutLeaseCheck) || s.lease[c] == w)
                && s.activation_effect_count[c] == 1,
        )?;
        n.operation_response[op] = self.k.accepted;
        n.activation_stage[c] = Finished;
        if self.mutated(Mutation::EffectAppliedTwice) {
            n.activation_effect_count[c] += 1;
        }
        Some(n)
    }

    fn reject_precondition(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n = enabled(
            s,
            s.operation_request[op] == request(c, f, w)
                && s.operation_response[op] == self.k.no_response
                && (request(c, f, w) != s.exact_request(c)
                    || s.durable_state[c] == Reaped
                    || (s.durable_state[c] == Executing && s.lease[c] != w)),
        )?;
        n.operation_response[op] = self.k.rejected;
        Some(n)
    }

    fn expire_reservation(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(s, s.durable_state[c] == Authorized && s.reservation[c] != NO_WORKER)?;
        n.reservation[c] = NO_WORKER;
        Some(n)
    }

    fn expire_lease(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(s, s.durable_state[c] == Executing && s.lease[c] == s.attempt_worker[c])?;
        n.lease[c] = NO_WORKER;
        for &op in &self.k.operations {
            // `operationRequest[op][1] = c`. An accepted operation always
            // has a request triple, unless the cfg makes NoResponse and
            // Accepted the same model value, where TLC would stop with an
            // error applying NoRequest; `claim()` is then None.
            if s.operation_response[op] == self.k.accepted && s.operation_request[op].claim() == Some(c) {
                n.operation_response[op] = self.k.no_response;
            }
        }
        Some(n)
    }

    fn acquire_recovery_lock(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(
            s,
            s.durable_state[c] == Authorized
                && (self.mutated(Mutation::ReaperIgnoresReservation) || s.reservation[c] == NO_WORKER)
                && s.durable_lock[c] == LockOwner::NoOwner,
        )?;
        n.durable_lock[c] = LockOwner::Recovery;
        Some(n)
    }

    fn finish_recovery(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(s, s.durable_lock[c] == LockOwner::Recovery && s.durable_state[c] == Authorized)?;
        n.durable_state[c] = Reaped;
        n.reservation[c] = NO_WORKER;
        if !self.mutated(Mutation::CompensationSkipped) {
            n.lease[c] = NO_WORKER;
        }
        n.durable_lock[c] = LockOwner::NoOwner;
        Some(n)
    }

    fn compensate_rejected_activation(&self, s: &State, c: Claim) -> Option<State> {
        let w = s.attempt_worker[c];
        let mut n = enabled(
            s,
            s.durable_state[c] == Reaped
                && matches!(s.activation_stage[c], Validated | LeaseCreated)
                && (s.lease[c] == NO_WORKER || s.lease[c] == w),
        )?;
        if !self.mutated(Mutation::CompensationSkipped) {
            n.lease[c] = NO_WORKER;
        }
        n.activation_stage[c] = Finished;
        Some(n)
    }

    fn done(&self, s: &State) -> Option<State> {
        enabled(s, self.k.claims.iter().all(|&c| matches!(s.durable_state[c], Executing | Reaped)))
    }
}
