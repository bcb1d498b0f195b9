//! A replica's life in its namespace: it starts only when the registry
//! admits it (the namespace exists, and is not being deleted; an idle one
//! only for a client request to the coordinator), learning the namespace's
//! settings then; the coordinator stops the namespace after its idle
//! expiry; any replica stops when told to, or when a peer says the
//! namespace is not running. Stopping resets the object: its memory goes.
//! (docs/handoff.md section 4, "Namespaces".)

use std::rc::Rc;

use protocol::handoff::{Config, ConfigError, ReplicaId};
use worker::console_warn;
use worker::wasm_bindgen_futures::spawn_local;

use super::Host;
use crate::error::{HttpError, HttpResult};
use crate::internal::now_ms;
use crate::names::ReplicaName;
use crate::namespaces::settings::Settings;
use crate::namespaces::{Boot, api, calls};

/// `Retry-After` while a replica is stopping.
pub(super) const RETRY_AFTER_MS: u64 = 1000;

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

impl Host {
    /// Boots the replica if the registry admits it; a no-op once booted.
    /// `client`: the request is a client's (it may wake an idle namespace).
    pub(super) async fn admit(self: &Rc<Self>, client: bool) -> HttpResult<()> {
        self.refuse_if_stopping()?;
        if self.booted() {
            return Ok(());
        }
        let (ns, me) = self.me().ok_or_else(|| HttpError::internal("no identity"))?;
        let secret = self.secret.as_ref().map_err(crate::internal::key_missing)?;
        match calls::boot(&self.env, secret, &ns, me, client).await? {
            Boot::Admitted { settings } => {
                if let Ok(mut slot) = self.settings.try_borrow_mut() {
                    *slot = Some(settings);
                }
                self.last_client_at.set(now_ms());
                self.ensure_booted()
            }
            Boot::Refused { .. } if client => Err(crate::namespaces::not_found(&ns)),
            Boot::Refused { state } => Err(HttpError::new(
                410,
                "namespace_not_running",
                format!("namespace {ns:?} is not running ({})", state.map_or("unknown", |s| s.name())),
            )),
        }
    }

    pub(super) fn booted(&self) -> bool {
        self.driver.try_borrow().map(|d| d.is_some()).unwrap_or(true)
    }

    /// A client request arrived: the idle expiry starts again.
    /// The 503 of a replica that is stopping.
    pub(super) fn refuse_if_stopping(&self) -> HttpResult<()> {
        if self.stopping.get() {
            let message = "this replica is stopping (its namespace went idle or is being deleted); retry";
            return Err(HttpError::unavailable("namespace_stopping", message, RETRY_AFTER_MS));
        }
        Ok(())
    }

    pub(super) fn note_client(&self) {
        self.last_client_at.set(now_ms());
    }

    /// When the coordinator stops the namespace if no client request comes
    /// first (unix ms); `None` for a peer or a replica not running.
    pub(super) fn idle_expires_at(&self) -> Option<u64> {
        let (_, me) = self.me()?;
        let settings = self.settings.try_borrow().ok()?.clone()?;
        (me == ReplicaName::R0 && self.booted())
            .then(|| self.last_client_at.get().saturating_add(settings.idle_expiry_ms()))
    }

    /// At each wake-up of the coordinator: past the idle expiry, stop the
    /// namespace (mark it idle in the registry, so that nothing but a client
    /// request starts it again; stop the peers; stop this replica).
    pub(super) fn check_idle(self: &Rc<Self>) {
        let Some(expires_at) = self.idle_expires_at() else { return };
        if now_ms() < expires_at || self.stopping.replace(true) {
            return;
        }
        let host = self.clone();
        spawn_local(async move {
            if let Err(e) = host.stop_namespace().await {
                console_warn!("idle expiry: the namespace did not stop ({e}); trying again later");
                host.stopping.set(false);
            }
        });
    }

    async fn stop_namespace(self: &Rc<Self>) -> HttpResult<()> {
        let (ns, _) = self.me().ok_or_else(|| HttpError::internal("no identity"))?;
        let secret = self.secret.as_ref().map_err(crate::internal::key_missing)?;
        calls::idle(&self.env, secret, &ns).await?;
        for peer in [ReplicaName::R1, ReplicaName::R2] {
            // A peer that does not hear it stops when it next hears from the
            // coordinator that the namespace is not running.
            if let Err(e) = api::stop_replica(&self.env, secret, &ns, peer).await {
                console_warn!("idle expiry: {ns}:{peer} did not confirm it stopped: {e}");
            }
        }
        self.stop("the namespace went idle").await;
        Ok(())
    }

    /// Stops this replica: its object is reset, its memory goes. The
    /// request being served fails (the object is gone).
    pub(super) async fn stop(self: &Rc<Self>, why: &str) {
        self.stopping.set(true);
        self.resetting.set(true);
        let _ = self.reset(why).await;
    }

    /// A peer answered that the namespace is not running: stop too.
    pub(super) fn stop_soon(self: &Rc<Self>, why: &'static str) {
        if self.stopping.replace(true) {
            return;
        }
        let host = self.clone();
        spawn_local(async move { host.stop(why).await });
    }
}
