//! The implementation model's transitions. Replicas step only through
//! `Replica::handle`; everything else here is the environment (clients,
//! network, timers, the platform's evictions and supersessions) and the
//! ghost bookkeeping.
//!
//! Reductions (`Reduction::On`, the default): the model drops what it
//! argues can change nothing, ever -- messages whose delivery cannot
//! ([`useless`]), heartbeats (delivered at once, their receiver checked
//! unchanged), fenced zombies. With `--no-reduction` it keeps all of them
//! and checks the argument on every state it reaches (`ReductionSound`):
//! delivering such a message, or stepping such a zombie, must leave the
//! state the reduced model would have unchanged. Both ways, a client
//! request the code refuses must change nothing, as the model drops it.
//! With `Reduction::KeepOne` it drops them, except that any one step may
//! keep what it would drop, and then what follows from that ([`keep_one`]
//! says why that covers the whole unreduced graph), and checks the same.
//!
//! [`keep_one`]: HandoffImpl::keep_one

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::handoff::coordinator::Phase;
use protocol::handoff::peer::PeerStatus;
use protocol::handoff::{
    Body, ClientRequestId, Input, Message, Millis, Output, Read, Replica, ReplicaId, RoleView, Status, Tag, Timer,
    WriteReply,
};

use super::cond::expiries_pending;
use super::liveness;
use super::map::small;
use super::model::{HandoffImpl, Target};
use super::prune::useless;
use super::state::{ImplAction, ImplState, msg_key};
use super::view::{is_ready, live};
use crate::cfg::Reduction;
use crate::mirror::handoff::AckedW;
use crate::mirror::handoff_reads::{self, Wids};
use crate::mirror::handoff_roll::RollAction;

/// The time of first boot. Afterwards time advances only by `Tick`
/// (HandoffCond's clock, which expiry needs): timers fire whenever the
/// model chooses, which covers every timing; deadlines are the host's
/// business.
pub(super) const NOW: Millis = Millis(0);

/// Names of the implementation-level checks (besides the spec's own).
pub(super) const REFINEMENT: &str = "Refinement";
pub(super) const NO_PROTOCOL_ERROR: &str = "NoProtocolError";
pub(super) const COORDINATOR_NEVER_FENCED: &str = "CurrentCoordinatorNeverFenced";
/// What the model drops changed something: a message it prunes, a
/// heartbeat, a fenced zombie, a refused client request.
pub(super) const REDUCTION_SOUND: &str = "ReductionSound";

/// Client read ids start here, above every write's.
const FIRST_READ: u64 = 1 << 16;

impl HandoffImpl {
    pub(super) fn next_actions(&self, s: &ImplState, out: &mut Vec<ImplAction>) {
        let first = out.len();
        if s.wid_ctr <= self.max_writes {
            for ttl in self.ttls_for(s.wid_ctr) {
                out.extend((0..self.keys.len()).map(|key| ImplAction::Put { key, ttl }));
                for zombie in 0..s.zombies.len() {
                    out.extend((0..self.keys.len()).map(|key| ImplAction::ZombiePut { zombie, key, ttl }));
                }
            }
        }
        if s.read_ctr < self.max_reads {
            out.extend((0..self.keys.len()).map(|key| ImplAction::Read { key }));
            for zombie in 0..s.zombies.len() {
                out.extend((0..self.keys.len()).map(|key| ImplAction::ZombieRead { zombie, key }));
            }
        }
        out.extend(s.net.values().map(|m| ImplAction::Deliver(Arc::clone(m))));
        if self.reduction.checks_argument() {
            out.extend(self.heartbeats(s).into_iter().map(ImplAction::Deliver));
        }
        // Timers fire whenever the model chooses -- also when the replica
        // has not armed them, a superset of what a host does (a replica's
        // timer handlers are idempotent retries and internal steps).
        let gossip = !self.gossip_when_done || liveness::environment_done(self, s);
        for &r in &self.replica_ids {
            out.extend([Timer::Retry, Timer::Heartbeat].map(|t| ImplAction::Timer(r, t)));
            if gossip {
                out.push(ImplAction::Timer(r, Timer::Gossip));
            }
        }
        if s.evict_count < self.max_evicts {
            out.extend(self.replica_ids.iter().filter(|&&r| self.may_evict(s, r)).map(|&r| ImplAction::Evict(r)));
            if s.supersedes < self.max_zombies && !self.rolling {
                out.push(ImplAction::Supersede);
            }
        }
        self.cond_actions(s, out);
        if self.reduction == Reduction::KeepOne && !s.kept {
            let keeping: Vec<_> = out[first..].iter().map(|a| ImplAction::Keep(Box::new(a.clone()))).collect();
            out.extend(keeping);
        }
    }

    /// The successor of `s` by `action`; `None` where the action is not
    /// enabled or changes nothing.
    pub(super) fn step(&self, s: &ImplState, action: &ImplAction) -> Option<ImplState> {
        let (action, keep) = match action {
            ImplAction::Keep(a) => (&**a, true),
            a => (a, false),
        };
        let mut t = s.clone();
        t.violation = None;
        let c = self.coordinator;
        // A step the reduced model would not take (unreduced runs only).
        let mut dropped = false;
        match action {
            ImplAction::Put { key, ttl } => {
                let accepted = self.client_write(&mut t, Target::Current(c), *key, None, *ttl);
                self.refused(s, &mut t, accepted)?;
            }
            ImplAction::ZombiePut { zombie, key, ttl } => {
                dropped = self.fenced_zombie(s, *zombie);
                let accepted = self.client_write(&mut t, Target::Zombie(*zombie), *key, None, *ttl);
                self.refused(s, &mut t, accepted)?;
            }
            ImplAction::CondPut { key, cond, ttl } => {
                let accepted = self.client_write(&mut t, Target::Current(c), *key, Some(*cond), *ttl);
                self.refused(s, &mut t, accepted)?;
            }
            ImplAction::ZombieCondPut { zombie, key, cond, ttl } => {
                dropped = self.fenced_zombie(s, *zombie);
                let accepted = self.client_write(&mut t, Target::Zombie(*zombie), *key, Some(*cond), *ttl);
                self.refused(s, &mut t, accepted)?;
            }
            ImplAction::List => {
                let accepted = self.client_list(&mut t, Target::Current(c));
                self.refused(s, &mut t, accepted)?;
            }
            ImplAction::ZombieList { zombie } => {
                dropped = self.fenced_zombie(s, *zombie);
                let accepted = self.client_list(&mut t, Target::Zombie(*zombie));
                self.refused(s, &mut t, accepted)?;
            }
            ImplAction::Tick => self.tick(&mut t)?,
            ImplAction::Timer(r, Timer::Expire) => {
                let out = self.input(&mut t, Target::Current(*r), Input::Timer(Timer::Expire));
                self.on_expiries(&mut t, &out)?;
            }
            ImplAction::Read { key } => {
                let accepted = self.client_read(&mut t, Target::Current(c), *key);
                self.refused(s, &mut t, accepted)?;
            }
            ImplAction::ZombieRead { zombie, key } => {
                dropped = self.fenced_zombie(s, *zombie);
                let accepted = self.client_read(&mut t, Target::Zombie(*zombie), *key);
                self.refused(s, &mut t, accepted)?;
            }
            ImplAction::Deliver(m) => {
                let target = self.route(&t, m)?;
                // (A message to a fenced zombie is one the reductions drop.)
                dropped = self.reduction.checks_argument() && self.reductions_drop(s, m);
                self.input(&mut t, target, Input::Message((**m).clone()));
            }
            ImplAction::Timer(r, timer) => {
                dropped = self.reduction.checks_argument() && *timer == Timer::Heartbeat;
                self.input(&mut t, Target::Current(*r), Input::Timer(*timer));
            }
            ImplAction::Evict(r) => {
                self.evict(&mut t, *r)?;
            }
            ImplAction::Supersede => {
                if !(is_ready(&t.replicas[usize::from(c.0)]) && t.supersedes < self.max_zombies) {
                    return None;
                }
                let collected = std::mem::take(&mut t.collected[usize::from(c.0)]);
                let old = self.evict(&mut t, c)?;
                if !collected.is_empty() {
                    t.zombie_collected.insert(old.instance(), collected);
                }
                t.zombies.push(old);
                t.supersedes += 1;
            }
            ImplAction::Keep(_) => return None,
        }
        // MaxGossip: digests and records are sent while fewer exist.
        let gossip = self.gossip_count(s);
        if self.gossip_count(&t) > gossip && gossip >= usize::from(self.max_gossip) {
            return None;
        }
        match self.reduction {
            Reduction::On => self.reduce(&mut t),
            Reduction::Off => {}
            // A step on what was kept keeps what follows from it.
            Reduction::KeepOne => {
                t.kept = Reduction::keeping(keep, s.kept, dropped, |new| self.keep_one(s, &mut t, new))?
            }
        }
        forget_gone_reads(self.coordinator, &mut t);
        let (replicas, zombies) = (t.replicas.clone(), t.zombies.clone());
        self.prune_conds(&mut t, |i| live(&replicas, &zombies, self.coordinator, i));
        if t == *s {
            return None;
        }
        t.mapped = Arc::new(self.map(&t));
        if t.violation.is_none()
            && self.reduction.checks_argument()
            && ((dropped && !self.same_when_reduced(s, &t)) || !self.still_dropped(s, &t))
        {
            t.violation = Some(REDUCTION_SOUND);
        }
        self.check_step(s, action, &mut t);
        Some(t)
    }

    /// A client request the code refused (`accepted` is `Some(false)`)
    /// is not a step: it must have changed no replica. `None` when the
    /// step is not taken.
    fn refused(&self, s: &ImplState, t: &mut ImplState, accepted: Option<bool>) -> Option<()> {
        match accepted? {
            true => Some(()),
            false if t.replicas == s.replicas && t.zombies == s.zombies && t.violation.is_none() => None,
            false => {
                t.violation = t.violation.or(Some(REDUCTION_SOUND));
                Some(())
            }
        }
    }

    /// Whether zombie number `z` of `s` is fenced (the reduced model has
    /// dropped it: a fenced instance does nothing ever again).
    fn fenced_zombie(&self, s: &ImplState, z: usize) -> bool {
        s.zombies.get(z).is_some_and(|x| fenced(x))
    }

    /// Whether `m` is one the network of `x` holds to no purpose, the
    /// zombies being `zombies`: a heartbeat, or [`useless`].
    fn droppable(&self, x: &ImplState, zombies: &[Arc<Replica>], m: &Message) -> bool {
        m.body == Body::Heartbeat || useless(&x.replicas, zombies, m, self.settled(x), self.prune_rule)
    }

    /// Whether the reductions drop `m` from `x` (fenced zombies gone
    /// first, so what is sent to or by one goes too).
    fn reductions_drop(&self, x: &ImplState, m: &Message) -> bool {
        let zombies: Vec<_> = x.zombies.iter().filter(|z| !fenced(z)).cloned().collect();
        self.droppable(x, &zombies, m)
    }

    /// The reductions: drops fenced zombies (and their ghosts) and the
    /// messages whose delivery can change nothing, ever ([`useless`]).
    fn reduce(&self, t: &mut ImplState) {
        t.zombies.retain(|z| !fenced(z));
        let zombies = &t.zombies;
        t.zombie_collected.retain(|i, _| zombies.iter().any(|z| z.instance() == *i));
        let gone: Vec<u64> = t.net.iter().filter(|(_, m)| self.droppable(t, &t.zombies, m)).map(|(k, _)| *k).collect();
        for k in gone {
            t.net.remove(&k);
        }
    }

    /// The "ever" of the reductions' argument, checked on every step of an
    /// unreduced run: what the reduced model would drop at `s` (a message,
    /// a fenced zombie) it still drops at `t`. With the check on delivering
    /// what it drops (`same_when_reduced`), every step of the unreduced
    /// model is a step or a stutter of the reduced one.
    fn still_dropped(&self, s: &ImplState, t: &ImplState) -> bool {
        let fenced_in_t = |i| t.zombies.iter().find(|z| z.instance() == i).is_none_or(|z| fenced(z));
        s.net.iter().all(|(k, m)| !self.reductions_drop(s, m) || !t.net.contains_key(k) || self.reductions_drop(t, m))
            && s.zombies.iter().all(|z| !fenced(z) || fenced_in_t(z.instance()))
    }

    /// `Reduction::KeepOne`'s reductions after the step from `s` to `t`:
    /// drops what [`reduce`](Self::reduce) drops, except what `s` already
    /// held of it (its kept step's), and, when `keep_new`, what this step
    /// added to it. Returns whether it kept anything new.
    ///
    /// Why that covers the unreduced model: what the reductions drop from
    /// an unreduced state (messages, fenced zombies) falls into groups, one
    /// per step that first made something droppable, with what the delivery
    /// or the steps of that group later added. No group changes what the
    /// reductions keep (checked: `ReductionSound` on each of its steps),
    /// nor whether another group's members are droppable (a message's
    /// droppability depends on the replicas and on a zombie it is sent by
    /// or to, which is in its group: [`useless`] is given no network; the
    /// generations model, whose rule looks at other messages, checks it,
    /// `DropsIndependent`). So each unreduced state, restricted
    /// to what the reductions keep plus any one group, is a state of this
    /// model, reached by the same steps with that group's step kept; every
    /// step of the unreduced model is a step of this one on each of them.
    fn keep_one(&self, s: &ImplState, t: &mut ImplState, keep_new: bool) -> bool {
        let held = |z: &Replica| s.zombies.iter().any(|x| x.instance() == z.instance() && fenced(x));
        let fresh_zombie = t.zombies.iter().any(|z| fenced(z) && !held(z));
        if !keep_new {
            t.zombies.retain(|z| !fenced(z) || held(z));
            let zombies = &t.zombies;
            t.zombie_collected.retain(|i, _| zombies.iter().any(|z| z.instance() == *i));
        }
        // Droppable with the zombies this model holds: what is sent to or
        // by a kept zombie is its group's, and stays with it.
        let dropped = |x: &ImplState, m: &Message| self.droppable(x, &x.zombies, m);
        let fresh: Vec<u64> = t
            .net
            .iter()
            .filter(|(k, m)| dropped(t, m) && !s.net.get(*k).is_some_and(|m| dropped(s, m)))
            .map(|(k, _)| *k)
            .collect();
        if !keep_new {
            for k in &fresh {
                t.net.remove(k);
            }
        }
        keep_new && (fresh_zombie || !fresh.is_empty())
    }

    /// No replica can boot any more: the eviction budget (which
    /// supersessions spend too) is spent.
    fn settled(&self, t: &ImplState) -> bool {
        t.evict_count >= self.max_evicts
    }

    /// Whether `s` and `t` are one state of the reduced model.
    fn same_when_reduced(&self, s: &ImplState, t: &ImplState) -> bool {
        let (mut s, mut t) = (s.clone(), t.clone());
        self.reduce(&mut s);
        self.reduce(&mut t);
        s == t
    }

    /// `ReadStart`: a client read reaches `target`, which records the
    /// writes of its key acknowledged so far; whether the code took it
    /// (refused at once: not ready, superseded; `None`: not enabled).
    fn client_read(&self, t: &mut ImplState, target: Target, key: usize) -> Option<bool> {
        if t.read_ctr >= self.max_reads {
            return None;
        }
        let replica = match target {
            Target::Current(r) => t.replicas.get(usize::from(r.0))?,
            Target::Zombie(z) => t.zombies.get(z)?,
        };
        let RoleView::Coordinator(c) = replica.role() else { return None };
        let instance = replica.instance();
        let spec_key = self.spec_key(self.keys.get(key)?);
        let seen: Wids = t.acked.iter().filter(|w| w.key == spec_key).map(|w| w.wid).collect();
        let ep = small(c.epoch().0);
        let req = FIRST_READ + u64::from(t.read_ctr);
        t.reads.insert(req, (instance, handoff_reads::Read { key: spec_key, ep, seen, conf: false }));
        t.read_ctr += 1;
        let input = Input::Read { req: ClientRequestId(req), key: self.keys.get(key)?.clone() };
        let refused = self.input(t, target, input).iter().any(
            |o| matches!(o, Output::ReadReply { req: r, read } if r.0 == req && !matches!(read, Read::Committed(_))),
        );
        Some(!refused)
    }

    /// Which instance receives `m`: replies go to the instance that asked
    /// (current or zombie); everything else to the current instance.
    fn route(&self, t: &ImplState, m: &Message) -> Option<Target> {
        let current = t.replicas.get(usize::from(m.to.0))?;
        match m.body.reply_to() {
            None => Some(Target::Current(m.to)),
            Some(i) if current.instance() == i => Some(Target::Current(m.to)),
            Some(i) => t.zombies.iter().position(|z| z.me() == m.to && z.instance() == i).map(Target::Zombie),
        }
    }

    fn instance_mut<'a>(&self, t: &'a mut ImplState, target: Target) -> Option<&'a mut Replica> {
        match target {
            Target::Current(r) => t.replicas.get_mut(usize::from(r.0)).map(Arc::make_mut),
            Target::Zombie(z) => t.zombies.get_mut(z).map(Arc::make_mut),
        }
    }

    /// Runs `input` on `target` and performs the outputs; returns them.
    pub(super) fn input(&self, t: &mut ImplState, target: Target, input: Input) -> Vec<Output> {
        let now = Self::now(t);
        let expiries = t.cond.expiries.clone();
        let Some(replica) = self.instance_mut(t, target) else { return Vec::new() };
        let seeded = match replica.role() {
            RoleView::Peer(p) => match p.peer_status() {
                PeerStatus::Recovering { seeded, .. } => Some(seeded.clone()),
                PeerStatus::Ready => None,
            },
            RoleView::Coordinator(_) => None,
        };
        let before = replica.memory().clone();
        let expiring = expiries_pending(&expiries, replica);
        match replica.handle(now, input) {
            Ok(out) => {
                self.expiry_commits(t, target, expiring);
                if let Target::Current(r) = target {
                    let i = usize::from(r.0);
                    // Ghost: the spec keeps seeded[p] after recovery; the
                    // code does not.
                    if let Some(seeded) = seeded
                        && is_ready(&t.replicas[i])
                    {
                        t.seeded_when_ready[i] = Some(seeded);
                    }
                    // Ghost: what the floor collected, the spec keeps.
                    let now = t.replicas[i].memory();
                    let gone: BTreeMap<_, _> = before
                        .iter()
                        .filter(|(k, _)| now.get(k).is_none())
                        .map(|(k, r)| (k.clone(), r.clone()))
                        .collect();
                    t.collected[i].extend(gone);
                }
                self.perform(t, target, &out);
                out
            }
            Err(_) => {
                t.violation = Some(NO_PROTOCOL_ERROR);
                Vec::new()
            }
        }
    }

    fn perform(&self, t: &mut ImplState, target: Target, out: &[Output]) {
        for o in out {
            match o {
                Output::Send(m) if m.body == Body::Heartbeat => match self.reduction {
                    Reduction::On => self.heartbeat(t, m),
                    // Deliverable from now on, always ([`heartbeats`]).
                    Reduction::Off | Reduction::KeepOne => {}
                },
                Output::Send(m) => {
                    let key = msg_key(m);
                    if let (Body::Digest { .. }, Some(sender)) = (&m.body, self.instance_mut(t, target)) {
                        // Ghost: the memory the digest summarises.
                        let summarised = Arc::new(sender.memory().clone());
                        t.digests.insert(key, summarised);
                    }
                    if let Body::Confirmed { epoch, .. } = m.body {
                        // Ghost, `ConfirmC`: every read and conditional
                        // write waiting at the instance of this epoch is
                        // confirmed from now on.
                        for (_, r) in t.reads.values_mut() {
                            r.conf |= u64::from(r.ep) == epoch.0;
                        }
                        for (_, x) in t.cond.conds.values_mut() {
                            x.conf |= u64::from(x.ep) == epoch.0;
                        }
                    }
                    if let Body::Push { key, record, .. } = &m.body {
                        self.on_push(t, target, key, record);
                    }
                    t.net.insert(key, Arc::new(m.clone()));
                }
                Output::Reply { req, reply: WriteReply::PreconditionFailed { .. } } => self.on_failed(t, target, *req),
                Output::Reply { reply: WriteReply::Committed { key, tag: Tag { stamp, wid }, .. }, .. } => {
                    // A zombie is no replica: its ack is backed by the
                    // replicas that hold the write, if any (HandoffZombie).
                    let doomed = matches!(target, Target::Zombie(_))
                        && !t.replicas.iter().any(|r| r.memory().holds(key, *stamp));
                    t.acked.insert(AckedW {
                        key: self.spec_key(key),
                        ep: small(stamp.ep.0),
                        ver: small(stamp.ver.0),
                        wid: super::map::spec_wid(*wid, &t.cond.expiries),
                        doomed,
                    });
                }
                // Any other answer to a conditional write still waiting
                // (refused: the instance was fenced or superseded) ends it,
                // as the spec drops an ending instance's conditions.
                Output::Reply { req, .. } => {
                    t.cond.conds.remove(&req.0);
                }
                Output::ReadReply { req, read } => {
                    // ReadFinishC: the answer is no older than the read may
                    // return, nor expired (an instance that ends drops its
                    // reads).
                    let Some((_, r)) = t.reads.remove(&req.0) else { continue };
                    if let Read::Committed(held) = read
                        && let Some(violation) = self.check_read(t, target, &r, held.as_ref())
                    {
                        t.violation = Some(violation);
                    }
                }
                Output::ListReply { req, list } => self.on_list(t, target, *req, list),
                Output::SetTimer { .. } => {}
            }
        }
    }

    /// A heartbeat changes nothing at its receiver (checked here, and on
    /// every later state in unreduced runs), so the reduced model delivers
    /// it at once instead of multiplying network states.
    fn heartbeat(&self, t: &mut ImplState, m: &Message) {
        let now = Self::now(t);
        let Some(r) = t.replicas.get_mut(usize::from(m.to.0)).map(Arc::make_mut) else { return };
        let before = r.clone();
        match r.handle(now, Input::Message(m.clone())) {
            Ok(out) if out.is_empty() && *r == before => {}
            Ok(_) => t.violation = Some(REDUCTION_SOUND),
            Err(_) => t.violation = Some(NO_PROTOCOL_ERROR),
        }
    }

    /// Without the reductions, every heartbeat any replica may have sent is
    /// deliverable in every state: from each replica to each other, with
    /// no generation (a booting replica's) or the one a current replica
    /// holds. The heartbeat timer fires in any state and changes no replica
    /// (checked: `ReductionSound`), so a heartbeat the network holds in
    /// some run is one it holds from any state on; keeping them in the
    /// network instead would multiply every state by the subsets of them
    /// sent so far, for the same behaviours.
    fn heartbeats(&self, s: &ImplState) -> Vec<Arc<Message>> {
        let mut generations: Vec<_> = s.replicas.iter().map(|r| r.generation()).collect();
        generations.push(None);
        generations.sort_unstable();
        generations.dedup();
        let mut out = Vec::new();
        for &from in &self.replica_ids {
            for to in self.replica_ids.iter().copied().filter(|&to| to != from) {
                out.extend(generations.iter().map(|&g| Arc::new(Message::new(g, from, to, Body::Heartbeat))));
            }
        }
        out
    }

    /// The platform evicts `r`: the spec's `Evict(r)` guard, the doomed
    /// stamps, a fresh instance booted. Returns the old instance.
    fn evict(&self, t: &mut ImplState, r: ReplicaId) -> Option<Arc<Replica>> {
        let i = usize::from(r.0);
        let others_ready = t.replicas.iter().any(|x| x.me() != r && is_ready(x));
        if !(t.evict_count < self.max_evicts && others_ready && self.may_evict(t, r)) {
            return None;
        }
        let spec = &t.mapped.cond.reads.scale.ext.base;
        let held_elsewhere = |w: &AckedW| {
            self.scale().zombie().replicas().iter().any(|&x| x != self.spec_replica(r) && spec.holds(x, w.write()))
        };
        t.acked = t.acked.iter().map(|w| AckedW { doomed: w.doomed || !held_elsewhere(w), ..*w }).collect();
        t.evict_count += 1;
        t.incarnation[i] += 1;
        t.seeded_when_ready[i] = None;
        t.collected[i].clear();
        let (fresh, out) = self.boot(r, t.incarnation[i]);
        let old = std::mem::replace(&mut t.replicas[i], Arc::new(fresh));
        self.perform(t, Target::Current(r), &out);
        Some(old)
    }

    /// HandoffScale's `Cardinality(digs) + Cardinality(gsp)`.
    fn gossip_count(&self, t: &ImplState) -> usize {
        t.net.values().filter(|m| matches!(m.body, Body::Digest { .. } | Body::Records { .. })).count()
    }

    /// The step maps to a spec step, to several (`composite`), or to a
    /// stutter, and every spec property holds on the mapped state.
    fn check_step(&self, s: &ImplState, action: &ImplAction, t: &mut ImplState) {
        if t.violation.is_some() {
            return;
        }
        if !t.mapped.eq_unmarked(&s.mapped) {
            // The spec steps this one most likely is are tried first; then
            // every spec step. A hint is only an order: a match is a match.
            let matching = |a: &RollAction| self.spec.step(&s.mapped, a).filter(|u| u.eq_unmarked(&t.mapped));
            let matched = self
                .hints(s, action)
                .iter()
                .find_map(matching)
                .or_else(|| {
                    let mut every = Vec::new();
                    self.spec.next(&s.mapped, &mut every);
                    every.iter().find_map(matching)
                })
                .or_else(|| self.composite(&s.mapped, &t.mapped));
            match matched {
                Some(u) => {
                    Arc::make_mut(&mut t.mapped).cond.reads.scale.ext.base.served_regression =
                        u.cond.reads.scale.ext.base.served_regression
                }
                None => {
                    t.violation = Some(REFINEMENT);
                    return;
                }
            }
        }
        // What each replica stores is the spec's `Concrete`: the floor's
        // collections are exactly the spec's.
        let stores_concrete = self.replica_ids.iter().all(|&r| {
            let stored = self.mem(t.replicas[usize::from(r.0)].memory(), &t.cond.expiries);
            self.scale().ops().concrete(&t.mapped.cond.reads.scale, self.spec_replica(r)) == stored
        });
        if !stores_concrete || !self.expiries_kept(t) {
            t.violation = Some(REFINEMENT);
            return;
        }
        let c = &t.replicas[usize::from(self.coordinator.0)];
        if c.status().status == Status::Fenced {
            t.violation = Some(COORDINATOR_NEVER_FENCED);
            return;
        }
        if let Some(name) = self.spec.violated(&t.mapped) {
            t.violation = Some(name);
        }
    }
}

/// The reads of an instance that is gone will never be answered: the ghost
/// forgets them (HandoffReads drops them with the instance).
fn forget_gone_reads(coordinator: ReplicaId, t: &mut ImplState) {
    let gone: Vec<u64> = t
        .reads
        .iter()
        .filter(|(_, (i, _))| !live(&t.replicas, &t.zombies, coordinator, *i))
        .map(|(req, _)| *req)
        .collect();
    for req in gone {
        t.reads.remove(&req);
    }
}

/// A fenced instance does nothing ever again: the reductions drop it.
fn fenced(z: &Replica) -> bool {
    matches!(z.role(), RoleView::Coordinator(c) if *c.phase() == Phase::Fenced)
}
