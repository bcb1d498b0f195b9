//! The coordinator's client writes: a write id given again, plain writes,
//! conditional writes (HandoffCond's `CondIssue`, `CondFail`) and the
//! expiry of records (`Expire`).

use std::collections::BTreeMap;

use super::super::cond;
use super::super::ids::{ClientRequestId, Fingerprint, Key, Millis, Version, WriteId};
use super::super::interface::{MAX_JOINED, Output, Timer, WriteReply};
use super::super::memory;
use super::super::message::Body;
use super::super::node::Node;
use super::super::record::{Record, Stamp, Value};
use super::{Ask, CondWrite, Confirms, Coordinator, Pending, Phase, Waiter};

/// Expiry deletes one step issues, at most: a step's work stays bounded
/// however many records expire at once (the rest wait for the next step).
const EXPIRIES_PER_STEP: usize = 64;

/// What a write id given again names.
enum Known {
    /// Nothing: a new write.
    New,
    /// The same request, answered already: answer it again.
    Answered(WriteReply),
    /// The same request, still under way: wait with it.
    Joined,
    /// The same request, still under way, with [`MAX_JOINED`] waiting.
    Crowded,
    /// Another request under the same write id.
    Reused,
}

impl Coordinator {
    /// A client write (`ClientWrite`, or `CondStart` with a condition):
    /// refused while recovering or superseded; a write id given again is
    /// answered as its first request was (or refused if the request
    /// differs); then a plain write is issued, a conditional one evaluated.
    pub(in super::super) fn on_write(
        &mut self,
        node: &mut Node,
        now: Millis,
        ask: Ask,
        key: Key,
        value: Value,
    ) -> Vec<Output> {
        let Ask { req, wid, cond, ttl_ms } = ask;
        let reply = |reply: WriteReply| vec![Output::Reply { req, reply }];
        if let Some(r) = self.unavailable(node) {
            return reply(r);
        }
        // The write id is checked before the condition: a retry of a write
        // that committed must get its answer, not a failed condition.
        let fp = cond::fingerprint(&value, cond, ttl_ms);
        match self.known(node, req, &key, wid, fp) {
            Known::Answered(r) => return reply(r),
            Known::Joined => return Vec::new(),
            Known::Crowded => return reply(WriteReply::Overloaded { retry_after_ms: node.config.retry_after_ms }),
            Known::Reused => return reply(WriteReply::WriteIdReused),
            Known::New => {}
        }
        let Some(cond) = cond else {
            return match self.issue(node, now, vec![req], key, value, wid, ttl_ms, Some(fp)) {
                Ok(out) => out,
                Err(r) => reply(r),
            };
        };
        if self.waiting_conds() >= node.config.max_conds {
            return reply(WriteReply::Overloaded { retry_after_ms: node.config.retry_after_ms });
        }
        let c = CondWrite { waiters: vec![req], key, value, wid, cond, ttl_ms, fp, confirmed: false };
        self.evaluate(node, now, c)
    }

    /// What write id `wid` for `key` names here: the key's committed record
    /// (its first answer, unless the request differs; a record without a
    /// fingerprint, from version 3 or an expiry, counts as the same), a
    /// pending write, or a conditional write still waiting (`req` joins
    /// them, unless the request differs).
    fn known(&mut self, node: &Node, req: ClientRequestId, key: &Key, wid: WriteId, fp: Fingerprint) -> Known {
        let same = |held: Option<Fingerprint>| held.is_none_or(|h| h == fp);
        if let Some(held) = node.mem.get(key).filter(|r| r.wid == wid) {
            if !same(held.fp) {
                return Known::Reused;
            }
            return Known::Answered(WriteReply::Committed {
                key: key.clone(),
                tag: held.tag(),
                expires_at: held.expires_at,
            });
        }
        let waiters = self
            .pending
            .values_mut()
            .filter(|p| p.key == *key && p.record.wid == wid)
            .map(|p| (p.record.fp, &mut p.waiters))
            .chain(
                conds(&mut self.blocked, &mut self.confirms)
                    .filter(|c| c.key == *key && c.wid == wid)
                    .map(|c| (Some(c.fp), &mut c.waiters)),
            )
            .next();
        match waiters {
            None => Known::New,
            Some((held, _)) if !same(held) => Known::Reused,
            Some((_, waiters)) if waiters.len() >= MAX_JOINED => Known::Crowded,
            Some((_, waiters)) => {
                waiters.push(req);
                Known::Joined
            }
        }
    }

    /// How many conditional writes wait here.
    fn waiting_conds(&mut self) -> usize {
        conds(&mut self.blocked, &mut self.confirms).count()
    }

    /// Whether a write to `key` is pending here (HandoffCond's
    /// `InstPending`).
    fn pending_on(&self, key: &Key) -> bool {
        self.pending.values().any(|p| p.key == *key)
    }

    /// HandoffCond's `CondIssue` and `CondFail`: conditional write `c`,
    /// evaluated now against the committed record of its key unless a
    /// write to it is pending (it then waits for that write to commit). A
    /// condition that holds is issued at once; one that fails is answered
    /// if a peer confirmed this instance since the request arrived, and
    /// otherwise waits for the next confirmation round.
    pub(super) fn evaluate(&mut self, node: &mut Node, now: Millis, c: CondWrite) -> Vec<Output> {
        #[cfg(feature = "mutations")]
        let ignores_pending = node.config.mutated(super::super::config::Mutation::CondIgnoresPending);
        #[cfg(not(feature = "mutations"))]
        let ignores_pending = false;
        if self.pending_on(&c.key) && !ignores_pending {
            self.blocked.push(c);
            return Vec::new();
        }
        let visible = Record::visible(node.mem.get(&c.key), now);
        if c.cond.holds(visible) {
            let waiters = c.waiters.clone();
            return match self.issue(node, now, c.waiters, c.key, c.value, c.wid, c.ttl_ms, Some(c.fp)) {
                Ok(out) => out,
                Err(reply) => waiters.into_iter().map(|req| Output::Reply { req, reply: reply.clone() }).collect(),
            };
        }
        #[cfg(feature = "mutations")]
        let confirmed = c.confirmed || node.config.mutated(super::super::config::Mutation::CondUnconfirmed);
        #[cfg(not(feature = "mutations"))]
        let confirmed = c.confirmed;
        if confirmed {
            let reply = WriteReply::PreconditionFailed { current: visible.map(Record::tag) };
            return c.waiters.into_iter().map(|req| Output::Reply { req, reply: reply.clone() }).collect();
        }
        self.wait_for_confirmation(node, now, Waiter::Cond(c))
    }

    /// The write to `key` committed: the conditional writes that waited for
    /// it are evaluated, in arrival order (the first that is issued makes
    /// the others wait again).
    pub(super) fn unblock(&mut self, node: &mut Node, now: Millis, key: &Key) -> Vec<Output> {
        let (ready, rest): (Vec<CondWrite>, Vec<CondWrite>) =
            std::mem::take(&mut self.blocked).into_iter().partition(|c| c.key == *key);
        self.blocked = rest;
        ready.into_iter().flat_map(|c| self.evaluate(node, now, c)).collect()
    }

    /// `ClientWrite`: admitted within the budget and the pending window,
    /// buffered as pending (never served from there) and pushed to both
    /// peers. Not applied locally until a peer acks. The record expires
    /// `ttl_ms` from now, when it is issued.
    #[allow(clippy::too_many_arguments)]
    fn issue(
        &mut self,
        node: &mut Node,
        now: Millis,
        waiters: Vec<ClientRequestId>,
        key: Key,
        value: Value,
        wid: WriteId,
        ttl_ms: Option<u64>,
        fp: Option<Fingerprint>,
    ) -> Result<Vec<Output>, WriteReply> {
        let overloaded = WriteReply::Overloaded { retry_after_ms: node.config.retry_after_ms };
        let ver = self.ver_ctr.0.checked_add(1).map(Version).ok_or_else(|| overloaded.clone())?;
        let expires_at = ttl_ms.map(|ms| now.plus(ms));
        let record = Record { stamp: Stamp { ep: self.epoch, ver }, wid, value, expires_at, fp };
        let size = memory::cost(&key, &record);
        if self.pending.len() >= node.config.max_pending
            || self.pending_bytes().saturating_add(size) > node.config.max_pending_bytes
        {
            return Err(overloaded);
        }
        let (held, needed) = (self.held(node), self.grows(node, &key, size));
        if needed > 0 && held.saturating_add(needed) > node.config.budget_bytes {
            return Err(WriteReply::Full { held, needed, budget: node.config.budget_bytes });
        }
        self.ver_ctr = ver;
        let push = Body::Push { instance: node.instance, key: key.clone(), record: record.clone() };
        let next_push = now.plus(node.config.retry_ms);
        self.pending.insert(ver, Pending { key, record, waiters, next_push, pushes: 1 });
        let mut out: Vec<Output> = node.send_others(push).collect();
        out.push(node.arm(now, Timer::Retry));
        #[cfg(feature = "mutations")]
        if node.config.mutated(super::super::config::Mutation::CommitBeforeAck)
            && let Some(key) = self.pending.get(&ver).map(|p| p.key.clone())
        {
            out.extend(self.commit(node, now, &key, Stamp { ep: self.epoch, ver }, wid));
        }
        Ok(out)
    }

    /// The budget's count: bytes stored plus what the pending writes add
    /// (for each key, its latest pending write over what is stored).
    fn held(&self, node: &Node) -> usize {
        let mut latest: BTreeMap<&Key, usize> = BTreeMap::new();
        for p in self.pending.values() {
            latest.insert(&p.key, memory::cost(&p.key, &p.record));
        }
        let extra: usize = latest.iter().map(|(k, &size)| size.saturating_sub(self.stored(node, k))).sum();
        node.mem.bytes().saturating_add(extra)
    }

    /// What a write of `size` bytes to `key` adds to [`Coordinator::held`].
    fn grows(&self, node: &Node, key: &Key, size: usize) -> usize {
        let current =
            self.pending.values().rev().find(|p| p.key == *key).map_or_else(
                || self.stored(node, key),
                |p| memory::cost(&p.key, &p.record).max(self.stored(node, key)),
            );
        size.saturating_sub(current)
    }

    fn stored(&self, node: &Node, key: &Key) -> usize {
        node.mem.get(key).map_or(0, |r| memory::cost(key, r))
    }

    /// [`Timer::Expire`], HandoffCond's `Expire`: the ready coordinator
    /// deletes each record whose expiry has passed and on whose key nothing
    /// is pending (so the tombstone replaces exactly that record), with a
    /// tombstone of its own. Its write id is this instance's nonce and the
    /// tombstone's version (unique per instance; the protocol draws no
    /// randomness of its own). Then the timer is armed for what is left.
    pub(in super::super) fn on_expire(&mut self, node: &mut Node, now: Millis) -> Vec<Output> {
        self.expiry_armed = None;
        if self.phase != Phase::Ready {
            return Vec::new();
        }
        let due: Vec<Key> =
            node.mem.expired(now).filter(|k| !self.pending_on(k)).take(EXPIRIES_PER_STEP).cloned().collect();
        let mut out = Vec::new();
        for key in due {
            let wid = WriteId((u128::from(node.instance.nonce) << 64) | u128::from(self.ver_ctr.0.saturating_add(1)));
            match self.issue(node, now, Vec::new(), key, Value::Tombstone, wid, None, None) {
                Ok(sent) => out.extend(sent),
                // The window is full: the rest wait for the next step.
                Err(_) => break,
            }
        }
        out.extend(expiry_due(node, now).map(|at| self.arm_expiry(at)));
        out
    }

    /// Arms the expiry timer for the earliest expiry, when the memory holds
    /// a record that expires before the timer fires (a write committed,
    /// gossip merged, the coordinator became ready); run after every step.
    /// A record expired already (committed or merged after its expiry) is
    /// looked at within a retry interval, not at the timer armed for a
    /// later one (which may be days away).
    pub(in super::super) fn expiry_timer(&mut self, node: &Node, now: Millis) -> Option<Output> {
        if self.phase != Phase::Ready {
            return None;
        }
        let at = expiry_due(node, now)?;
        let sooner = self.expiry_armed.is_none_or(|armed| at < armed);
        sooner.then(|| self.arm_expiry(at))
    }

    fn arm_expiry(&mut self, at: Millis) -> Output {
        self.expiry_armed = Some(at);
        Output::SetTimer { timer: Timer::Expire, at }
    }
}

/// When the expiry timer must fire: at the earliest expiry; or, if that
/// has passed (what is due waits for its key's pending write, or for room,
/// or was merged expired), a retry interval from `now`, so that a timer
/// armed by this rule at every step never fires without progress in
/// between.
fn expiry_due(node: &Node, now: Millis) -> Option<Millis> {
    node.mem.next_expiry().map(|at| if at > now { at } else { now.plus(node.config.retry_ms) })
}

/// Every conditional write waiting: blocked, or for a confirmation.
fn conds<'a>(blocked: &'a mut [CondWrite], confirms: &'a mut Confirms) -> impl Iterator<Item = &'a mut CondWrite> {
    let waiting = confirms.asked.iter_mut().flatten().chain(confirms.next.iter_mut());
    let confirming = waiting.filter_map(|w| match w {
        Waiter::Cond(c) => Some(c),
        Waiter::Read { .. } | Waiter::List { .. } => None,
    });
    blocked.iter_mut().chain(confirming)
}
