//! Messages between replicas: outgoing ones queue per destination and
//! lane (bounded in bytes, with at most one copy of a message queued) and
//! leave in batches over a bounded number of requests, through a cached
//! stub; the replies in each response are fed back in. Incoming ones
//! (`POST /msg`, a binary [`Batch`]) are stepped one by one, and the
//! replies to their sender ride back in the response, as a batch too.

use std::collections::VecDeque;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{self, Either};
use protocol::handoff::message::{Batch, MAX_BATCH};
use protocol::handoff::{Body, Input, Message};
use worker::wasm_bindgen_futures::spawn_local;
use worker::{Delay, Response, Result, Stub, console_warn};

use super::client::Unavailable;
use super::driving::StepError;
use super::{Host, add, bump};
use crate::error::{HttpError, HttpResult};
use crate::http::BINARY;
use crate::internal::{self, REPLICA_BINDING, now_ms};
use crate::names::ReplicaName;
use crate::wire::{ReplicaOp, Target};

/// Requests in flight per lane to one other replica. Further messages
/// queue and leave together in the next request: under load one round
/// trip carries many pushes (fewer requests per write, which is what the
/// CPU pays for), and while the link is idle nothing waits. Two lanes per
/// destination (anti-entropy digests and the records they ask for, apart
/// from everything else, so a repair never delays a push) x two
/// destinations = 4 connections, within the platform's 6.
const MAX_IN_FLIGHT: usize = 1;
/// Lanes: 0 = protocol traffic, 1 = anti-entropy.
pub(super) const LANES: usize = 2;
/// Bytes per batch (a batch holds at least one message, of at most
/// [`protocol::handoff::message::MAX_MESSAGE_BYTES`]).
const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;
/// Bytes queued per destination and lane. Beyond it a message is dropped:
/// the protocol resends what it still needs on its retry timer (with
/// backoff), so under a slow or paused peer the queues hold at most
/// 2 destinations x 2 lanes x this (plus one message each): 8 MiB a
/// replica, 24 MiB for the three of a namespace (docs/handoff.md 5.16).
const MAX_QUEUED_BYTES: usize = 2 * 1024 * 1024;
/// A delivery not answered by then frees its slot (the protocol retries
/// whatever it still needs).
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Messages waiting for one other replica.
#[derive(Default)]
pub(super) struct Outbox {
    queue: VecDeque<Vec<u8>>,
    queued_bytes: usize,
    in_flight: usize,
}

impl Outbox {
    /// Queues `bytes` unless the same message is already queued (a retry of
    /// a push not yet sent) or the queue is full.
    fn offer(&mut self, bytes: Vec<u8>) -> bool {
        if self.queued_bytes + bytes.len() > MAX_QUEUED_BYTES && !self.queue.is_empty() {
            return false;
        }
        if self.queue.iter().any(|q| *q == bytes) {
            return true;
        }
        self.queued_bytes += bytes.len();
        self.queue.push_back(bytes);
        true
    }

    fn take(&mut self) -> Option<Vec<u8>> {
        let bytes = self.queue.pop_front()?;
        self.queued_bytes = self.queued_bytes.saturating_sub(bytes.len());
        Some(bytes)
    }
}

/// A cached route to one other replica: its stub and `POST /msg` URL.
pub(super) struct Link {
    stub: Rc<Stub>,
    url: Rc<str>,
}

impl Host {
    pub(super) fn paused(&self) -> bool {
        now_ms() < self.paused_until.get()
    }

    /// Queues `msg` for its addressee and pumps that outbox.
    pub(super) fn send(self: &Rc<Self>, msg: Message) {
        if self.paused() {
            return;
        }
        let Some(to) = ReplicaName::from_index(msg.to.0) else { return };
        let lane = usize::from(matches!(msg.body, Body::Digest { .. } | Body::Records { .. }));
        let Ok(bytes) = msg.encode() else { return };
        bump(&self.counters.msgs_out);
        if let Some(outbox) = self.outboxes.try_borrow_mut().ok().as_mut().and_then(|b| outbox(b, to, lane))
            && !outbox.offer(bytes)
        {
            bump(&self.counters.send_failures);
        }
        self.pump(to, lane);
    }

    /// Starts deliveries to `to` while slots are free: each takes what is
    /// queued (up to [`MAX_BATCH`]) as one request.
    fn pump(self: &Rc<Self>, to: ReplicaName, lane: usize) {
        let Some((ns, _)) = self.me() else { return };
        loop {
            let batch: Vec<Vec<u8>> = {
                let Ok(mut boxes) = self.outboxes.try_borrow_mut() else { return };
                let Some(outbox) = outbox(&mut boxes, to, lane) else { return };
                if outbox.in_flight >= MAX_IN_FLIGHT || outbox.queue.is_empty() {
                    return;
                }
                outbox.in_flight += 1;
                let mut batch = Vec::new();
                let mut bytes = 0;
                while batch.len() < MAX_BATCH {
                    let Some(next) = outbox.queue.front() else { break };
                    if !batch.is_empty() && bytes + next.len() > MAX_BATCH_BYTES {
                        break;
                    }
                    bytes += next.len();
                    batch.extend(outbox.take());
                }
                batch
            };
            let (host, ns) = (self.clone(), ns.clone());
            spawn_local(async move {
                let delivery = pin!(host.deliver(&ns, to, batch));
                let outcome = match future::select(delivery, pin!(Delay::from(DELIVERY_TIMEOUT))).await {
                    Either::Left((outcome, _)) => outcome,
                    Either::Right(_) => Err(worker::Error::RustError("timed out".into())),
                };
                if let Err(e) = outcome {
                    bump(&host.counters.send_failures);
                    // Expected while a peer is being reset; the protocol retries.
                    worker::console_debug!("send to {ns}:{to} failed: {e}");
                }
                if let Some(outbox) = host.outboxes.try_borrow_mut().ok().as_mut().and_then(|b| outbox(b, to, lane)) {
                    outbox.in_flight = outbox.in_flight.saturating_sub(1);
                }
                host.pump(to, lane);
            });
        }
    }

    /// One request to `to` carrying `batch`; the replies in its response
    /// are fed back in.
    async fn deliver(self: &Rc<Self>, ns: &str, to: ReplicaName, batch: Vec<Vec<u8>>) -> Result<()> {
        let key = self.secret.as_ref().map_err(|e| worker::Error::RustError(e.to_string()))?;
        let body = Batch::encode(&batch).map_err(|e| worker::Error::RustError(e.to_string()))?;
        drop(batch);
        let (stub, url) = self.link(ns, to)?;
        add(&self.counters.bytes_out, body.len());
        let headers = [("content-type", BINARY)];
        let mut resp = match internal::call_url(&stub, &url, true, Some(key), Some(&body), &headers).await {
            Ok(resp) => resp,
            Err(e) => {
                // A stub whose object threw (was reset, evicted) stays broken:
                // forget it, the next delivery makes a new one.
                self.forget_link(to);
                return Err(e);
            }
        };
        let status = resp.status_code();
        let bytes = resp.bytes().await?;
        if status != 200 {
            if status == 409 {
                bump(&self.counters.refused);
            }
            if status == 410 {
                // The namespace went idle or is being deleted.
                self.stop_soon("a peer says the namespace is not running");
            }
            return Err(worker::Error::RustError(format!("status {status}: {}", String::from_utf8_lossy(&bytes))));
        }
        let replies = Batch::decode(&bytes).map_err(|e| worker::Error::RustError(format!("bad replies: {e}")))?;
        for raw in replies {
            match Message::decode(raw) {
                Ok(reply) => self.receive(reply),
                Err(e) => console_warn!("bad reply from {ns}:{to}: {e}"),
            }
        }
        Ok(())
    }

    /// The stub and message URL of `to`, kept until a delivery through the
    /// stub fails (see `forget_link`).
    fn link(&self, ns: &str, to: ReplicaName) -> Result<(Rc<Stub>, Rc<str>)> {
        let i = usize::from(to.index());
        if let Some(Some(link)) = self.links.try_borrow().ok().as_ref().and_then(|l| l.get(i)) {
            return Ok((link.stub.clone(), link.url.clone()));
        }
        let stub = Rc::new(internal::stub(&self.env, REPLICA_BINDING, &to.object_name(ns))?);
        let url: Rc<str> = Target::new(ReplicaOp::Msg, ns, Some(to))
            .url()
            .map_err(|e| worker::Error::RustError(format!("internal url: {e}")))?
            .into();
        if let Some(slot) = self.links.try_borrow_mut().ok().as_mut().and_then(|l| l.get_mut(i)) {
            *slot = Some(Link { stub: stub.clone(), url: url.clone() });
        }
        Ok((stub, url))
    }

    fn forget_link(&self, to: ReplicaName) {
        if let Some(slot) = self.links.try_borrow_mut().ok().as_mut().and_then(|l| l.get_mut(usize::from(to.index()))) {
            *slot = None;
        }
    }

    /// A message that arrived as a reply to one of ours.
    fn receive(self: &Rc<Self>, msg: Message) {
        if self.paused() {
            return;
        }
        bump(&self.counters.msgs_in);
        match self.step(Input::Message(msg)) {
            Ok(outputs) => {
                self.perform(outputs, None);
            }
            Err(StepError::Refused(_)) => bump(&self.counters.refused),
            Err(_) => {}
        }
    }

    /// `POST /msg`: a batch of messages from another replica. A malformed
    /// batch gets a 400; inside it each message stands alone (bad or
    /// refused ones are counted and skipped). Replies to the sender ride
    /// back in the 200 response, as a batch.
    pub(super) fn on_msg(self: &Rc<Self>, body: &[u8]) -> HttpResult {
        if self.paused() {
            return Err(Unavailable::Paused.into());
        }
        let raws = Batch::decode(body).map_err(|e| HttpError::new(400, "bad_message", e.to_string()))?;
        self.ensure_booted()?;
        let mut replies = Vec::new();
        for raw in raws {
            let Ok(msg) = Message::decode(raw) else {
                bump(&self.counters.refused);
                continue;
            };
            bump(&self.counters.msgs_in);
            let from = msg.from;
            match self.step(Input::Message(msg)) {
                Ok(outputs) => replies.extend(self.perform(outputs, Some(from))),
                Err(_) => bump(&self.counters.refused),
            }
        }
        let replies: Vec<Vec<u8>> = replies.iter().filter_map(|m| m.encode().ok()).collect();
        let body = Batch::encode(&replies).map_err(|e| HttpError::internal(e.to_string()))?;
        add(&self.counters.bytes_out, body.len());
        let headers = worker::Headers::new();
        headers.set("content-type", BINARY)?;
        Ok(Response::from_bytes(body)?.with_headers(headers))
    }
}

fn outbox(boxes: &mut [[Outbox; LANES]; 3], to: ReplicaName, lane: usize) -> Option<&mut Outbox> {
    boxes.get_mut(usize::from(to.index()))?.get_mut(lane)
}
