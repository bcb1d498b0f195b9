//! Mutations of the implementation, each removing one check. They are
//! injected where the model serves requests (the host), so the protocol
//! code that runs is the code the Durable Object runs: the host answers a
//! request as if a check had passed, or serves it as if it had not been made.

/// A named mutation, selected with `--mutation NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// The activator never takes the durable lock (the host answers "lock
    /// acquired"), and the commit is served as if the lock were held.
    CommitWithoutLock,
    /// A replay answers without asking the coordination store: the host
    /// answers "the worker holds the lease".
    ReplayWithoutLeaseCheck,
    /// The reaper's requests are served at the end of time: every
    /// reservation looks expired to it.
    ReaperIgnoresReservation,
    /// Compensation's delete is answered "deleted" and never served.
    CompensationSkipped,
    /// A heartbeat's renewal is served by a coordination store whose clock
    /// is behind: a lease that has expired looks live, and is renewed.
    RenewalRevivesLease,
    /// A heartbeat's restoration is served as if the durable store's record
    /// of the lease's deadline were still ahead: a lease that expired and
    /// was then lost with the store comes back.
    RestoreWithoutRecord,
    /// The durable store's checks of a heartbeat (whether it comes from the
    /// executing attempt, and whose lease may be restored) admit any
    /// worker: after a loss, a stranger's heartbeat restores the lease for
    /// itself.
    RestoreForStranger,
}

/// Every mutation by name (`--mutation NAME`): the one source of the
/// names `Mirror::MUTATIONS` lists and of [`Mutation::from_name`].
pub const TABLE: [(&str, Mutation); 7] = [
    ("commit-without-lock", Mutation::CommitWithoutLock),
    ("replay-without-lease-check", Mutation::ReplayWithoutLeaseCheck),
    ("reaper-ignores-reservation", Mutation::ReaperIgnoresReservation),
    ("compensation-skipped", Mutation::CompensationSkipped),
    ("renewal-revives-lease", Mutation::RenewalRevivesLease),
    ("restore-without-record", Mutation::RestoreWithoutRecord),
    ("restore-for-stranger", Mutation::RestoreForStranger),
];

/// The names, as `Mirror::MUTATIONS` lists them.
pub const NAMES: &[&str] = &crate::spec::names(&TABLE);

impl Mutation {
    /// The mutation called `name` in [`TABLE`].
    pub fn from_name(name: &str) -> Option<Mutation> {
        crate::spec::named(&TABLE, name)
    }
}
