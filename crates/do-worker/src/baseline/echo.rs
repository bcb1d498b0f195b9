//! The floor of one hop (`/_bench/echo/{ns}/kv/{key}`, PUT only, test
//! hooks only). A client PUT reaches the object `{ns}:front` through the
//! same Worker path as a replicated PUT reaches its coordinator; that
//! object sends one message through a cached link to the object
//! `{ns}:back`, which answers at once, and then acknowledges the client.
//! The link is a replica's (`crate::hop`: a WebSocket, HTTP for a message
//! bigger than a frame), so the floor is the hop the store pays.
//! That is the replicated PUT's path (Worker → coordinator → peer →
//! coordinator → Worker) without the protocol: no state machine, no second
//! peer, no timers, no memory, nothing decoded.
//!
//! The message has the size of the one the coordinator sends a peer for
//! that PUT: a batch of one encoded `Push` of the key and value, with a
//! stamp, write id, instance and generation of the same encoded widths
//! ([`replica_put`]), behind 4 bytes that tell the answering object the
//! answer's length: that of the peer's `PushAckBy` batch.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use protocol::handoff::{
    Batch, Body, DecodeError, Epoch, Generation, Instance, Key, Message, Record, ReplicaId, Stamp, Value, Version,
    WriteId,
};
use worker::wasm_bindgen_futures::spawn_local;
use worker::{DurableObject, Env, Headers, Request, Response, Result, State, durable_object};

use super::request::{ack, key_and_wid, value};
use crate::auth::KeyProblem;
use crate::body;
use crate::error::{Code, HttpError, HttpResult};
use crate::hop::{Link, LinkState, Via};
use crate::http::BINARY;
use crate::internal::{self, ECHO_BINDING, now_ms, random_u64, random_u128};
use crate::socket::{Accepted, Incoming, MAX_FRAME_BYTES, parse_answer};
use crate::wire::EchoOp;

/// Most bytes the answering object sends back (an acknowledgement of a
/// push is about 70).
const MAX_REPLY_BYTES: usize = 4096;
/// Sockets the answering object keeps (one front, and a new one if the
/// front lost its old one).
const MAX_INCOMING: usize = 2;
/// The exchange's bound, as a replica's delivery's.
const ECHO_TIMEOUT: Duration = Duration::from_secs(5);

/// The object the Worker calls for namespace `ns`.
pub(crate) fn front(ns: &str) -> String {
    format!("{ns}:front")
}

/// The object that answers it.
fn back(ns: &str) -> String {
    format!("{ns}:back")
}

/// One echo object: `{ns}:front` or `{ns}:back`, by what it is asked.
#[durable_object]
pub struct EchoBaseline {
    shell: Rc<Echo>,
}

/// The echo's shell: what never changes, and its one state.
struct Echo {
    env: Env,
    secret: std::result::Result<String, KeyProblem>,
    /// Stand-ins for a coordinator's instance and namespace generation:
    /// drawn the same way, so they encode to the same widths.
    instance: Instance,
    generation: Generation,
    state: RefCell<EchoState>,
}

/// The echo's state.
#[derive(Default)]
struct EchoState {
    /// Counts writes, as the coordinator's version counter does.
    ver: u64,
    /// The link to the answering object, made on first use and kept until
    /// a hop through it fails (as a replica keeps its peers').
    link: Option<LinkState>,
    /// The answering object: the front's socket.
    incoming: Accepted,
}

impl DurableObject for EchoBaseline {
    fn new(_state: State, env: Env) -> Self {
        let now = now_ms();
        let echo = Echo {
            secret: internal::internal_key(&env),
            env,
            instance: Instance { born: now, nonce: random_u64() },
            generation: Generation { minted_at: now, nonce: random_u64() },
            state: RefCell::new(EchoState::default()),
        };
        Self { shell: Rc::new(echo) }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        self.shell.clone().serve(req).await.or_else(HttpError::respond)
    }

    async fn alarm(&self) -> Result<Response> {
        Response::ok("no alarms")
    }
}

impl Echo {
    /// An entry point: the state is borrowed once (a failure is a bug,
    /// reported).
    fn enter<R>(&self, f: impl FnOnce(&mut EchoState) -> R) -> HttpResult<R> {
        let mut state =
            self.state.try_borrow_mut().map_err(|_| HttpError::internal("bug: echo state borrowed twice"))?;
        Ok(f(&mut state))
    }

    async fn serve(self: Rc<Self>, req: Request) -> HttpResult {
        let target = internal::admit::<EchoOp>(&self.secret, &req)?;
        match target.op {
            EchoOp::Put => {
                let (key, wid) = key_and_wid(target.key, &req)?;
                let value = value(&req).await?;
                let ver = self.enter(|state| {
                    state.ver = state.ver.saturating_add(1);
                    state.ver
                })?;
                let write_id = WriteId::parse(&wid).unwrap_or_else(|| WriteId(random_u128()));
                let put = ReplicaPut {
                    instance: self.instance,
                    generation: self.generation,
                    stamp: Stamp { ep: Epoch(1), ver: Version(ver) },
                    wid: write_id,
                };
                let message = replica_put(&put, key.clone(), value).map_err(|e| HttpError::internal(e.to_string()))?;
                self.send(&target.ns, message).await?;
                ack(key.as_str(), ver, wid)
            }
            EchoOp::Msg => {
                // Read like a replica reads a batch; nothing is decoded.
                let message = body::read(&req, MAX_FRAME_BYTES, Code::BodyTooLarge).await?;
                let headers = Headers::new();
                headers.set("content-type", BINARY)?;
                Ok(Response::from_bytes(answer(&message))?.with_headers(headers))
            }
            EchoOp::Link => {
                let id = self.enter(|state| state.incoming.next_id())?;
                let ends = Rc::downgrade(&self);
                let on_end = move || {
                    if let Some(echo) = ends.upgrade() {
                        let _ = echo.enter(|state| state.incoming.ended(id));
                    }
                };
                let (response, socket) = Incoming::accept(|frame| (200, answer(frame)), on_end)?;
                self.enter(|state| state.incoming.keep(id, socket, MAX_INCOMING))?;
                Ok(response)
            }
        }
    }

    /// One hop to `{ns}:back` carrying `message`, its answer read whole:
    /// routed as a replica routes a delivery (`crate::hop`).
    async fn send(self: &Rc<Self>, ns: &str, message: Vec<u8>) -> HttpResult<()> {
        let key = self.secret.as_ref().map_err(internal::key_missing)?;
        let now = now_ms();
        let (via, open) = self.enter(|state| match state.link.as_mut() {
            Some(link) => link.route(message.len(), now),
            None => (Via::NewLink, None),
        })?;
        if let (Some(id), Via::Http(link)) = (open, &via) {
            self.open_socket(id, link.clone());
        }
        let answer = match via {
            Via::Frame { socket, answer, id, .. } => {
                socket.send(&message).map_err(|e| {
                    let _ = self.enter(|state| state.link.as_mut().map(|link| link.ended(id)));
                    HttpError::from(e)
                })?;
                drop(socket);
                let frame = answer.await.map_err(|_| HttpError::internal("the echo's socket closed"))?;
                parse_answer(&frame)
                    .map(|(status, body)| (status, body.to_vec()))
                    .ok_or_else(|| HttpError::internal("a short answer frame"))
            }
            Via::Http(link) => Ok(link.post(key, &message, ECHO_TIMEOUT).await?),
            Via::NewLink => {
                let object = back(ns);
                let link =
                    Rc::new(Link::to(&self.env, (ECHO_BINDING, &object), (ns, None), EchoOp::Msg, EchoOp::Link)?);
                let answer = link.post(key, &message, ECHO_TIMEOUT).await?;
                self.enter(|state| state.link.get_or_insert_with(|| LinkState::new(link)).lost())?;
                Ok(answer)
            }
        };
        let (status, answer) = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.enter(|state| state.link = None)?;
                return Err(e);
            }
        };
        if status != 200 {
            let text = String::from_utf8_lossy(&answer);
            return Err(HttpError::internal(format!("the echo answered {status}: {text}")));
        }
        self.enter(|state| {
            if state.link.as_ref().is_some_and(LinkState::lost) {
                state.link = None;
            }
        })?;
        Ok(())
    }

    /// Opens socket `id` of `link`; its answers and end are entry points.
    fn open_socket(self: &Rc<Self>, id: u64, link: Rc<Link>) {
        let echo = self.clone();
        spawn_local(async move {
            let Ok(key) = echo.secret.as_ref() else { return };
            let answers = Rc::downgrade(&echo);
            let on_answer = move |frame| {
                if let Some(echo) = answers.upgrade() {
                    let _ = echo.enter(|state| state.link.as_mut().map(|link| link.answered(id, frame)));
                }
            };
            let ends = Rc::downgrade(&echo);
            let on_end = move || {
                if let Some(echo) = ends.upgrade() {
                    let _ = echo.enter(|state| state.link.as_mut().map(|link| link.ended(id)));
                }
            };
            let opened = link.open(key, ECHO_TIMEOUT, on_answer, on_end).await;
            let _ = echo.enter(|state| {
                if let Some(link) = state.link.as_mut() {
                    link.opened(id, opened, now_ms());
                }
                if state.link.as_ref().is_some_and(LinkState::lost) {
                    state.link = None;
                }
            });
        });
    }
}

/// The answering object's answer to `message`: as many zero bytes as its
/// first 4 ask for (little-endian), at most [`MAX_REPLY_BYTES`].
fn answer(message: &[u8]) -> Vec<u8> {
    let asked = message.first_chunk::<4>().map_or(0, |len| u32::from_le_bytes(*len));
    vec![0; usize::try_from(asked).unwrap_or(0).min(MAX_REPLY_BYTES)]
}

/// What a coordinator's push carries besides the key and value.
struct ReplicaPut {
    instance: Instance,
    generation: Generation,
    stamp: Stamp,
    wid: WriteId,
}

/// The body a coordinator sends a peer for one write of `value` to `key`
/// (a batch of one `Push`, encoded as the replica transport encodes it),
/// behind the length of the peer's answer (a batch of one `PushAckBy`) as
/// 4 bytes, little-endian.
fn replica_put(put: &ReplicaPut, key: Key, value: Vec<u8>) -> std::result::Result<Vec<u8>, DecodeError> {
    let (coordinator, peer) = (ReplicaId(0), ReplicaId(1));
    // The acking peer's instance has the widths of the coordinator's (a
    // boot time and a random nonce): only the answer's length matters.
    let ack = Body::PushAckBy {
        instance: put.instance,
        peer: put.instance,
        key: key.clone(),
        stamp: put.stamp,
        wid: put.wid,
    };
    let ack = Message::new(Some(put.generation), peer, coordinator, ack).encode()?;
    // As the coordinator fills it: the write's fingerprint, no expiry.
    let value = Value::Bytes(value);
    let fp = Some(protocol::handoff::cond::fingerprint(&value, None, None));
    let record = Record { stamp: put.stamp, wid: put.wid, value, expires_at: None, fp };
    let push =
        Message::new(Some(put.generation), coordinator, peer, Body::Push { instance: put.instance, key, record });
    let answer_len = u32::try_from(Batch::encode(&[ack])?.len()).unwrap_or(0);
    let mut message = answer_len.to_le_bytes().to_vec();
    message.extend(Batch::encode(&[push.encode()?])?);
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes docs/BENCHMARKS.md quotes: a replica message for a PUT of
    /// the benchmark's key with a 128-byte and a 1 KiB value, with the
    /// widths a running namespace has (times in ms since 1970, random
    /// nonces and write id, epoch 1, a version in the thousands). The ack
    /// is 15 bytes longer than before protocol version 5: it names the
    /// acking instance.
    #[test]
    fn a_replica_put_message_is_the_value_and_83_bytes_its_ack_83() {
        let now = 1_764_800_000_000;
        let put = ReplicaPut {
            instance: Instance { born: now, nonce: u64::MAX / 3 },
            generation: Generation { minted_at: now, nonce: u64::MAX / 5 },
            stamp: Stamp { ep: Epoch(1), ver: Version(5_000) },
            wid: WriteId(u128::MAX / 7),
        };
        let mut sizes = Vec::new();
        for len in [128, 1024] {
            let message = replica_put(&put, Key::new("key-00042").unwrap(), vec![b'a'; len]).unwrap();
            let (ack, message) = message.split_at(4);
            let decoded = Batch::decode(message).unwrap();
            assert_eq!(decoded.len(), 1, "one message in the batch");
            let push = Message::decode(decoded[0]).unwrap();
            assert!(matches!(push.body, Body::Push { .. }), "a push: {push:?}");
            sizes.push((message.len(), answer(&[ack, message].concat()).len()));
        }
        assert_eq!(sizes, [(211, 83), (1107, 83)]);
    }
}
