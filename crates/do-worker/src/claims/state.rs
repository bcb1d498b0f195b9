//! The claim object's one state (its data is in SQLite): what it learned
//! from the registry, whether its schema is current, and the claims' lease
//! locks, and its link to the lease store.

use super::locks::{HasLocks, Locks};
use crate::hop::{LinkState, SocketRoute};
use crate::namespaces::settings::Settings;

#[derive(Default)]
pub struct ClaimsState {
    /// The namespace's settings, once the registry said it exists.
    pub settings: Option<Settings>,
    /// Its `created_at` then: the life scoped tokens are checked against.
    pub life: Option<u64>,
    /// The schema is known to be current in this instance.
    pub migrated: bool,
    /// Counts the drops (the namespace deleted): an `open` that asked the
    /// registry before a drop must not set up the store again after it.
    pub drops: u64,
    pub locks: Locks,
    /// The socket to the coordinator `{ns}:r0` carrying the lease calls
    /// (`crate::tunnel`), made on the first call and replaced once lost.
    pub lease_link: Option<LinkState<SocketRoute>>,
}

impl HasLocks for ClaimsState {
    fn locks(&mut self) -> &mut Locks {
        &mut self.locks
    }
}
