//! Messages between replicas, the state's side: outgoing ones queue per
//! destination and lane (bounded in bytes, at most one copy of a message
//! queued: `outbox.rs`) and leave in batches, one delivery in flight per
//! lane, through the link to the addressee (a WebSocket frame for a batch
//! that fits, else HTTP: `crate::hop`); the replies in each answer are fed
//! back in. Incoming ones (a binary [`Batch`] in a frame of `GET /link`'s
//! socket or in a `POST /msg`) are stepped one by one, and the replies to
//! their sender ride back in the answer, as a batch too.

use std::rc::Rc;
use std::time::Duration;

use protocol::handoff::message::Batch;
use protocol::handoff::{Body, Input, Message};

use super::client::Unavailable;
use super::effects::{Delivery, Effect};
use super::outbox::{Next, Outbox};
use super::state::ReplicaState;
use super::status::add;
use crate::error::{Code, HttpError, HttpResult};
use crate::hop::{Link, LinkState, Via};
use crate::names::ReplicaName;
use crate::socket::{Accepted, Incoming, MAX_ANSWER_BYTES, Outgoing};

/// Lanes: 0 = protocol traffic, 1 = anti-entropy.
pub(super) const LANES: usize = 2;
/// A delivery not answered by then frees its slot (the protocol retries
/// whatever it still needs). Over HTTP the runtime enforces it; over a
/// socket the replica's wake-up does (`expire_deliveries`), so a hop may
/// wait up to a wake-up interval longer.
pub(super) const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Sockets from other replicas a replica keeps (two peers, and a new one
/// from a peer that lost its old one); beyond it the oldest closes.
const MAX_INCOMING: usize = 4;

/// What a delivery came to.
pub(super) enum Delivered {
    /// The addressee answered `status` with `body`.
    Answer { status: u16, body: Vec<u8> },
    /// No answer (the hop failed, timed out, or its socket closed).
    Failed(String),
}

/// The links, queues and sockets to and from the other replicas.
pub(super) struct Transport {
    /// By replica index: the link to that replica (none until the first
    /// delivery made one, and again after a failure).
    links: [Option<LinkState>; 3],
    /// Sockets the other replicas opened to this one.
    incoming: Accepted,
    /// By replica index × lane.
    outboxes: [[Outbox; LANES]; 3],
    /// The peer the coordinator waits for (the other one's pushes and
    /// confirms are held back briefly: `outbox.rs`).
    pub(super) preferred: ReplicaName,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            links: Default::default(),
            incoming: Accepted::default(),
            outboxes: Default::default(),
            preferred: ReplicaName::R1,
        }
    }
}

impl Transport {
    fn outbox(&mut self, to: ReplicaName, lane: usize) -> Option<&mut Outbox> {
        self.outboxes.get_mut(usize::from(to.index()))?.get_mut(lane)
    }

    fn link(&mut self, to: ReplicaName) -> Option<&mut Option<LinkState>> {
        self.links.get_mut(usize::from(to.index()))
    }

    /// At each wake-up: a socket owing an answer for longer than
    /// [`DELIVERY_TIMEOUT`] is closed (its deliveries fail) and its link
    /// forgotten.
    pub(super) fn expire_deliveries(&mut self, now: u64) {
        let ms = u64::try_from(DELIVERY_TIMEOUT.as_millis()).unwrap_or(u64::MAX);
        for slot in &mut self.links {
            if slot.as_mut().is_some_and(|link| link.close_if_overdue(now, ms)) {
                *slot = None;
            }
        }
    }

    /// Keeps a socket another replica opened (its `on_end` names `id`).
    pub(super) fn accepted(&mut self, id: u64, socket: Incoming) {
        self.incoming.keep(id, socket, MAX_INCOMING);
    }

    pub(super) fn next_incoming_id(&mut self) -> u64 {
        self.incoming.next_id()
    }

    pub(super) fn incoming_ended(&mut self, id: u64) {
        self.incoming.ended(id);
    }
}

impl ReplicaState {
    pub(super) fn paused(&self, now: u64) -> bool {
        now < self.paused_until
    }

    /// Queues `msg` for its addressee and pumps that outbox.
    pub(super) fn send(&mut self, msg: Message, now: u64) {
        if self.paused(now) {
            return;
        }
        let Some(to) = ReplicaName::from_index(msg.to.0) else { return };
        let lane = usize::from(matches!(msg.body, Body::Digest { .. } | Body::Records { .. }));
        let holdable = matches!(msg.body, Body::Push { .. } | Body::Confirm { .. });
        let Ok(bytes) = msg.encode() else { return };
        add(&mut self.counters.msgs_out, 1);
        if !self.transport.outbox(to, lane).is_some_and(|outbox| outbox.offer(bytes, holdable, now)) {
            add(&mut self.counters.send_failures, 1);
        }
        self.pump(to, lane, now);
    }

    /// Starts deliveries to `to` while slots are free and nothing is held:
    /// each takes what is queued (up to the batch limits, `outbox.rs`) as
    /// one delivery. A held queue gets one wake-up for the end of its hold.
    fn pump(&mut self, to: ReplicaName, lane: usize, now: u64) {
        let hold = lane == 0 && self.second_peer(to);
        loop {
            let Some(outbox) = self.transport.outbox(to, lane) else { return };
            match outbox.next(hold, now) {
                Next::Send(batch) => self.deliver(to, lane, &batch, now),
                Next::HeldUntil(at) => {
                    if outbox.arm_wake() {
                        self.effect(Effect::HoldUntil { to, lane, at });
                    }
                    return;
                }
                Next::Nothing => return,
            }
        }
    }

    /// One delivery of `batch` to `to`: over the link's socket, or HTTP.
    fn deliver(&mut self, to: ReplicaName, lane: usize, batch: &[Vec<u8>], now: u64) {
        let body = match Batch::encode(batch) {
            Ok(body) => body,
            Err(_) => {
                // Unreachable for messages this replica encoded; the slot is freed.
                add(&mut self.counters.send_failures, 1);
                if let Some(outbox) = self.transport.outbox(to, lane) {
                    outbox.delivered();
                }
                return;
            }
        };
        add(&mut self.counters.bytes_out, body.len());
        add(&mut self.counters.deliveries_out, 1);
        let slot = self.transport.link(to);
        let (via, open) = match slot.and_then(|slot| slot.as_mut()) {
            Some(link) => link.route(body.len(), now),
            None => (Via::NewLink, None),
        };
        if let (Some(id), Via::Http(link)) = (open, &via) {
            self.effect(Effect::OpenSocket { to, id, link: link.clone() });
        }
        self.effect(Effect::Deliver(Delivery { to, lane, body, via }));
    }

    /// Thrifty sends: the coordinator waits for one peer, the preferred one
    /// (r1 until a delivery to it fails); is `to` the other?
    fn second_peer(&self, to: ReplicaName) -> bool {
        self.me() == Some(ReplicaName::R0) && to != ReplicaName::R0 && to != self.transport.preferred
    }

    /// A delivery to `to` failed: if it was the preferred peer, the other
    /// one is preferred from now on, and what was held for it leaves.
    fn prefer_other_than(&mut self, to: ReplicaName, now: u64) {
        let other = match to {
            ReplicaName::R1 => ReplicaName::R2,
            ReplicaName::R2 => ReplicaName::R1,
            ReplicaName::R0 => return,
        };
        if self.transport.preferred == to {
            self.transport.preferred = other;
            self.pump(other, 0, now);
        }
    }

    /// The delivery to `to` on `lane` came to `outcome`; `made` is the link
    /// the shell made for it (kept if none is kept yet). The replies in the
    /// answer are fed back in; the lane's next batch leaves.
    pub(super) fn delivered(
        &mut self,
        to: ReplicaName,
        lane: usize,
        outcome: Delivered,
        made: Option<Rc<Link>>,
        now: u64,
    ) {
        if let Some(outbox) = self.transport.outbox(to, lane) {
            outbox.delivered();
        }
        if self.life.resetting {
            return;
        }
        match outcome {
            Delivered::Answer { status, body } => {
                if let (Some(slot), Some(link)) = (self.transport.link(to), made)
                    && slot.is_none()
                {
                    *slot = Some(LinkState::new(link));
                }
                self.answered(to, status, &body, now);
            }
            Delivered::Failed(e) => {
                // Expected while a peer is being reset; the protocol retries.
                worker::console_debug!("delivery to {to} failed: {e}");
                add(&mut self.counters.send_failures, 1);
                // A stub whose object threw (was reset, evicted) stays
                // broken, and so does its socket: forget both, the next
                // delivery makes new ones.
                if let Some(slot) = self.transport.link(to) {
                    *slot = None;
                }
                self.prefer_other_than(to, now);
            }
        }
        self.pump(to, lane, now);
    }

    /// `to` answered a delivery with `status` and `body`.
    fn answered(&mut self, to: ReplicaName, status: u16, body: &[u8], now: u64) {
        if status != 200 {
            add(&mut self.counters.send_failures, 1);
            if status == Code::Refused.status() {
                add(&mut self.counters.refused, 1);
            }
            if status == Code::NamespaceNotRunning.status() {
                // The namespace went idle or is being deleted.
                self.stop_soon("a peer says the namespace is not running");
            }
            worker::console_debug!("{to} answered {status}: {}", String::from_utf8_lossy(body));
            self.prefer_other_than(to, now);
            return;
        }
        let Ok(replies) = Batch::decode(body) else {
            worker::console_warn!("bad replies from {to}");
            return;
        };
        for raw in replies {
            match Message::decode(raw) {
                Ok(reply) => self.receive(reply, now),
                Err(e) => worker::console_warn!("bad reply from {to}: {e}"),
            }
        }
    }

    /// A message that arrived as a reply to one of ours.
    fn receive(&mut self, msg: Message, now: u64) {
        if self.paused(now) {
            return;
        }
        add(&mut self.counters.msgs_in, 1);
        if self.step(now, Input::Message(msg), None).is_err() {
            add(&mut self.counters.refused, 1);
        }
    }

    /// The end of a hold on `to`'s `lane`.
    pub(super) fn hold_ended(&mut self, to: ReplicaName, lane: usize, now: u64) {
        if let Some(outbox) = self.transport.outbox(to, lane) {
            outbox.woke();
        }
        self.pump(to, lane, now);
    }

    /// Opening socket `id` of the link to `to` ended.
    pub(super) fn socket_opened(&mut self, to: ReplicaName, id: u64, socket: Option<Outgoing>) {
        if let Some(Some(link)) = self.transport.link(to) {
            link.opened(id, socket);
        }
    }

    /// An answer frame on socket `id` to `to`.
    pub(super) fn socket_answered(&mut self, to: ReplicaName, id: u64, frame: Vec<u8>) {
        if let Some(Some(link)) = self.transport.link(to) {
            link.answered(id, frame);
        }
    }

    /// Socket `id` to `to` closed: the link is lost (its object most likely
    /// went away), replaced by the next delivery.
    pub(super) fn socket_ended(&mut self, to: ReplicaName, id: u64) {
        if let Some(slot) = self.transport.link(to) {
            if let Some(link) = slot.as_mut() {
                link.ended(id);
            }
            if slot.as_ref().is_some_and(LinkState::lost) {
                *slot = None;
            }
        }
    }

    /// A batch of messages from another replica: a malformed batch is a
    /// 400; inside it each message stands alone (bad or refused ones are
    /// counted and skipped). Returns the replies to the sender.
    pub(super) fn on_batch(&mut self, body: &[u8], now: u64) -> HttpResult<Vec<Message>> {
        self.life.refuse_if_stopping()?;
        if self.paused(now) {
            return Err(Unavailable::Paused.into());
        }
        let raws = Batch::decode(body).map_err(|e| HttpError::new(Code::BadMessage, e.to_string()))?;
        if !self.booted() {
            return Err(self.life.unavailable_while_resetting());
        }
        let mut replies = Vec::new();
        for raw in raws {
            let Ok(msg) = Message::decode(raw) else {
                add(&mut self.counters.refused, 1);
                continue;
            };
            add(&mut self.counters.msgs_in, 1);
            let from = msg.from;
            match self.step(now, Input::Message(msg), Some(from)) {
                Ok(inline) => replies.extend(inline),
                Err(_) => add(&mut self.counters.refused, 1),
            }
        }
        Ok(replies)
    }

    /// `POST /msg`'s answer to a batch: the encoded replies.
    pub(super) fn on_msg(&mut self, body: &[u8], now: u64) -> HttpResult<Vec<u8>> {
        let replies = self.on_batch(body, now)?;
        let body = encode_replies(&replies)?;
        add(&mut self.counters.bytes_out, body.len());
        Ok(body)
    }

    /// One frame of a socket: (status, body) as `POST /msg` would answer.
    /// If the replies do not fit in a frame, they leave as this replica's
    /// own messages instead (the protocol does not care which way a reply
    /// travels) and the answer is an empty batch.
    pub(super) fn on_frame(&mut self, frame: &[u8], now: u64) -> (u16, Vec<u8>) {
        let answer = self.on_batch(frame, now).and_then(|replies| {
            let body = encode_replies(&replies)?;
            if body.len() <= MAX_ANSWER_BYTES {
                return Ok(body);
            }
            replies.into_iter().for_each(|reply| self.send(reply, now));
            encode_replies(&[])
        });
        match answer {
            Ok(body) => {
                add(&mut self.counters.bytes_out, body.len());
                (200, body)
            }
            Err(e) => (e.status().unwrap_or(500), e.to_string().into_bytes()),
        }
    }
}

fn encode_replies(replies: &[Message]) -> HttpResult<Vec<u8>> {
    let replies: Vec<Vec<u8>> = replies.iter().filter_map(|m| m.encode().ok()).collect();
    Batch::encode(&replies).map_err(|e| HttpError::internal(e.to_string()))
}
