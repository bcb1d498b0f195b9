//! `Init` and `Next`: one method per TLA+ action, guard first, then the
//! primed variables that change (the rest are `UNCHANGED`: the clone).

use super::RemoraClaimActivation;
use super::action::Action::{self, *};
use super::mutation::Mutation;
use super::state::State;
use super::values::ActivationStage::*;
use super::values::DurableState::*;
use super::values::{Func, LockOwner, ModelValue, Request};

type Op = ModelValue;
type Claim = ModelValue;
type Fence = ModelValue;
type Worker = ModelValue;

/// The successor of `s` to be updated when `guard` holds; `None` when the
/// action is not enabled.
fn enabled(s: &State, guard: bool) -> Option<State> {
    guard.then(|| s.clone())
}

/// `Request(c, f, w)`
fn request(c: Claim, f: Fence, w: Worker) -> Request {
    Request::Key(c, f, w)
}

impl RemoraClaimActivation {
    pub(crate) fn init(&self) -> Vec<State> {
        let mut states = Vec::new();
        for attempt_fence in Func::all(&self.claims, &self.fences) {
            for attempt_worker in Func::all(&self.claims, &self.workers) {
                states.push(State {
                    durable_state: Func::constant(&self.claims, Authorized),
                    attempt_fence: attempt_fence.clone(),
                    reservation: attempt_worker.clone(),
                    attempt_worker,
                    lease: Func::constant(&self.claims, self.no_worker),
                    activation_stage: Func::constant(&self.claims, Idle),
                    durable_lock: Func::constant(&self.claims, self.no_owner),
                    operation_request: Func::constant(&self.operations, self.no_request),
                    operation_response: Func::constant(&self.operations, self.no_response),
                    conflict_request: Func::constant(&self.operations, self.no_request),
                    activation_effect_count: Func::constant(&self.claims, 0),
                    step_violations: Vec::new(),
                });
            }
        }
        states
    }

    /// Every instance of every disjunct of `Next`, in the spec's order.
    /// Instances that are not enabled are dropped by `next` returning `None`.
    pub(crate) fn instances(&self, actions: &mut Vec<Action>) {
        // \E op \in Operations, c \in Claims, f \in Fences, w \in Workers
        let each_request = |a: fn(Op, Claim, Fence, Worker) -> Action| {
            self.operations.iter().flat_map(move |&op| {
                self.claims.iter().flat_map(move |&c| {
                    self.fences.iter().flat_map(move |&f| self.workers.iter().map(move |&w| a(op, c, f, w)))
                })
            })
        };
        // \E c \in Claims
        let each_claim = |a: fn(Claim) -> Action| self.claims.iter().map(move |&c| a(c));
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
            enabled(s, self.mutated(Mutation::BindOverwritesRequest) || s.operation_request[&op] == self.no_request)?;
        n.operation_request[&op] = request(c, f, w);
        Some(n)
    }

    fn reject_operation_reuse(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n =
            enabled(s, s.operation_request[&op] != self.no_request && s.operation_request[&op] != request(c, f, w))?;
        n.conflict_request[&op] = request(c, f, w);
        Some(n)
    }

    fn start_activation(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n = enabled(
            s,
            s.operation_request[&op] == request(c, f, w)
                && s.operation_response[&op] == self.no_response
                && request(c, f, w) == s.exact_request(c)
                && s.activation_stage[&c] == Idle
                && s.durable_state[&c] == Authorized
                && s.reservation[&c] == w,
        )?;
        n.activation_stage[&c] = Validated;
        Some(n)
    }

    fn create_lease(&self, s: &State, c: Claim) -> Option<State> {
        let w = s.attempt_worker[&c];
        let mut n = enabled(
            s,
            s.activation_stage[&c] == Validated
                && s.durable_state[&c] == Authorized
                && s.reservation[&c] == w
                && s.lease[&c] == self.no_worker,
        )?;
        n.lease[&c] = w;
        n.activation_stage[&c] = LeaseCreated;
        Some(n)
    }

    fn acquire_activation_lock(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(
            s,
            s.activation_stage[&c] == LeaseCreated
                && s.durable_state[&c] == Authorized
                && s.durable_lock[&c] == self.no_owner,
        )?;
        n.durable_lock[&c] = LockOwner::Activator;
        Some(n)
    }

    fn lose_activator_lock(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(s, s.durable_lock[&c] == LockOwner::Activator)?;
        n.durable_lock[&c] = self.no_owner;
        Some(n)
    }

    fn commit_activation(&self, s: &State, c: Claim) -> Option<State> {
        let w = s.attempt_worker[&c];
        let mut n = enabled(
            s,
            (self.mutated(Mutation::CommitWithoutLock)
                || (s.activation_stage[&c] == LeaseCreated
                    && s.durable_lock[&c] == LockOwner::Activator
                    && s.durable_state[&c] == Authorized
                    && s.reservation[&c] == w))
                && s.lease[&c] == w,
        )?;
        n.durable_state[&c] = Executing;
        n.reservation[&c] = self.no_worker;
        n.activation_stage[&c] = Committed;
        n.durable_lock[&c] = self.no_owner;
        n.activation_effect_count[&c] += 1;
        Some(n)
    }

    fn replay_activation(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n = enabled(
            s,
            s.operation_request[&op] == request(c, f, w)
                && request(c, f, w) == s.exact_request(c)
                && s.durable_state[&c] == Executing
                && (self.mutated(Mutation::ReplayWithoutLeaseCheck) || s.lease[&c] == w)
                && s.activation_effect_count[&c] == 1,
        )?;
        n.operation_response[&op] = self.accepted;
        n.activation_stage[&c] = Finished;
        if self.mutated(Mutation::EffectAppliedTwice) {
            n.activation_effect_count[&c] += 1;
        }
        Some(n)
    }

    fn reject_precondition(&self, s: &State, op: Op, c: Claim, f: Fence, w: Worker) -> Option<State> {
        let mut n = enabled(
            s,
            s.operation_request[&op] == request(c, f, w)
                && s.operation_response[&op] == self.no_response
                && (request(c, f, w) != s.exact_request(c)
                    || s.durable_state[&c] == Reaped
                    || (s.durable_state[&c] == Executing && s.lease[&c] != w)),
        )?;
        n.operation_response[&op] = self.rejected;
        Some(n)
    }

    fn expire_reservation(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(s, s.durable_state[&c] == Authorized && s.reservation[&c] != self.no_worker)?;
        n.reservation[&c] = self.no_worker;
        Some(n)
    }

    fn expire_lease(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(s, s.durable_state[&c] == Executing && s.lease[&c] == s.attempt_worker[&c])?;
        n.lease[&c] = self.no_worker;
        for op in &self.operations {
            // `operationRequest[op][1] = c`. An accepted operation always
            // has a request triple, unless the cfg makes NoResponse and
            // Accepted the same model value, where TLC would stop with an
            // error applying NoRequest; `claim()` is then None.
            if s.operation_response[op] == self.accepted && s.operation_request[op].claim() == Some(c) {
                n.operation_response[op] = self.no_response;
            }
        }
        Some(n)
    }

    fn acquire_recovery_lock(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(
            s,
            s.durable_state[&c] == Authorized
                && (self.mutated(Mutation::ReaperIgnoresReservation) || s.reservation[&c] == self.no_worker)
                && s.durable_lock[&c] == self.no_owner,
        )?;
        n.durable_lock[&c] = LockOwner::Recovery;
        Some(n)
    }

    fn finish_recovery(&self, s: &State, c: Claim) -> Option<State> {
        let mut n = enabled(s, s.durable_lock[&c] == LockOwner::Recovery && s.durable_state[&c] == Authorized)?;
        n.durable_state[&c] = Reaped;
        n.reservation[&c] = self.no_worker;
        if !self.mutated(Mutation::CompensationSkipped) {
            n.lease[&c] = self.no_worker;
        }
        n.durable_lock[&c] = self.no_owner;
        Some(n)
    }

    fn compensate_rejected_activation(&self, s: &State, c: Claim) -> Option<State> {
        let w = s.attempt_worker[&c];
        let mut n = enabled(
            s,
            s.durable_state[&c] == Reaped
                && matches!(s.activation_stage[&c], Validated | LeaseCreated)
                && (s.lease[&c] == self.no_worker || s.lease[&c] == w),
        )?;
        if !self.mutated(Mutation::CompensationSkipped) {
            n.lease[&c] = self.no_worker;
        }
        n.activation_stage[&c] = Finished;
        Some(n)
    }

    fn done(&self, s: &State) -> Option<State> {
        enabled(s, self.claims.iter().all(|c| matches!(s.durable_state[c], Executing | Reaped)))
    }
}
