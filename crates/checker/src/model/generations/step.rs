//! HandoffGenerations' transitions and checks.
//!
//! Reductions (`Reduction::On`): heartbeats are not sent (they change
//! nothing at their receiver) and messages whose delivery can change
//! nothing, ever, are pruned (the implementation model's rule). With
//! `--no-reduction` both stay in the network, and delivering one must
//! leave the state the reduced model would have unchanged
//! (`ReductionSound`). With `Reduction::KeepOne` it drops them, except that
//! any one step may keep what it would drop, and then what follows from
//! that (the implementation model's `keep_one` says why that covers the
//! whole unreduced graph), and checks the same.

use std::collections::HashMap;
use std::sync::Arc;

use protocol::handoff::coordinator::Phase;
use protocol::handoff::{
    Body, ClientRequestId, Generation, HandleError, Input, Key, Message, Output, Replica, ReplicaId, RoleView, Stamp,
    Status, Timer, WriteId, WriteReply,
};

use super::{
    ACKED_IMPLIES_HELD, Acked, DROPS_INDEPENDENT, EPOCH_VER_UNIQUE, GENERATIONS_ISOLATED, GenAction, GenState,
    HandoffGenerations, MINT_ONLY_AFTER_TOTAL_DEATH, NO_PROTOCOL_ERROR, PARTIAL_COLLECT_ONLY_AFTER_TOTAL_DEATH,
    REDUCTION_SOUND,
};
use crate::cfg::Reduction;
use crate::model::handoff::{PruneRule, msg_key, useless};

impl HandoffGenerations {
    pub(super) fn next_actions(&self, s: &GenState, out: &mut Vec<GenAction>) {
        let first = out.len();
        if s.issued.len() < usize::from(self.max_writes) {
            out.extend((0..self.keys.len()).map(|key| GenAction::Put { key }));
        }
        out.extend(s.net.values().map(|m| GenAction::Deliver(Arc::clone(m))));
        if !self.timers_when_quiet || self.quiet(s) {
            for r in 0..3 {
                out.extend([Timer::Retry, Timer::Gossip].map(|t| GenAction::Timer(ReplicaId(r), t)));
            }
        }
        if self.may_evict(s) {
            out.extend((0..3).map(|r| GenAction::Evict(ReplicaId(r))));
        }
        if s.deaths < self.max_deaths {
            out.push(GenAction::TotalDeath);
        }
        if self.reduction == Reduction::KeepOne && !s.kept {
            let keeping: Vec<_> = out[first..].iter().map(|a| GenAction::Keep(Box::new(a.clone()))).collect();
            out.extend(keeping);
        }
    }

    /// No delivery of a message in the network changes anything: only
    /// then do the timers fire where the cfg sets `TimersWhenQuiet`.
    fn quiet(&self, s: &GenState) -> bool {
        s.net.values().all(|m| self.step(s, &GenAction::Deliver(Arc::clone(m))).is_none())
    }

    /// The successor of `s` by `action`; `None` where it is not enabled
    /// or changes nothing.
    pub(super) fn step(&self, s: &GenState, action: &GenAction) -> Option<GenState> {
        let (action, keep) = match action {
            GenAction::Keep(a) => (&**a, true),
            a => (a, false),
        };
        let mut t = s.clone();
        t.violation = None;
        // A delivery the reduced model would not make (unreduced runs).
        let mut dropped = false;
        match action {
            GenAction::Put { key } => self.put(&mut t, *key)?,
            GenAction::Deliver(m) => {
                dropped = self.reduction.checks_argument() && self.dropped(s, m);
                self.input(&mut t, m.to, Input::Message((**m).clone()));
            }
            GenAction::Timer(r, timer) => self.input(&mut t, *r, Input::Timer(*timer)),
            GenAction::Evict(r) => {
                if !self.may_evict(&t) {
                    return None;
                }
                t.evictions += 1;
                self.evict(&mut t, *r);
            }
            GenAction::TotalDeath => {
                let ready: Vec<ReplicaId> =
                    t.replicas.iter().filter(|r| r.phase() == Status::Ready).map(|r| r.me()).collect();
                if t.deaths >= self.max_deaths || ready.is_empty() {
                    return None;
                }
                t.deaths += 1;
                for r in ready {
                    self.evict(&mut t, r);
                }
            }
            GenAction::Keep(_) => return None,
        }
        let gossip = |x: &GenState| {
            x.net.values().filter(|m| matches!(m.body, Body::Digest { .. } | Body::Records { .. })).count()
        };
        if gossip(&t) > gossip(s) && gossip(s) >= usize::from(self.max_gossip) {
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
        if t == *s {
            return None;
        }
        if t.violation.is_none()
            && self.reduction.checks_argument()
            && ((dropped && !self.same_when_reduced(s, &t)) || !self.still_dropped(s, &t))
        {
            t.violation = Some(REDUCTION_SOUND);
        }
        if t.violation.is_none() && self.reduction.checks_argument() && !self.drops_alone(&t) {
            t.violation = Some(DROPS_INDEPENDENT);
        }
        if t.violation.is_none() {
            t.violation = self.check(s, &mut t);
        }
        Some(t)
    }

    /// Puts the messages among `out` into the network; heartbeats only
    /// without the reductions (they change nothing at their receiver).
    pub(super) fn send(&self, t: &mut GenState, out: &[Output]) {
        for o in out {
            if let Output::Send(m) = o
                && (m.body != Body::Heartbeat || self.reduction.checks_argument())
            {
                t.net.insert(msg_key(m), Arc::new(m.clone()));
            }
        }
    }

    /// A single eviction is left, and allowed now.
    fn may_evict(&self, s: &GenState) -> bool {
        s.evictions < self.max_evicts && !(self.evict_before_death && s.deaths > 0)
    }

    fn put(&self, t: &mut GenState, key: usize) -> Option<()> {
        let n = u64::try_from(t.issued.len()).ok()? + 1;
        let c = usize::from(self.coordinator.0);
        let generation = t.replicas.get(c)?.generation();
        let input = Input::Put {
            req: ClientRequestId(n),
            key: self.keys.get(key)?.clone(),
            value: Vec::new(),
            wid: WriteId(n.into()),
            cond: None,
            ttl_ms: None,
        };
        let out = self.run(t, self.coordinator, input);
        if !out.iter().any(|o| matches!(o, Output::Send(m) if matches!(m.body, Body::Push { .. }))) {
            return None;
        }
        t.issued.push(generation);
        Some(())
    }

    fn input(&self, t: &mut GenState, r: ReplicaId, input: Input) {
        self.run(t, r, input);
    }

    /// Runs `input` on the current instance of `r`, performs the outputs.
    fn run(&self, t: &mut GenState, r: ReplicaId, input: Input) -> Vec<Output> {
        let now = Self::now(t);
        let Some(replica) = t.replicas.get_mut(usize::from(r.0)).map(Arc::make_mut) else { return Vec::new() };
        let generation = replica.generation();
        match replica.handle(now, input) {
            Ok(out) => {
                let acked_in = t.replicas[usize::from(r.0)].generation().or(generation);
                self.send(t, &out);
                for o in &out {
                    if let Output::Reply { reply: WriteReply::Committed { key, tag, .. }, .. } = o {
                        t.acked.push(Acked {
                            generation: acked_in,
                            key: key.clone(),
                            stamp: tag.stamp,
                            wid: tag.wid,
                            doomed: false,
                        });
                    }
                }
                out
            }
            // A ghost of a dead generation: refused, nothing changed.
            Err(HandleError::StaleGeneration { .. }) => Vec::new(),
            Err(_) => {
                t.violation = Some(NO_PROTOCOL_ERROR);
                Vec::new()
            }
        }
    }

    /// The platform evicts `r`, whatever the others' state: the writes no
    /// other replica holds are doomed; a fresh instance boots.
    fn evict(&self, t: &mut GenState, r: ReplicaId) {
        let i = usize::from(r.0);
        for w in t.acked.iter_mut().filter(|w| !w.doomed) {
            w.doomed = !t.replicas.iter().any(|x| x.me() != r && holds(x, w));
        }
        t.incarnation[i] += 1;
        let (fresh, out) = self.boot(t, r);
        t.replicas[i] = Arc::new(fresh);
        self.send(t, &out);
    }

    /// The checks on the step from `s` to `t`; dooms the writes of a
    /// generation that died.
    fn check(&self, s: &GenState, t: &mut GenState) -> Option<&'static str> {
        let mut violation = None;
        // A generation held now that was never minted is a mint.
        let new: Vec<Generation> =
            t.replicas.iter().filter_map(|r| r.generation()).filter(|g| !t.minted.contains(g)).collect();
        let c = usize::from(self.coordinator.0);
        if t.replicas[c].instance() != s.replicas[c].instance() {
            t.nobody_ready_since_boot = false;
        }
        if t.replicas.iter().all(|r| r.me() == self.coordinator || r.phase() != Status::Ready) {
            t.nobody_ready_since_boot = true;
        }
        // The coordinator instance chose its epoch without every peer's
        // snapshot (a mint, or going on with what it collected).
        let partial = |r: &Replica| {
            matches!(r.role(), RoleView::Coordinator(co)
                if matches!(co.phase(), Phase::Collect { collected, .. } if collected.len() < self.config.peers().len()))
        };
        if t.replicas[c].instance() == s.replicas[c].instance()
            && partial(&s.replicas[c])
            && t.replicas[c].phase() == Status::Announce
            && !t.nobody_ready_since_boot
        {
            violation = violation.or(Some(PARTIAL_COLLECT_ONLY_AFTER_TOTAL_DEATH));
        }
        for g in new {
            if !t.nobody_ready_since_boot {
                violation = violation.or(Some(MINT_ONLY_AFTER_TOTAL_DEATH));
            }
            // The generations before it died with the namespace.
            for w in t.acked.iter_mut() {
                w.doomed |= w.generation.is_none_or(|wg| wg < g);
            }
            t.minted.insert(g);
        }
        let isolated = t.replicas.iter().all(|r| {
            let Some(g) = r.generation() else { return true };
            r.memory().iter().all(|(_, rec)| {
                let n = usize::try_from(rec.wid.0).unwrap_or(usize::MAX);
                t.issued.get(n.wrapping_sub(1)).copied().flatten() == Some(g)
            })
        });
        if !isolated {
            violation = violation.or(Some(GENERATIONS_ISOLATED));
        }
        if !t.acked.iter().filter(|w| !w.doomed).all(|w| t.replicas.iter().any(|r| holds(r, w))) {
            violation = violation.or(Some(ACKED_IMPLIES_HELD));
        }
        if !epoch_ver_unique(t) {
            violation = violation.or(Some(EPOCH_VER_UNIQUE));
        }
        violation
    }
}

impl HandoffGenerations {
    /// Whether the reduced model drops `m` in `t`: a heartbeat, or a message
    /// whose delivery can change nothing, ever (the implementation model's
    /// rule, [`useless`]) and that may reboot no replica ([`Self::may_reboot`]).
    /// The rule once asked the second of every replica; the unreduced run of
    /// HandoffGenerationsFirstBoot.cfg showed that it then did not drop a
    /// decline its own dropped collect caused.
    /// A request is dropped only once its answer cannot reboot its sender
    /// either ([`Self::answers_may_reboot`]).
    fn dropped(&self, t: &GenState, m: &Message) -> bool {
        let request = matches!(m.body, Body::Collect { .. } | Body::Reseed { .. });
        m.body == Body::Heartbeat
            || (useless(&t.replicas, &[], m, false, PruneRule::Sound)
                && !self.may_reboot(t, m.generation)
                && !(request && self.answers_may_reboot(t)))
    }

    /// Whether an answer may ever reboot the replica it goes to: it carries
    /// the generation its sender holds then, which may be newer than the
    /// asker's. Not once every replica that holds a generation holds the
    /// newest, none may take an older one, and no other can start: no
    /// eviction or death is left, and the coordinator holds one (one that
    /// holds none mints one). (The rule once asked only whether the request
    /// itself may reboot its receiver, the mutation `PruneRequestsByOwnGeneration`:
    /// a late reseed request of a survivor that rejoined the dead generation
    /// was dropped, though a peer of the new one answers it with a decline
    /// that reboots the survivor; the unreduced and the kept-one runs of
    /// large/HandoffGenerationsSurvivor.cfg without writes found it.)
    fn answers_may_reboot(&self, t: &GenState) -> bool {
        let newest = t.replicas.iter().filter_map(|r| r.generation()).max();
        !self.prune_requests_by_own_generation
            && (self.may_evict(t)
                || t.deaths < self.max_deaths
                || t.replicas.get(usize::from(self.coordinator.0)).is_none_or(|c| c.generation().is_none())
                || newest.is_some_and(|g| self.may_reboot(t, Some(g))))
    }

    /// Whether a message of `generation` g may ever reboot its receiver (a
    /// replica of an older generation that hears of a newer one reboots):
    /// while some replica holds an older generation, or may still take one.
    /// An instance that holds none takes the generation of the first reply
    /// to it that it takes (a collect or reseed reply): a dead generation's
    /// late reply can hand a recovering survivor of a total death that
    /// generation after the new one was minted. Once neither holds, no
    /// instance will ever be older again: only a replica older than g sends
    /// a reply older than g, and a reply goes to the instance that asked.
    /// (The rule once asked of the replicas only, the mutation
    /// `PruneByReplicasOnly`, which the runs keeping one step's drops of
    /// large/HandoffGenerationsSurvivor.cfg found; and of the receiver alone
    /// before that, which the unreduced run of
    /// HandoffGenerationsTwoEvicts.cfg found.)
    fn may_reboot(&self, t: &GenState, generation: Option<Generation>) -> bool {
        let Some(theirs) = generation else { return false };
        let older = |g: Option<Generation>| g.is_some_and(|g| g < theirs);
        // A reply the instance it is sent to would take, handing it an older generation.
        let hands_older = |x: &Message| {
            matches!(x.body, Body::CollectReply { .. } | Body::ReseedReply { .. })
                && older(x.generation)
                && t.replicas.get(usize::from(x.to.0)).is_some_and(|r| r.generation().is_none())
                && (self.reboot_by_dropped_replies || !useless(&t.replicas, &[], x, false, PruneRule::Sound))
        };
        t.replicas.iter().any(|r| older(r.generation()))
            || (!self.prune_by_replicas_only && t.net.values().any(|x| hands_older(x)))
    }

    /// The "ever" of the reductions' argument, checked on every step of an
    /// unreduced run: a message the reduced model would drop at `s` it still
    /// drops at `t`.
    fn still_dropped(&self, s: &GenState, t: &GenState) -> bool {
        s.net.iter().all(|(k, m)| !self.dropped(s, m) || !t.net.contains_key(k) || self.dropped(t, m))
    }

    /// The premise of the argument for keeping one step's drops
    /// (`Reduction::KeepOne`), checked on every state of a run that checks
    /// the argument: whether the reductions drop a message depends on what
    /// they keep and on the message, never on another message they drop.
    /// So what one step made droppable stays so, or not, whatever other
    /// steps' drops are still around. (The rule asks about other messages
    /// in one place, `may_reboot`, and only about those it keeps; the
    /// mutation `RebootByDroppedReplies` asks about every reply, and this
    /// fails: `DropsIndependent`.)
    fn drops_alone(&self, t: &GenState) -> bool {
        let mut kept = t.clone();
        self.reduce(&mut kept);
        t.net.iter().all(|(k, m)| {
            let was_kept = kept.net.insert(*k, Arc::clone(m)).is_some();
            let alone = self.dropped(&kept, m);
            if !was_kept {
                kept.net.remove(k);
            }
            alone == self.dropped(t, m)
        })
    }

    /// The reductions: heartbeats and prunable messages dropped.
    fn reduce(&self, t: &mut GenState) {
        let gone: Vec<u64> = t.net.iter().filter(|(_, m)| self.dropped(t, m)).map(|(k, _)| *k).collect();
        for k in gone {
            t.net.remove(&k);
        }
    }

    /// `Reduction::KeepOne`'s reductions after the step from `s` to `t`:
    /// drops what [`Self::reduce`] drops, except what `s` already held of it
    /// (its kept step's), and, when `keep_new`, what this step added to it.
    /// Returns whether it kept anything new.
    fn keep_one(&self, s: &GenState, t: &mut GenState, keep_new: bool) -> bool {
        let fresh: Vec<u64> = t
            .net
            .iter()
            .filter(|(k, m)| self.dropped(t, m) && !s.net.get(*k).is_some_and(|m| self.dropped(s, m)))
            .map(|(k, _)| *k)
            .collect();
        if !keep_new {
            for k in &fresh {
                t.net.remove(k);
            }
        }
        keep_new && !fresh.is_empty()
    }

    /// Whether `s` and `t` are one state of the reduced model.
    fn same_when_reduced(&self, s: &GenState, t: &GenState) -> bool {
        let (mut s, mut t) = (s.clone(), t.clone());
        self.reduce(&mut s);
        self.reduce(&mut t);
        s == t
    }
}

/// `Holds(r, w)`, within w's generation (the trace validator's rule).
fn holds(r: &Replica, w: &Acked) -> bool {
    crate::validate::holds(r, w.generation, &w.key, w.stamp)
}

/// A (generation, key, ep, ver) names one write.
fn epoch_ver_unique(t: &GenState) -> bool {
    let mut names: HashMap<(Option<Generation>, &Key, Stamp), WriteId> = HashMap::new();
    let mut name = |g, k, stamp, wid| *names.entry((g, k, stamp)).or_insert(wid) == wid;
    let memories =
        t.replicas.iter().flat_map(|r| r.memory().iter().map(move |(k, rec)| (r.generation(), k, rec.stamp, rec.wid)));
    let pushes = t.net.values().filter_map(|m| match &m.body {
        Body::Push { key, record, .. } => Some((m.generation, key, record.stamp, record.wid)),
        _ => None,
    });
    let acked = t.acked.iter().map(|w| (w.generation, &w.key, w.stamp, w.wid));
    memories.chain(pushes).chain(acked).all(|(g, k, stamp, wid)| name(g, k, stamp, wid))
}
