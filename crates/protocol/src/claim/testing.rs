//! Test helpers: one claim `c1` (attempt fence 1, worker `w1`, reserved
//! until [`R`]) and a host that serves procedures from in-memory stores.

use super::durable::{self, ClaimRow, MemoryDurable};
use super::lease::{self, MemoryLeases};
use super::message::{Reply, Request};
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

/// Both stores, with `c1` authorized.
#[derive(Default)]
pub struct Stores {
    pub durable: MemoryDurable,
    pub leases: MemoryLeases,
}

impl Stores {
    pub fn new() -> Stores {
        let mut stores = Stores::default();
        stores.durable.claims.insert(ClaimId::from("c1"), claim_row());
        stores
    }

    pub fn serve(&mut self, request: &Request, now: Millis) -> Reply {
        match request {
            Request::Durable(r) => Reply::Durable(durable::apply(&mut self.durable, r, now)),
            Request::Lease(r) => Reply::Lease(lease::apply(&mut self.leases, r, now)),
        }
    }
}

/// Serves `activator`'s requests at `now` until it answers (bounded: a
/// procedure waiting on something that will not happen at this `now` fails
/// the test instead of spinning).
pub fn run(stores: &mut Stores, activator: &mut super::Activator, now: Millis) -> super::Answer {
    for _ in 0..20 {
        if let Some(answer) = activator.answer() {
            return answer.clone();
        }
        step(stores, activator, now);
    }
    panic!("no answer at {now}: {activator:?}")
}

/// Serves one request of `activator` at `now`.
pub fn step(stores: &mut Stores, activator: &mut super::Activator, now: Millis) {
    let request = activator.poll_request(now).expect("a request while unanswered");
    let reply = stores.serve(&request, now);
    activator.handle_reply(reply).expect("a reply to the request");
}
