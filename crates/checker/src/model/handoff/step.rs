//! The implementation model's transitions. Replicas step only through
//! `Replica::handle`; everything else here is the environment (clients,
//! network, timers, the platform's evictions and supersessions) and the
//! ghost bookkeeping.

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::handoff::coordinator::Phase;
use protocol::handoff::peer::PeerStatus;
use protocol::handoff::{
    Body, ClientRequestId, Input, Instance, Message, Millis, Output, Read, Replica, ReplicaId, RoleView, Status, Tag,
    Timer, WriteReply,
};

use super::cond::expiries_pending;
use super::map::{small, takes_chunk, waits_for};
use super::state::{ImplAction, ImplState, msg_key};
use super::{HandoffImpl, liveness};
use crate::mirror::handoff::AckedW;
use crate::mirror::handoff_cond::CondAction;
use crate::mirror::handoff_reads::{self, Wids};

/// The time of first boot. Afterwards time advances only by `Tick`
/// (HandoffCond's clock, which expiry needs): timers fire whenever the
/// model chooses, which covers every timing; deadlines are the host's
/// business.
pub(super) const NOW: Millis = Millis(0);

/// Which instance a step runs on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Current(ReplicaId),
    Zombie(usize),
}

/// Names of the implementation-level checks (besides the spec's own).
pub(super) const REFINEMENT: &str = "Refinement";
pub(super) const NO_PROTOCOL_ERROR: &str = "NoProtocolError";
pub(super) const COORDINATOR_NEVER_FENCED: &str = "CurrentCoordinatorNeverFenced";
/// HandoffReads' invariant, checked on what the real code answers.
pub(super) const READS_LINEARIZABLE: &str = "ReadsLinearizable";

/// Client read ids start here, above every write's.
const FIRST_READ: u64 = 1 << 16;

impl HandoffImpl {
    pub(super) fn next_actions(&self, s: &ImplState, out: &mut Vec<ImplAction>) {
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
            out.extend(self.replica_ids.iter().map(|&r| ImplAction::Evict(r)));
            if s.supersedes < self.max_zombies {
                out.push(ImplAction::Supersede);
            }
        }
        self.cond_actions(s, out);
    }

    /// The successor of `s` by `action`; `None` where the action is not
    /// enabled or changes nothing.
    pub(super) fn step(&self, s: &ImplState, action: &ImplAction) -> Option<ImplState> {
        let mut t = s.clone();
        t.violation = None;
        let c = self.coordinator;
        match action {
            ImplAction::Put { key, ttl } => self.client_write(&mut t, Target::Current(c), *key, None, *ttl)?,
            ImplAction::ZombiePut { zombie, key, ttl } => {
                self.client_write(&mut t, Target::Zombie(*zombie), *key, None, *ttl)?
            }
            ImplAction::CondPut { key, cond, ttl } => {
                self.client_write(&mut t, Target::Current(c), *key, Some(*cond), *ttl)?
            }
            ImplAction::ZombieCondPut { zombie, key, cond, ttl } => {
                self.client_write(&mut t, Target::Zombie(*zombie), *key, Some(*cond), *ttl)?
            }
            ImplAction::List => self.client_list(&mut t, Target::Current(c))?,
            ImplAction::ZombieList { zombie } => self.client_list(&mut t, Target::Zombie(*zombie))?,
            ImplAction::Tick => self.tick(&mut t)?,
            ImplAction::Timer(r, Timer::Expire) => {
                let out = self.input(&mut t, Target::Current(*r), Input::Timer(Timer::Expire));
                self.on_expiries(&mut t, &out)?;
            }
            ImplAction::Read { key } => self.client_read(&mut t, Target::Current(c), *key)?,
            ImplAction::ZombieRead { zombie, key } => self.client_read(&mut t, Target::Zombie(*zombie), *key)?,
            ImplAction::Deliver(m) => {
                let target = self.route(&t, m)?;
                self.input(&mut t, target, Input::Message((**m).clone()));
            }
            ImplAction::Timer(r, timer) => {
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
        }
        // MaxGossip: digests and records are sent while fewer exist.
        let gossip = self.gossip_count(s);
        if self.gossip_count(&t) > gossip && gossip >= usize::from(self.max_gossip) {
            return None;
        }
        // A fenced zombie does nothing ever again.
        t.zombies.retain(|z| !matches!(z.role(), RoleView::Coordinator(zc) if *zc.phase() == Phase::Fenced));
        let zombies = &t.zombies;
        t.zombie_collected.retain(|i, _| zombies.iter().any(|z| z.instance() == *i));
        self.prune(&mut t);
        if t == *s {
            return None;
        }
        t.mapped = Arc::new(self.map(&t));
        self.check_step(s, action, &mut t);
        Some(t)
    }

    /// `ReadStart`: a client read reaches `target`, which records the
    /// writes of its key acknowledged so far; `None` if it was refused at
    /// once (not ready, superseded).
    fn client_read(&self, t: &mut ImplState, target: Target, key: usize) -> Option<()> {
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
        (!refused).then_some(())
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
                Output::Send(m) if m.body == Body::Heartbeat => self.heartbeat(t, m),
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
                Output::Reply { .. } => {}
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

    /// A heartbeat changes nothing at its receiver (checked here), so it
    /// is delivered at once instead of multiplying network states.
    fn heartbeat(&self, t: &mut ImplState, m: &Message) {
        let now = Self::now(t);
        let Some(r) = t.replicas.get_mut(usize::from(m.to.0)).map(Arc::make_mut) else { return };
        let before = r.clone();
        match r.handle(now, Input::Message(m.clone())) {
            Ok(out) if out.is_empty() && *r == before => {}
            _ => t.violation = Some(NO_PROTOCOL_ERROR),
        }
    }

    /// The platform evicts `r`: the spec's `Evict(r)` guard, the doomed
    /// stamps, a fresh instance booted. Returns the old instance.
    fn evict(&self, t: &mut ImplState, r: ReplicaId) -> Option<Arc<Replica>> {
        let i = usize::from(r.0);
        let others_ready = t.replicas.iter().any(|x| x.me() != r && is_ready(x));
        if !(t.evict_count < self.max_evicts && others_ready) {
            return None;
        }
        let spec = &t.mapped.reads.scale.ext.base;
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

    /// Drops messages whose delivery can change nothing, ever ([`useless`]):
    /// a smaller network, the same behaviours.
    fn prune(&self, t: &mut ImplState) {
        let gone: Vec<u64> =
            t.net.iter().filter(|(_, m)| useless(&t.replicas, &t.zombies, m)).map(|(k, _)| *k).collect();
        for k in gone {
            t.net.remove(&k);
        }
        // The reads of an instance that is gone will never be answered.
        let live = |r: ReplicaId, i| live(&t.replicas, &t.zombies, r, i);
        let gone: Vec<u64> =
            t.reads.iter().filter(|(_, (i, _))| !live(self.coordinator, *i)).map(|(req, _)| *req).collect();
        for req in gone {
            t.reads.remove(&req);
        }
        let (replicas, zombies) = (t.replicas.clone(), t.zombies.clone());
        self.prune_conds(t, |i| super::step::live(&replicas, &zombies, self.coordinator, i));
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
            let matching = |a: &CondAction| self.spec.step(&s.mapped, a).filter(|u| u.eq_unmarked(&t.mapped));
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
                    Arc::make_mut(&mut t.mapped).reads.scale.ext.base.served_regression =
                        u.reads.scale.ext.base.served_regression
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
            self.scale().ops().concrete(&t.mapped.reads.scale, self.spec_replica(r)) == stored
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

/// Whether instance `i` of replica `r` is current or a zombie.
pub(super) fn live(replicas: &[Arc<Replica>], zombies: &[Arc<Replica>], r: ReplicaId, i: Instance) -> bool {
    replicas.get(usize::from(r.0)).is_some_and(|x| x.instance() == i)
        || zombies.iter().any(|z| z.me() == r && z.instance() == i)
}

/// Whether delivering `m` can change nothing, ever, given the current
/// instances and the zombies: a reply to an instance that is gone (except
/// acks, which the spec keeps) or that no longer waits for it, or a
/// request whose reply would be such.
pub(crate) fn useless(replicas: &[Arc<Replica>], zombies: &[Arc<Replica>], m: &Message) -> bool {
    let live = |r: ReplicaId, i| live(replicas, zombies, r, i);
    let current = |r: ReplicaId| replicas.get(usize::from(r.0)).map(|x| &**x);
    let cursor_of = |x: &Replica, src: ReplicaId| match x.role() {
        RoleView::Coordinator(c) => match c.phase() {
            Phase::Collect { cursors, .. } => cursors.get(&src).cloned(),
            _ => None,
        },
        RoleView::Peer(p) => match p.peer_status() {
            PeerStatus::Recovering { cursors, .. } => cursors.get(&src).cloned(),
            PeerStatus::Ready => None,
        },
    };
    // Whether instance `i` of `r` (current or zombie) waits for confirm round `round`.
    let confirming = |r: ReplicaId, i: Instance, round: u64| {
        let waits = |x: &Replica| {
            x.instance() == i && matches!(x.role(), RoleView::Coordinator(c) if c.confirming() == Some(round))
        };
        current(r).is_some_and(waits) || zombies.iter().any(|z| z.me() == r && waits(z))
    };
    match &m.body {
        Body::PushAck { .. } => false,
        Body::AnnounceAck { instance, .. } => !live(m.to, *instance),
        Body::CollectReply { instance, chunk, .. } | Body::ReseedReply { instance, chunk, .. } => {
            !live(m.to, *instance)
                || current(m.to).is_some_and(|x| x.instance() == *instance && !takes_chunk(x, m.from, chunk.after.as_ref()))
        }
        // A coordinator's decline still fences a recovering peer that no
        // longer waits for it (the collect fence, HandoffReads).
        Body::ReseedDecline { instance, .. } => {
            !live(m.to, *instance)
                || current(m.to).is_some_and(|x| {
                    let from_coordinator = current(m.from).is_some_and(|f| matches!(f.role(), RoleView::Coordinator(_)));
                    x.instance() == *instance && !waits_for(x, m.from) && !(from_coordinator && is_recovering(x))
                })
        }
        Body::CollectDecline { instance, round, .. } => {
            !live(m.to, *instance)
                || current(m.to).is_some_and(|x| {
                    x.instance() == *instance
                        && !matches!(x.role(), RoleView::Coordinator(c)
                            if matches!(c.phase(), Phase::Collect { round: now, collected, .. } if now == round && !collected.contains(&m.from)))
                })
        }
        Body::PushRefused { instance, .. } | Body::AnnounceRefused { instance, .. } | Body::ConfirmRefused { instance, .. } => {
            !live(m.to, *instance)
        }
        // A confirm round matters while its instance waits for it.
        Body::Confirm { instance, round, .. } => !confirming(m.from, *instance, *round),
        Body::Confirmed { instance, round, .. } => !confirming(m.to, *instance, *round),
        Body::Collect { instance, after, .. } | Body::Reseed { instance, after } => current(m.from)
            .is_none_or(|x| x.instance() != *instance || !waits_for(x, m.to) || cursor_of(x, m.to) != *after),
        Body::Push { .. } | Body::Announce { .. } | Body::Digest { .. } | Body::Records { .. } | Body::Heartbeat => false,
    }
}

pub(super) fn is_ready(r: &Replica) -> bool {
    r.status().status == Status::Ready
}

/// A peer still recovering (the only role with that status).
pub(super) fn is_recovering(r: &Replica) -> bool {
    r.status().status == Status::Recovering
}
