//! Hosts the protocol's procedures (`protocol::claim::{Activator, Heartbeat,
//! Reaper}`) in the claim object: the protocol's driver
//! (`protocol::claim::procedure::run`) polls each request, the host here
//! serves it with the durable store (synchronously, one transaction) or the
//! lease store (one awaited read-modify-write), and the reply goes back,
//! until the procedure has its outcome. The procedures make every decision,
//! waiting included; a host only moves requests and replies, and pauses
//! when a procedure waits (docs/remora.md section 6 maps every await to the
//! spec's steps).

use std::time::Duration;

use protocol::claim::lease;
use protocol::claim::procedure::{self, Host};
use protocol::claim::{
    Activator, ActivatorConfig, Answer, ClaimId, ClaimRow, DurableLock, Heartbeat, HeartbeatOutcome, LeaseReply,
    LeaseRequest, MemoryLeases, Millis, ProcedureError, Reaper, Reply, Request,
};
use worker::Delay;

use super::error::ClaimError;
use super::leases::Leases;
use super::request::{self, Activate};
use super::store::DurableStore;
use crate::internal::now_ms;

/// How long an activation may hold the durable lock: it takes the lock
/// right before its commit, with no await in between, so this only has to
/// outlast an activation that stops in between (then others wait this long).
pub const LOCK_TTL_MS: Millis = 5_000;
/// How long an activation request waits (for another activation's lock, or
/// for recovery to reap a claim whose reservation expired) before it
/// answers 503 `activation_pending`.
pub const ACTIVATION_WAIT: Duration = Duration::from_secs(15);
const FIRST_BACKOFF_MS: u64 = 20;
const MAX_BACKOFF_MS: u64 = 500;
/// When the reaper looks again at a claim it could not reap now.
const REAPER_RETRY_MS: Millis = 1_000;

/// Bounded, growing pauses while a procedure waits.
struct Pause {
    started: Millis,
    budget_ms: u64,
    next_ms: u64,
}

impl Pause {
    fn new(budget: Duration) -> Pause {
        Pause { started: now_ms(), budget_ms: budget.as_millis() as u64, next_ms: FIRST_BACKOFF_MS }
    }

    /// Sleeps before asking again, or fails once the budget is spent (at
    /// once, without awaiting, for a zero budget).
    async fn wait(&mut self) -> Result<(), ClaimError> {
        let waited_ms = now_ms().saturating_sub(self.started);
        if waited_ms.saturating_add(self.next_ms) > self.budget_ms {
            return Err(ClaimError::Pending { waited_ms });
        }
        Delay::from(Duration::from_millis(self.next_ms)).await;
        self.next_ms = (self.next_ms * 2).min(MAX_BACKOFF_MS);
        Ok(())
    }

    fn progressed(&mut self) {
        self.next_ms = FIRST_BACKOFF_MS;
    }
}

/// Where an object host's lease requests go.
trait LeaseBackend {
    async fn lease(&mut self, request: &LeaseRequest) -> Result<LeaseReply, ClaimError>;
}

/// The lease store: every call awaits, and lets other requests and the
/// alarm into this object.
impl LeaseBackend for &Leases<'_> {
    async fn lease(&mut self, request: &LeaseRequest) -> Result<LeaseReply, ClaimError> {
        Ok(self.apply(request).await?)
    }
}

/// The benchmark baseline's leases: in memory, for one call.
impl LeaseBackend for MemoryLeases {
    async fn lease(&mut self, request: &LeaseRequest) -> Result<LeaseReply, ClaimError> {
        Ok(lease::apply(self, request, now_ms()))
    }
}

/// A procedure's host in this object: durable requests served by the
/// durable store, lease requests by `L`, each at the object's `now`; the
/// procedure's waits are paused within a budget.
struct ObjectHost<'a, L> {
    durable: &'a DurableStore,
    leases: L,
    pause: Pause,
}

impl<L: LeaseBackend> Host for ObjectHost<'_, L> {
    type Error = ClaimError;

    fn now(&self) -> Millis {
        now_ms()
    }

    async fn serve(&mut self, request: Request) -> Result<Reply, ClaimError> {
        Ok(match request {
            Request::Durable(r) => Reply::Durable(self.durable.transition(&r, now_ms())?),
            Request::Lease(r) => Reply::Lease(self.leases.lease(&r).await?),
        })
    }

    async fn pause(&mut self) -> Result<(), ClaimError> {
        self.pause.wait().await
    }

    fn advanced(&mut self) {
        self.pause.progressed();
    }
}

fn activator(call: &Activate) -> Activator {
    let config = ActivatorConfig { lease_ttl: call.lease_ttl_ms, lock_ttl: LOCK_TTL_MS };
    Activator::new(call.operation.clone(), call.request.clone(), config)
}

/// An activation against both stores. Every `.await` on the lease store
/// lets other requests and the alarm into this object.
pub async fn activate(durable: &DurableStore, leases: &Leases<'_>, call: &Activate) -> Result<Answer, ClaimError> {
    let mut host = ObjectHost { durable, leases, pause: Pause::new(ACTIVATION_WAIT) };
    procedure::run(&mut activator(call), &mut host).await
}

/// The benchmark baseline: the same activator, with the leases in memory
/// for this call only, so the whole activation is one synchronous run of
/// durable transitions (one transaction, see `store.rs`) with no await: a
/// wait would need one, so it answers `activation_pending` instead.
pub async fn activate_without_lease_store(durable: &DurableStore, call: &Activate) -> Result<Answer, ClaimError> {
    let mut host = ObjectHost { durable, leases: MemoryLeases::default(), pause: Pause::new(Duration::ZERO) };
    procedure::run(&mut activator(call), &mut host).await
}

/// A heartbeat: the durable check, then the renewal. It never waits.
pub async fn heartbeat(
    durable: &DurableStore,
    leases: &Leases<'_>,
    call: &request::Heartbeat,
) -> Result<HeartbeatOutcome, ClaimError> {
    let mut host = ObjectHost { durable, leases, pause: Pause::new(Duration::ZERO) };
    procedure::run(&mut Heartbeat::new(call.request.clone(), call.lease_ttl_ms), &mut host).await
}

/// A recovery pass's host: the durable store alone, at one instant. Nothing
/// in it awaits, so the pass runs in one synchronous piece.
struct RecoveryHost<'a> {
    durable: &'a DurableStore,
    now: Millis,
}

impl Host for RecoveryHost<'_> {
    type Error = ClaimError;

    fn now(&self) -> Millis {
        self.now
    }

    async fn serve(&mut self, request: Request) -> Result<Reply, ClaimError> {
        match request {
            Request::Durable(r) => Ok(Reply::Durable(self.durable.transition(&r, self.now)?)),
            Request::Lease(r) => {
                Err(ProcedureError::Unserved { host: "recovery pass", request: format!("{r:?}") }.into())
            }
        }
    }

    /// A pass never waits; if it did, it would need an await.
    async fn pause(&mut self) -> Result<(), ClaimError> {
        Err(ClaimError::Pending { waited_ms: 0 })
    }
}

/// One recovery pass (the alarm, or the test hook): the claims it reaped.
/// All durable, so it runs without an await: in one poll (`ready`). A pass
/// that would await (none can: its host never does) stops there and
/// answers pending, as a wait would, rather than interleave.
pub fn reap(durable: &DurableStore) -> Result<Vec<ClaimId>, ClaimError> {
    let mut host = RecoveryHost { durable, now: now_ms() };
    procedure::ready(procedure::run(&mut Reaper::default(), &mut host))
        .unwrap_or(Err(ClaimError::Pending { waited_ms: 0 }))
}

/// When the reaper should run next for the claims awaiting activation: at
/// the earliest reservation deadline, or, for a claim it could not reap
/// because an activation holds the lock, when that lock expires.
pub fn next_alarm(authorized: &[ClaimRow], now: Millis) -> Option<Millis> {
    authorized
        .iter()
        .map(|row| {
            let due = row.reservation.as_ref().map_or(now, |r| r.expires_at);
            let due = match row.live_lock(now) {
                Some(DurableLock::Activator { expires_at, .. }) => due.max(*expires_at),
                _ => due,
            };
            if due > now { due } else { now.saturating_add(REAPER_RETRY_MS) }
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::claim::{Fence, OperationId, WorkerId};

    fn row(claim: &str, reserved_until: Millis) -> ClaimRow {
        ClaimRow::authorize(ClaimId::from(claim), Fence(1), WorkerId::from("w"), reserved_until)
    }

    #[test]
    fn the_alarm_is_set_for_the_earliest_reservation() {
        assert_eq!(next_alarm(&[], 100), None);
        assert_eq!(next_alarm(&[row("a", 500), row("b", 300)], 100), Some(300));
    }

    #[test]
    fn a_claim_locked_by_an_activation_is_looked_at_again_when_the_lock_expires() {
        let locked = row("a", 300).acquire_activation_lock(&OperationId::from("o"), 800, 100).unwrap();
        assert_eq!(next_alarm(std::slice::from_ref(&locked), 400), Some(800));
        assert_eq!(next_alarm(&[locked], 900), Some(900 + REAPER_RETRY_MS), "lock expired: soon");
    }
}
