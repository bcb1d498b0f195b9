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
    Activator, ActivatorConfig, Answer, ClaimId, Completion, CompletionOutcome, DurableRequest, ExecutingReaper,
    Heartbeat, HeartbeatOutcome, LeaseReply, LeaseRequest, MemoryLeases, Millis, ProcedureError, Reaper, Reply,
    Request,
};
use worker::Delay;

use super::error::ClaimError;
use super::leases::{LeaseLock, Leases};
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

/// Where an object host's lease requests go. `durable` gives the claim's
/// durable row, read in the same step as the decision.
trait LeaseBackend {
    /// The claim's lease lock (`None` where there is nothing to lock).
    async fn lock(&mut self, claim: &ClaimId) -> Result<Option<LeaseLock>, ClaimError>;
    async fn lease(&mut self, request: &LeaseRequest, durable: &DurableStore) -> Result<LeaseReply, ClaimError>;
}

/// The lease store: every call awaits, and lets other requests and the
/// alarm into this object.
impl LeaseBackend for &Leases<'_> {
    async fn lock(&mut self, claim: &ClaimId) -> Result<Option<LeaseLock>, ClaimError> {
        Ok(Some(Leases::lock(self, claim).await?))
    }

    async fn lease(&mut self, request: &LeaseRequest, durable: &DurableStore) -> Result<LeaseReply, ClaimError> {
        Ok(self.apply(request, |claim| durable.claim(claim)).await?)
    }
}

/// The benchmark baseline's leases: in memory, for one call.
impl LeaseBackend for MemoryLeases {
    async fn lock(&mut self, _: &ClaimId) -> Result<Option<LeaseLock>, ClaimError> {
        Ok(None)
    }

    async fn lease(&mut self, request: &LeaseRequest, durable: &DurableStore) -> Result<LeaseReply, ClaimError> {
        let row = durable.claim(request.claim())?;
        Ok(lease::apply(self, request, row.as_ref(), now_ms()))
    }
}

/// A procedure's host in this object: durable requests served by the
/// durable store, lease requests by `L`, each at the object's `now`; the
/// procedure's waits are paused within a budget.
///
/// The claim's lease lock is held from a lease request to the durable
/// request that records what it found (`RecordLease`: a deadline granted or
/// read; `RecordRejection`: the lease lost, or compensated), which a
/// procedure sends right after it (an activation answering from its grant
/// sends it after its lock and commit instead, with no await in between:
/// docs/remora.md 6.6): no other lease request of the claim runs
/// in between, so the durable store never records a deadline behind the
/// lease record's, nor a loss the record no longer shows
/// (`tla/RemoraClaimLeaseLoss.tla`; the model holds the same lock). A
/// completion holds it from its lease read through its commit to the
/// release of the lease (`CommitCompletion` keeps it): a heartbeat renews
/// a completed attempt's lease record in no instant between the two. Any
/// other durable request releases it first: a procedure waits only there.
struct ObjectHost<'a, L> {
    durable: &'a DurableStore,
    leases: L,
    held: Option<LeaseLock>,
    pause: Pause,
}

impl<L: LeaseBackend> Host for ObjectHost<'_, L> {
    type Error = ClaimError;

    fn now(&self) -> Millis {
        now_ms()
    }

    async fn serve(&mut self, request: Request) -> Result<Reply, ClaimError> {
        Ok(match request {
            Request::Durable(r) => {
                if let DurableRequest::Bind { operation, request, .. } = &r
                    && let Err(full) = self.durable.operation_room(&request.claim, operation)?
                {
                    return Err(ClaimError::OperationsFull { claim: request.claim.clone(), full });
                }
                let records = matches!(
                    r,
                    DurableRequest::RecordLease { .. }
                        | DurableRequest::ReapExecuting { .. }
                        | DurableRequest::RecordRejection { .. }
                        | DurableRequest::RecordCompletionRefusal { .. }
                );
                let completes = matches!(r, DurableRequest::CommitCompletion { .. });
                if !records && !completes {
                    self.held = None;
                }
                let reply = self.durable.transition(&r, now_ms());
                if !completes {
                    self.held = None;
                }
                Reply::Durable(reply?)
            }
            Request::Lease(r) => {
                if self.held.as_ref().is_none_or(|held| held.claim() != r.claim()) {
                    self.held = None;
                    self.held = self.leases.lock(r.claim()).await?;
                }
                Reply::Lease(self.leases.lease(&r, self.durable).await?)
            }
        })
    }

    async fn pause(&mut self) -> Result<(), ClaimError> {
        self.held = None;
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
    let mut host = ObjectHost { durable, leases, held: None, pause: Pause::new(ACTIVATION_WAIT) };
    procedure::run(&mut activator(call), &mut host).await
}

/// The benchmark baseline: the same activator, with the leases in memory
/// for this call only, so the whole activation is one synchronous run of
/// durable transitions (one transaction, see `store.rs`) with no await: a
/// wait would need one, so it answers `activation_pending` instead.
pub async fn activate_without_lease_store(durable: &DurableStore, call: &Activate) -> Result<Answer, ClaimError> {
    let mut host =
        ObjectHost { durable, leases: MemoryLeases::default(), held: None, pause: Pause::new(Duration::ZERO) };
    procedure::run(&mut activator(call), &mut host).await
}

/// A heartbeat: the durable check, then the renewal. It never waits.
pub async fn heartbeat(
    durable: &DurableStore,
    leases: &Leases<'_>,
    call: &request::Heartbeat,
) -> Result<HeartbeatOutcome, ClaimError> {
    let mut host = ObjectHost { durable, leases, held: None, pause: Pause::new(Duration::ZERO) };
    procedure::run(&mut Heartbeat::new(call.request.clone(), call.lease_ttl_ms), &mut host).await
}

/// A completion: the durable check, the lease check, the durable commit,
/// then the lease released. It never waits.
pub async fn complete(
    durable: &DurableStore,
    leases: &Leases<'_>,
    call: &request::Complete,
) -> Result<CompletionOutcome, ClaimError> {
    let mut host = ObjectHost { durable, leases, held: None, pause: Pause::new(Duration::ZERO) };
    let mut completion =
        Completion::new(call.operation.clone(), call.request.clone(), call.outcome, call.result.clone());
    procedure::run(&mut completion, &mut host).await
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

/// The claims one recovery pass takes on: a pass runs without an await, so
/// every other request to the object waits for it; 50 claims are two
/// transactions each (measured on workerd, crates/e2e/tests/it/serial/reaper.rs:
/// 10,000 expired claims reaped in 200 passes in 6.1 s, GETs of other
/// claims answered in between, p50 20 ms; batches of 10 took 31 s, the
/// fixed cost of a pass dominating).
const REAPER_BATCH: usize = 50;

/// One recovery pass (the alarm, or the test hook) over at most
/// [`REAPER_BATCH`] claims: the claims it reaped, and whether more may be
/// waiting (a full batch). All durable, so it runs without an await: in one
/// poll (`ready`). A pass that would await (none can: its host never does)
/// stops there and answers pending, as a wait would, rather than
/// interleave. Bounded, so that other requests get in between passes.
pub fn reap(durable: &DurableStore) -> Result<(Vec<ClaimId>, bool), ClaimError> {
    let mut host = RecoveryHost { durable, now: now_ms() };
    let mut reaper = Reaper::new(REAPER_BATCH);
    let reaped = procedure::ready(procedure::run(&mut reaper, &mut host))
        .unwrap_or(Err(ClaimError::Pending { waited_ms: 0 }))?;
    Ok((reaped, reaper.more))
}

/// One recovery pass over the executing claims (the alarm, or the test
/// hook), over at most [`REAPER_BATCH`] of them: each whose recorded lease
/// deadline has passed has its lease record read, under its lease lock,
/// and is reaped if that lease is not live (`ReapExecuting`). The claims it
/// reaped, and whether more may be waiting. Unlike [`reap`] it awaits the
/// lease store; it never waits for anything else.
pub async fn reap_executing(durable: &DurableStore, leases: &Leases<'_>) -> Result<(Vec<ClaimId>, bool), ClaimError> {
    let mut host = ObjectHost { durable, leases, held: None, pause: Pause::new(Duration::ZERO) };
    let mut reaper = ExecutingReaper::new(REAPER_BATCH);
    let reaped = procedure::run(&mut reaper, &mut host).await?;
    Ok((reaped, reaper.more))
}

/// When the alarm should run next, at `now`: at once if a pass left work
/// (`more`); else at the earliest reservation deadline, or recorded lease
/// deadline of an executing claim, `due` (or, for a
/// deadline already past, whose claim the pass skipped because an
/// activation holds its lock, [`REAPER_RETRY_MS`] from now) or the earliest
/// purge, whichever comes first.
pub fn next_alarm(due: Option<Millis>, purge: Option<Millis>, now: Millis, more: bool) -> Option<Millis> {
    if more {
        return Some(now);
    }
    let due = due.map(|at| if at > now { at } else { now.saturating_add(REAPER_RETRY_MS) });
    let purge = purge.map(|at| at.max(now));
    due.into_iter().chain(purge).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alarm_is_set_for_the_earliest_deadline() {
        assert_eq!(next_alarm(None, None, 100, false), None);
        assert_eq!(next_alarm(Some(300), None, 100, false), Some(300));
        assert_eq!(next_alarm(Some(300), Some(200), 100, false), Some(200));
        assert_eq!(next_alarm(Some(300), Some(50), 100, false), Some(100), "a purge due now");
    }

    #[test]
    fn a_full_batch_runs_again_at_once_and_a_skipped_claim_after_a_while() {
        assert_eq!(next_alarm(Some(300), None, 100, true), Some(100));
        assert_eq!(next_alarm(Some(90), None, 100, false), Some(100 + REAPER_RETRY_MS), "an activation holds it");
    }
}
