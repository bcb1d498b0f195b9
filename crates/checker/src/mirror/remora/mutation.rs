//! Protocol mutations: each breaks one rule of the protocol, and the spec's
//! invariants and properties must catch it.
//!
//! Three of the rules asked for are enforced twice in the spec, so removing
//! only the guard named leaves the reachable states exactly the spec's
//! (32,496 on the shipped cfg, checked exhaustively). Those mutations also
//! remove what masks the guard, and their docs say why.

/// A named mutation of `Next`, selected with `--mutation NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// `commit-without-lock`: the activator commits on its lease alone:
    /// `CommitActivation` requires only `lease[c] = w`. Without the durable
    /// lock it cannot re-validate the durable record atomically with its
    /// write, so it also drops the stage, durable-state and reservation
    /// checks, and may commit again, e.g. retrying a commit whose answer was
    /// lost. Dropping `durableLock[c] = Activator` alone is invisible here:
    /// actions are atomic and commit (`reservation[c] = w`) already excludes
    /// recovery (`reservation[c] = NoWorker`, which never reverts); dropping
    /// any three of those four guards is invisible as well.
    CommitWithoutLock,
    /// `replay-without-lease-check`: `ReplayActivation` does not require
    /// `lease[c] = w`.
    ReplayWithoutLeaseCheck,
    /// `reaper-ignores-reservation`: `AcquireRecoveryLock` does not require
    /// `reservation[c] = NoWorker`.
    ReaperIgnoresReservation,
    /// `effect-applied-twice`: `ReplayActivation` re-executes the
    /// activation (`activationEffectCount[c]` grows) instead of only
    /// returning its outcome. Removing the stage and durable-state guards
    /// from `CommitActivation` does not apply it twice: after a commit the
    /// reservation is `NoWorker` and the lock cannot be taken again
    /// (`AcquireActivationLock` needs stage `LeaseCreated`); removing those
    /// too is `commit-without-lock`.
    EffectAppliedTwice,
    /// `compensation-skipped`: the lease of a rejected activation is never
    /// removed: `CompensateRejectedActivation` leaves it in place, and
    /// `FinishRecovery` leaves it for compensation, as a reaper must when
    /// leases live in another store. The first change alone is invisible
    /// here: `FinishRecovery` already cleared the lease, and no lease can
    /// be created on a reaped claim, so compensation only ever sees
    /// `NoWorker`.
    CompensationSkipped,
    /// `bind-overwrites-request`: `BindOperation` does not require
    /// `operationRequest[op] = NoRequest`, so an operation id can be bound
    /// to another request (the mutation for `OperationRequestIsImmutable`).
    BindOverwritesRequest,
}

/// Every mutation by name (`--mutation NAME`): the one source of the
/// names `Mirror::MUTATIONS` lists and of [`Mutation::from_name`].
pub const TABLE: [(&str, Mutation); 6] = [
    ("commit-without-lock", Mutation::CommitWithoutLock),
    ("replay-without-lease-check", Mutation::ReplayWithoutLeaseCheck),
    ("reaper-ignores-reservation", Mutation::ReaperIgnoresReservation),
    ("effect-applied-twice", Mutation::EffectAppliedTwice),
    ("compensation-skipped", Mutation::CompensationSkipped),
    ("bind-overwrites-request", Mutation::BindOverwritesRequest),
];

/// The names, as `Mirror::MUTATIONS` lists them.
pub const NAMES: &[&str] = &crate::spec::names(&TABLE);

impl Mutation {
    /// The mutation called `name` in [`TABLE`].
    pub fn from_name(name: &str) -> Option<Mutation> {
        crate::spec::named(&TABLE, name)
    }
}
