//! Client reads and writes at the coordinator: wait (bounded) for it to be
//! ready, step the protocol, wait (bounded) for the commit, and turn the
//! protocol's answers into HTTP ones. [`Unavailable`] is every 503 a
//! replica answers, in one place.

use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_channel::oneshot;
use futures_util::future;
use protocol::handoff::{ClientRequestId, Input, Key, Read, Status, Value, WriteId, WriteReply};
use serde::Serialize;
use worker::{Delay, Request};

use super::Host;
use crate::error::{HttpError, HttpResult};
use crate::http::{self, WRITE_ID_HEADER};
use crate::internal;
use crate::names::{self, ReplicaName};
use crate::route::KvOp;
use crate::wire::{ReplicaOp, Target};

/// How long a client request waits for a recovering coordinator before it
/// gets a 503. Recovery is two round trips to the peers (collect, then
/// announce): milliseconds when both answer.
const READY_WAIT: Duration = Duration::from_secs(2);
/// How long a read waits for a peer to confirm the coordinator's epoch
/// before a 503 (one round trip when a peer answers).
const CONFIRM_WAIT: Duration = Duration::from_secs(5);
/// How long a write waits for its commit (a peer's ack) before a 503. The
/// write stays pending and may still commit; a retry with the same
/// `handoff-write-id` is answered from it rather than written twice.
const COMMIT_WAIT: Duration = Duration::from_secs(10);
/// `Retry-After` for the 503s whose wait the protocol does not suggest.
const RETRY_AFTER_MS: u64 = 1000;

/// Why a replica cannot serve a request now: each becomes a 503 with
/// `Retry-After`.
pub(super) enum Unavailable {
    /// No protocol replica yet (`None`), or the coordinator recovering.
    Recovering { status: Option<Status>, retry_after_ms: u64 },
    /// A coordinator instance that learned it was superseded.
    Superseded,
    /// Too many uncommitted writes.
    Overloaded { retry_after_ms: u64 },
    /// The write's waiter died with the protocol instance (it rebooted).
    Restarted,
    /// No peer acked the write within [`COMMIT_WAIT`].
    NotAcked,
    /// No peer confirmed the coordinator's epoch within [`CONFIRM_WAIT`].
    NotConfirmed,
    /// Too many reads waiting for a confirmation.
    ReadsOverloaded { retry_after_ms: u64 },
    /// The pause test hook is on.
    Paused,
}

impl From<Unavailable> for HttpError {
    fn from(why: Unavailable) -> Self {
        let (code, message, retry_after_ms) = match why {
            Unavailable::Recovering { status: Some(s), retry_after_ms } => {
                ("recovering", format!("the coordinator is recovering ({s}); retry"), retry_after_ms)
            }
            Unavailable::Recovering { status: None, retry_after_ms } => {
                ("recovering", "the coordinator is starting; retry".into(), retry_after_ms)
            }
            Unavailable::Superseded => {
                ("superseded", "this coordinator instance was superseded; retry".into(), RETRY_AFTER_MS)
            }
            Unavailable::Overloaded { retry_after_ms } => {
                ("overloaded", "too many uncommitted writes; retry".into(), retry_after_ms)
            }
            Unavailable::Restarted => {
                ("not_committed", "the coordinator restarted before the write committed; retry".into(), RETRY_AFTER_MS)
            }
            Unavailable::NotAcked => (
                "not_committed",
                "no peer acknowledged the write in time; it may still commit: retry with the same handoff-write-id"
                    .into(),
                RETRY_AFTER_MS,
            ),
            Unavailable::NotConfirmed => (
                "not_confirmed",
                "no peer confirmed in time that this coordinator is current; retry".into(),
                RETRY_AFTER_MS,
            ),
            Unavailable::ReadsOverloaded { retry_after_ms } => {
                ("overloaded", "too many reads waiting for a confirmation; retry".into(), retry_after_ms)
            }
            Unavailable::Paused => ("paused", "this replica is paused by the test hook".into(), RETRY_AFTER_MS),
        };
        HttpError::unavailable(code, message, retry_after_ms)
    }
}

impl Host {
    /// `POST /put`, `POST /delete`, `GET /get`: a client request, which
    /// only the coordinator `{ns}:r0` serves.
    pub(super) async fn serve_client(
        self: &Rc<Self>,
        op: KvOp,
        (ns, me): (String, ReplicaName),
        mut req: Request,
        target: &Target<ReplicaOp>,
    ) -> HttpResult {
        if me != ReplicaName::R0 {
            let message = format!("client requests go to {ns}:r0, not {ns}:{me}");
            return Err(HttpError::new(400, "not_coordinator", message));
        }
        let key = target.key.as_deref().ok_or_else(|| HttpError::new(400, "bad_request", "missing key"))?;
        let key = names::valid_key(key).map_err(|e| HttpError::new(400, "invalid_key", format!("the key {e}")))?;
        let wid = || match req.headers().get(WRITE_ID_HEADER).ok().flatten() {
            Some(h) => WriteId::parse(h.trim())
                .ok_or_else(|| HttpError::new(400, "invalid_write_id", "handoff-write-id must be 32 hex digits")),
            None => Ok(WriteId(internal::random_u128())),
        };
        match op {
            KvOp::Get => self.client_read(&key).await,
            KvOp::Delete => self.client_write(key, None, wid()?).await,
            KvOp::Put => {
                let wid = wid()?;
                self.client_write(key, Some(req.bytes().await?), wid).await
            }
        }
    }

    /// Completes the client request `req` waiting for `reply`.
    pub(super) fn reply(&self, req: ClientRequestId, reply: Answer) {
        let waiter = self.waiters.try_borrow_mut().ok().and_then(|mut w| w.remove(req.0));
        if let Some(tx) = waiter {
            let _ = tx.send(reply);
        }
    }

    /// Waits (bounded) for the coordinator to finish recovering.
    async fn wait_ready(self: &Rc<Self>, max: Duration) -> bool {
        if self.is_ready() {
            return true;
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.ready_waiters.try_borrow_mut() {
            w.push(tx);
        }
        let delay = pin!(Delay::from(max));
        let _ = future::select(rx, delay).await;
        self.is_ready()
    }

    fn is_ready(&self) -> bool {
        self.phase() == Some(Status::Ready)
    }

    /// The 503 for a coordinator that cannot serve.
    fn not_ready(&self) -> HttpError {
        match self.phase() {
            Some(Status::Fenced) => Unavailable::Superseded,
            status => Unavailable::Recovering { status, retry_after_ms: RETRY_AFTER_MS },
        }
        .into()
    }

    async fn client_write(self: &Rc<Self>, key: Key, value: Option<Vec<u8>>, wid: WriteId) -> HttpResult {
        let input = |req| match value {
            Some(value) => Input::Put { req, key, value, wid },
            None => Input::Delete { req, key, wid },
        };
        match self.ask(input, COMMIT_WAIT).await? {
            Answer::Write(reply) => write_reply(reply),
            Answer::Read(_) => Err(Unavailable::Restarted.into()),
            Answer::Expired => Err(Unavailable::NotAcked.into()),
        }
    }

    /// HandoffReads: the coordinator answers once a peer confirmed that its
    /// epoch is current, from its memory at that moment.
    async fn client_read(self: &Rc<Self>, key: &Key) -> HttpResult {
        let input = |req| Input::Read { req, key: key.clone() };
        let read = match self.ask(input, CONFIRM_WAIT).await? {
            Answer::Read(read) => read,
            Answer::Write(_) => return Err(Unavailable::Restarted.into()),
            Answer::Expired => return Err(Unavailable::NotConfirmed.into()),
        };
        match read {
            Read::Committed(Some(rec)) => match rec.value {
                Value::Bytes(bytes) => Ok(http::record(bytes, rec.stamp.ep.0, rec.stamp.ver.0, &rec.wid.to_string())?),
                Value::Tombstone => Err(HttpError::new(404, "key_not_found", format!("{key} was deleted"))),
            },
            Read::Committed(None) => Err(HttpError::new(404, "key_not_found", format!("{key} does not exist"))),
            Read::Unavailable { status, retry_after_ms } => {
                Err(Unavailable::Recovering { status: Some(status), retry_after_ms }.into())
            }
            Read::Overloaded { retry_after_ms } => Err(Unavailable::ReadsOverloaded { retry_after_ms }.into()),
            Read::Superseded => Err(Unavailable::Superseded.into()),
        }
    }

    /// Waits (bounded) for the coordinator to be ready, steps the client
    /// request `input(req)`, and waits at most `wait` for its answer
    /// ([`Answer::Expired`] when it did not come in time: the replica's
    /// wake-up expires it, see `waiters.rs`).
    async fn ask(
        self: &Rc<Self>,
        input: impl FnOnce(ClientRequestId) -> Input,
        wait: Duration,
    ) -> Result<Answer, HttpError> {
        self.ensure_booted()?;
        if !self.wait_ready(READY_WAIT).await {
            return Err(self.not_ready());
        }
        let req = self.next_req.get().wrapping_add(1);
        self.next_req.set(req);
        let (tx, rx) = oneshot::channel();
        let deadline = internal::now_ms().saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
        if let Ok(mut w) = self.waiters.try_borrow_mut() {
            w.insert(req, deadline, tx);
        }
        match self.step(input(ClientRequestId(req))) {
            Ok(outputs) => {
                // Also plans the wake-up for the deadline.
                self.perform(outputs, None);
            }
            Err(e) => {
                self.waiters.try_borrow_mut().map(|mut w| w.remove(req)).ok();
                return Err(e.into());
            }
        }
        // Dropped unanswered: the protocol instance it waited on is gone.
        rx.await.map_err(|_| Unavailable::Restarted.into())
    }

    /// Answers the client requests whose deadline passed.
    pub(super) fn expire_waiters(&self) {
        let due = self.waiters.try_borrow_mut().map(|mut w| w.expire(internal::now_ms())).unwrap_or_default();
        for tx in due {
            let _ = tx.send(Answer::Expired);
        }
    }
}

/// What a waiting client request gets.
pub(super) enum Answer {
    Write(WriteReply),
    Read(Read),
    /// No answer by its deadline.
    Expired,
}

fn write_reply(reply: WriteReply) -> HttpResult {
    match reply {
        WriteReply::Committed { key, stamp, wid } => {
            Ok(http::json(&Committed { key: key.as_str(), ep: stamp.ep.0, ver: stamp.ver.0, wid: wid.to_string() })?)
        }
        WriteReply::Unavailable { status, retry_after_ms } => {
            Err(Unavailable::Recovering { status: Some(status), retry_after_ms }.into())
        }
        WriteReply::Overloaded { retry_after_ms } => Err(Unavailable::Overloaded { retry_after_ms }.into()),
        WriteReply::Superseded => Err(Unavailable::Superseded.into()),
        WriteReply::Full { held, needed, budget } => Err(HttpError::new(
            507,
            "namespace_full",
            format!(
                "the namespace holds {held} of its {budget} bytes; this write needs {needed} more; nothing changed"
            ),
        )),
    }
}

/// `200` body of a committed write.
#[derive(Serialize)]
pub(crate) struct Committed<'a> {
    pub key: &'a str,
    pub ep: u64,
    pub ver: u64,
    pub wid: String,
}
