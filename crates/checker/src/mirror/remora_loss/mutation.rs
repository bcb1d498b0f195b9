//! Mutations of the actions the module adds: each breaks one rule, and the
//! module's invariants and properties must catch it.

/// A named mutation of `LossNext`, selected with `--mutation NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// `restore-expired-lease`: `RestoreLease` restores any absent lease of
    /// an executing claim, lost or expired (the guard `leaseLost[c]` becomes
    /// `lease[c] = NoWorker`): what a restore without the durable record of
    /// the lease's deadline would do.
    RestoreExpiredLease,
    /// `restore-for-any-worker`: `RestoreLease` does not require `w` to be
    /// the attempt's worker.
    RestoreForAnyWorker,
    /// `replay-of-rejected`: `ReplayActivation` as the base module has it,
    /// without `ReplayOfUnrejected`'s guard.
    ReplayOfRejected,
}

/// Every mutation by its `--mutation` name: the one list [`NAMES`] and
/// [`Mutation::from_name`] both come from.
pub const TABLE: [(&str, Mutation); 3] = [
    ("restore-expired-lease", Mutation::RestoreExpiredLease),
    ("restore-for-any-worker", Mutation::RestoreForAnyWorker),
    ("replay-of-rejected", Mutation::ReplayOfRejected),
];

/// The names, as `Mirror::MUTATIONS` lists them.
pub const NAMES: &[&str] = &crate::spec::names(&TABLE);

impl Mutation {
    /// The mutation called `name` in [`TABLE`].
    pub fn from_name(name: &str) -> Option<Mutation> {
        crate::spec::named(&TABLE, name)
    }
}
