//! The queue of encoded messages for one other replica and lane: bounded in
//! bytes, at most one copy of a message, at most [`MAX_IN_FLIGHT`]
//! deliveries at a time, and the coordinator's second copy held back
//! briefly ([`SECOND_COPY_HOLD_MS`]). Pure bookkeeping, tested on the host;
//! `transport.rs` does the sending.

use std::collections::VecDeque;

use protocol::handoff::message::MAX_BATCH;

/// Requests in flight per lane to one other replica. Further messages
/// queue and leave together in the next request: under load one round
/// trip carries many pushes (fewer requests per write, which is what the
/// CPU pays for), and while the link is idle nothing waits. Two lanes per
/// destination (anti-entropy digests and the records they ask for, apart
/// from everything else, so a repair never delays a push) x two
/// destinations = 4 connections, within the platform's 6.
const MAX_IN_FLIGHT: usize = 1;
/// Bytes per batch (a batch holds at least one message, of at most
/// [`protocol::handoff::message::MAX_MESSAGE_BYTES`]).
pub(super) const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;
/// Bytes queued per destination and lane. Beyond it a message is dropped:
/// the protocol resends what it still needs on its retry timer (with
/// backoff), so under a slow or paused peer the queues hold at most
/// 2 destinations x 2 lanes x this (plus one message each): 8 MiB a
/// replica, 24 MiB for the three of a namespace (docs/handoff.md 5.16).
const MAX_QUEUED_BYTES: usize = 2 * 1024 * 1024;
/// How long the coordinator holds back pushes and confirms to the peer it
/// does not wait for (docs/operating.md 4.7, Transport: thrifty sends). A write
/// commits on the first ack and a read on the first confirm, so the
/// preferred peer's answer is the one a client waits for; the other copy
/// leaves at most this much later, with whatever else queued meanwhile, as
/// one request. That halves the requests per write or more at any load,
/// and keeps the second peer's work off the client's path.
pub(super) const SECOND_COPY_HOLD_MS: u64 = 10;

/// Messages waiting for one other replica, on one lane.
#[derive(Default)]
pub(crate) struct Outbox {
    queue: VecDeque<Vec<u8>>,
    queued_bytes: usize,
    in_flight: usize,
    /// When the oldest queued message was queued (ms).
    oldest_at: Option<u64>,
    /// A queued message that must not be held (recovery, heartbeats).
    urgent: bool,
    /// A wake-up for the end of the hold is scheduled.
    wake_armed: bool,
}

/// What may leave now.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// One request's worth: send it.
    Send(Vec<Vec<u8>>),
    /// Held until then (ms); nothing leaves before.
    HeldUntil(u64),
    /// Nothing queued, or every slot busy.
    Nothing,
}

impl Outbox {
    /// Queues `bytes` unless the same message is already queued (a retry of
    /// a push not yet sent) or the queue is full. `holdable`: a push or a
    /// confirm, which the coordinator may hold back from its second peer.
    pub(super) fn offer(&mut self, bytes: Vec<u8>, holdable: bool, now: u64) -> bool {
        if self.queued_bytes + bytes.len() > MAX_QUEUED_BYTES && !self.queue.is_empty() {
            return false;
        }
        self.urgent |= !holdable;
        if self.queue.iter().any(|q| *q == bytes) {
            return true;
        }
        self.queued_bytes += bytes.len();
        self.queue.push_back(bytes);
        self.oldest_at.get_or_insert(now);
        true
    }

    /// Takes the next batch if a slot is free and, when `hold` (this is the
    /// coordinator's second peer), the oldest message has waited
    /// [`SECOND_COPY_HOLD_MS`] or an urgent one is queued.
    pub(super) fn next(&mut self, hold: bool, now: u64) -> Next {
        if self.in_flight >= MAX_IN_FLIGHT || self.queue.is_empty() {
            return Next::Nothing;
        }
        if hold && !self.urgent {
            let until = self.oldest_at.unwrap_or(now).saturating_add(SECOND_COPY_HOLD_MS);
            if now < until {
                return Next::HeldUntil(until);
            }
        }
        self.in_flight += 1;
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < MAX_BATCH {
            let Some(next) = self.queue.front() else { break };
            if !batch.is_empty() && bytes + next.len() > MAX_BATCH_BYTES {
                break;
            }
            bytes += next.len();
            batch.extend(self.queue.pop_front());
        }
        self.queued_bytes = self.queued_bytes.saturating_sub(bytes);
        if self.queue.is_empty() {
            self.oldest_at = None;
            self.urgent = false;
        }
        Next::Send(batch)
    }

    /// A delivery ended (answered, failed or timed out): its slot is free.
    pub(super) fn delivered(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// `true` if the caller should schedule the wake-up for the end of a
    /// hold (none is scheduled yet).
    pub(super) fn arm_wake(&mut self) -> bool {
        !std::mem::replace(&mut self.wake_armed, true)
    }

    /// The hold's wake-up fired.
    pub(super) fn woke(&mut self) {
        self.wake_armed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(n: u8) -> Vec<u8> {
        vec![n; 8]
    }

    #[test]
    fn the_preferred_peer_gets_a_message_at_once_and_one_delivery_at_a_time() {
        let mut o = Outbox::default();
        assert!(o.offer(msg(1), true, 100));
        assert_eq!(o.next(false, 100), Next::Send(vec![msg(1)]));
        assert!(o.offer(msg(2), true, 101));
        assert!(o.offer(msg(3), true, 101));
        assert!(o.offer(msg(3), true, 102), "a copy already queued is accepted, not queued twice");
        assert_eq!(o.next(false, 102), Next::Nothing, "one delivery in flight");
        o.delivered();
        assert_eq!(o.next(false, 103), Next::Send(vec![msg(2), msg(3)]), "what queued meanwhile leaves as one");
    }

    #[test]
    fn the_second_copy_waits_for_the_hold_then_leaves_with_what_queued_meanwhile() {
        let mut o = Outbox::default();
        assert!(o.offer(msg(1), true, 100));
        assert_eq!(o.next(true, 100), Next::HeldUntil(100 + SECOND_COPY_HOLD_MS));
        assert!(o.arm_wake());
        assert!(!o.arm_wake(), "one wake-up per hold");
        assert!(o.offer(msg(2), true, 105));
        assert_eq!(o.next(true, 105), Next::HeldUntil(100 + SECOND_COPY_HOLD_MS), "the oldest message sets the end");
        o.woke();
        assert_eq!(o.next(true, 100 + SECOND_COPY_HOLD_MS), Next::Send(vec![msg(1), msg(2)]));
        assert!(o.offer(msg(3), true, 120));
        o.delivered();
        assert_eq!(o.next(true, 121), Next::HeldUntil(120 + SECOND_COPY_HOLD_MS), "a new hold starts");
    }

    #[test]
    fn an_urgent_message_releases_the_hold() {
        let mut o = Outbox::default();
        assert!(o.offer(msg(1), true, 100));
        assert!(o.offer(msg(9), false, 101));
        assert_eq!(o.next(true, 101), Next::Send(vec![msg(1), msg(9)]));
        o.delivered();
        assert!(o.offer(msg(2), true, 102));
        assert_eq!(o.next(true, 102), Next::HeldUntil(102 + SECOND_COPY_HOLD_MS), "urgency ends with the queue");
    }

    #[test]
    fn a_full_queue_drops_the_message() {
        let mut o = Outbox::default();
        assert!(o.offer(vec![0; MAX_QUEUED_BYTES], true, 0), "one message is always accepted");
        assert!(!o.offer(msg(1), true, 0));
        assert!(matches!(o.next(false, 0), Next::Send(b) if b.len() == 1));
        assert!(o.offer(msg(1), true, 0), "room again once sent");
    }
}
