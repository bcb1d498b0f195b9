//! The floor of one hop (`/_bench/echo/{ns}/kv/{key}`, PUT only, test
//! hooks only). A client PUT reaches the object `{ns}:front` through the
//! same Worker path as a replicated PUT reaches its coordinator; that
//! object sends one message through a cached stub to the object
//! `{ns}:back`, which answers at once, and then acknowledges the client.
//! That is the replicated PUT's path (Worker → coordinator → peer →
//! coordinator → Worker) without the protocol: no state machine, no second
//! peer, no timers, no memory, nothing decoded.
//!
//! The message has the size of the one the coordinator sends a peer for
//! that PUT: a batch of one encoded `Push` of the key and value, with a
//! stamp, write id, instance and generation of the same encoded widths
//! ([`replica_put`]); the answer has the size of the peer's `PushAck`
//! batch.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use protocol::handoff::{
    Batch, Body, DecodeError, Epoch, Generation, Instance, Key, Message, Record, ReplicaId, Stamp, Value, Version,
    WriteId,
};
use worker::{DurableObject, Env, Headers, Request, Response, Result, State, durable_object};

use super::{ack, key_and_wid, value};
use crate::auth::KeyProblem;
use crate::error::{HttpError, HttpResult};
use crate::http::BINARY;
use crate::internal::{self, ECHO_BINDING, RawStub, now_ms, random_u64, random_u128};
use crate::wire::{EchoOp, Target};

/// Tells the answering object how many bytes to answer with.
const REPLY_BYTES_HEADER: &str = "handoff-echo-reply-bytes";
/// Most bytes the answering object sends back (an acknowledgement of a
/// push is about 70).
const MAX_REPLY_BYTES: usize = 4096;
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
    env: Env,
    secret: std::result::Result<String, KeyProblem>,
    /// Stand-ins for a coordinator's instance and namespace generation:
    /// drawn the same way, so they encode to the same widths.
    instance: Instance,
    generation: Generation,
    /// Counts writes, as the coordinator's version counter does.
    ver: Cell<u64>,
    /// The answering object's stub and message URL, made on first use and
    /// kept until a call through it fails (as a replica keeps its peers').
    link: RefCell<Option<(Rc<RawStub>, Rc<str>)>>,
}

impl DurableObject for EchoBaseline {
    fn new(_state: State, env: Env) -> Self {
        let now = now_ms();
        Self {
            secret: internal::internal_key(&env),
            env,
            instance: Instance { born: now, nonce: random_u64() },
            generation: Generation { minted_at: now, nonce: random_u64() },
            ver: Cell::new(0),
            link: RefCell::new(None),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        self.serve(req).await.or_else(HttpError::respond)
    }

    async fn alarm(&self) -> Result<Response> {
        Response::ok("no alarms")
    }
}

impl EchoBaseline {
    async fn serve(&self, mut req: Request) -> HttpResult {
        let target = internal::admit::<EchoOp>(&self.secret, &req)?;
        match target.op {
            EchoOp::Put => {
                let (key, wid) = key_and_wid(target.key, &req)?;
                let value = value(&mut req).await?;
                let ver = self.ver.get().saturating_add(1);
                self.ver.set(ver);
                let write_id = WriteId::parse(&wid).unwrap_or_else(|| WriteId(random_u128()));
                let put = ReplicaPut {
                    instance: self.instance,
                    generation: self.generation,
                    stamp: Stamp { ep: Epoch(1), ver: Version(ver) },
                    wid: write_id,
                };
                let (message, reply_bytes) =
                    replica_put(&put, key.clone(), value).map_err(|e| HttpError::internal(e.to_string()))?;
                self.send(&target.ns, &message, reply_bytes).await?;
                ack(key.as_str(), ver, wid)
            }
            EchoOp::Msg => {
                // Read like a replica reads a batch; nothing is decoded.
                let _message = req.bytes().await?;
                let asked = req.headers().get(REPLY_BYTES_HEADER).ok().flatten();
                let len = asked.and_then(|n| n.parse::<usize>().ok()).unwrap_or(0).min(MAX_REPLY_BYTES);
                let headers = Headers::new();
                headers.set("content-type", BINARY)?;
                Ok(Response::from_bytes(vec![0; len])?.with_headers(headers))
            }
        }
    }

    /// One request to `{ns}:back` carrying `message`, its answer read whole.
    async fn send(&self, ns: &str, message: &[u8], reply_bytes: usize) -> HttpResult<()> {
        let key = self.secret.as_ref().map_err(internal::key_missing)?;
        let (stub, url) = self.link(ns)?;
        let reply_bytes = reply_bytes.to_string();
        let headers = [("content-type", BINARY), (REPLY_BYTES_HEADER, reply_bytes.as_str())];
        let (status, answer) = match internal::exchange(&stub, &url, key, message, &headers, ECHO_TIMEOUT).await {
            Ok(answer) => answer,
            Err(e) => {
                if let Ok(mut link) = self.link.try_borrow_mut() {
                    *link = None;
                }
                return Err(e.into());
            }
        };
        if status != 200 {
            let text = String::from_utf8_lossy(&answer);
            return Err(HttpError::internal(format!("the echo answered {status}: {text}")));
        }
        Ok(())
    }

    fn link(&self, ns: &str) -> HttpResult<(Rc<RawStub>, Rc<str>)> {
        if let Some(Some((stub, url))) = self.link.try_borrow().ok().as_deref() {
            return Ok((stub.clone(), url.clone()));
        }
        let stub = Rc::new(internal::raw_stub(&self.env, ECHO_BINDING, &back(ns))?);
        let url: Rc<str> = Target::new(EchoOp::Msg, ns, None)
            .url()
            .map_err(|e| HttpError::internal(format!("internal url: {e}")))?
            .into();
        if let Ok(mut link) = self.link.try_borrow_mut() {
            *link = Some((stub.clone(), url.clone()));
        }
        Ok((stub, url))
    }
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
/// and the length of the peer's answer (a batch of one `PushAck`).
fn replica_put(put: &ReplicaPut, key: Key, value: Vec<u8>) -> std::result::Result<(Vec<u8>, usize), DecodeError> {
    let (coordinator, peer) = (ReplicaId(0), ReplicaId(1));
    let ack = Body::PushAck { instance: put.instance, key: key.clone(), stamp: put.stamp, wid: put.wid };
    let ack = Message::new(Some(put.generation), peer, coordinator, ack).encode()?;
    let record = Record { stamp: put.stamp, wid: put.wid, value: Value::Bytes(value) };
    let push =
        Message::new(Some(put.generation), coordinator, peer, Body::Push { instance: put.instance, key, record });
    Ok((Batch::encode(&[push.encode()?])?, Batch::encode(&[ack])?.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes docs/BENCHMARKS.md quotes: a replica message for a PUT of
    /// the benchmark's key with a 128-byte and a 1 KiB value, with the
    /// widths a running namespace has (times in ms since 1970, random
    /// nonces and write id, epoch 1, a version in the thousands).
    #[test]
    fn a_replica_put_message_is_the_value_and_72_bytes_its_ack_68() {
        let now = 1_764_800_000_000;
        let put = ReplicaPut {
            instance: Instance { born: now, nonce: u64::MAX / 3 },
            generation: Generation { minted_at: now, nonce: u64::MAX / 5 },
            stamp: Stamp { ep: Epoch(1), ver: Version(5_000) },
            wid: WriteId(u128::MAX / 7),
        };
        let mut sizes = Vec::new();
        for len in [128, 1024] {
            let (message, ack) = replica_put(&put, Key::new("key-00042").unwrap(), vec![b'a'; len]).unwrap();
            let decoded = Batch::decode(&message).unwrap();
            assert_eq!(decoded.len(), 1, "one message in the batch");
            let push = Message::decode(decoded[0]).unwrap();
            assert!(matches!(push.body, Body::Push { .. }), "a push: {push:?}");
            sizes.push((message.len(), ack));
        }
        assert_eq!(sizes, [(200, 68), (1096, 68)]);
    }
}
