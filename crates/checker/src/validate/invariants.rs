//! The spec's invariants that are stated on what a live run holds, checked
//! after every merged step (docs/verification.md section 1.6). The spec's
//! bounded domains (keys, write ids) do not fit a live run, so these are
//! the same predicates over the real replicas, named as in
//! `tla/HandoffV2.tla`:
//!
//! - `EpochVerUnique`: a (key, ep, ver) never names two writes -- over the
//!   records every replica holds, every message carries, every pending
//!   write and every acknowledgement (per namespace generation);
//! - `AckedImpliesHeldUnlessDoomed`: an acknowledged write is held by a
//!   current replica, unless an eviction (or the reboot of a replica into
//!   a newer generation) dropped its last copy;
//! - `CoordinatorHoldsOwnCommits`: a ready coordinator holds every such
//!   write of its epoch;
//! - `EpochAgreement`: when the coordinator is ready, every ready peer
//!   knows its epoch;
//! - `NoServedRegression` (an action property): a replica ready before
//!   and after a step still holds every record it held, or a newer one (a
//!   tombstone at or below its floor may be collected).

use std::collections::{BTreeMap, HashMap};

use protocol::handoff::{
    Body, Epoch, Generation, Key, Memory, Message, Output, Record, Replica, RoleView, Stamp, Status, Version, WriteId,
    WriteReply,
};

pub const CHECKED: [&str; 5] = [
    "EpochVerUnique",
    "AckedImpliesHeldUnlessDoomed",
    "CoordinatorHoldsOwnCommits",
    "EpochAgreement",
    "NoServedRegression",
];

/// `NoServedRegression` for a step of a replica that was ready with
/// memory `before` and is ready after it (the same instance).
pub fn no_served_regression(before: &Memory, after: &Replica) -> Result<(), String> {
    for (key, held) in before.iter() {
        let collected = held.is_tombstone() && !held.stamp.wins(after.floor()) && after.memory().get(key).is_none();
        if !after.memory().holds(key, held.stamp) && !collected {
            return Err(format!(
                "NoServedRegression: ready {} held {key} @ {}.{} and no longer does",
                after.me(),
                held.stamp.ep.0,
                held.stamp.ver.0
            ));
        }
    }
    Ok(())
}

/// An acknowledged write (the spec's `acked`).
struct Acked {
    generation: Option<Generation>,
    key: Key,
    stamp: Stamp,
    doomed: bool,
}

/// The current instance of each replica (by `ReplicaId` index) and which
/// one is the coordinator.
pub struct Current<'a> {
    pub replicas: [Option<&'a Replica>; 3],
    pub coordinator: usize,
}

#[derive(Default)]
pub struct Invariants {
    /// (generation, key, stamp) → the write it names.
    universe: HashMap<(Option<Generation>, Key, Stamp), WriteId>,
    acked: Vec<Acked>,
    /// The newest non-doomed acknowledged version per (generation, key,
    /// epoch): holding it is holding every older one of that epoch.
    newest: BTreeMap<(Option<Generation>, Key, Epoch), Version>,
}

impl Invariants {
    pub fn acked(&self) -> usize {
        self.acked.len()
    }

    /// After a step of `stepped` that returned `outputs`.
    pub fn after_step(&mut self, stepped: &Replica, outputs: &[Output], now: &Current) -> Result<(), String> {
        let generation = stepped.generation();
        for (key, rec) in stepped.memory().iter() {
            self.names(generation, key, rec)?;
        }
        if let RoleView::Coordinator(c) = stepped.role() {
            for p in c.pending() {
                self.names(generation, &p.key, &p.record)?;
            }
        }
        for out in outputs {
            match out {
                Output::Send(m) => self.message(m)?,
                Output::Reply { reply: WriteReply::Committed { key, tag, .. }, .. } => {
                    let (stamp, wid) = (&tag.stamp, &tag.wid);
                    self.name(generation, key, *stamp, *wid)?;
                    self.acked.push(Acked { generation, key: key.clone(), stamp: *stamp, doomed: false });
                    let newest = self.newest.entry((generation, key.clone(), stamp.ep)).or_default();
                    *newest = (*newest).max(stamp.ver);
                }
                _ => {}
            }
        }
        self.check(now)
    }

    /// `replica`'s memory is about to be dropped (an eviction, or a reboot
    /// into a newer generation): the acknowledged writes no other current
    /// replica holds are doomed.
    pub fn dropping(&mut self, replica: usize, now: &Current) {
        for w in self.acked.iter_mut().filter(|w| !w.doomed) {
            let others = now.replicas.iter().enumerate().filter(|&(i, _)| i != replica);
            w.doomed = !others.filter_map(|(_, r)| *r).any(|r| holds(r, w.generation, &w.key, w.stamp));
        }
        self.newest.clear();
        for w in self.acked.iter().filter(|w| !w.doomed) {
            let newest = self.newest.entry((w.generation, w.key.clone(), w.stamp.ep)).or_default();
            *newest = (*newest).max(w.stamp.ver);
        }
    }

    fn check(&self, now: &Current) -> Result<(), String> {
        let current = || now.replicas.iter().filter_map(|r| *r);
        for ((generation, key, ep), ver) in &self.newest {
            let stamp = Stamp { ep: *ep, ver: *ver };
            if !current().any(|r| holds(r, *generation, key, stamp)) {
                return Err(format!(
                    "AckedImpliesHeldUnlessDoomed: the write acknowledged as {key} @ {}.{} is held by no replica, \
                     and no eviction dropped its last copy",
                    ep.0, ver.0
                ));
            }
        }
        let Some(c) = now.replicas.get(now.coordinator).copied().flatten() else { return Ok(()) };
        if c.phase() != Status::Ready {
            return Ok(());
        }
        let (generation, epoch) = (c.generation(), c.epoch());
        for ((g, key, ep), ver) in &self.newest {
            if (*g, *ep) == (generation, epoch) && !holds(c, generation, key, Stamp { ep: *ep, ver: *ver }) {
                return Err(format!(
                    "CoordinatorHoldsOwnCommits: the ready coordinator (epoch {}) does not hold its own \
                     acknowledged write {key} @ {}.{}",
                    epoch.0, ep.0, ver.0
                ));
            }
        }
        for p in current().filter(|r| r.me() != c.me()) {
            if p.generation() == generation && p.phase() == Status::Ready && p.epoch() != epoch {
                return Err(format!(
                    "EpochAgreement: the coordinator is ready at epoch {} but ready peer {} knows epoch {}",
                    epoch.0,
                    p.me(),
                    p.epoch().0
                ));
            }
        }
        Ok(())
    }

    fn message(&mut self, m: &Message) -> Result<(), String> {
        let generation = m.generation;
        match &m.body {
            Body::Push { key, record, .. } => self.names(generation, key, record),
            Body::CollectReply { chunk, .. } | Body::ReseedReply { chunk, .. } => {
                chunk.records.0.iter().try_for_each(|(key, rec)| self.names(generation, key, rec))
            }
            Body::Records { records, .. } => {
                records.0.iter().try_for_each(|(key, rec)| self.names(generation, key, rec))
            }
            Body::PushAck { key, stamp, wid, .. } | Body::PushAckBy { key, stamp, wid, .. } => {
                self.name(generation, key, *stamp, *wid)
            }
            _ => Ok(()),
        }
    }

    fn names(&mut self, generation: Option<Generation>, key: &Key, rec: &Record) -> Result<(), String> {
        self.name(generation, key, rec.stamp, rec.wid)
    }

    /// `EpochVerUnique`, for one more place a write's identity exists.
    fn name(&mut self, generation: Option<Generation>, key: &Key, stamp: Stamp, wid: WriteId) -> Result<(), String> {
        let named = *self.universe.entry((generation, key.clone(), stamp)).or_insert(wid);
        if named == wid {
            return Ok(());
        }
        Err(format!("EpochVerUnique: {key} @ {}.{} names two writes, {named} and {wid}", stamp.ep.0, stamp.ver.0))
    }
}

/// The spec's `Holds(r, w)` for a replica of `generation`: its record
/// for the key dominates the write's stamp, or the key is absent and the
/// replica's tombstone floor is at or above it (a collected tombstone).
pub(crate) fn holds(r: &Replica, generation: Option<Generation>, key: &Key, stamp: Stamp) -> bool {
    r.generation() == generation
        && (r.memory().holds(key, stamp) || (r.memory().get(key).is_none() && !stamp.wins(r.floor())))
}
