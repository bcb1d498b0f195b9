//! Test helpers: one claim `c1` (attempt fence 1, worker `w1`, reserved
//! until [`R`]) and a host that serves procedures from in-memory stores.

use super::durable::{self, ClaimRow, MemoryDurable};
use super::error::ProcedureError;
use super::lease::{self, MemoryLeases};
use super::message::{Reply, Request};
use super::procedure::{self, Host, Procedure, Progress, Step};
use super::types::{ClaimId, Fence, Millis, OperationId, RequestKey, WorkerId};

/// The reservation deadline of `c1`.
pub const R: Millis = 1_000;

pub fn claim_row() -> ClaimRow {
    ClaimRow::authorize(ClaimId::from("c1"), Fence(1), WorkerId::from("w1"), R)
}

/// The request `(c1, fence, worker)`.
pub fn key(fence: u64, worker: &str) -> RequestKey {
    RequestKey { claim: ClaimId::from("c1"), fence: Fence(fence), worker: WorkerId::from(worker) }
}

pub fn op(id: &str) -> OperationId {
    OperationId::from(id)
}

/// Both stores, with `c1` authorized, serving at `now`; every request
/// served is logged in `sent`.
#[derive(Default)]
pub struct Stores {
    pub durable: MemoryDurable,
    pub leases: MemoryLeases,
    pub now: Millis,
    pub sent: Vec<Request>,
}

/// Why a test's procedure did not run to its outcome.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    #[error(transparent)]
    Procedure(#[from] ProcedureError),
    #[error("the procedure waits on something that will not happen at this `now`")]
    Waits,
}

impl Stores {
    pub fn new() -> Stores {
        let mut stores = Stores::default();
        stores.durable.claims.insert(ClaimId::from("c1"), claim_row());
        stores
    }
}

impl Host for Stores {
    type Error = Stopped;

    fn now(&self) -> Millis {
        self.now
    }

    async fn serve(&mut self, request: Request) -> Result<Reply, Stopped> {
        let reply = match &request {
            Request::Durable(r) => Reply::Durable(durable::apply(&mut self.durable, r, self.now)),
            Request::Lease(r) => {
                let authority = self.durable.claims.get(r.claim()).cloned();
                Reply::Lease(lease::apply(&mut self.leases, r, authority.as_ref(), self.now))
            }
        };
        self.sent.push(request);
        Ok(reply)
    }

    /// Time stands still in a test: a procedure that waits would wait for
    /// ever, so the test fails instead of spinning.
    async fn pause(&mut self) -> Result<(), Stopped> {
        Err(Stopped::Waits)
    }
}

/// Runs `procedure` to its outcome at `now`.
pub fn run<P>(stores: &mut Stores, procedure: &mut P, now: Millis) -> P::Outcome
where
    P: Procedure + std::fmt::Debug,
    P::Outcome: std::fmt::Debug,
{
    stores.now = now;
    match procedure::ready(procedure::run(procedure, stores)) {
        Some(Ok(outcome)) => outcome,
        other => panic!("no outcome at {now} ({other:?}): {procedure:?}"),
    }
}

/// Serves one request of `procedure` at `now`: whether it advanced or waits.
pub fn step<P: Procedure + std::fmt::Debug>(stores: &mut Stores, procedure: &mut P, now: Millis) -> Progress {
    stores.now = now;
    match procedure::ready(procedure::step(procedure, stores)) {
        Some(Ok(Step::Served(progress))) => progress,
        other => panic!("no request served at {now} ({other:?}): {procedure:?}"),
    }
}
