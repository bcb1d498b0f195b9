//! The spec's actions, one function each, named and ordered as in `Next`.
//! Each returns the successor state, or `None` where the action's enabling
//! conjuncts are false.

use std::fmt::{self, Display};

use super::model::{HandoffModel, Mutation, Version};
use super::state::{State, mem_ep_max, merge_mem, merge_val};
use super::values::{AckedW, Func, Key, PendingW, PushMsg, Rec, Replica, Status, Val};

/// One instance of a TLA+ action, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    ClientWrite(Key),
    DeliverPush(PushMsg),
    CommitWrite(PendingW),
    Evict(Replica),
    ReseedC(Replica),
    AnnounceTo(Replica),
    FinishRecoveryPeer(Replica),
    ChooseEpoch,
    FinishRecoveryC,
    ReseedPeer(Replica, Replica),
    Gossip(Replica, Replica),
}

impl Action {
    /// The spec's actions, in `Next` order.
    pub const NAMES: [&'static str; 11] = [
        "ClientWrite",
        "DeliverPush",
        "CommitWrite",
        "Evict",
        "ReseedC",
        "AnnounceTo",
        "FinishRecoveryPeer",
        "ChooseEpoch",
        "FinishRecoveryC",
        "ReseedPeer",
        "Gossip",
    ];

    /// The position of this action's name in [`Action::NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            Action::ClientWrite(_) => 0,
            Action::DeliverPush(_) => 1,
            Action::CommitWrite(_) => 2,
            Action::Evict(_) => 3,
            Action::ReseedC(_) => 4,
            Action::AnnounceTo(_) => 5,
            Action::FinishRecoveryPeer(_) => 6,
            Action::ChooseEpoch => 7,
            Action::FinishRecoveryC => 8,
            Action::ReseedPeer(..) => 9,
            Action::Gossip(..) => 10,
        }
    }
}

impl Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Action::NAMES[self.kind()])?;
        match self {
            Action::ClientWrite(k) => write!(f, "({k})"),
            Action::DeliverPush(m) => write!(f, "({m})"),
            Action::CommitWrite(pw) => write!(f, "({pw})"),
            Action::Evict(r) | Action::ReseedC(r) | Action::AnnounceTo(r) | Action::FinishRecoveryPeer(r) => {
                write!(f, "({r})")
            }
            Action::ChooseEpoch | Action::FinishRecoveryC => Ok(()),
            Action::ReseedPeer(a, b) | Action::Gossip(a, b) => write!(f, "({a}, {b})"),
        }
    }
}

/// An action's enabling conjuncts: the action is not enabled (`None`)
/// unless they hold.
fn guard(enabled: bool) -> Option<()> {
    enabled.then_some(())
}

impl<V: Version> HandoffModel<V> {
    /// The disjuncts of `Next` with their quantifiers unrolled, in the
    /// spec's order (deterministic, as stateright replays paths by index).
    pub(super) fn next(&self, s: &State, actions: &mut Vec<Action>) {
        actions.extend(self.keys.iter().map(|&k| Action::ClientWrite(k)));
        actions.extend(s.net.iter().map(|&m| Action::DeliverPush(m)));
        actions.extend(s.pending.iter().map(|&pw| Action::CommitWrite(pw)));
        actions.extend(self.replicas.iter().map(|&r| Action::Evict(r)));
        for &p in &self.peers {
            actions.extend([Action::ReseedC(p), Action::AnnounceTo(p), Action::FinishRecoveryPeer(p)]);
        }
        actions.extend([Action::ChooseEpoch, Action::FinishRecoveryC]);
        for &p in &self.peers {
            actions.extend(self.replicas.iter().map(|&q| Action::ReseedPeer(p, q)));
        }
        for &a in &self.replicas {
            actions.extend(self.replicas.iter().map(|&b| Action::Gossip(a, b)));
        }
    }

    pub(super) fn step(&self, s: &State, action: &Action) -> Option<State> {
        match *action {
            Action::ClientWrite(k) => self.client_write(s, k),
            Action::DeliverPush(m) => self.deliver_push(s, m),
            Action::CommitWrite(pw) => self.commit_write(s, pw),
            Action::Evict(r) => self.evict(s, r),
            Action::ReseedC(p) => self.reseed_c(s, p),
            Action::AnnounceTo(p) => self.announce_to(s, p),
            Action::FinishRecoveryPeer(p) => self.finish_recovery_peer(s, p),
            Action::ChooseEpoch => self.choose_epoch(s),
            Action::FinishRecoveryC => self.finish_recovery_c(s),
            Action::ReseedPeer(p, q) => self.reseed_peer(s, p, q),
            Action::Gossip(a, b) => self.gossip(s, a, b),
        }
    }

    fn empty_mem(&self) -> Func<Val> {
        Func::new(&self.keys, |_| Val::NoVal(self.no_val))
    }

    /// `SrcKnow(q)`: epoch knowledge a reseed source hands out.
    fn src_know(&self, s: &State, q: Replica) -> u8 {
        if q == self.coordinator { s.epoch } else { s.known[q] }
    }

    /// A client PUT: buffered as pending and pushed to every peer, not yet
    /// applied at the coordinator.
    fn client_write(&self, s: &State, k: Key) -> Option<State> {
        guard(s.is_ready(self.coordinator) && s.wid_ctr <= self.max_writes)?;
        let (ep, ver, wid) = (s.epoch, s.ver_ctr + 1, s.wid_ctr);
        let mut t = s.clone();
        t.pending.insert(PendingW { key: k, ep, ver, wid });
        t.net.extend(self.peers.iter().map(|&dst| PushMsg { dst, key: k, ep, ver, wid }));
        t.ver_ctr = ver;
        t.wid_ctr = wid + 1;
        Some(t)
    }

    /// A peer max-merges a push into memory and absorbs its epoch.
    fn deliver_push(&self, s: &State, m: PushMsg) -> Option<State> {
        guard(s.net.contains(&m))?;
        let mut t = s.clone();
        let rec = Val::Rec(Rec { ep: m.ep, ver: m.ver, wid: m.wid });
        t.mem[m.dst][m.key] = merge_val(s.mem[m.dst][m.key], rec);
        t.known[m.dst] = s.known[m.dst].max(m.ep);
        t.net.remove(&m);
        Some(t)
    }

    /// First peer ack (abstracted: some peer holds the record) commits:
    /// apply at the coordinator, ack the client, drop pending.
    fn commit_write(&self, s: &State, pw: PendingW) -> Option<State> {
        guard(s.pending.contains(&pw) && self.peers.iter().any(|&p| s.holds(p, pw.write())))?;
        let mut t = s.clone();
        let rec = Val::Rec(Rec { ep: pw.ep, ver: pw.ver, wid: pw.wid });
        t.mem[self.coordinator][pw.key] = merge_val(s.mem[self.coordinator][pw.key], rec);
        t.pending.remove(&pw);
        let PendingW { key, ep, ver, wid } = pw;
        t.acked.insert(AckedW { key, ep, ver, wid, doomed: false });
        Some(t)
    }

    /// The environment evicts r: its RAM vanishes, in-flight pushes stay,
    /// and acked writes whose last copy was at r are stamped doomed.
    fn evict(&self, s: &State, r: Replica) -> Option<State> {
        let others = || self.replicas.iter().copied().filter(move |&x| x != r);
        guard(s.evict_count < self.max_evicts && others().any(|x| s.is_ready(x)))?;
        let mut t = s.clone();
        t.acked = s
            .acked
            .iter()
            .map(|&w| AckedW { doomed: w.doomed || !others().any(|x| s.holds(x, w.write())), ..w })
            .collect();
        t.mem[r] = self.empty_mem();
        t.seeded[r].clear();
        t.evict_count = s.evict_count + 1;
        if r == self.coordinator {
            t.status[r] = Status::Collect;
            t.epoch = 0;
            t.collect_max = 0;
            t.ver_ctr = 0;
            t.pending.clear();
        } else {
            t.status[r] = Status::Recovering;
            t.known[r] = 0;
        }
        Some(t)
    }

    /// Collect phase: merge peer p's snapshot and the highest epoch it
    /// knows of (heard, or tagged on its records). In HandoffV2 only a
    /// peer that `CanSeed` answers: a recovering one may know nothing yet.
    fn reseed_c(&self, s: &State, p: Replica) -> Option<State> {
        let c = self.coordinator;
        guard(s.status[c] == Status::Collect && !s.seeded[c].contains(&p))?;
        guard(!V::V2_RECOVERY || s.can_seed(p))?;
        let mut t = s.clone();
        t.mem[c] = merge_mem(&s.mem[c], &s.mem[p]);
        t.collect_max = s.collect_max.max(s.known[p].max(mem_ep_max(&s.mem[p])));
        t.seeded[c].insert(p);
        Some(t)
    }

    /// With all peers collected, choose epoch := collectMax + 1.
    fn choose_epoch(&self, s: &State) -> Option<State> {
        let c = self.coordinator;
        guard(s.status[c] == Status::Collect && s.seeded[c].iter().eq(&self.peers))?;
        let mut t = s.clone();
        t.epoch = s.collect_max + 1;
        t.status[c] = if self.mutation == Some(Mutation::NoAnnounce) { Status::Ready } else { Status::Announce };
        t.seeded[c].clear();
        Some(t)
    }

    /// Announce phase: install the chosen epoch at peer p.
    fn announce_to(&self, s: &State, p: Replica) -> Option<State> {
        let c = self.coordinator;
        guard(s.status[c] == Status::Announce && !s.seeded[c].contains(&p))?;
        let mut t = s.clone();
        t.known[p] = s.known[p].max(s.epoch);
        t.seeded[c].insert(p);
        Some(t)
    }

    /// The coordinator serves once every peer was announced to -- in
    /// HandoffV2, once every peer knows the epoch now (an announced peer
    /// may have been evicted since).
    fn finish_recovery_c(&self, s: &State) -> Option<State> {
        let c = self.coordinator;
        guard(s.status[c] == Status::Announce && s.seeded[c].iter().eq(&self.peers))?;
        guard(!V::V2_RECOVERY || self.peers.iter().all(|&p| s.known[p] == s.epoch))?;
        let mut t = s.clone();
        t.status[c] = Status::Ready;
        Some(t)
    }

    /// Peer recovery: merge q's snapshot and the epoch q knows of. In
    /// HandoffV2 q must be one that `CanSeed`.
    fn reseed_peer(&self, s: &State, p: Replica, q: Replica) -> Option<State> {
        guard(s.status[p] == Status::Recovering && q != p && !s.seeded[p].contains(&q))?;
        guard(!V::V2_RECOVERY || s.can_seed(q))?;
        let mut t = s.clone();
        t.mem[p] = merge_mem(&s.mem[p], &s.mem[q]);
        t.known[p] = s.known[p].max(self.src_know(s, q).max(mem_ep_max(&s.mem[q])));
        t.seeded[p].insert(q);
        Some(t)
    }

    /// A peer is ready once reseeded from every other replica -- in
    /// HandoffV2, from every one that `CanSeed` now, and at least one.
    fn finish_recovery_peer(&self, s: &State, p: Replica) -> Option<State> {
        let others = || self.replicas.iter().copied().filter(move |&q| q != p);
        let reseeded = if V::V2_RECOVERY {
            !s.seeded[p].is_empty() && others().all(|q| !s.can_seed(q) || s.seeded[p].contains(&q))
        } else {
            s.seeded[p].iter().copied().eq(others())
        };
        guard(s.status[p] == Status::Recovering && reseeded)?;
        let mut t = s.clone();
        t.status[p] = Status::Ready;
        Some(t)
    }

    /// Anti-entropy: symmetric atomic max-merge between two ready replicas.
    fn gossip(&self, s: &State, a: Replica, b: Replica) -> Option<State> {
        guard(a != b && s.is_ready(a) && s.is_ready(b))?;
        let mut t = s.clone();
        if self.mutation == Some(Mutation::GossipOverwrite) {
            t.mem[a] = s.mem[b].clone();
            t.mem[b] = s.mem[a].clone();
        } else {
            t.mem[a] = merge_mem(&s.mem[a], &s.mem[b]);
            t.mem[b] = merge_mem(&s.mem[b], &s.mem[a]);
        }
        Some(t)
    }
}
