//! The coordination store: leases kept in the namespace's Handoff KV, under
//! the reserved prefix [`LEASE_PREFIX`] (`_remora/lease/{claim}`), which the
//! public KV API refuses to write. The value is the protocol's `Lease` as
//! JSON (fence, worker, `expires_at`): expiry travels with the record.
//!
//! [`Leases::apply`] serves one `protocol::claim::LeaseRequest` with the
//! protocol's own pure `lease::update`, against the coordinator `{ns}:r0`
//! (the same authenticated internal `get`/`put`/`delete` calls the Worker
//! makes for clients, with Handoff's conditions), the caller holding the
//! claim's lock in this object ([`Leases::lock`]):
//!
//! 1. read the claim's durable row (a lease is created only for an attempt
//!    awaiting activation, restored only from the durable record of its
//!    deadline) and, at this object's `now`, ask `lease::update_if_absent`
//!    what the request would write on an absent record. If it writes one (a
//!    lease created, or restored), write it on that condition alone (`PUT`
//!    with `If-None-Match: *`): one round trip, and if it is acknowledged,
//!    the record was absent at the coordinator when it committed, so what
//!    it wrote is `lease::update` of what was there.
//! 2. Otherwise (a request that writes nothing on an absent record), or if
//!    a record exists (`412`: a second activation's, an older attempt's, an
//!    expired one), read-modify-write: read the record and its ETag (`GET`),
//!    run `lease::update` on it and on the durable row (read again, in the
//!    same synchronous step), and write what it returns back if it changed,
//!    on condition the record is still the one read (`PUT`/`DELETE` with
//!    `If-Match: <etag>`, or `If-None-Match: *` where none was read). A
//!    write refused on that condition (the store lost the record between
//!    the two calls) starts this step again, at most three times.
//!
//! A first activation's lease is therefore one round trip, a heartbeat's
//! renewal two (read, write), a lease check (`Holder`) one.
//!
//! The caller holds the lock from a lease request to the durable request
//! that records what it found (`RecordLease`, `RecordRejection`), so that
//! what the durable store records is never behind the lease store's record
//! (`procedures.rs`).
//!
//! Why that is atomic: this object (one per namespace) is the only writer of
//! the prefix, and it never runs two requests for one claim's record at once;
//! Handoff answers a read with committed data at the coordinator,
//! acknowledges a write once committed, and checks a write's condition
//! against its committed memory. So a conditional write that is
//! acknowledged took effect on the very record the decision was made for
//! (none, in 1; the one read, in 2), and what it wrote is `lease::update`
//! of that record. The lock is what keeps the conditions from failing but
//! for a loss; the conditions are what keep a loss between a read and a
//! write from being written over.
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
//! retried with the same write id, so Handoff applies it once (a retry
//! whose first try did commit but whose dedup entry the coordinator lost
//! is refused on its condition instead, and step 2 reads back what it
//! wrote). After that the request fails with
//! [`LeaseStoreError::Unavailable`] (503 + Retry-After).

use std::cell::RefCell;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{self, Either};
use protocol::claim::lease;
use protocol::claim::{ClaimId, ClaimRow, Lease, LeaseReply, LeaseRequest, Millis};
use protocol::handoff::WriteId;
use worker::wasm_bindgen_futures::spawn_local;
use worker::{Delay, Env};

use super::locks::{self, Held, LockError};
use super::state::ClaimsState;
use super::store::StoreError;
use crate::auth::KeyProblem;
use crate::conditions::{ETAG, IF_MATCH, IF_NONE_MATCH};
use crate::hop::{LinkState, SocketRoute, Via};
use crate::http::{NO_WAKE_HEADER, WRITE_ID_HEADER};
use crate::internal::{self, now_ms, random_u128, replica_binding};
use crate::names::ReplicaName;
use crate::tunnel;
use crate::wire::{Ops, ReplicaOp as Op, Target};

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
    Lock(#[from] LockError),
    /// The request's budget ran out while another request on the same
    /// claim held its lease lock.
    #[error("waited {waited_ms} ms for the lease lock of claim {claim}, which another request on it holds; retry")]
    LockWait { claim: ClaimId, waited_ms: u64 },
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
    /// Waits for `claim`'s lease lock, at most until the request's
    /// deadline; held until the guard is dropped.
    pub async fn lock(&self, claim: &ClaimId) -> Result<LeaseLock, LeaseStoreError> {
        let started = now_ms();
        let budget = Delay::from(Duration::from_millis(self.deadline.saturating_sub(started)));
        match locks::acquire_before(self.state, claim, budget).await? {
            Some(held) => Ok(held),
            None => {
                Err(LeaseStoreError::LockWait { claim: claim.clone(), waited_ms: now_ms().saturating_sub(started) })
            }
        }
    }

    /// Serves one lease request, the claim's lock held by the caller
    /// (module docs: a conditional create, else read, apply, write).
    /// `authority` reads the claim's durable row.
    pub async fn apply(
        &self,
        request: &LeaseRequest,
        authority: impl Fn(&ClaimId) -> Result<Option<ClaimRow>, StoreError>,
    ) -> Result<LeaseReply, LeaseStoreError> {
        serve(self, request, authority, now_ms).await
    }

    /// Deletes the claim's lease record (a purged claim's) if, with the
    /// claim's lease lock held, `still_due()` says the claim is still to be
    /// purged (a new attempt authorized meanwhile may be activated, and its
    /// lease must stay); whether it was. Not if the namespace's replicas are
    /// not running: then the record went with them, and this must not start
    /// them again.
    pub async fn forget(
        &self,
        claim: &ClaimId,
        still_due: impl Fn() -> Result<bool, StoreError>,
    ) -> Result<bool, LeaseStoreError> {
        let _held = self.lock(claim).await?;
        if !still_due()? {
            return Ok(false);
        }
        let answer = self.call_with(Op::Delete, claim, None, &[(NO_WAKE_HEADER, "1")]).await?;
        match answer.status {
            200 | 404 | 410 => Ok(true),
            status => Err(unexpected(status, &answer.body)),
        }
    }

    /// The claim's lease record, live or not (a plain read).
    pub async fn read(&self, claim: &ClaimId) -> Result<Option<Lease>, LeaseStoreError> {
        Ok(LeaseKv::read(self, claim).await?.map(|stored| stored.lease))
    }

    /// One call to the coordinator, retrying 503s and transport failures
    /// (the coordinator reset or recovering) for [`LEASE_STORE_WAIT`]. A
    /// write keeps its write id across retries.
    async fn call_with(
        &self,
        op: Op,
        claim: &ClaimId,
        body: Option<Vec<u8>>,
        extra: &[(&str, &str)],
    ) -> Result<Answer, LeaseStoreError> {
        let secret = self.store.secret.as_ref().map_err(|p| LeaseStoreError::Key(p.clone()))?;
        let object = ReplicaName::R0.object_name(self.ns);
        let target = Target::new(op, self.ns, Some(ReplicaName::R0)).with_key(&lease_key(claim));
        let wid = WriteId(random_u128()).to_string();
        let mut headers: Vec<(&str, &str)> = extra.to_vec();
        if op != Op::Get {
            headers.push((WRITE_ID_HEADER, wid.as_str()));
        }
        let call = Call { object: &object, target: &target, body: body.as_deref(), headers: &headers, secret };
        let give_up = now_ms().saturating_add(LEASE_STORE_WAIT.as_millis() as u64).min(self.deadline);
        if now_ms() >= give_up {
            // Nothing is sent once the request's budget is spent (waiting
            // for the claim's lock): a write now could apply unanswered.
            return Err(LeaseStoreError::Unavailable {
                object,
                last: "the request's time ran out before the call".into(),
            });
        }
        let mut backoff = FIRST_BACKOFF_MS;
        loop {
            let attempt = self.attempt(&call);
            // An attempt waits at most what is left of the call's budget (a
            // coordinator may hold a write up to its commit wait): giving up
            // on it is as uncertain as a 503 not_committed, which the
            // activation already treats as a lease that may have been written.
            let left = give_up.saturating_sub(now_ms()).max(1);
            let timeout = Delay::from(Duration::from_millis(left));
            let last = match future::select(pin!(attempt), pin!(timeout)).await {
                Either::Left((Ok(Answer { status: 503, body, .. }), _)) => String::from_utf8_lossy(&body).into_owned(),
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

impl Leases<'_> {
    /// One try of a call: as a frame on the socket to the coordinator if it
    /// is open (`crate::tunnel`), else over HTTP on a fresh stub (one whose
    /// object was reset stays broken), opening the socket for later calls.
    async fn attempt(&self, call: &Call<'_>) -> worker::Result<Answer> {
        let Call { target, body, headers, secret, .. } = *call;
        let url = target.url().map_err(|e| worker::Error::RustError(format!("internal url: {e}")))?;
        let head = tunnel::CallHead {
            method: target.op.method().to_string(),
            url,
            headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
        };
        let mut frame = tunnel::call_frame(&head, body.unwrap_or_default())
            .map_err(|e| worker::Error::RustError(format!("encoding a call: {e}")))?;
        let now = now_ms();
        let (via, open) = self.with_link(|link| {
            // A call that timed out left its frame waiting: forget it, so
            // that r0 never answering it cannot close a working socket.
            if let Some(l) = link.as_mut() {
                l.forget_abandoned();
            }
            if link.as_mut().is_some_and(|l| l.close_if_overdue(now, CALL_OVERDUE_MS) || l.lost()) {
                *link = None;
            }
            match link.as_mut() {
                Some(link) => link.route(frame.len(), now),
                None => (Via::NewLink, None),
            }
        })?;
        if let (Some(id), Via::Http(link)) = (open, &via) {
            self.open_socket(id, link.clone(), secret.to_string());
        }
        match via {
            Via::Frame { socket, answer, id, number } => {
                tunnel::set_number(&mut frame, number);
                if let Err(e) = socket.send(&frame) {
                    self.with_link(|link| link.as_mut().map(|l| l.ended(id)))?;
                    return Err(e);
                }
                drop(socket);
                let frame = answer.await.map_err(|_| worker::Error::RustError("the socket to r0 closed".into()))?;
                let reply = tunnel::split_number(&frame)
                    .and_then(|(_, rest)| tunnel::parse_reply(rest))
                    .ok_or_else(|| worker::Error::RustError("an answer frame that is no answer".into()))?;
                let etag = reply.header(ETAG).map(str::to_string);
                Ok(Answer { status: reply.status, etag, body: reply.body.to_vec() })
            }
            Via::Http(_) => self.http(call).await,
            Via::NewLink => {
                let link = tunnel::coordinator_route(&self.store.env, self.ns)?;
                self.with_link(|slot| slot.get_or_insert_with(|| LinkState::new(Rc::new(link))).lost())?;
                self.http(call).await
            }
        }
    }

    /// One try of a call over HTTP.
    async fn http(&self, call: &Call<'_>) -> worker::Result<Answer> {
        let Call { object, target, body, headers, secret } = *call;
        let stub = internal::stub(&self.store.env, replica_binding(ReplicaName::R0), object)?;
        let mut resp = internal::call(&stub, target, Some(secret), body, headers).await?;
        let etag = resp.headers().get(ETAG).ok().flatten();
        Ok(Answer { status: resp.status_code(), etag, body: resp.bytes().await? })
    }

    /// `f` on the object's lease link, the state borrowed for it alone.
    fn with_link<R>(&self, f: impl FnOnce(&mut Option<LinkState<SocketRoute>>) -> R) -> worker::Result<R> {
        let mut state =
            self.state.try_borrow_mut().map_err(|_| worker::Error::RustError("bug: claims state borrowed".into()))?;
        Ok(f(&mut state.lease_link))
    }

    /// Opens socket `id` of `link`; its answers and end reach the link in
    /// the object's state (a borrow is never held where a JavaScript event
    /// can run, so the callbacks find the state free).
    fn open_socket(&self, id: u64, link: Rc<SocketRoute>, key: String) {
        let state = Rc::downgrade(self.state);
        spawn_local(async move {
            let on_link = move |state: &std::rc::Weak<RefCell<ClaimsState>>,
                                f: &mut dyn FnMut(&mut LinkState<SocketRoute>)| {
                if let Some(state) = state.upgrade()
                    && let Ok(mut state) = state.try_borrow_mut()
                    && let Some(link) = state.lease_link.as_mut()
                {
                    f(link);
                }
            };
            let answers = state.clone();
            let on_answer = move |frame: Vec<u8>| {
                let Some((number, _)) = tunnel::split_number(&frame) else { return };
                let mut frame = Some(frame);
                on_link(&answers, &mut |link| link.answered_to(id, number, frame.take().unwrap_or_default()));
            };
            let ends = state.clone();
            let on_end = move || on_link(&ends, &mut |link| link.ended(id));
            let opened = link.open(&key, SOCKET_OPEN_TIMEOUT, on_answer, on_end).await;
            if let Err(e) = &opened {
                worker::console_debug!("the calls socket to r0 did not open: {e}");
            }
            // A failed opening loses the link: the next call makes a new one.
            let mut opened = Some(opened);
            on_link(&state, &mut |link| {
                if let Some(opened) = opened.take() {
                    link.opened(id, opened, now_ms());
                }
            });
        });
    }
}

/// How long a lease call's socket may take to open (calls go over HTTP
/// meanwhile).
const SOCKET_OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// A frame unanswered this long means the socket is broken: it is closed,
/// its calls fail (and are retried), later calls open a new one. Above the
/// coordinator's longest wait for a commit (10 s), after which it answers.
const CALL_OVERDUE_MS: u64 = 15_000;

/// One call to the coordinator, as each of its tries makes it.
#[derive(Clone, Copy)]
struct Call<'a> {
    /// The coordinator's object name.
    object: &'a str,
    target: &'a Target<Op>,
    body: Option<&'a [u8]>,
    headers: &'a [(&'a str, &'a str)],
    /// The internal key.
    secret: &'a str,
}

/// A coordinator's answer to one call.
struct Answer {
    status: u16,
    /// The record's ETag (a read's, or a committed write's).
    etag: Option<String>,
    body: Vec<u8>,
}

/// A claim's lease record as the coordinator holds it: the lease, and the
/// ETag of the write that put it there.
#[derive(Clone, Debug, PartialEq)]
struct Stored {
    lease: Lease,
    etag: String,
}

/// The coordinator's calls, as the lease store makes them: Handoff's
/// conditional writes (`If-None-Match: *`, `If-Match: <etag>`) on one
/// claim's record. [`Leases`] makes them over the network; the tests, in
/// memory.
trait LeaseKv {
    /// Writes `lease` if the claim has no record: whether it did (`false`:
    /// a record exists, nothing was written).
    async fn create(&self, claim: &ClaimId, lease: &Lease) -> Result<bool, LeaseStoreError>;
    /// The claim's record, live or not, and its ETag.
    async fn read(&self, claim: &ClaimId) -> Result<Option<Stored>, LeaseStoreError>;
    /// Writes `lease` (or deletes the record, for `None`) if the claim's
    /// record is still `read` (the same write, or still none): whether it did.
    async fn replace(
        &self,
        claim: &ClaimId,
        read: Option<&Stored>,
        lease: Option<&Lease>,
    ) -> Result<bool, LeaseStoreError>;
}

/// How many times a read-modify-write is tried when its conditional write
/// finds the record changed. Only the lock holder writes a record, so a
/// change is the store losing it; a second try suffices, the third is slack.
const MAX_TRIES: usize = 3;

/// Serves `request` on `kv` with the protocol's pure decision at `now()`,
/// the claim's durable row read by `authority` in the same step (module
/// docs): a lease to create on an absent record is written on that
/// condition alone (one round trip); otherwise, or if a record exists, the
/// record is read, `lease::update` run on it, and what it returns written
/// back on condition the record is still the one read.
async fn serve(
    kv: &impl LeaseKv,
    request: &LeaseRequest,
    authority: impl Fn(&ClaimId) -> Result<Option<ClaimRow>, StoreError>,
    now: impl Fn() -> Millis,
) -> Result<LeaseReply, LeaseStoreError> {
    let claim = request.claim();
    let row = authority(claim)?;
    if let Some((reply, record)) = lease::update_if_absent(request, row.as_ref(), now())
        && kv.create(claim, &record).await?
    {
        return Ok(reply);
    }
    for _ in 0..MAX_TRIES {
        let stored = kv.read(claim).await?;
        let row = authority(claim)?;
        let existing = stored.as_ref().map(|s| &s.lease);
        let (reply, updated) = lease::update(existing, request, row.as_ref(), now());
        if updated.as_ref() == existing || kv.replace(claim, stored.as_ref(), updated.as_ref()).await? {
            return Ok(reply);
        }
    }
    Err(LeaseStoreError::Unexpected {
        status: 412,
        body: format!("the lease record of {claim} changed under its lock {MAX_TRIES} times"),
    })
}

impl LeaseKv for Leases<'_> {
    async fn create(&self, claim: &ClaimId, lease: &Lease) -> Result<bool, LeaseStoreError> {
        let answer = self.call_with(Op::Put, claim, Some(encode(lease)?), &[(IF_NONE_MATCH, "*")]).await?;
        match answer.status {
            200 => Ok(true),
            412 => Ok(false),
            status => Err(unexpected(status, &answer.body)),
        }
    }

    async fn read(&self, claim: &ClaimId) -> Result<Option<Stored>, LeaseStoreError> {
        let answer = self.call_with(Op::Get, claim, None, &[]).await?;
        match (answer.status, answer.etag) {
            (200, Some(etag)) => serde_json::from_slice(&answer.body)
                .map(|lease| Some(Stored { lease, etag }))
                .map_err(|e| LeaseStoreError::Corrupt(e.to_string())),
            (200, None) => Err(LeaseStoreError::Corrupt("a read of the lease record carries no ETag".into())),
            (404, _) => Ok(None),
            (status, _) => Err(unexpected(status, &answer.body)),
        }
    }

    async fn replace(
        &self,
        claim: &ClaimId,
        read: Option<&Stored>,
        lease: Option<&Lease>,
    ) -> Result<bool, LeaseStoreError> {
        let condition = match read {
            Some(stored) => (IF_MATCH, stored.etag.as_str()),
            None => (IF_NONE_MATCH, "*"),
        };
        let answer = match lease {
            Some(lease) => self.call_with(Op::Put, claim, Some(encode(lease)?), &[condition]).await?,
            // Deleting no record: nothing to do (`serve` never asks it).
            None if read.is_none() => return Ok(true),
            None => self.call_with(Op::Delete, claim, None, &[condition]).await?,
        };
        match answer.status {
            200 => Ok(true),
            412 => Ok(false),
            status => Err(unexpected(status, &answer.body)),
        }
    }
}

fn encode(lease: &Lease) -> Result<Vec<u8>, LeaseStoreError> {
    serde_json::to_vec(lease).map_err(|e| LeaseStoreError::Corrupt(e.to_string()))
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

    use std::cell::{Cell, RefCell};

    use protocol::claim::procedure::ready;
    use protocol::claim::{Fence, LeaseRefused, WorkerId};

    /// One claim's record in memory, with Handoff's conditions; each write
    /// gets a new ETag. `lose_before` loses the record before that call.
    #[derive(Default)]
    struct Kv {
        record: RefCell<Option<Stored>>,
        writes: Cell<u32>,
        calls: RefCell<Vec<&'static str>>,
        lose_before: Cell<Option<usize>>,
    }

    impl Kv {
        fn holding(lease: Lease) -> Kv {
            let kv = Kv::default();
            kv.put(lease);
            kv
        }

        fn put(&self, lease: Lease) {
            self.writes.set(self.writes.get() + 1);
            *self.record.borrow_mut() = Some(Stored { lease, etag: format!("\"{}\"", self.writes.get()) });
        }

        fn enter(&self, call: &'static str) {
            let mut calls = self.calls.borrow_mut();
            if self.lose_before.get() == Some(calls.len()) {
                *self.record.borrow_mut() = None;
            }
            calls.push(call);
        }

        fn etag(&self) -> Option<String> {
            self.record.borrow().as_ref().map(|s| s.etag.clone())
        }
    }

    impl LeaseKv for Kv {
        async fn create(&self, _: &ClaimId, lease: &Lease) -> Result<bool, LeaseStoreError> {
            self.enter("create");
            let absent = self.record.borrow().is_none();
            if absent {
                self.put(lease.clone());
            }
            Ok(absent)
        }

        async fn read(&self, _: &ClaimId) -> Result<Option<Stored>, LeaseStoreError> {
            self.enter("read");
            Ok(self.record.borrow().clone())
        }

        async fn replace(
            &self,
            _: &ClaimId,
            read: Option<&Stored>,
            lease: Option<&Lease>,
        ) -> Result<bool, LeaseStoreError> {
            self.enter("replace");
            if self.etag() != read.map(|s| s.etag.clone()) {
                return Ok(false);
            }
            match lease {
                Some(lease) => self.put(lease.clone()),
                None => *self.record.borrow_mut() = None,
            }
            Ok(true)
        }
    }

    const NOW: Millis = 100;

    fn c1() -> ClaimId {
        ClaimId::from("c1")
    }

    fn lease(fence: u64, worker: &str, expires_at: Millis) -> Lease {
        Lease { fence: Fence(fence), worker: WorkerId::from(worker), expires_at }
    }

    fn create(fence: u64, worker: &str) -> LeaseRequest {
        LeaseRequest::Create {
            claim: c1(),
            fence: Fence(fence),
            worker: WorkerId::from(worker),
            expires_at: 200,
            not_after: 400,
        }
    }

    /// Serves `request` on `kv`, the claim authorized for attempt 1 of w1.
    fn serve_on(kv: &Kv, request: &LeaseRequest) -> LeaseReply {
        let row = ClaimRow::authorize(c1(), Fence(1), WorkerId::from("w1"), 400);
        let served = ready(serve(kv, request, |_| Ok(Some(row.clone())), || NOW));
        match served {
            Some(Ok(reply)) => reply,
            other => panic!("not served at once: {other:?}"),
        }
    }

    fn granted(lease: Lease) -> LeaseReply {
        LeaseReply::Granted { lease }
    }

    #[test]
    fn a_lease_on_an_absent_record_is_created_in_one_call() {
        let kv = Kv::default();
        assert_eq!(serve_on(&kv, &create(1, "w1")), granted(lease(1, "w1", 200)));
        assert_eq!(*kv.calls.borrow(), ["create"]);
        assert_eq!(kv.record.borrow().as_ref().map(|s| s.lease.clone()), Some(lease(1, "w1", 200)));
    }

    #[test]
    fn a_refused_create_falls_back_to_read_update_write() {
        // An older attempt's record: replaced, on condition it is the one read.
        let kv = Kv::holding(lease(0, "w9", 500));
        assert_eq!(serve_on(&kv, &create(1, "w1")), granted(lease(1, "w1", 200)));
        assert_eq!(*kv.calls.borrow(), ["create", "read", "replace"]);
        assert_eq!(kv.record.borrow().as_ref().map(|s| s.lease.clone()), Some(lease(1, "w1", 200)));
        // The attempt's own live lease (a second activation): shared as it
        // is, not the one the blind create would have written.
        let kv = Kv::holding(lease(1, "w1", 150));
        assert_eq!(serve_on(&kv, &create(1, "w1")), granted(lease(1, "w1", 150)));
        assert_eq!(*kv.calls.borrow(), ["create", "read"]);
        // Another worker's: refused, nothing written.
        let kv = Kv::holding(lease(1, "w2", 150));
        assert_eq!(serve_on(&kv, &create(1, "w1")), LeaseReply::Refused { refused: LeaseRefused::HeldByOther });
        assert_eq!((kv.writes.get(), kv.calls.borrow().len()), (1, 2));
    }

    #[test]
    fn requests_that_write_nothing_on_an_absent_record_read_first() {
        let kv = Kv::default();
        assert_eq!(serve_on(&kv, &LeaseRequest::Holder { claim: c1() }), LeaseReply::Holder { lease: None });
        let delete = LeaseRequest::Delete { claim: c1(), fence: Fence(1), worker: WorkerId::from("w1") };
        assert_eq!(serve_on(&kv, &delete), LeaseReply::Deleted);
        assert_eq!(*kv.calls.borrow(), ["read", "read"]);
        let kv = Kv::holding(lease(1, "w1", 150));
        assert_eq!(serve_on(&kv, &delete), LeaseReply::Deleted);
        assert_eq!(*kv.calls.borrow(), ["read", "replace"]);
        assert!(kv.record.borrow().is_none());
    }

    #[test]
    fn a_record_that_changed_since_the_read_is_read_again() {
        // Lost between the read and the write: the renewal is refused on
        // what is there now (no record), not written over it.
        let kv = Kv::holding(lease(1, "w1", 150));
        kv.lose_before.set(Some(1));
        let renew = LeaseRequest::Renew { claim: c1(), fence: Fence(1), worker: WorkerId::from("w1"), expires_at: 300 };
        assert_eq!(serve_on(&kv, &renew), LeaseReply::Refused { refused: LeaseRefused::NotHeld });
        assert_eq!(*kv.calls.borrow(), ["read", "replace", "read"]);
        assert!(kv.record.borrow().is_none());
        // An older attempt's record lost after the refused create: created
        // on condition the record is still absent.
        let kv = Kv::holding(lease(0, "w9", 500));
        kv.lose_before.set(Some(1));
        assert_eq!(serve_on(&kv, &create(1, "w1")), granted(lease(1, "w1", 200)));
        assert_eq!(*kv.calls.borrow(), ["create", "read", "replace"]);
    }

    #[test]
    fn every_lease_key_is_a_valid_key_under_the_reserved_prefix() {
        for claim in ["c", "caf\u{e9} 1", &"c".repeat(MAX_ID_BYTES)] {
            let key = lease_key(&ClaimId::from(claim));
            assert!(key.starts_with(RESERVED_PREFIX), "{key}");
            assert!(names::valid_key(&key).is_ok(), "{key}");
        }
    }
}
