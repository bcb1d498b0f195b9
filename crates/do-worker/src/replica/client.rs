//! Client reads and writes at the coordinator: the requests waiting for
//! readiness and for their answers (each with a deadline), and how the
//! protocol's answers become HTTP ones. [`Unavailable`] is every 503 a
//! replica answers, in one place.

use std::time::Duration;

use futures_channel::oneshot;
use protocol::handoff::{List, ListEntry, Millis, Read, Record, Status, Tag, Value, WriteReply};
use serde::Serialize;

use super::waiters::Waiters;
use crate::conditions::{ETAG, EXPIRES_AT_HEADER, etag};
use crate::error::{Code, HttpError, HttpResult};
use crate::http;

/// How long a client request waits for a recovering coordinator before it
/// gets a 503. Recovery is two round trips to the peers (collect, then
/// announce): milliseconds when both answer, but the first request to a
/// namespace also waits for its three objects to boot, each admitted by
/// the registry (seconds on a loaded machine, where each script is its own
/// process).
pub(super) const READY_WAIT: Duration = Duration::from_secs(5);
/// Client requests waiting for readiness at once; those beyond get the
/// 503 at once (the protocol answers `recovering`).
const MAX_READY_WAITERS: usize = 1024;
/// How long a read waits for a peer to confirm the coordinator's epoch
/// before a 503 (one round trip when a peer answers).
pub(super) const CONFIRM_WAIT: Duration = Duration::from_secs(5);
/// How long a write waits for its commit (a peer's ack) before a 503. The
/// write stays pending and may still commit; a retry with the same
/// `handoff-write-id` is answered from it rather than written twice.
pub(super) const COMMIT_WAIT: Duration = Duration::from_secs(10);
/// `Retry-After` for the 503s whose wait the protocol does not suggest.
pub(super) const RETRY_AFTER_MS: u64 = 1000;

/// What a waiting client request gets.
pub(super) enum Answer {
    Write(WriteReply),
    Read(Read),
    List(List),
    /// No answer by its deadline.
    Expired,
}

/// The client requests waiting at this replica.
#[derive(Default)]
pub(super) struct Clients {
    /// Waiting for their `Output::Reply` or `Output::ReadReply`, each until
    /// its deadline.
    waiters: Waiters<oneshot::Sender<Answer>>,
    /// Waiting for the coordinator to become ready.
    ready: Vec<oneshot::Sender<()>>,
    next_req: u64,
}

impl Clients {
    /// `None` if the coordinator is `ready` (or [`MAX_READY_WAITERS`] wait
    /// already); else where to wait for it.
    pub(super) fn wait_ready(&mut self, ready: bool) -> Option<oneshot::Receiver<()>> {
        if ready {
            return None;
        }
        // Those that stopped waiting (their deadline passed) leave first.
        self.ready.retain(|tx| !tx.is_canceled());
        if self.ready.len() >= MAX_READY_WAITERS {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        self.ready.push(tx);
        Some(rx)
    }

    /// The requests waiting for readiness, to wake.
    pub(super) fn take_ready(&mut self) -> Vec<oneshot::Sender<()>> {
        std::mem::take(&mut self.ready)
    }

    /// A new request, waiting at most `wait` from `now`: its id, and where
    /// its answer arrives.
    pub(super) fn register(&mut self, wait: Duration, now: u64) -> (u64, oneshot::Receiver<Answer>) {
        self.next_req = self.next_req.wrapping_add(1);
        let (tx, rx) = oneshot::channel();
        let deadline = now.saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
        self.waiters.insert(self.next_req, deadline, tx);
        (self.next_req, rx)
    }

    /// Where request `req`'s answer goes, taken (it is answered once).
    pub(super) fn take(&mut self, req: u64) -> Option<oneshot::Sender<Answer>> {
        self.waiters.remove(req)
    }

    /// The requests whose deadline passed at `now`, taken.
    pub(super) fn expire(&mut self, now: u64) -> Vec<oneshot::Sender<Answer>> {
        self.waiters.expire(now)
    }

    /// The earliest deadline of a waiting request.
    pub(super) fn earliest(&self) -> Option<u64> {
        self.waiters.earliest()
    }

    /// Every waiting request goes unanswered (its protocol instance is
    /// gone: dropped, it answers "restarted").
    pub(super) fn drop_waiting(&mut self) {
        self.waiters.clear();
    }
}

/// The HTTP answer to a client write.
pub(super) fn write_answer(answer: Option<Answer>) -> HttpResult {
    match answer {
        Some(Answer::Write(reply)) => write_reply(reply),
        // Dropped unanswered or answered otherwise: the protocol instance
        // it waited on is gone.
        None | Some(Answer::Read(_) | Answer::List(_)) => Err(Unavailable::Restarted.into()),
        Some(Answer::Expired) => Err(Unavailable::NotAcked.into()),
    }
}

/// The HTTP answer to a client read (HandoffReads: the coordinator answers
/// once a peer confirmed that its epoch is current, from its memory at that
/// moment): the value with its `ETag` and `Handoff-Expires-At`, or 404.
pub(super) fn read_answer(key: &str, answer: Option<Answer>) -> HttpResult {
    let read = match answer {
        Some(Answer::Read(read)) => read,
        None | Some(Answer::Write(_) | Answer::List(_)) => return Err(Unavailable::Restarted.into()),
        Some(Answer::Expired) => return Err(Unavailable::NotConfirmed.into()),
    };
    match read {
        Read::Committed(Some(Record { value: Value::Bytes(bytes), stamp, wid, expires_at, .. })) => {
            let resp = http::record(bytes, stamp.ep.0, stamp.ver.0, &wid.to_string())?;
            with_tag(resp, Tag { stamp, wid }, expires_at)
        }
        // A deleted key (an expired one is deleted by its expiry) names its
        // deletion's stamp, as a value names its write's: a client (and the
        // history check) can order the 404.
        Read::Committed(Some(Record { stamp, .. })) => {
            Err(HttpError::new(Code::KeyNotFound, format!("{key} was deleted (or expired)"))
                .with_header(http::EPOCH_HEADER, &stamp.ep.0.to_string())
                .with_header(http::VERSION_HEADER, &stamp.ver.0.to_string()))
        }
        Read::Committed(None) => Err(HttpError::new(Code::KeyNotFound, format!("{key} does not exist"))),
        Read::Unavailable { status, retry_after_ms } => {
            Err(Unavailable::Recovering { status: Some(status), retry_after_ms }.into())
        }
        Read::Overloaded { retry_after_ms } => Err(Unavailable::ReadsOverloaded { retry_after_ms }.into()),
        Read::Superseded => Err(Unavailable::Superseded.into()),
    }
}

/// The HTTP answer to a listing: `{"keys":[...],"next"}`.
pub(super) fn list_answer(answer: Option<Answer>) -> HttpResult {
    let list = match answer {
        Some(Answer::List(list)) => list,
        None | Some(Answer::Write(_) | Answer::Read(_)) => return Err(Unavailable::Restarted.into()),
        Some(Answer::Expired) => return Err(Unavailable::NotConfirmed.into()),
    };
    match list {
        List::Page { entries, next } => {
            let keys: Vec<Listed> = entries.iter().map(Listed::from).collect();
            Ok(http::json(&Page { keys, next: next.as_ref().map(|k| k.as_str()) })?)
        }
        List::Unavailable { status, retry_after_ms } => {
            Err(Unavailable::Recovering { status: Some(status), retry_after_ms }.into())
        }
        List::Overloaded { retry_after_ms } => Err(Unavailable::ReadsOverloaded { retry_after_ms }.into()),
        List::Superseded => Err(Unavailable::Superseded.into()),
    }
}

/// `200` body of a listing.
#[derive(Serialize)]
struct Page<'a> {
    keys: Vec<Listed<'a>>,
    next: Option<&'a str>,
}

/// One key of a listing.
#[derive(Serialize)]
struct Listed<'a> {
    key: &'a str,
    etag: String,
    bytes: usize,
    expires_at: Option<u64>,
}

impl<'a> From<&'a ListEntry> for Listed<'a> {
    fn from(e: &'a ListEntry) -> Self {
        Listed { key: e.key.as_str(), etag: etag(e.tag), bytes: e.bytes, expires_at: e.expires_at.map(|m| m.0) }
    }
}

/// `resp` with the record's `ETag` and, if it expires, `Handoff-Expires-At`.
fn with_tag(resp: worker::Response, tag: Tag, expires_at: Option<Millis>) -> HttpResult {
    let headers = resp.headers().clone();
    headers.set(ETAG, &etag(tag))?;
    if let Some(at) = expires_at {
        headers.set(EXPIRES_AT_HEADER, &at.0.to_string())?;
    }
    Ok(resp.with_headers(headers))
}

fn write_reply(reply: WriteReply) -> HttpResult {
    match reply {
        WriteReply::Committed { key, tag, expires_at } => {
            let body = Committed {
                key: key.as_str(),
                ep: tag.stamp.ep.0,
                ver: tag.stamp.ver.0,
                wid: tag.wid.to_string(),
                etag: etag(tag),
                expires_at: expires_at.map(|m| m.0),
            };
            with_tag(http::json(&body)?, tag, expires_at)
        }
        WriteReply::PreconditionFailed { current } => {
            let message = match current {
                Some(tag) => format!("the key's current value has the ETag {}; nothing changed", etag(tag)),
                None => "the key is absent; nothing changed".to_string(),
            };
            let error = HttpError::new(Code::PreconditionFailed, message);
            Err(match current {
                Some(tag) => error.with_header(ETAG, &etag(tag)),
                None => error,
            })
        }
        WriteReply::WriteIdReused => Err(HttpError::new(
            Code::WriteIdReused,
            "this handoff-write-id names another request (other bytes, condition or time to live); nothing changed",
        )),
        WriteReply::Unavailable { status, retry_after_ms } => {
            Err(Unavailable::Recovering { status: Some(status), retry_after_ms }.into())
        }
        WriteReply::Overloaded { retry_after_ms } => Err(Unavailable::Overloaded { retry_after_ms }.into()),
        WriteReply::Superseded => Err(Unavailable::Superseded.into()),
        WriteReply::Full { held, needed, budget } => Err(HttpError::new(
            Code::NamespaceFull,
            format!(
                "the namespace holds {held} of its {budget} bytes; this write needs {needed} more; nothing changed"
            ),
        )),
    }
}

/// `200` body of a committed write.
#[derive(Serialize)]
struct Committed<'a> {
    key: &'a str,
    ep: u64,
    ver: u64,
    wid: String,
    etag: String,
    /// When the key expires (ms since the Unix epoch), if it does.
    expires_at: Option<u64>,
}

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
                (Code::Recovering, format!("the coordinator is recovering ({s}); retry"), retry_after_ms)
            }
            Unavailable::Recovering { status: None, retry_after_ms } => {
                (Code::Recovering, "the coordinator is starting; retry".into(), retry_after_ms)
            }
            Unavailable::Superseded => {
                (Code::Superseded, "this coordinator instance was superseded; retry".into(), RETRY_AFTER_MS)
            }
            Unavailable::Overloaded { retry_after_ms } => {
                (Code::Overloaded, "too many uncommitted writes; retry".into(), retry_after_ms)
            }
            Unavailable::Restarted => (
                Code::NotCommitted,
                "the coordinator restarted before the write committed; retry".into(),
                RETRY_AFTER_MS,
            ),
            Unavailable::NotAcked => (
                Code::NotCommitted,
                "no peer acknowledged the write in time; it may still commit: retry with the same handoff-write-id"
                    .into(),
                RETRY_AFTER_MS,
            ),
            Unavailable::NotConfirmed => (
                Code::NotConfirmed,
                "no peer confirmed in time that this coordinator is current; retry".into(),
                RETRY_AFTER_MS,
            ),
            Unavailable::ReadsOverloaded { retry_after_ms } => {
                (Code::Overloaded, "too many reads waiting for a confirmation; retry".into(), retry_after_ms)
            }
            Unavailable::Paused => (Code::Paused, "this replica is paused by the test hook".into(), RETRY_AFTER_MS),
        };
        HttpError::unavailable(code, message, retry_after_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_waiters_are_bounded_and_those_gone_make_room() {
        let mut clients = Clients::default();
        assert!(clients.wait_ready(true).is_none(), "a ready coordinator makes nobody wait");
        let mut waiting: Vec<_> = (0..MAX_READY_WAITERS).filter_map(|_| clients.wait_ready(false)).collect();
        assert_eq!(waiting.len(), MAX_READY_WAITERS);
        assert!(clients.wait_ready(false).is_none(), "one more is answered at once");
        waiting.pop();
        assert!(clients.wait_ready(false).is_some(), "a waiter that left makes room");
        assert_eq!(clients.take_ready().len(), MAX_READY_WAITERS);
    }
}
