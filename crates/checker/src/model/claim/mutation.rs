//! Mutations of the implementation, each removing one check. They are
//! injected where the model serves requests (the host), so the protocol
//! code that runs is the code the Durable Object runs: the host answers a
//! request as if a check had passed, or serves it as if it had not been made
//! (one, `GrantSurvivesWait`, edits what the activator remembers after a
//! step instead).

/// A named mutation, selected with `--mutation NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// The activator never takes the durable lock (the host answers "lock
    /// acquired"), and the commit is served as if the lock were held.
    CommitWithoutLock,
    /// A replay answers without asking the coordination store: the host
    /// answers "the worker holds the lease".
    ReplayWithoutLeaseCheck,
    /// An activator forgets that it waited for the durable lock after the
    /// store granted its lease: it answers from the grant, which the store
    /// may have lost meanwhile, with no second read.
    GrantSurvivesWait,
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
    /// RemoraJobs: the executing reaper's requests are served as if a
    /// completed attempt still executed: it lists and reaps it.
    ReaperReapsCompleted,
    /// RemoraJobs: a create is served as if the claim allowed one attempt
    /// more than it does (a dead claim looks failed or reaped).
    RetryBeyondLimit,
    /// RemoraJobs: a completion checks no lease: its lease read is
    /// answered "the attempt holds the lease, for ever" without asking the
    /// coordination store, and its commit is served as if the durable
    /// store's record of the lease's deadline were ahead.
    CompleteWithoutLeaseCheck,
    /// RemoraJobs: a completion's commit is served as if the durable
    /// store's record of the lease's deadline were ahead: it completes on
    /// the deadline it read alone, after the store lost a lease nobody can
    /// restore. (The lease read alone is no such mutation: the recorded
    /// deadline never passes the store's, so the durable check catches
    /// every lease the read would.)
    CommitIgnoresRecordedDeadline,
    /// RemoraJobs: a completion's release is answered "deleted" and never
    /// served: the completed attempt keeps its lease.
    CompletionKeepsLease,
}

/// Every mutation by name (`--mutation NAME`): the one source of the
/// names `Mirror::MUTATIONS` lists and of [`Mutation::from_name`].
pub const TABLE: [(&str, Mutation); 8] = [
    ("commit-without-lock", Mutation::CommitWithoutLock),
    ("replay-without-lease-check", Mutation::ReplayWithoutLeaseCheck),
    ("grant-survives-wait", Mutation::GrantSurvivesWait),
    ("reaper-ignores-reservation", Mutation::ReaperIgnoresReservation),
    ("compensation-skipped", Mutation::CompensationSkipped),
    ("renewal-revives-lease", Mutation::RenewalRevivesLease),
    ("restore-without-record", Mutation::RestoreWithoutRecord),
    ("restore-for-stranger", Mutation::RestoreForStranger),
];

/// The mutations of what RemoraJobs adds (completion, retries, the reaping
/// of executing claims), which only the model checked against RemoraJobs
/// runs.
pub const JOBS_TABLE: [(&str, Mutation); 5] = [
    ("reaper-reaps-completed", Mutation::ReaperReapsCompleted),
    ("retry-beyond-limit", Mutation::RetryBeyondLimit),
    ("complete-without-lease-check", Mutation::CompleteWithoutLeaseCheck),
    ("commit-ignores-recorded-deadline", Mutation::CommitIgnoresRecordedDeadline),
    ("completion-keeps-lease", Mutation::CompletionKeepsLease),
];

/// The names, as `Mirror::MUTATIONS` lists them.
pub const NAMES: &[&str] = &crate::spec::names(&TABLE);

/// The names of [`JOBS_TABLE`].
pub const JOBS_NAMES: &[&str] = &crate::spec::names(&JOBS_TABLE);

impl Mutation {
    /// The mutation called `name` in [`TABLE`] or [`JOBS_TABLE`].
    pub fn from_name(name: &str) -> Option<Mutation> {
        crate::spec::named(&TABLE, name).or_else(|| crate::spec::named(&JOBS_TABLE, name))
    }
}
