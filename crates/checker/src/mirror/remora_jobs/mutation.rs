//! Mutations of the actions the module adds: each breaks one rule, and one
//! of the module's invariants or properties must catch it
//! (`crates/checker/tests/it/remora_jobs_mirror.rs`).

/// A named mutation of `JobsNext`, selected with `--mutation NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// `reap-completed`: `ReapExecuting` does not require the attempt to be
    /// pending (`outcome[c] = Pending`): the reaper takes a claim whose
    /// lease is gone because it completed. Caught by
    /// CompletedClaimIsNeverReaped.
    ReapCompleted,
    /// `retry-beyond-limit`: `AuthorizeRetry` does not require
    /// `Attempts(c) < MaxAttempts`. Caught by AtMostMaxAttempts (and
    /// DeadClaimStaysDead) when there are more fences than MaxAttempts.
    RetryBeyondLimit,
    /// `retry-same-fence`: `AuthorizeRetry` may give the new attempt the
    /// current attempt's fence (`f \notin usedFences[c] \ {attemptFence[c]}`).
    /// Caught by ActivationAppliesAtMostOncePerAttempt: the same attempt's
    /// effect count goes back to 0.
    RetrySameFence,
    /// `fail-requeues-attempt`: `Complete(c, w, "Failed")` puts the same
    /// attempt back (Authorized, reserved for w, activation Idle, outcome
    /// Pending) instead of ending it, so it activates again. Caught by
    /// AtMostOneActivationEffectPerAttempt.
    FailRequeuesAttempt,
}

/// Every mutation by its `--mutation` name: the one list [`NAMES`] and
/// [`Mutation::from_name`] both come from.
pub const TABLE: [(&str, Mutation); 4] = [
    ("reap-completed", Mutation::ReapCompleted),
    ("retry-beyond-limit", Mutation::RetryBeyondLimit),
    ("retry-same-fence", Mutation::RetrySameFence),
    ("fail-requeues-attempt", Mutation::FailRequeuesAttempt),
];

/// The names, as `Mirror::MUTATIONS` lists them.
pub const NAMES: &[&str] = &crate::spec::names(&TABLE);

impl Mutation {
    /// The mutation called `name` in [`TABLE`].
    pub fn from_name(name: &str) -> Option<Mutation> {
        crate::spec::named(&TABLE, name)
    }
}
