//! A replica's life in its namespace, the state's side: it starts only when
//! the registry admits it (the namespace exists, and is not being deleted;
//! an idle one only for a client request to the coordinator), learning the
//! namespace's settings then; the coordinator stops the namespace after its
//! idle expiry; any replica stops when told to, or when a peer says the
//! namespace is not running. Stopping resets the object: its memory goes.
//! (docs/operating.md 4.4, "Namespaces".) The state decides when
//! (`state.rs`); the shell asks the registry and the peers (`mod.rs`).

use protocol::handoff::{Config, ConfigError, ReplicaId};

use crate::error::{Code, HttpError, HttpResult};
use crate::namespaces::settings::Settings;
use crate::tokens;

/// `Retry-After` while a replica is stopping or resetting.
const RETRY_AFTER_MS: u64 = 1000;

/// The protocol configuration of a replica of a namespace with `settings`:
/// the seam between a namespace's settings and the protocol. The memory
/// budget is the namespace's `memory_budget_bytes`, else the deployment's
/// default (`default_budget`, the `HANDOFF_BUDGET_BYTES` var), else the
/// protocol's.
pub(super) fn replica_config(settings: &Settings, default_budget: Option<u64>) -> Result<Config, ConfigError> {
    let mut config = Config::new(ReplicaId(0), [ReplicaId(1), ReplicaId(2)])?;
    // Settings are validated (at most 32 MiB), so the budget fits a usize
    // on wasm32 too; a value that did not would keep the default.
    if let Some(budget) = settings.memory_budget_bytes.or(default_budget).and_then(|b| usize::try_from(b).ok()) {
        config.budget_bytes = budget;
    }
    Ok(config)
}

/// Where the replica is in its life.
pub(super) struct Life {
    /// The namespace's settings, from the registry when it admitted this
    /// replica.
    pub(super) settings: Option<Settings>,
    /// The namespace's `created_at` then: the life scoped tokens name.
    created_at: Option<u64>,
    /// The last client request (the coordinator's idle expiry).
    last_client_at: u64,
    /// This replica is stopping: it serves nothing more.
    pub(super) stopping: bool,
    /// Its records were dropped for a reset under way: it boots no more.
    pub(super) resetting: bool,
}

impl Life {
    pub(super) fn new(now: u64) -> Life {
        Life { settings: None, created_at: None, last_client_at: now, stopping: false, resetting: false }
    }

    pub(super) fn admitted(&mut self, settings: Settings, created_at: u64, now: u64) {
        self.settings = Some(settings);
        self.created_at = Some(created_at);
        self.last_client_at = now;
    }

    /// 401 unless a token bound to namespace life `token` may act on `ns`
    /// as admitted (`tokens::check_life`).
    pub(super) fn check_token(&self, ns: &str, token: Option<u64>) -> HttpResult<()> {
        Ok(tokens::check_life(token, ns, self.created_at)?)
    }

    /// The namespace life this replica was admitted in (`None` before).
    pub(super) fn created_at(&self) -> Option<u64> {
        self.created_at
    }

    /// This replica runs in a namespace life other than `life`: a stop
    /// or check for `life` (a delete or idle expiry of that life, late) is
    /// not about it. No life named, or none admitted yet: not another.
    pub(super) fn of_other_life(&self, life: Option<u64>) -> bool {
        tokens::of_other_life(life, self.created_at)
    }

    /// A client request arrived: the idle expiry starts again.
    pub(super) fn note_client(&mut self, now: u64) {
        self.last_client_at = now;
    }

    /// The 503 of a replica that is stopping.
    pub(super) fn refuse_if_stopping(&self) -> HttpResult<()> {
        if self.stopping {
            let message = "this replica is stopping (its namespace went idle or is being deleted); retry";
            return Err(HttpError::unavailable(Code::NamespaceStopping, message, RETRY_AFTER_MS));
        }
        Ok(())
    }

    /// When the coordinator stops the namespace if no client request comes
    /// first (unix ms), if it runs (`coordinator`: this is the booted
    /// coordinator).
    pub(super) fn idle_expires_at(&self, coordinator: bool) -> Option<u64> {
        let settings = self.settings.as_ref()?;
        coordinator.then(|| self.last_client_at.saturating_add(settings.idle_expiry_ms()))
    }

    /// The 503 of a replica whose records went for a reset under way (or
    /// that is not booted yet).
    pub(super) fn unavailable_while_resetting(&self) -> HttpError {
        HttpError::unavailable(Code::ReplicaUnavailable, "this replica is being reset; retry", RETRY_AFTER_MS)
    }
}
