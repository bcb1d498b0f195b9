//! Messages between replicas: outgoing ones queue per
//! destination and lane (bounded in bytes, at most one copy of a message
//! queued: `outbox.rs`) and leave in batches, one delivery in flight per
//! lane, through the link to the addressee (a WebSocket frame for a batch
//! that fits, else HTTP: `crate::hop`); the replies in each answer are fed
//! back in (by the state, which steps them). Incoming ones (a binary
//! [`Batch`] in a frame of `GET /link`'s socket or in a `POST /msg`) are
//! decoded here and stepped one by one by the state; the replies to their
//! sender ride back in the answer, as a batch too.

use std::rc::Rc;
use std::time::Duration;

use protocol::handoff::message::Batch;
use protocol::handoff::{Body, Message, PROTOCOL_VERSION};

use super::effects::{Delivery, Effect};
use super::outbox::{Next, Outbox};
use super::versions::WireVersion;
use crate::error::{Code, HttpError, HttpResult};
use crate::hop::{Link, LinkState, Via};
use crate::names::ReplicaName;
use crate::socket::{Accepted, Incoming, Outgoing};

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

/// What arrived with the answer to a delivery.
pub(super) enum Arrived {
    /// The replies to feed in.
    Replies(Vec<Message>),
    /// The addressee refused the batch (`not_running`: the namespace went
    /// idle or is being deleted).
    Refused { not_running: bool },
    /// No answer.
    Failed,
}

/// Counters shown in the status line, for tests and debugging.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) msgs_in: u64,
    pub(super) msgs_out: u64,
    /// Bytes of message batches this replica sent to the others: the
    /// batches of its deliveries and of the replies it returned (`cargo
    /// xtask bench scale` reads it for the idle traffic).
    pub(super) bytes_out: u64,
    /// Deliveries this replica sent to the others, socket frames or HTTP
    /// requests (each carries a batch: `msgs_out` / `deliveries_out` is
    /// the batching).
    pub(super) deliveries_out: u64,
    pub(super) send_failures: u64,
    pub(super) refused: u64,
    /// Messages and replies read in a wire version older than this build's
    /// (from replicas writing it during a roll: `versions.rs`).
    pub(super) msgs_in_older: u64,
}

/// Adds `n` to a counter, saturating.
pub(super) fn add(counter: &mut u64, n: usize) {
    *counter = counter.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
}

/// What a delivery came to.
pub(super) enum Delivered {
    /// The addressee answered `status` with `body`.
    Answer { status: u16, body: Vec<u8> },
    /// No answer (the hop failed, timed out, or its socket closed).
    Failed(String),
}

/// Which way a delivery went, as the shell reports it back with its
/// outcome.
pub(super) enum Over {
    /// A frame on the link's socket: the socket's end settles the link.
    Frame,
    /// An HTTP hop through the link kept then.
    Kept(Rc<Link>),
    /// An HTTP hop through a link the shell made for it (`None`: it could
    /// not make one); kept if the answer came and no link is kept yet.
    Made(Option<Rc<Link>>),
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
    /// The wire version this replica writes (`versions.rs`).
    wire: WireVersion,
    pub(super) counters: Counters,
}

impl Transport {
    pub(super) fn new(wire: WireVersion) -> Self {
        Transport {
            links: Default::default(),
            incoming: Accepted::default(),
            outboxes: Default::default(),
            preferred: ReplicaName::R1,
            wire,
            counters: Counters::default(),
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

impl Transport {
    /// Queues `msg` for its addressee and pumps that outbox (`coordinator`:
    /// this replica is the coordinator, whose second copies wait).
    pub(super) fn send(&mut self, msg: Message, coordinator: bool, now: u64, fx: &mut Vec<Effect>) {
        let Some(to) = ReplicaName::from_index(msg.to.0) else { return };
        let lane = usize::from(matches!(msg.body, Body::Digest { .. } | Body::Records { .. }));
        let holdable = matches!(msg.body, Body::Push { .. } | Body::Confirm { .. });
        let Some(bytes) = self.wire.encode(&msg) else { return };
        add(&mut self.counters.msgs_out, 1);
        if !self.outbox(to, lane).is_some_and(|outbox| outbox.offer(bytes, holdable, now)) {
            add(&mut self.counters.send_failures, 1);
        }
        self.pump(to, lane, coordinator, now, fx);
    }

    /// Starts deliveries to `to` while slots are free and nothing is held:
    /// each takes what is queued (up to the batch limits, `outbox.rs`) as
    /// one delivery. A held queue gets one wake-up for the end of its hold.
    fn pump(&mut self, to: ReplicaName, lane: usize, coordinator: bool, now: u64, fx: &mut Vec<Effect>) {
        let hold = lane == 0 && self.second_peer(to, coordinator);
        loop {
            let Some(outbox) = self.outbox(to, lane) else { return };
            match outbox.next(hold, now) {
                Next::Send(batch) => self.deliver(to, lane, &batch, now, fx),
                Next::HeldUntil(at) => {
                    if outbox.arm_wake() {
                        fx.push(Effect::HoldUntil { to, lane, at });
                    }
                    return;
                }
                Next::Nothing => return,
            }
        }
    }

    /// One delivery of `batch` to `to`: over the link's socket, or HTTP.
    fn deliver(&mut self, to: ReplicaName, lane: usize, batch: &[Vec<u8>], now: u64, fx: &mut Vec<Effect>) {
        let Ok(body) = Batch::encode(batch) else {
            // Unreachable for messages this replica encoded; the slot is freed.
            add(&mut self.counters.send_failures, 1);
            if let Some(outbox) = self.outbox(to, lane) {
                outbox.delivered();
            }
            return;
        };
        add(&mut self.counters.bytes_out, body.len());
        add(&mut self.counters.deliveries_out, 1);
        let (via, open) = match self.link(to).and_then(|slot| slot.as_mut()) {
            Some(link) => link.route(body.len(), now),
            None => (Via::NewLink, None),
        };
        if let (Some(id), Via::Http(link)) = (open, &via) {
            fx.push(Effect::OpenSocket { to, id, link: link.clone() });
        }
        fx.push(Effect::Deliver(Delivery { to, lane, body, via }));
    }

    /// Thrifty sends: the coordinator waits for one peer, the preferred one
    /// (r1 until a delivery to it fails); is `to` the other?
    fn second_peer(&self, to: ReplicaName, coordinator: bool) -> bool {
        coordinator && to != ReplicaName::R0 && to != self.preferred
    }

    /// A delivery to `to` failed: if it was the preferred peer, the other
    /// one is preferred from now on, and what was held for it leaves.
    fn prefer_other_than(&mut self, to: ReplicaName, coordinator: bool, now: u64, fx: &mut Vec<Effect>) {
        let other = match to {
            ReplicaName::R1 => ReplicaName::R2,
            ReplicaName::R2 => ReplicaName::R1,
            ReplicaName::R0 => return,
        };
        if self.preferred == to {
            self.preferred = other;
            self.pump(other, 0, coordinator, now, fx);
        }
    }

    /// The delivery to `to` on `lane` went `over` a link and came to
    /// `outcome`. Returns what arrived (the replies to feed in); the lane's
    /// next batch leaves.
    pub(super) fn delivered(
        &mut self,
        (to, lane): (ReplicaName, usize),
        outcome: Delivered,
        over: Over,
        (coordinator, now): (bool, u64),
        fx: &mut Vec<Effect>,
    ) -> Arrived {
        if let Some(outbox) = self.outbox(to, lane) {
            outbox.delivered();
        }
        let arrived = match outcome {
            Delivered::Answer { status, body } => {
                if let (Some(slot), Over::Made(Some(link))) = (self.link(to), over)
                    && slot.is_none()
                {
                    *slot = Some(LinkState::new(link));
                }
                self.answered(to, status, &body)
            }
            Delivered::Failed(e) => {
                // Expected while a peer is being reset; the protocol retries.
                worker::console_debug!("delivery to {to} failed: {e}");
                // A stub whose object threw (was reset, evicted) stays
                // broken, and so does its socket: forget both, the next
                // delivery makes new ones. Only if it is still the kept
                // link: a late failure through an old one leaves the new.
                if let (Some(slot), Over::Kept(link) | Over::Made(Some(link))) = (self.link(to), &over) {
                    LinkState::forget_if_broken(slot, link);
                }
                Arrived::Failed
            }
        };
        if matches!(arrived, Arrived::Failed | Arrived::Refused { .. }) {
            add(&mut self.counters.send_failures, 1);
            self.prefer_other_than(to, coordinator, now, fx);
        }
        self.pump(to, lane, coordinator, now, fx);
        arrived
    }

    /// What `to`'s answer `status`, `body` to a delivery brings.
    fn answered(&mut self, to: ReplicaName, status: u16, body: &[u8]) -> Arrived {
        if status != 200 {
            if status == Code::Refused.status() {
                add(&mut self.counters.refused, 1);
            }
            worker::console_debug!("{to} answered {status}: {}", String::from_utf8_lossy(body));
            return Arrived::Refused { not_running: status == Code::NamespaceNotRunning.status() };
        }
        let Ok(replies) = Batch::decode(body) else {
            worker::console_warn!("bad replies from {to}");
            return Arrived::Replies(Vec::new());
        };
        let replies: Vec<Message> = replies
            .into_iter()
            .filter_map(|raw| Message::decode(raw).map_err(|e| worker::console_warn!("bad reply from {to}: {e}")).ok())
            .collect();
        add(&mut self.counters.msgs_in_older, replies.iter().filter(|m| m.v < PROTOCOL_VERSION).count());
        Arrived::Replies(replies)
    }

    /// The end of a hold on `to`'s `lane`.
    pub(super) fn hold_ended(
        &mut self,
        to: ReplicaName,
        lane: usize,
        coordinator: bool,
        now: u64,
        fx: &mut Vec<Effect>,
    ) {
        if let Some(outbox) = self.outbox(to, lane) {
            outbox.woke();
        }
        self.pump(to, lane, coordinator, now, fx);
    }

    /// Opening socket `id` of the link to `to` ended at `now` (a failed
    /// one loses the link: the next delivery makes a new one).
    pub(super) fn socket_opened(
        &mut self,
        to: ReplicaName,
        id: u64,
        socket: worker::Result<Option<Outgoing>>,
        now: u64,
    ) {
        if let Some(slot) = self.link(to) {
            if let Some(link) = slot.as_mut() {
                link.opened(id, socket, now);
            }
            if slot.as_ref().is_some_and(LinkState::lost) {
                *slot = None;
            }
        }
    }

    /// An answer frame on socket `id` to `to`.
    pub(super) fn socket_answered(&mut self, to: ReplicaName, id: u64, frame: Vec<u8>) {
        if let Some(Some(link)) = self.link(to) {
            link.answered(id, frame);
        }
    }

    /// Socket `id` to `to` closed: the link is lost (its object most likely
    /// went away), replaced by the next delivery.
    pub(super) fn socket_ended(&mut self, to: ReplicaName, id: u64) {
        if let Some(slot) = self.link(to) {
            if let Some(link) = slot.as_mut() {
                link.ended(id);
            }
            if slot.as_ref().is_some_and(LinkState::lost) {
                *slot = None;
            }
        }
    }

    /// The messages of a batch from another replica: a malformed batch is
    /// a 400; inside it each message stands alone (bad ones are counted and
    /// skipped).
    pub(super) fn decode_batch(&mut self, body: &[u8]) -> HttpResult<Vec<Message>> {
        let raws = Batch::decode(body).map_err(|e| HttpError::new(Code::BadMessage, e.to_string()))?;
        let mut messages = Vec::with_capacity(raws.len());
        for raw in raws {
            match Message::decode(raw) {
                Ok(msg) => {
                    add(&mut self.counters.msgs_in, 1);
                    add(&mut self.counters.msgs_in_older, usize::from(msg.v < PROTOCOL_VERSION));
                    messages.push(msg);
                }
                Err(_) => add(&mut self.counters.refused, 1),
            }
        }
        Ok(messages)
    }

    /// The answer to a batch: its replies, encoded and counted.
    pub(super) fn reply(&mut self, replies: &[Message]) -> HttpResult<Vec<u8>> {
        let encoded: Vec<Vec<u8>> = replies.iter().filter_map(|m| self.wire.encode(m)).collect();
        let body = Batch::encode(&encoded).map_err(|e| HttpError::internal(e.to_string()))?;
        add(&mut self.counters.bytes_out, body.len());
        Ok(body)
    }
}
