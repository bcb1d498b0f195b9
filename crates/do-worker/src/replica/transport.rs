//! Messages between replicas: outgoing ones queue per destination and
//! lane (bounded in bytes, with at most one copy of a message queued) and
//! leave in batches, one delivery in flight per lane, through a cached
//! [`Link`] (a WebSocket for a batch that fits in a frame, else HTTP:
//! `crate::hop`); the replies in each answer are fed back in. Incoming
//! ones (a binary [`Batch`] in a frame of `GET /link`'s socket or in a
//! `POST /msg`) are stepped one by one, and the replies to their sender
//! ride back in the answer, as a batch too. The queues themselves, with
//! the coordinator's thrifty sends, are `outbox.rs`'s.

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
use crate::hop::Link;
use crate::http::BINARY;
use crate::internal::{REPLICA_BINDING, now_ms};
use crate::names::ReplicaName;
use crate::socket::{Incoming, MAX_ANSWER_BYTES};
use crate::wire::ReplicaOp;

/// Lanes: 0 = protocol traffic, 1 = anti-entropy.
pub(super) const LANES: usize = 2;
/// A delivery not answered by then frees its slot (the protocol retries
/// whatever it still needs). Over HTTP the runtime enforces it; over a
/// socket the replica's wake-up does (`expire_deliveries`), so a hop may
/// wait up to a wake-up interval longer.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Sockets from other replicas a replica keeps (two peers, and a new one
/// from a peer that lost its old one); beyond it the oldest closes.
const MAX_INCOMING: usize = 4;

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
        let link = self.link(ns, to)?;
        add(&self.counters.bytes_out, body.len());
        bump(&self.counters.deliveries_out);
        let (status, bytes) = match link.exchange(key, &body, DELIVERY_TIMEOUT).await {
            Ok(answer) => answer,
            Err(e) => {
                // A stub whose object threw (was reset, evicted) stays broken,
                // and so does its socket: forget both, the next delivery makes
                // new ones.
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

    /// The link to `to`, kept until a delivery through it fails (see
    /// `forget_link`) or its socket closes (the peer was reset: a new link
    /// reaches the new instance at once, not after one failed delivery).
    fn link(&self, ns: &str, to: ReplicaName) -> Result<Rc<Link>> {
        let mut links = self.links.try_borrow_mut().ok();
        let slot = links.as_mut().and_then(|l| l.get_mut(usize::from(to.index())));
        let object = to.object_name(ns);
        Link::kept(slot, || {
            Link::to(&self.env, (REPLICA_BINDING, &object), (ns, Some(to)), ReplicaOp::Msg, ReplicaOp::Link)
        })
    }

    fn forget_link(&self, to: ReplicaName) {
        if let Some(slot) = self.links.try_borrow_mut().ok().as_mut().and_then(|l| l.get_mut(usize::from(to.index()))) {
            *slot = None;
        }
    }

    /// At each wake-up: a link whose socket owes an answer for longer than
    /// [`DELIVERY_TIMEOUT`] is closed and forgotten (its delivery fails).
    pub(super) fn expire_deliveries(&self) {
        let now = now_ms();
        for to in ReplicaName::ALL {
            let link = self.links.try_borrow().ok().and_then(|l| l.get(usize::from(to.index())).cloned().flatten());
            if link.is_some_and(|link| link.close_if_overdue(now, DELIVERY_TIMEOUT)) {
                self.forget_link(to);
            }
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

    /// `POST /msg`: a batch of messages from another replica, answered
    /// with the replies to its sender (a batch) in the 200 response.
    pub(super) fn on_msg(self: &Rc<Self>, body: &[u8]) -> HttpResult {
        let replies = self.on_batch(body)?;
        let body = encode_replies(&replies)?;
        add(&self.counters.bytes_out, body.len());
        let headers = worker::Headers::new();
        headers.set("content-type", BINARY)?;
        Ok(Response::from_bytes(body)?.with_headers(headers))
    }

    /// `GET /link`: a socket from another replica (registry admission as
    /// for `POST /msg`, once), each frame a batch answered as `on_msg`
    /// answers one. The socket holds this replica only weakly: it closes
    /// with the replica, it does not keep it.
    pub(super) fn on_link(self: &Rc<Self>) -> HttpResult {
        self.ensure_booted()?;
        let host = Rc::downgrade(self);
        let (response, socket) = Incoming::accept(move |frame| match host.upgrade() {
            Some(host) => host.on_frame(frame),
            None => (503, b"this replica is gone".to_vec()),
        })?;
        if let Ok(mut incoming) = self.incoming.try_borrow_mut() {
            incoming.keep(socket, MAX_INCOMING);
        }
        Ok(response)
    }

    /// One frame of a socket: (status, body) as `on_msg` would answer. If
    /// the replies do not fit in a frame, they leave as this replica's own
    /// messages instead (the protocol does not care which way a reply
    /// travels) and the answer is an empty batch.
    fn on_frame(self: &Rc<Self>, frame: &[u8]) -> (u16, Vec<u8>) {
        let answer = self.refuse_if_stopping().and_then(|()| {
            let replies = self.on_batch(frame)?;
            let mut body = encode_replies(&replies)?;
            if body.len() > MAX_ANSWER_BYTES {
                replies.into_iter().for_each(|reply| self.send(reply));
                body = encode_replies(&[])?;
            }
            Ok(body)
        });
        match answer {
            Ok(body) => {
                add(&self.counters.bytes_out, body.len());
                (200, body)
            }
            Err(e) => (e.status().unwrap_or(500), e.to_string().into_bytes()),
        }
    }

    /// A batch of messages from another replica: a malformed batch is a
    /// 400; inside it each message stands alone (bad or refused ones are
    /// counted and skipped). Returns the replies to the sender.
    fn on_batch(self: &Rc<Self>, body: &[u8]) -> HttpResult<Vec<Message>> {
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
        Ok(replies)
    }
}

fn encode_replies(replies: &[Message]) -> HttpResult<Vec<u8>> {
    let replies: Vec<Vec<u8>> = replies.iter().filter_map(|m| m.encode().ok()).collect();
    Batch::encode(&replies).map_err(|e| HttpError::internal(e.to_string()))
}

fn outbox(boxes: &mut [[Outbox; LANES]; 3], to: ReplicaName, lane: usize) -> Option<&mut Outbox> {
    boxes.get_mut(usize::from(to.index()))?.get_mut(lane)
}
