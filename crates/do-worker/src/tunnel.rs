//! Internal calls over a socket: the claim object's calls to its
//! namespace's coordinator `{ns}:r0` (the lease store's reads and
//! conditional writes, `claims::leases`) travel as frames on one WebSocket
//! instead of one HTTP request each, as the replicas' batches do
//! (`crate::hop`). Locally each Worker script is its own process, and a
//! frame between two processes costs a fraction of a request between them
//! (docs/benchmarks/history.md, "A call between scripts"); on the platform it
//! saves the runtime's per-request work, as the replicas' hop does.
//!
//! A call frame is the HTTP request the caller would have sent, behind
//! the call's number on its socket: its method, URL and headers as a JSON
//! head (behind the head's 4-byte length), then its body. The answer frame
//! is the HTTP answer behind the same number: its status, its headers as a
//! JSON head, its body. The coordinator serves each call as that request
//! (the same admission, the same route: `replica::Shell::serve_call`), so
//! neither side's logic knows which way a call went; a call the socket
//! cannot carry (the socket is opening or lost, the call would not fit a
//! frame) goes over HTTP.
//!
//! The coordinator serves a socket's calls concurrently (a write waits for
//! its commit) and answers each when it is done; the opener matches an
//! answer to its call by the number (`crate::socket::Waiting::answer_to`),
//! so a slow call holds up no other, and an answer that matches no waiting
//! call (its caller gave up) is dropped. Bounds: the opener keeps at most
//! [`MAX_WAITING_FRAMES`] calls unanswered on a socket (more go over HTTP:
//! `hop::LinkState::route`), and closes a socket whose oldest call is
//! overdue; a coordinator closes a socket with more calls, or more than
//! [`MAX_CALL_BYTES_IN_FLIGHT`] bytes of them, in flight
//! ([`Callers::begin`]), and keeps at most [`MAX_CALLERS`] sockets (one
//! claim object per namespace, and a new socket when it lost its old one).

use std::collections::VecDeque;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use worker::{Env, Result};

use crate::body;
use crate::error::{Code, HttpError, HttpResult};
use crate::hop::SocketRoute;
use crate::internal;
use crate::names::ReplicaName;
use crate::socket::MAX_WAITING_FRAMES;
use crate::vocab::{KvOp, MAX_VALUE_BYTES};
use crate::wire::{Ops, ReplicaOp, Target};

/// Sockets carrying calls that a coordinator keeps.
pub const MAX_CALLERS: usize = 2;
/// Most bytes of call frames a coordinator serves at once on one socket
/// (the claim object's lease calls are under 1 KB each; a frame may be
/// 1 MB): with [`MAX_CALLERS`], at most 8 MiB of an isolate's 128 MB.
pub const MAX_CALL_BYTES_IN_FLIGHT: usize = 4 << 20;
/// A call's number on its socket, in front of the call and of its answer.
const NUMBER_BYTES: usize = 8;
/// The head's length prefix.
const HEAD_LEN_BYTES: usize = 4;
/// The answer's status.
const STATUS_BYTES: usize = 2;

/// A call's request line and headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallHead {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
}

/// `head` as JSON behind its length, then `body`, appended to `frame`.
fn put_head(frame: &mut Vec<u8>, head: &impl Serialize, body: &[u8]) -> std::result::Result<(), serde_json::Error> {
    let head = serde_json::to_vec(head)?;
    let len = u32::try_from(head.len()).unwrap_or(u32::MAX);
    frame.reserve(HEAD_LEN_BYTES + head.len() + body.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&head);
    frame.extend_from_slice(body);
    Ok(())
}

/// The head and the body of bytes made by [`put_head`]; `None` if they
/// are not.
fn split_head<T: DeserializeOwned>(bytes: &[u8]) -> Option<(T, &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<HEAD_LEN_BYTES>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
    let (head, body) = rest.split_at_checked(len)?;
    Some((serde_json::from_slice(head).ok()?, body))
}

/// The number in front of a call or answer frame, and what follows it.
pub fn split_number(frame: &[u8]) -> Option<(u64, &[u8])> {
    let (number, rest) = frame.split_first_chunk::<NUMBER_BYTES>()?;
    Some((u64::from_le_bytes(*number), rest))
}

/// The frame of a call: its `head` and `body`, behind a number to fill in
/// once the call has one ([`set_number`]).
pub fn call_frame(head: &CallHead, body: &[u8]) -> std::result::Result<Vec<u8>, serde_json::Error> {
    let mut frame = vec![0; NUMBER_BYTES];
    put_head(&mut frame, head, body)?;
    Ok(frame)
}

/// Gives a call frame its `number`.
pub fn set_number(frame: &mut [u8], number: u64) {
    if let Some(slot) = frame.first_chunk_mut::<NUMBER_BYTES>() {
        *slot = number.to_le_bytes();
    }
}

/// The call a frame carries (after its number); `None` if it carries none.
pub fn parse_call(frame: &[u8]) -> Option<(CallHead, &[u8])> {
    split_head(frame)
}

/// The answer frame to call `number`: an HTTP answer.
pub fn reply_frame(
    number: u64,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> std::result::Result<Vec<u8>, serde_json::Error> {
    let mut frame = number.to_le_bytes().to_vec();
    frame.extend_from_slice(&status.to_le_bytes());
    put_head(&mut frame, &headers, body)?;
    Ok(frame)
}

/// An HTTP answer as an answer frame carried it.
#[derive(Debug, PartialEq, Eq)]
pub struct Reply<'a> {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: &'a [u8],
}

impl Reply<'_> {
    /// The value of header `name`, if the answer had it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The answer an answer frame carries (after its number); `None` if it
/// carries none.
pub fn parse_reply(frame: &[u8]) -> Option<Reply<'_>> {
    let (status, rest) = frame.split_first_chunk::<STATUS_BYTES>()?;
    let (headers, body) = split_head(rest)?;
    Some(Reply { status: u16::from_le_bytes(*status), headers, body })
}

/// What call `head` (with a body of `body_len` bytes) asks, checked as the
/// coordinator's `fetch` checks its request (the credential aside: the
/// socket's opener presented it once): a URL naming an operation of
/// `Replica`, with its method, and only a client read or write, its value
/// within [`MAX_VALUE_BYTES`].
pub fn client_call(head: &CallHead, body_len: usize) -> HttpResult<(Target<ReplicaOp>, KvOp)> {
    let target = url::Url::parse(&head.url).ok().and_then(|url| Target::<ReplicaOp>::parse(&url));
    let target = target.ok_or_else(|| HttpError::new(Code::NotFound, format!("no call {}", head.url)))?;
    if head.method != target.op.method() {
        return Err(HttpError::method_not_allowed(&head.method, target.op.path(), target.op.method()));
    }
    let op = match target.op {
        ReplicaOp::Get => KvOp::Get,
        ReplicaOp::Put => KvOp::Put,
        ReplicaOp::Delete => KvOp::Delete,
        other => {
            let path = other.path();
            return Err(HttpError::new(Code::NotFound, format!("{path} is no call a socket carries")));
        }
    };
    if body_len > MAX_VALUE_BYTES {
        return Err(body::too_large(Code::ValueTooLarge, &body_len.to_string(), MAX_VALUE_BYTES));
    }
    Ok((target, op))
}

/// The claim object's route to the calls socket of namespace `ns`'s
/// coordinator, kept with its socket in a `hop::LinkState` (which says when
/// to open one and which calls go as frames). A call that does not go as a
/// frame is made over HTTP by the caller, on a fresh stub.
pub fn coordinator_route(env: &Env, ns: &str) -> Result<SocketRoute> {
    let binding = internal::replica_binding(ReplicaName::R0);
    let object = ReplicaName::R0.object_name(ns);
    SocketRoute::to(env, (binding, &object), Target::new(ReplicaOp::Calls, ns, Some(ReplicaName::R0)))
}

/// The sockets carrying calls that an object accepted (`S`: the socket,
/// `socket::Incoming` but in host tests), each with its calls in flight.
pub struct Callers<S> {
    sockets: VecDeque<Caller<S>>,
    next_id: u64,
    /// Calls that came on the sockets (the status line's `calls_in_frames`).
    pub calls: u64,
}

struct Caller<S> {
    id: u64,
    socket: S,
    in_flight: usize,
    /// The bytes of the call frames in flight.
    in_flight_bytes: usize,
}

impl<S> Default for Callers<S> {
    fn default() -> Self {
        Callers { sockets: VecDeque::new(), next_id: 0, calls: 0 }
    }
}

impl<S> Callers<S> {
    /// The id the next kept socket will have (its callbacks name it).
    pub fn next_id(&mut self) -> u64 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    /// Keeps socket `id`; beyond [`MAX_CALLERS`], the oldest closes.
    pub fn keep(&mut self, id: u64, socket: S) {
        self.sockets.push_back(Caller { id, socket, in_flight: 0, in_flight_bytes: 0 });
        while self.sockets.len() > MAX_CALLERS {
            self.sockets.pop_front();
        }
    }

    /// Socket `id` closed (or is to close: dropped, it closes).
    pub fn ended(&mut self, id: u64) {
        self.sockets.retain(|c| c.id != id);
    }

    /// A call of `bytes` came on socket `id`: whether to serve it. Not if
    /// the socket is gone, nor if it would have more than
    /// [`MAX_WAITING_FRAMES`] calls or [`MAX_CALL_BYTES_IN_FLIGHT`] bytes of
    /// them in flight: then its opener broke a bound, and the socket closes
    /// (its calls fail).
    pub fn begin(&mut self, id: u64, bytes: usize) -> bool {
        let Some(at) = self.sockets.iter().position(|c| c.id == id) else { return false };
        let Some(caller) = self.sockets.get_mut(at) else { return false };
        let held = caller.in_flight_bytes.saturating_add(bytes);
        if caller.in_flight >= MAX_WAITING_FRAMES || held > MAX_CALL_BYTES_IN_FLIGHT {
            self.sockets.remove(at);
            return false;
        }
        caller.in_flight += 1;
        caller.in_flight_bytes = held;
        self.calls = self.calls.saturating_add(1);
        true
    }

    /// A call of `bytes` on socket `id` is served: the socket to answer
    /// on, if it is still open.
    pub fn finish(&mut self, id: u64, bytes: usize) -> Option<&S> {
        let caller = self.sockets.iter_mut().find(|c| c.id == id)?;
        caller.in_flight = caller.in_flight.saturating_sub(1);
        caller.in_flight_bytes = caller.in_flight_bytes.saturating_sub(bytes);
        Some(&caller.socket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_and_its_answer_round_trip_through_their_frames() {
        let headers = vec![("if-none-match".to_string(), "*".to_string())];
        let call = CallHead { method: "POST".into(), url: "https://x/put?key=k".into(), headers };
        let mut frame = call_frame(&call, b"{\"a\":1}").expect("frame");
        set_number(&mut frame, 7);
        let (number, rest) = split_number(&frame).expect("a number");
        let (head, body) = parse_call(rest).expect("a call");
        assert_eq!((number, head.method.as_str(), head.url.as_str()), (7, "POST", "https://x/put?key=k"));
        assert_eq!(head.headers, [("if-none-match".to_string(), "*".to_string())]);
        assert_eq!(body, b"{\"a\":1}");
        let frame = reply_frame(7, 412, &[("ETag".into(), "\"1.2\"".into())], b"no").expect("frame");
        let (number, rest) = split_number(&frame).expect("a number");
        let reply = parse_reply(rest).expect("a reply");
        assert_eq!((number, reply.status, reply.header("etag"), reply.body), (7, 412, Some("\"1.2\""), &b"no"[..]));
        assert_eq!(reply.header("retry-after"), None);
    }

    #[test]
    fn a_frame_that_is_no_call_is_refused() {
        assert_eq!(split_number(&[1, 2, 3]), None);
        assert_eq!(parse_call(b""), None);
        assert_eq!(parse_call(&[9, 0, 0, 0, b'{']), None, "the head is shorter than its length");
        assert_eq!(parse_call(&[1, 0, 0, 0, b'{']), None, "the head is no JSON call");
        assert_eq!(parse_reply(&[200]), None, "no status");
        assert_eq!(parse_reply(&[200, 0, 255, 255, 255, 255]), None, "no head");
    }

    #[test]
    fn a_socket_carries_client_reads_and_writes_only() {
        let call = |op: ReplicaOp, method: &str| {
            let url = Target::new(op, "ns", Some(ReplicaName::R0)).with_key("k").url().expect("url");
            CallHead { method: method.into(), url, headers: Vec::new() }
        };
        for (op, kv) in [(ReplicaOp::Get, KvOp::Get), (ReplicaOp::Put, KvOp::Put), (ReplicaOp::Delete, KvOp::Delete)] {
            let (target, got) = client_call(&call(op, op.method()), 0).expect("a client call");
            assert_eq!((target.op, target.key.as_deref(), got), (op, Some("k"), kv));
        }
        let code = |head: &CallHead, len: usize| client_call(head, len).err().and_then(|e| e.code());
        for op in
            [ReplicaOp::Stop, ReplicaOp::Evict, ReplicaOp::Msg, ReplicaOp::Link, ReplicaOp::Calls, ReplicaOp::List]
        {
            assert_eq!(code(&call(op, op.method()), 0), Some(Code::NotFound), "{op:?}");
        }
        assert_eq!(code(&call(ReplicaOp::Put, "GET"), 0), Some(Code::MethodNotAllowed));
        assert_eq!(code(&call(ReplicaOp::Put, "POST"), MAX_VALUE_BYTES + 1), Some(Code::ValueTooLarge));
        assert!(client_call(&call(ReplicaOp::Put, "POST"), MAX_VALUE_BYTES).is_ok());
        let foreign = CallHead { method: "GET".into(), url: "https://elsewhere/get?key=k".into(), headers: Vec::new() };
        assert_eq!(code(&foreign, 0), Some(Code::NotFound));
    }

    #[test]
    fn a_caller_over_its_bound_loses_its_socket_and_old_sockets_close() {
        let mut callers = Callers::<u32>::default();
        let id = callers.next_id();
        callers.keep(id, 1);
        for _ in 0..MAX_WAITING_FRAMES {
            assert!(callers.begin(id, 10));
        }
        assert_eq!(callers.finish(id, 10), Some(&1), "one answered");
        assert!(callers.begin(id, 10), "its place is free again");
        assert!(!callers.begin(id, 10), "one call too many");
        assert!(!callers.begin(id, 10), "the socket is gone");
        assert_eq!(callers.finish(id, 10), None);
        // Bytes: a socket with too many in flight closes too.
        let big = callers.next_id();
        callers.keep(big, 7);
        assert!(callers.begin(big, MAX_CALL_BYTES_IN_FLIGHT - 1));
        assert_eq!(callers.finish(big, MAX_CALL_BYTES_IN_FLIGHT - 1), Some(&7), "answered: its bytes are free");
        assert!(callers.begin(big, MAX_CALL_BYTES_IN_FLIGHT - 1));
        assert!(!callers.begin(big, 2), "one byte over");
        assert!(!callers.begin(big, 1), "the socket is gone");
        assert_eq!(callers.calls, MAX_WAITING_FRAMES as u64 + 3);
        let ids: Vec<u64> = (0..=MAX_CALLERS).map(|_| callers.next_id()).collect();
        for (n, id) in ids.iter().enumerate() {
            callers.keep(*id, n as u32);
        }
        assert!(!callers.begin(ids[0], 1), "the oldest closed");
        assert!(callers.begin(ids[MAX_CALLERS], 1));
        callers.ended(ids[MAX_CALLERS]);
        assert!(!callers.begin(ids[MAX_CALLERS], 1));
    }
}
