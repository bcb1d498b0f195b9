//! The coordination store: leases kept in the namespace's Handoff KV, under
//! the reserved prefix [`LEASE_PREFIX`] (`_remora/lease/{claim}`), which the
//! public KV API refuses to write. The value is the protocol's `Lease` as
//! JSON (fence, worker, `expires_at`): expiry travels with the record.
//!
//! [`Leases::apply`] serves one `protocol::claim::LeaseRequest` with the
//! protocol's own pure `lease::update`, as a read-modify-write against the
//! coordinator `{ns}:r0` (the same authenticated internal `get`/`put`/
//! `delete` calls the Worker makes for clients):
//!
//! 1. the caller holds the claim's lock in this object ([`Leases::lock`]),
//! 2. read the record (`GET`),
//! 3. run `lease::update` on it and on the claim's durable row (read in the
//!    same synchronous step: a lease is created only for an attempt awaiting
//!    activation, restored only from the durable record of its deadline), at
//!    this object's `now`,
//! 4. write the record it returns back if it changed (`PUT`, or `DELETE`).
//!
//! The caller holds the lock from a lease request to the durable request
//! that records what it found (`RecordLease`, `RecordRejection`), so that
//! what the durable store records is never behind the lease store's record
//! (`procedures.rs`).
//!
//! Why that is atomic: this object (one per namespace) is the only writer of
//! the prefix, and it never runs two requests for one claim's record at once;
//! Handoff answers a read with committed data at the coordinator and
//! acknowledges a write once committed. So between 2 and 4 nobody can
//! change the record, and what 4 writes is `lease::update` of what 2 read.
//!
//! What Handoff's read semantics leave open, and why it is safe: reads are
//! linearizable (a peer confirms the coordinator's epoch first), but Handoff
//! is memory only, so a record can be lost with every replica that held it.
//! Then a lease looks absent: a replay or a heartbeat finds no lease in
//! force and answers `lease_lost`, a renewal refuses, a commit may be
//! refused for an expired lease. None of these applies the effect: only the
//! durable store's commit does, once, in its own transaction. A record that
//! was lost can also be created again by an activation still within the
//! attempt's reservation (the record that would have refused it is gone);
//! that activation can only replay an attempt that already executes, never
//! execute it twice (docs/remora-operating.md 6.9 lists this gap).
//!
//! A 503 from Handoff (the coordinator recovering, or reset while serving)
//! is retried with backoff for at most [`LEASE_STORE_WAIT`], every attempt
//! included (one still unanswered then is abandoned); a write is
//! retried with the same write id, so Handoff applies it once. After that the
//! request fails with [`LeaseStoreError::Unavailable`] (503 + Retry-After).

use std::cell::RefCell;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{self, Either};
use protocol::claim::lease;
use protocol::claim::{ClaimId, ClaimRow, Lease, LeaseReply, LeaseRequest};
use protocol::handoff::WriteId;
use worker::{Delay, Env};

use super::locks::{self, Held, Reentered};
use super::state::ClaimsState;
use super::store::StoreError;
use crate::auth::KeyProblem;
use crate::http::{NO_WAKE_HEADER, WRITE_ID_HEADER};
use crate::internal::{self, now_ms, random_u128, replica_binding};
use crate::names::ReplicaName;
use crate::wire::{ReplicaOp as Op, Target};

/// Where leases live in the namespace's Handoff KV.
pub const LEASE_PREFIX: &str = "_remora/lease/";
/// How long one lease-store call keeps retrying 503s before giving up.
pub const LEASE_STORE_WAIT: Duration = Duration::from_secs(10);
/// How long all the lease-store calls of one client request take at most
/// together (an activation makes several): the request is answered 503
/// `lease_store_unavailable`, with a Retry-After, well before a client's
/// usual 30 s timeout, instead of never.
pub const REQUEST_LEASE_BUDGET: Duration = Duration::from_secs(20);
const FIRST_BACKOFF_MS: u64 = 50;
const MAX_BACKOFF_MS: u64 = 1000;

/// Why a lease request was not served.
#[derive(Debug, thiserror::Error)]
pub enum LeaseStoreError {
    #[error("the lease store ({object}) did not answer in time; last: {last}")]
    Unavailable { object: String, last: String },
    #[error("the namespace's KV has no room for the lease: {body}")]
    Full { body: String },
    #[error("the lease store answered {status}: {body}")]
    Unexpected { status: u16, body: String },
    #[error("the stored lease does not decode: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Key(KeyProblem),
    #[error(transparent)]
    Reentered(#[from] Reentered),
    /// The claim's durable row could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The claim object's access to the lease store.
pub struct LeaseStore {
    env: Env,
    secret: Result<String, KeyProblem>,
}

impl LeaseStore {
    pub fn new(env: Env, secret: Result<String, KeyProblem>) -> LeaseStore {
        LeaseStore { env, secret }
    }

    /// The leases of namespace `ns` (the claim object's own), locked in
    /// the object's `state`.
    /// Its calls end by [`REQUEST_LEASE_BUDGET`] from now.
    pub fn of<'a>(&'a self, ns: &'a str, state: &'a Rc<RefCell<ClaimsState>>) -> Leases<'a> {
        let deadline = now_ms().saturating_add(REQUEST_LEASE_BUDGET.as_millis() as u64);
        Leases { store: self, ns, state, deadline }
    }
}

/// The leases of one namespace.
pub struct Leases<'a> {
    store: &'a LeaseStore,
    ns: &'a str,
    state: &'a Rc<RefCell<ClaimsState>>,
    /// When every call gives up (the request's budget).
    deadline: u64,
}

/// A claim's lease lock in the claim object.
pub type LeaseLock = Held<ClaimsState>;

impl Leases<'_> {
    /// Waits for `claim`'s lease lock; held until the guard is dropped.
    pub async fn lock(&self, claim: &ClaimId) -> Result<LeaseLock, LeaseStoreError> {
        Ok(locks::acquire(self.state, claim).await?)
    }

    /// Serves one lease request, the claim's lock held by the caller
    /// (module docs: read, apply, write). `authority` reads the claim's
    /// durable row.
    pub async fn apply(
        &self,
        request: &LeaseRequest,
        authority: impl Fn(&ClaimId) -> Result<Option<ClaimRow>, StoreError>,
    ) -> Result<LeaseReply, LeaseStoreError> {
        let claim = request.claim();
        let stored = self.read(claim).await?;
        let row = authority(claim)?;
        let (reply, updated) = lease::update(stored.as_ref(), request, row.as_ref(), now_ms());
        if updated != stored {
            self.write(claim, updated.as_ref()).await?;
        }
        Ok(reply)
    }

    /// Deletes the claim's lease record (a purged claim's), unless the
    /// namespace's replicas are not running: then the record went with them,
    /// and this must not start them again.
    pub async fn forget(&self, claim: &ClaimId) -> Result<(), LeaseStoreError> {
        let _held = self.lock(claim).await?;
        let (status, body) = self.call_with(Op::Delete, claim, None, &[(NO_WAKE_HEADER, "1")]).await?;
        match status {
            200 | 404 | 410 => Ok(()),
            _ => Err(unexpected(status, &body)),
        }
    }

    /// The claim's lease record, live or not (a plain read).
    pub async fn read(&self, claim: &ClaimId) -> Result<Option<Lease>, LeaseStoreError> {
        let (status, body) = self.call(Op::Get, claim, None).await?;
        match status {
            200 => serde_json::from_slice(&body).map(Some).map_err(|e| LeaseStoreError::Corrupt(e.to_string())),
            404 => Ok(None),
            _ => Err(unexpected(status, &body)),
        }
    }

    async fn write(&self, claim: &ClaimId, lease: Option<&Lease>) -> Result<(), LeaseStoreError> {
        let (op, body) = match lease {
            Some(lease) => {
                (Op::Put, Some(serde_json::to_vec(lease).map_err(|e| LeaseStoreError::Corrupt(e.to_string()))?))
            }
            None => (Op::Delete, None),
        };
        let (status, reply) = self.call(op, claim, body).await?;
        if status == 200 { Ok(()) } else { Err(unexpected(status, &reply)) }
    }

    /// One call to the coordinator, retrying 503s and transport failures
    /// (the coordinator reset or recovering) for [`LEASE_STORE_WAIT`]. A
    /// write keeps its write id across retries.
    async fn call(&self, op: Op, claim: &ClaimId, body: Option<Vec<u8>>) -> Result<(u16, Vec<u8>), LeaseStoreError> {
        self.call_with(op, claim, body, &[]).await
    }

    async fn call_with(
        &self,
        op: Op,
        claim: &ClaimId,
        body: Option<Vec<u8>>,
        extra: &[(&str, &str)],
    ) -> Result<(u16, Vec<u8>), LeaseStoreError> {
        let secret = self.store.secret.as_ref().map_err(|p| LeaseStoreError::Key(p.clone()))?;
        let object = ReplicaName::R0.object_name(self.ns);
        let target = Target::new(op, self.ns, Some(ReplicaName::R0)).with_key(&lease_key(claim));
        let wid = WriteId(random_u128()).to_string();
        let mut headers: Vec<(&str, &str)> = extra.to_vec();
        if op != Op::Get {
            headers.push((WRITE_ID_HEADER, wid.as_str()));
        }
        let give_up = now_ms().saturating_add(LEASE_STORE_WAIT.as_millis() as u64).min(self.deadline);
        let mut backoff = FIRST_BACKOFF_MS;
        loop {
            let attempt = async {
                // A fresh stub each time: one whose object was reset stays broken.
                let stub = internal::stub(&self.store.env, replica_binding(ReplicaName::R0), &object)?;
                let mut resp = internal::call(&stub, &target, Some(secret), body.as_deref(), &headers).await?;
                Ok::<_, worker::Error>((resp.status_code(), resp.bytes().await?))
            };
            // An attempt waits at most what is left of the call's budget (a
            // coordinator may hold a write up to its commit wait): giving up
            // on it is as uncertain as a 503 not_committed, which the
            // activation already treats as a lease that may have been written.
            let left = give_up.saturating_sub(now_ms()).max(1);
            let timeout = Delay::from(Duration::from_millis(left));
            let last = match future::select(pin!(attempt), pin!(timeout)).await {
                Either::Left((Ok((503, reply)), _)) => String::from_utf8_lossy(&reply).into_owned(),
                Either::Left((Ok(answer), _)) => return Ok(answer),
                Either::Left((Err(e), _)) => e.to_string(),
                Either::Right(_) => format!("no answer within {left} ms"),
            };
            if now_ms().saturating_add(backoff) > give_up {
                return Err(LeaseStoreError::Unavailable { object, last });
            }
            Delay::from(Duration::from_millis(backoff)).await;
            backoff = (backoff * 2).min(MAX_BACKOFF_MS);
        }
    }
}

/// An answer a lease call does not expect: 507 (the KV writers filled the
/// namespace, or its coordinator's isolate) is the client's to know.
fn unexpected(status: u16, body: &[u8]) -> LeaseStoreError {
    let body = String::from_utf8_lossy(body).into_owned();
    if status == 507 { LeaseStoreError::Full { body } } else { LeaseStoreError::Unexpected { status, body } }
}

/// The Handoff key of a claim's lease.
pub fn lease_key(claim: &ClaimId) -> String {
    format!("{LEASE_PREFIX}{claim}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names;
    use crate::names::MAX_ID_BYTES;
    use crate::vocab::RESERVED_PREFIX;

    #[test]
    fn every_lease_key_is_a_valid_key_under_the_reserved_prefix() {
        for claim in ["c", "caf\u{e9} 1", &"c".repeat(MAX_ID_BYTES)] {
            let key = lease_key(&ClaimId::from(claim));
            assert!(key.starts_with(RESERVED_PREFIX), "{key}");
            assert!(names::valid_key(&key).is_ok(), "{key}");
        }
    }
}
