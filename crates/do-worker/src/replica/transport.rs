//! Messages between replicas: outgoing ones queue per destination and
//! lane (bounded in bytes, with at most one copy of a message queued) and
//! leave in batches over a bounded number of requests, through a cached
//! stub; the replies in each response are fed back in. Incoming ones
//! (`POST /msg`, a binary [`Batch`]) are stepped one by one, and the
//! replies to their sender ride back in the response, as a batch too.
//! The queues themselves, with the coordinator's thrifty sends, are
//! `outbox.rs`'s.

use std::rc::Rc;
use std::time::Duration;

use protocol::handoff::message::Batch;
use protocol::handoff::{Body, Input, Message};
use worker::wasm_bindgen_futures::spawn_local;
use worker::{Delay, Response, Result, console_warn};

use super::client::Unavailable;
use super::driving::StepError;
use super::outbox::{Next, Outbox};
use super::{Host, add, bump};
use crate::error::{HttpError, HttpResult};
use crate::http::BINARY;
use crate::internal::{self, REPLICA_BINDING, RawStub, now_ms};
use crate::names::ReplicaName;
use crate::wire::{ReplicaOp, Target};

/// Lanes: 0 = protocol traffic, 1 = anti-entropy.
pub(super) const LANES: usize = 2;
/// A delivery not answered by then frees its slot (the protocol retries
/// whatever it still needs).
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// A cached route to one other replica: its stub and `POST /msg` URL.
pub(super) struct Link {
    stub: Rc<RawStub>,
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
        let holdable = matches!(msg.body, Body::Push { .. } | Body::Confirm { .. });
        let Ok(bytes) = msg.encode() else { return };
        bump(&self.counters.msgs_out);
        if let Some(outbox) = self.outboxes.try_borrow_mut().ok().as_mut().and_then(|b| outbox(b, to, lane))
            && !outbox.offer(bytes, holdable, now_ms())
        {
            bump(&self.counters.send_failures);
        }
        self.pump(to, lane);
    }

    /// Starts deliveries to `to` while slots are free and nothing is held:
    /// each takes what is queued (up to the batch limits, `outbox.rs`) as
    /// one request. A held queue gets one wake-up for the end of its hold.
    fn pump(self: &Rc<Self>, to: ReplicaName, lane: usize) {
        let Some((ns, _)) = self.me() else { return };
        let hold = lane == 0 && self.second_peer(to);
        loop {
            let next = {
                let Ok(mut boxes) = self.outboxes.try_borrow_mut() else { return };
                let Some(outbox) = outbox(&mut boxes, to, lane) else { return };
                match outbox.next(hold, now_ms()) {
                    Next::HeldUntil(at) if outbox.arm_wake() => Next::HeldUntil(at),
                    Next::HeldUntil(_) | Next::Nothing => return,
                    send => send,
                }
            };
            let host = self.clone();
            match next {
                Next::Send(batch) => {
                    let ns = ns.clone();
                    spawn_local(async move {
                        if let Err(e) = host.deliver(&ns, to, batch).await {
                            bump(&host.counters.send_failures);
                            // Expected while a peer is being reset; the protocol retries.
                            worker::console_debug!("send to {ns}:{to} failed: {e}");
                            host.prefer_other_than(to);
                        }
                        if let Some(outbox) =
                            host.outboxes.try_borrow_mut().ok().as_mut().and_then(|b| outbox(b, to, lane))
                        {
                            outbox.delivered();
                        }
                        host.pump(to, lane);
                    });
                }
                Next::HeldUntil(at) => {
                    spawn_local(async move {
                        Delay::from(Duration::from_millis(at.saturating_sub(now_ms()))).await;
                        if let Some(outbox) =
                            host.outboxes.try_borrow_mut().ok().as_mut().and_then(|b| outbox(b, to, lane))
                        {
                            outbox.woke();
                        }
                        host.pump(to, lane);
                    });
                    return;
                }
                Next::Nothing => return,
            }
        }
    }

    /// Thrifty sends: the coordinator waits for one peer, the preferred one
    /// (r1 until a delivery to it fails); is `to` the other?
    fn second_peer(&self, to: ReplicaName) -> bool {
        self.me().is_some_and(|(_, me)| me == ReplicaName::R0) && to != ReplicaName::R0 && to != self.preferred.get()
    }

    /// A delivery to `to` failed: if it was the preferred peer, the other
    /// one is preferred from now on, and what was held for it leaves.
    fn prefer_other_than(self: &Rc<Self>, to: ReplicaName) {
        let other = match to {
            ReplicaName::R1 => ReplicaName::R2,
            ReplicaName::R2 => ReplicaName::R1,
            ReplicaName::R0 => return,
        };
        if self.preferred.get() == to {
            self.preferred.set(other);
            self.pump(other, 0);
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
        bump(&self.counters.requests_out);
        let headers = [("content-type", BINARY)];
        let (status, bytes) = match internal::exchange(&stub, &url, key, &body, &headers, DELIVERY_TIMEOUT).await {
            Ok(answer) => answer,
            Err(e) => {
                // A stub whose object threw (was reset, evicted) stays broken:
                // forget it, the next delivery makes a new one.
                self.forget_link(to);
                return Err(e);
            }
        };
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
    fn link(&self, ns: &str, to: ReplicaName) -> Result<(Rc<RawStub>, Rc<str>)> {
        let i = usize::from(to.index());
        if let Some(Some(link)) = self.links.try_borrow().ok().as_ref().and_then(|l| l.get(i)) {
            return Ok((link.stub.clone(), link.url.clone()));
        }
        let stub = Rc::new(internal::raw_stub(&self.env, REPLICA_BINDING, &to.object_name(ns))?);
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
