//! HandoffCond's side of the implementation model: the clients'
//! conditional writes, times to live and listings, the clock, the
//! coordinator's expiry deletes, the ghost history they need (which writes
//! were issued on which condition, when each record expires), the checks on
//! what the code answers, and the code steps that are several spec steps.

use protocol::handoff::coordinator::Pending;
use protocol::handoff::{
    Body, ClientRequestId, Cond as Condition, Epoch, Input, Instance, Key, List, Millis, Output, Record, Replica,
    RoleView, Stamp, Tag, Timer, Value, Version, WriteId, WriteReply,
};

use super::map::{Expiries, rec, spec_wid};
use super::model::{HandoffImpl, READS_LINEARIZABLE, Target};
use super::state::{ImplAction, ImplState};
use crate::mirror::handoff::{AckedW, Val};
use crate::mirror::handoff_cond::{ABSENT, CondAction, CondState, CondW, ExpIssued, Issued};
use crate::mirror::handoff_reads::{self, Read as SpecRead};
use crate::mirror::handoff_roll::{RollAction, RollState};

/// HandoffCond's invariants, checked on what the code answers.
pub(super) const COND_LINEARIZABLE: &str = "CondLinearizable";
pub(super) const EXPIRED_NEVER_SERVED: &str = "ExpiredNeverServed";

/// Client request ids of listings start here, above every read's.
const FIRST_LIST: u64 = 1 << 24;

/// Spec steps one code step may take at once: a conditional write issued
/// as it arrives (`CondStart`, `CondIssue`), a commit that lets the
/// conditional writes waiting for it go (`CommitWriteC`, then `CondIssue`
/// or `CondFail` each), a confirmation that answers reads, listings and
/// conditions (`ReadFinishC`, `CondIssue`, `CondFail` each), a listing
/// (`ReadStartC` per key), the expiry of several keys (`Expire` each).
const COMPOSITE: [&str; 9] = [
    "CommitWriteC",
    "ZombieCommitC",
    "ReadStartC",
    "ReadFinishC",
    "CondStart",
    "CondIssue",
    "CondFail",
    "Expire",
    "ClientWriteC",
];

impl HandoffImpl {
    /// The environment's HandoffCond steps: conditional writes, listings,
    /// the clock and the expiry timer.
    pub(super) fn cond_actions(&self, s: &ImplState, out: &mut Vec<ImplAction>) {
        let keys = 0..self.keys.len();
        if s.wid_ctr <= self.max_writes && s.cond.cond_ctr < self.spec.cond().max_conds() {
            let conds: Vec<u8> = std::iter::once(ABSENT).chain(s.acked.iter().map(|w| w.wid)).collect();
            for key in keys.clone() {
                for &cond in &conds {
                    for ttl in self.ttls_for(s.wid_ctr) {
                        out.push(ImplAction::CondPut { key, cond, ttl });
                        out.extend((0..s.zombies.len()).map(|zombie| ImplAction::ZombieCondPut {
                            zombie,
                            key,
                            cond,
                            ttl,
                        }));
                    }
                }
            }
        }
        if s.list_ctr < self.max_lists && usize::from(s.read_ctr) + self.keys.len() <= usize::from(self.max_reads) {
            out.push(ImplAction::List);
            out.extend((0..s.zombies.len()).map(|zombie| ImplAction::ZombieList { zombie }));
        }
        if self.spec.cond().max_time() > 0 {
            out.push(ImplAction::Timer(self.coordinator, Timer::Expire));
            if s.cond.now < self.spec.cond().max_time() {
                out.push(ImplAction::Tick);
            }
        }
    }

    /// HandoffCond's `TTLsFor(w)`.
    pub(super) fn ttls_for(&self, wid: u8) -> Vec<u8> {
        let mut ttls = vec![0];
        if !self.deletes.contains(&wid) {
            ttls.extend(self.spec.cond().ttls());
        }
        ttls
    }

    /// The time the replicas are told.
    pub(super) fn now(t: &ImplState) -> Millis {
        Millis(u64::from(t.cond.now))
    }

    /// A client write of key number `key` reaches `target`: a PUT with time
    /// to live `ttl`, or a DELETE if its write id is a delete's, with
    /// condition `cond` (HandoffCond's `Absent`, or a write id whose
    /// acknowledged write's tag the client names). Whether the code took it
    /// (refused at once: not ready, superseded; `None`: not enabled).
    pub(super) fn client_write(
        &self,
        t: &mut ImplState,
        target: Target,
        key: usize,
        cond: Option<u8>,
        ttl: u8,
    ) -> Option<bool> {
        let wid = t.wid_ctr;
        if wid > self.max_writes || !self.ttls_for(wid).contains(&ttl) {
            return None;
        }
        let key = self.keys.get(key)?.clone();
        let spec_key = self.spec_key(&key);
        let delete = self.deletes.contains(&wid);
        let condition = match cond {
            None => None,
            Some(ABSENT) if delete => return None,
            Some(ABSENT) => Some(Condition::IfAbsent),
            Some(w) => {
                let acked = t.acked.iter().find(|a| a.wid == w && a.key == spec_key)?;
                let stamp = Stamp { ep: Epoch(acked.ep.into()), ver: Version(acked.ver.into()) };
                Some(Condition::IfMatch(Tag { stamp, wid: WriteId(w.into()) }))
            }
        };
        let req = ClientRequestId(u64::from(wid));
        let instance = self.instance_at(t, target)?;
        if let Some(c) = cond {
            let seen = t.acked.iter().filter(|w| w.key == spec_key).map(|w| w.wid).collect();
            let ep = self.epoch_at(t, target)?;
            let x = CondW { key: spec_key, ep, wid, cond: c, ttl, seen, conf: false };
            t.cond.conds.insert(req.0, (instance, x));
            t.cond.cond_ctr += 1;
        }
        let (id, ttl_ms) = (WriteId(u128::from(wid)), (ttl != 0).then_some(u64::from(ttl)));
        // Empty values: every record costs the same (see the budget).
        let input = if delete {
            let if_match = match condition {
                Some(Condition::IfMatch(tag)) => Some(tag),
                _ => None,
            };
            Input::Delete { req, key, wid: id, if_match }
        } else {
            Input::Put { req, key, value: Vec::new(), wid: id, cond: condition, ttl_ms }
        };
        let out = self.input(t, target, input);
        let pushed = out.iter().any(|o| matches!(o, Output::Send(m) if matches!(m.body, Body::Push { .. })));
        let refused = out.iter().any(|o| {
            matches!(o, Output::Reply { req: r, reply } if r.0 == req.0
                && !matches!(reply, WriteReply::Committed { .. } | WriteReply::PreconditionFailed { .. }))
        });
        let accepted = if cond.is_some() { !refused } else { pushed };
        if accepted {
            t.wid_ctr += 1;
        }
        Some(accepted)
    }

    /// A client listing of every key reaches `target`: one of HandoffReads'
    /// reads per key, answered together; whether the code took it (`None`:
    /// not enabled).
    pub(super) fn client_list(&self, t: &mut ImplState, target: Target) -> Option<bool> {
        let n = u8::try_from(self.keys.len()).ok()?;
        if t.list_ctr >= self.max_lists || t.read_ctr.checked_add(n)? > self.max_reads {
            return None;
        }
        let instance = self.instance_at(t, target)?;
        let ep = self.epoch_at(t, target)?;
        let req = FIRST_LIST + u64::from(t.read_ctr);
        for (i, key) in self.keys.iter().enumerate() {
            let spec_key = self.spec_key(key);
            let seen = t.acked.iter().filter(|w| w.key == spec_key).map(|w| w.wid).collect();
            t.reads.insert(req + i as u64, (instance, SpecRead { key: spec_key, ep, seen, conf: false }));
        }
        t.read_ctr += n;
        t.list_ctr += 1;
        let input = Input::List {
            req: ClientRequestId(req),
            prefix: String::new(),
            after: None,
            limit: self.keys.len(),
            hide: None,
        };
        let refused = self.input(t, target, input).iter().any(
            |o| matches!(o, Output::ListReply { req: r, list } if r.0 == req && !matches!(list, List::Page { .. })),
        );
        Some(!refused)
    }

    /// `Tick`
    pub(super) fn tick(&self, t: &mut ImplState) -> Option<()> {
        (t.cond.now < self.spec.cond().max_time()).then(|| t.cond.now += 1)
    }

    fn instance_at(&self, t: &ImplState, target: Target) -> Option<Instance> {
        match target {
            Target::Current(r) => t.replicas.get(usize::from(r.0)).map(|x| x.instance()),
            Target::Zombie(z) => t.zombies.get(z).map(|x| x.instance()),
        }
    }

    fn epoch_at(&self, t: &ImplState, target: Target) -> Option<u8> {
        let replica = match target {
            Target::Current(r) => t.replicas.get(usize::from(r.0))?,
            Target::Zombie(z) => t.zombies.get(z)?,
        };
        Some(u8::try_from(replica.epoch().0).unwrap_or(u8::MAX))
    }

    /// The record instance `target` holds for `key`, as the spec's memory
    /// has it (with the tombstones its floor collected).
    fn held(&self, t: &ImplState, target: Target, key: &Key) -> Val {
        let (replica, collected) = match target {
            Target::Current(r) => (t.replicas.get(usize::from(r.0)), t.collected.get(usize::from(r.0))),
            Target::Zombie(z) => {
                let zombie = t.zombies.get(z);
                (zombie, zombie.and_then(|x| t.zombie_collected.get(&x.instance())))
            }
        };
        let held = replica.and_then(|x| x.memory().get(key)).or_else(|| collected.and_then(|c| c.get(key)));
        held.map_or(Val::NoVal(self.scale().zombie().no_val()), |r| Val::Rec(rec(r, &t.cond.expiries)))
    }

    /// A write was pushed (`Push` sent by `target`): the ghosts of its
    /// issue. A client's write: its expiry; a conditional one: `CondIssue`,
    /// evaluated against what the instance holds now.
    pub(super) fn on_push(&self, t: &mut ImplState, target: Target, key: &Key, record: &Record) {
        let Ok(wid) = u8::try_from(record.wid.0) else { return };
        if let Some(slot) = usize::from(wid).checked_sub(1).and_then(|i| t.cond.exp_at.get_mut(i)) {
            *slot = record.expires_at.map_or(0, |at| u8::try_from(at.0).unwrap_or(u8::MAX));
        }
        let Some(instance) = self.instance_at(t, target) else { return };
        let issued = t.cond.conds.iter().find(|(_, (i, x))| *i == instance && x.wid == wid).map(|(req, _)| *req);
        if let Some((_, x)) = issued.and_then(|req| t.cond.conds.remove(&req)) {
            let val = self.held(t, target, key);
            t.cond.cond_issued.insert(Issued { wid, val, seen: x.seen });
        }
    }

    /// A failed condition was answered (`CondFail`): it must not be stale.
    pub(super) fn on_failed(&self, t: &mut ImplState, target: Target, req: ClientRequestId) {
        let Some((_, x)) = t.cond.conds.remove(&req.0) else { return };
        let v = self.held(t, target, self.key_of(x.key));
        let read = SpecRead { key: x.key, ep: x.ep, seen: x.seen, conf: x.conf };
        if handoff_reads::stale(&t.acked, &self.deletes, &read, v) {
            t.violation = Some(COND_LINEARIZABLE);
        }
    }

    /// The coordinator issued expiry deletes (pushes of write ids it
    /// derived): each takes the next spec write id, which must be a
    /// delete's (HandoffCond's `Expire`); `None` if one cannot.
    pub(super) fn on_expiries(&self, t: &mut ImplState, out: &[Output]) -> Option<()> {
        for o in out {
            let Output::Send(m) = o else { continue };
            let Body::Push { key, record, .. } = &m.body else { continue };
            if u8::try_from(record.wid.0).is_ok() || t.cond.expiries.contains_key(&record.wid) {
                continue;
            }
            let wid = t.wid_ctr;
            if wid > self.max_writes || !self.deletes.contains(&wid) {
                return None;
            }
            let Val::Rec(val) = self.held(t, Target::Current(self.coordinator), key) else { return None };
            t.cond.expiries.insert(record.wid, wid);
            t.cond.exp_issued.insert(ExpIssued { wid, val, at: t.cond.now });
            t.wid_ctr += 1;
        }
        Some(())
    }

    /// An expiry delete answers no client, yet its commit is HandoffCond's
    /// `CommitWriteC` (or a zombie's `ZombieCommitC`), which acknowledges
    /// it: each of `before` that `target` committed in this step.
    pub(super) fn expiry_commits(&self, t: &mut ImplState, target: Target, before: Vec<(Key, Record)>) {
        let Some(replica) = (match target {
            Target::Current(r) => t.replicas.get(usize::from(r.0)),
            Target::Zombie(z) => t.zombies.get(z),
        }) else {
            return;
        };
        let RoleView::Coordinator(c) = replica.role() else { return };
        let committed: Vec<(Key, Record)> = before
            .into_iter()
            .filter(|(key, r)| {
                !c.pending().any(|p| p.record == *r) && replica.memory().get(key).is_some_and(|m| m == r)
            })
            .collect();
        for (key, r) in committed {
            // A zombie is no replica: its commit is backed by the replicas
            // that hold the write, if any (as in `perform`).
            let doomed =
                matches!(target, Target::Zombie(_)) && !t.replicas.iter().any(|x| x.memory().holds(&key, r.stamp));
            let w = rec(&r, &t.cond.expiries);
            t.acked.insert(AckedW { key: self.spec_key(&key), ep: w.ep, ver: w.ver, wid: w.wid, doomed });
        }
    }

    /// `ReadFinishC` of a read the code answered with `answer` (`None`:
    /// absent): no older than the read may return (HandoffReads' `Stale` on
    /// the record the instance holds), and not expired
    /// (`ExpiredNeverServed`). Returns the check it violates.
    pub(super) fn check_read(
        &self,
        t: &ImplState,
        target: Target,
        r: &SpecRead,
        answer: Option<&Record>,
    ) -> Option<&'static str> {
        let now = Self::now(t);
        let held = self.held(t, target, self.key_of(r.key));
        let v = match answer {
            Some(rec_) if !rec_.is_tombstone() && rec_.expired(now) => return Some(EXPIRED_NEVER_SERVED),
            Some(rec_) => Val::Rec(rec(rec_, &t.cond.expiries)),
            // Absent: what the instance holds must read as absent.
            None => {
                let visible = match held {
                    Val::Rec(h) => {
                        let expired = t
                            .cond
                            .exp_at
                            .get(usize::from(h.wid).saturating_sub(1))
                            .is_some_and(|&at| at != 0 && at <= t.cond.now);
                        self.scale().ops().is_tomb(held) || expired
                    }
                    Val::NoVal(_) => false,
                };
                if matches!(held, Val::Rec(_)) && !visible {
                    return Some(READS_LINEARIZABLE);
                }
                held
            }
        };
        handoff_reads::stale(&t.acked, &self.deletes, r, v).then_some(READS_LINEARIZABLE)
    }

    /// A listing was answered: `ReadFinishC` of each key's read.
    pub(super) fn on_list(&self, t: &mut ImplState, target: Target, req: ClientRequestId, list: &List) {
        let List::Page { entries, .. } = list else { return };
        for (i, key) in self.keys.iter().enumerate() {
            let Some((_, r)) = t.reads.remove(&(req.0 + i as u64)) else { continue };
            let entry = entries.iter().find(|e| e.key == *key);
            let answer = entry.map(|e| Record {
                stamp: e.tag.stamp,
                wid: e.tag.wid,
                value: Value::Bytes(vec![0; e.bytes]),
                expires_at: e.expires_at,
                fp: None,
            });
            if let Some(violation) = self.check_read(t, target, &r, answer.as_ref()) {
                t.violation = Some(violation);
            }
        }
    }

    /// Every record any instance holds expires when the spec says its write
    /// does (`expAt`): the expiry travels with the record, through
    /// recoveries too.
    pub(super) fn expiries_kept(&self, t: &ImplState) -> bool {
        let at = |r: &Record| r.expires_at.map_or(0, |m| u8::try_from(m.0).unwrap_or(u8::MAX));
        t.replicas.iter().chain(&t.zombies).all(|x| {
            x.memory().iter().all(|(_, r)| {
                let wid = spec_wid(r.wid, &t.cond.expiries);
                t.cond.exp_at.get(usize::from(wid).saturating_sub(1)).is_none_or(|&e| e == at(r))
            })
        })
    }

    /// The code step from `s` to `t` as several spec steps (`COMPOSITE`),
    /// in some order; the state after them, if one reaches `t`.
    pub(super) fn composite(&self, s: &RollState, t: &RollState) -> Option<RollState> {
        // HandoffRoll's wrappers keep HandoffCond's positions.
        let names = CondAction::NAMES;
        let allowed = |a: &RollAction| COMPOSITE.contains(&names[a.kind()]);
        let mut stack = vec![(s.clone(), 0usize)];
        let depth = 2 + 2 * self.keys.len() + usize::from(self.max_reads) + usize::from(self.spec.cond().max_conds());
        while let Some((u, d)) = stack.pop() {
            if d > 0 && u.eq_unmarked(t) {
                return Some(u);
            }
            if d == depth {
                continue;
            }
            let mut next = Vec::new();
            self.spec.next(&u, &mut next);
            for a in next.iter().filter(|a| allowed(a)) {
                if let Some(v) = self.spec.step(&u, a) {
                    stack.push((v, d + 1));
                }
            }
        }
        None
    }

    /// HandoffCond's variables, mapped.
    pub(super) fn map_cond(&self, s: &ImplState, reads: handoff_reads::ReadsState) -> CondState {
        CondState {
            reads,
            now: s.cond.now,
            exp_at: s.cond.exp_at.iter().copied().collect(),
            conds: s.cond.conds.values().map(|(_, x)| x.clone()).collect(),
            cond_ctr: s.cond.cond_ctr,
            cond_issued: s.cond.cond_issued.clone(),
            exp_issued: s.cond.exp_issued.clone(),
            bad_cond: false,
            served_expired: false,
        }
    }

    /// The conditional writes waiting at an instance that is gone are never
    /// answered.
    pub(super) fn prune_conds(&self, t: &mut ImplState, live: impl Fn(Instance) -> bool) {
        t.cond.conds.retain(|_, (i, _)| live(*i));
    }
}

/// The expiry deletes pending at `replica` (a coordinator instance).
pub(super) fn expiries_pending(expiries: &Expiries, replica: &Replica) -> Vec<(Key, Record)> {
    let RoleView::Coordinator(c) = replica.role() else { return Vec::new() };
    let expiry = |p: &&Pending| expiries.contains_key(&p.record.wid);
    c.pending().filter(expiry).map(|p| (p.key.clone(), p.record.clone())).collect()
}
