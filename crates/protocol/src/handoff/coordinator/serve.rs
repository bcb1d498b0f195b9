//! The coordinator's confirmation rounds (HandoffReads' `ReadConfirm`,
//! HandoffCond's `ConfirmC`) and what waits for them: reads, listings, and
//! conditional writes whose condition failed.

use super::super::ids::{ClientRequestId, Key, Millis};
use super::super::interface::{List, ListEntry, Output, Read, Status, Timer};
use super::super::message::Body;
use super::super::node::Node;
use super::{Coordinator, Listing, Phase, Waiter};

/// Why an instance serves no read or listing now.
enum Refusal {
    Recovering(Status),
    /// Too many reads and listings wait for a confirmation.
    Overloaded,
    Superseded,
}

impl Coordinator {
    /// Why this instance serves no read or listing now, if it does not.
    fn refuse(&self, node: &Node) -> Option<Refusal> {
        match self.phase {
            Phase::Ready => {
                let waiting = self.confirms.asked.iter().flatten().chain(&self.confirms.next);
                let readers = waiting.filter(|w| !matches!(w, Waiter::Cond(_))).count();
                (readers >= node.config.max_reads).then_some(Refusal::Overloaded)
            }
            Phase::Fenced => Some(Refusal::Superseded),
            Phase::Collect { .. } | Phase::Announce { .. } => Some(Refusal::Recovering(self.status())),
        }
    }

    /// `ReadStart`: a client read waits for the next confirm round (one is
    /// sent now unless one is in flight); nothing is served while
    /// recovering or once superseded.
    pub(in super::super) fn on_read(
        &mut self,
        node: &mut Node,
        now: Millis,
        req: ClientRequestId,
        key: Key,
    ) -> Vec<Output> {
        let retry_after_ms = node.config.retry_after_ms;
        let read = self.refuse(node).map(|refusal| match refusal {
            Refusal::Superseded => Read::Superseded,
            Refusal::Overloaded => Read::Overloaded { retry_after_ms },
            Refusal::Recovering(status) => Read::Unavailable { status, retry_after_ms },
        });
        #[cfg(feature = "mutations")]
        let read = read.or_else(|| {
            node.config
                .mutated(super::super::config::Mutation::ServeReadsUnconfirmed)
                .then(|| Read::Committed(node.mem.get(&key).cloned()))
        });
        if let Some(read) = read {
            return vec![Output::ReadReply { req, read }];
        }
        self.wait_for_confirmation(node, now, Waiter::Read { req, key })
    }

    /// A client listing, served as a read is.
    pub(in super::super) fn on_list(
        &mut self,
        node: &mut Node,
        now: Millis,
        req: ClientRequestId,
        ask: Listing,
    ) -> Vec<Output> {
        let retry_after_ms = node.config.retry_after_ms;
        if let Some(refusal) = self.refuse(node) {
            let list = match refusal {
                Refusal::Superseded => List::Superseded,
                Refusal::Overloaded => List::Overloaded { retry_after_ms },
                Refusal::Recovering(status) => List::Unavailable { status, retry_after_ms },
            };
            return vec![Output::ListReply { req, list }];
        }
        let Listing { prefix, after, limit, hide } = ask;
        self.wait_for_confirmation(node, now, Waiter::List { req, prefix, after, limit, hide })
    }

    /// `w` waits for the next confirm round; one is sent now unless one is
    /// in flight.
    pub(super) fn wait_for_confirmation(&mut self, node: &Node, now: Millis, w: Waiter) -> Vec<Output> {
        self.confirms.next.push(w);
        if self.confirms.asked.is_some() {
            return Vec::new();
        }
        let mut out = self.next_round(node);
        // The retry timer is armed while writes are pending or a round is
        // in flight; arming it again would only postpone their retries.
        if self.pending.is_empty() {
            out.push(node.arm(now, Timer::Retry));
        }
        out
    }

    /// Starts a confirm round for the requests waiting now.
    fn next_round(&mut self, node: &Node) -> Vec<Output> {
        if self.confirms.next.is_empty() {
            return Vec::new();
        }
        self.confirms.round = self.confirms.round.saturating_add(1);
        self.confirms.asked = Some(std::mem::take(&mut self.confirms.next));
        self.reconfirm(node)
    }

    /// The round in flight, to both peers (again, on a retry: its
    /// confirmation may have been lost).
    pub(super) fn reconfirm(&self, node: &Node) -> Vec<Output> {
        if self.confirms.asked.is_none() {
            return Vec::new();
        }
        let (instance, epoch, round) = (node.instance, self.epoch, self.confirms.round);
        node.send_others(Body::Confirm { instance, epoch, round }).collect()
    }

    /// `ConfirmC`, then `ReadFinishC` for each read and listing the round
    /// covers (answered from this memory, now) and `CondIssue`/`CondFail`
    /// for each conditional write (evaluated again, now). Then the requests
    /// that arrived meanwhile get their round. The retry timer, armed for
    /// the round just answered, stays armed for the next one.
    pub(super) fn confirmed(&mut self, node: &mut Node, now: Millis, round: u64) -> Vec<Output> {
        if round != self.confirms.round {
            return Vec::new();
        }
        let Some(asked) = self.confirms.asked.take() else { return Vec::new() };
        let mut out = Vec::new();
        for w in asked {
            match w {
                Waiter::Read { req, key } => out.push(Output::ReadReply { req, read: read(node, now, &key) }),
                Waiter::List { req, prefix, after, limit, hide } => {
                    let list = page(node, now, &Listing { prefix, after, limit, hide });
                    out.push(Output::ListReply { req, list });
                }
                Waiter::Cond(mut c) => {
                    c.confirmed = true;
                    out.extend(self.evaluate(node, now, c));
                }
            }
        }
        out.extend(self.next_round(node));
        out
    }
}

/// `ReadFinishC`: the key's record (a tombstone too, which the host answers
/// as a delete), unless it has expired (`Visible`).
fn read(node: &Node, now: Millis, key: &Key) -> Read {
    #[cfg(feature = "mutations")]
    if node.config.mutated(super::super::config::Mutation::ServeExpired) {
        return Read::Committed(node.mem.get(key).cloned());
    }
    Read::Committed(node.mem.get(key).filter(|r| !r.expired(now)).cloned())
}

/// One page of a listing: the visible records in range, in key order;
/// `next` is the last key returned when a visible key follows it.
fn page(node: &Node, now: Millis, ask: &Listing) -> List {
    let hidden = |k: &Key| ask.hide.as_deref().is_some_and(|h| k.as_str().starts_with(h));
    let mut visible = node.mem.visible_from(&ask.prefix, ask.after.as_ref(), now).filter(|(k, _)| !hidden(k));
    let entries: Vec<ListEntry> = visible
        .by_ref()
        .take(ask.limit)
        .map(|(k, r)| ListEntry { key: k.clone(), tag: r.tag(), bytes: r.value.len(), expires_at: r.expires_at })
        .collect();
    let more = entries.len() == ask.limit && visible.next().is_some();
    let next = if more { entries.last().map(|e| e.key.clone()) } else { None };
    List::Page { entries, next }
}
