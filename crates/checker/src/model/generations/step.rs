//! HandoffGenerations' transitions and checks.
//!
//! Reductions (`Reduction::On`): heartbeats are not sent (they change
//! nothing at their receiver) and messages whose delivery can change
//! nothing, ever, are pruned (the implementation model's rule). With
//! `--no-reduction` both stay in the network, and delivering one must
//! leave the state the reduced model would have unchanged
//! (`ReductionSound`).

use std::collections::HashMap;
use std::sync::Arc;

use protocol::handoff::coordinator::Phase;
use protocol::handoff::{
    Body, ClientRequestId, Generation, HandleError, Input, Key, Message, Output, Replica, ReplicaId, RoleView, Stamp,
    Status, Timer, WriteId, WriteReply,
};

use super::{
    ACKED_IMPLIES_HELD, Acked, EPOCH_VER_UNIQUE, GENERATIONS_ISOLATED, GenAction, GenState, HandoffGenerations,
    MINT_ONLY_AFTER_TOTAL_DEATH, NO_PROTOCOL_ERROR, PARTIAL_COLLECT_ONLY_AFTER_TOTAL_DEATH, REDUCTION_SOUND,
};
use crate::cfg::Reduction;
use crate::model::handoff::{PruneRule, msg_key, useless};

impl HandoffGenerations {
    pub(super) fn next_actions(&self, s: &GenState, out: &mut Vec<GenAction>) {
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
    }

    /// No delivery of a message in the network changes anything: only
    /// then do the timers fire where the cfg sets `TimersWhenQuiet`.
    fn quiet(&self, s: &GenState) -> bool {
        s.net.values().all(|m| self.step(s, &GenAction::Deliver(Arc::clone(m))).is_none())
    }

    /// The successor of `s` by `action`; `None` where it is not enabled
    /// or changes nothing.
    pub(super) fn step(&self, s: &GenState, action: &GenAction) -> Option<GenState> {
        let mut t = s.clone();
        t.violation = None;
        // A delivery the reduced model would not make (unreduced runs).
        let mut dropped = false;
        match action {
            GenAction::Put { key } => self.put(&mut t, *key)?,
            GenAction::Deliver(m) => {
                dropped = self.reduction == Reduction::Off && (m.body == Body::Heartbeat || prunable(s, m));
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
        }
        let gossip = |x: &GenState| {
            x.net.values().filter(|m| matches!(m.body, Body::Digest { .. } | Body::Records { .. })).count()
        };
        if gossip(&t) > gossip(s) && gossip(s) >= usize::from(self.max_gossip) {
            return None;
        }
        if self.reduction == Reduction::On {
            reduce(&mut t);
        }
        if t == *s {
            return None;
        }
        if t.violation.is_none()
            && self.reduction == Reduction::Off
            && ((dropped && !same_when_reduced(s, &t)) || !still_dropped(s, &t))
        {
            t.violation = Some(REDUCTION_SOUND);
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
                && (m.body != Body::Heartbeat || self.reduction == Reduction::Off)
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

/// Whether the reduced model drops `m` in `t`: its delivery can change
/// nothing, ever (the implementation model's rule, [`useless`]), and it is
/// not of a generation newer than its receiver's (delivered, it reboots the
/// receiver into that generation). The rule once asked that of every
/// replica; the unreduced run of HandoffGenerationsFirstBoot.cfg showed
/// that it then did not drop a decline its own dropped collect caused.
fn prunable(t: &GenState, m: &Message) -> bool {
    useless(&t.replicas, &[], m, false, PruneRule::Sound) && !may_reboot(t, m.generation)
}

/// Whether a message of generation `theirs` may ever reboot its receiver
/// (a replica of an older generation that hears of a newer one reboots):
/// while some replica is of an older generation. A fresh instance holds
/// none, and takes its generation from a replica that seeds it, so once
/// every replica that holds one holds `theirs` or newer, no instance ever
/// will be older again. (The rule once asked that of the receiver alone:
/// evicted, it holds none, and a message it dropped then counted again;
/// the unreduced run of HandoffGenerationsTwoEvicts.cfg found that.)
fn may_reboot(t: &GenState, theirs: Option<Generation>) -> bool {
    theirs.is_some_and(|theirs| t.replicas.iter().any(|r| r.generation().is_some_and(|mine| mine < theirs)))
}

/// The "ever" of the reductions' argument, checked on every step of an
/// unreduced run: a message the reduced model would drop at `s` it still
/// drops at `t`.
fn still_dropped(s: &GenState, t: &GenState) -> bool {
    let dropped = |x: &GenState, m: &Message| m.body == Body::Heartbeat || prunable(x, m);
    s.net.iter().all(|(k, m)| !dropped(s, m) || !t.net.contains_key(k) || dropped(t, m))
}

/// The reductions: heartbeats and prunable messages dropped.
fn reduce(t: &mut GenState) {
    let gone: Vec<u64> =
        t.net.iter().filter(|(_, m)| m.body == Body::Heartbeat || prunable(t, m)).map(|(k, _)| *k).collect();
    for k in gone {
        t.net.remove(&k);
    }
}

/// Whether `s` and `t` are one state of the reduced model.
fn same_when_reduced(s: &GenState, t: &GenState) -> bool {
    let (mut s, mut t) = (s.clone(), t.clone());
    reduce(&mut s);
    reduce(&mut t);
    s == t
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
