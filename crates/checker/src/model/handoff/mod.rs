//! The Handoff implementation, checked.
//!
//! [`HandoffImpl`] is a stateright model whose actors are the real
//! `protocol::handoff::Replica` state machines -- the code the Durable
//! Objects run -- over an unordered, duplicating, lossy network, with
//! bounded evictions, supersessions (zombie coordinators) and gossip.
//! Every state maps to a state of `tla/HandoffCond.tla` ([`map`]):
//! HandoffScale's variables, the reads in progress, the peers' collect
//! fences, the clock, the conditional writes and the expiries. Every step
//! must map to a step of that spec (computed by its mirror,
//! [`HandoffCond`], built on the HandoffReads, HandoffScale, HandoffZombie
//! and HandoffV2 mirrors), to several (one confirmation answers every read
//! and condition that waited for it; a commit lets the conditions waiting
//! for it go: `cond`), or to a stutter; the memory each replica stores must
//! be the spec's `Concrete` of the mapped state, every record must carry
//! its write's expiry, and every invariant of the spec must hold on the
//! mapped state.
//!
//! - `state`, `step`, `map`: the model's state, transitions, and the map;
//!   `view`: what they read of a replica; `prune`: the reduction's rule;
//!   `cond`: conditional writes, expiry, listings and the clock;
//!   `liveness`: HandoffReadsLiveness's properties in their TLA+ form.
//!
//! Larger bounds run depth-first or as random walks for a time budget
//! ([`crate::run::Search`]); `models/simulation/` holds those cfgs.
//!
//! Constants come from a cfg (`crates/checker/models/*.cfg`):
//! HandoffScale's (`Replicas`, `Coordinator`, `Keys`, `MaxWrites`,
//! `MaxEvicts`, `NoVal`, `MaxGossip`, `MaxZombies`, `Deletes`, `Budget`),
//! HandoffReads' optional `MaxReads`, HandoffCond's optional `MaxConds`,
//! `MaxTime` and `TTLs` (0, 0 and `{}` when absent), the model's own
//! optional `MaxLists` (listings, each a read of every key; 0 when absent),
//! and the model's own optional
//! `GossipWhenDone` (the liveness cfgs: gossip only once the environment is
//! done, [`liveness`]).
//! The network needs no bound: a message once sent stays deliverable
//! (duplication), may never be delivered (loss), in any order; retries
//! resend identical messages. Writes carry empty values, so that every
//! record costs the same bytes (the budget is `Budget` records' worth);
//! a chunk carries one record (`chunk_bytes` 1), so snapshots of two keys
//! take two chunks.

mod cond;
mod hints;
mod liveness;
mod map;
mod model;
mod prune;
mod roll;
mod state;
mod step;
mod view;

use std::collections::BTreeSet;
use std::sync::Arc;

use protocol::handoff::{
    Config, Input, Key, Millis, Mutation, Output, Record, Replica, ReplicaId, Timer, Value, WriteId,
};
use stateright::{Model, Property};

use crate::cfg::{CfgError, TlcConfig};
use crate::engine::Liveness;
use crate::mirror::handoff::{Key as SpecKey, Replica as SpecReplica};
use crate::mirror::handoff_roll::HandoffRoll;
use crate::mirror::handoff_scale::HandoffScale;
use crate::properties::{self, NumberedChecks};
use crate::spec::{self, Mirror, check_mutation};

pub use model::HandoffImpl;
use model::READS_LINEARIZABLE;
pub(crate) use prune::{PruneRule, useless};
pub(crate) use state::msg_key;
pub use state::{ImplAction, ImplState};

use cond::{COND_LINEARIZABLE, EXPIRED_NEVER_SERVED};
use step::{COORDINATOR_NEVER_FENCED, NO_PROTOCOL_ERROR, NOW, REDUCTION_SOUND, REFINEMENT};

/// A deliberate bug the model runs: in the protocol's code
/// (`protocol::handoff::Mutation`), or in the model's own reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImplMutation {
    Code(Mutation),
    /// The reduction's old rule: a collect or reseed request is dropped as
    /// soon as its sender is gone or answered, though it still changes its
    /// receiver (docs/verification.md 1.8). Reduced, the model passes;
    /// unreduced, `ReductionSound` catches it.
    PruneAnsweredRequests,
    /// The rule before the unreduced run of `large/HandoffImpl.cfg`: a
    /// late reseed request counts as inert while the coordinator collects,
    /// though its decline fences a recovering peer. Reduced, the model
    /// passes; unreduced, `ReductionSound` catches it.
    PruneDeclinedReseeds,
    /// The rule before the unreduced run of
    /// `large/HandoffImplLivenessEvicts2.cfg`: a collect or reseed reply is
    /// judged by its receiver's current instance only, so a reply dropped
    /// at a ready coordinator that is later superseded stops counting as
    /// droppable. Unreduced, `ReductionSound` catches it.
    PruneRepliesByCurrent,
}

/// The mutations the model runs, by name (`--mutation NAME`).
const MUTATIONS: [(&str, ImplMutation); 15] = [
    ("CommitBeforeAck", ImplMutation::Code(Mutation::CommitBeforeAck)),
    ("AcceptStalePush", ImplMutation::Code(Mutation::AcceptStalePush)),
    ("ServeBeforeAnnounce", ImplMutation::Code(Mutation::ServeBeforeAnnounce)),
    ("CollectAboveFloor", ImplMutation::Code(Mutation::CollectAboveFloor)),
    ("FinishOnPartialSnapshot", ImplMutation::Code(Mutation::FinishOnPartialSnapshot)),
    ("ServeReadsUnconfirmed", ImplMutation::Code(Mutation::ServeReadsUnconfirmed)),
    ("NoCollectFence", ImplMutation::Code(Mutation::NoCollectFence)),
    ("RefenceOnDigest", ImplMutation::Code(Mutation::RefenceOnDigest)),
    ("CondUnconfirmed", ImplMutation::Code(Mutation::CondUnconfirmed)),
    ("CondIgnoresPending", ImplMutation::Code(Mutation::CondIgnoresPending)),
    ("ServeExpired", ImplMutation::Code(Mutation::ServeExpired)),
    ("CountStaleAck", ImplMutation::Code(Mutation::CountStaleAck)),
    ("PruneAnsweredRequests", ImplMutation::PruneAnsweredRequests),
    ("PruneDeclinedReseeds", ImplMutation::PruneDeclinedReseeds),
    ("PruneRepliesByCurrent", ImplMutation::PruneRepliesByCurrent),
];
/// Constants of the model, not of the spec: see `gossip_when_done`,
/// `max_lists` and `rolling`.
const GOSSIP_WHEN_DONE: &str = "GossipWhenDone";
const MAX_LISTS: &str = "MaxLists";
const ROLLING_RESTART: &str = "RollingRestart";
const MODEL_CONSTANTS: [&str; 3] = [GOSSIP_WHEN_DONE, MAX_LISTS, ROLLING_RESTART];

const CONSTANTS: [&str; 10] = [
    "Replicas",
    "Coordinator",
    "Keys",
    "MaxWrites",
    "MaxEvicts",
    "NoVal",
    "MaxGossip",
    "MaxZombies",
    "Deletes",
    "Budget",
];

impl HandoffImpl {
    /// Builds the model from a cfg; the initial state is first boot, run.
    /// With a `mutation`, every replica runs that deliberately broken code.
    pub fn new(cfg: &TlcConfig, mutation: Option<ImplMutation>) -> Result<Self, CfgError> {
        // HandoffReads' `MaxReads` and HandoffCond's constants are optional:
        // without them, no client reads, no conditional writes, no clock.
        let optional = ["MaxReads", "MaxConds", "MaxTime", "TTLs", GOSSIP_WHEN_DONE, MAX_LISTS, ROLLING_RESTART];
        cfg.expect_constants_optional(Self::MODULE, &CONSTANTS, &optional)?;
        let has = |name: &str| cfg.constants.iter().any(|(n, _)| n == name);
        let has_reads = has("MaxReads");
        let gossip_when_done = cfg.boolean_or(GOSSIP_WHEN_DONE, false)?;
        let rolling = cfg.boolean_or(ROLLING_RESTART, false)?;
        // The spec does not know the model's own constants.
        let mut constants: Vec<_> =
            cfg.constants.iter().filter(|(name, _)| !MODEL_CONSTANTS.contains(&name.as_str())).cloned().collect();
        for name in ["MaxReads", "MaxConds", "MaxTime"] {
            if !has(name) {
                constants.push((name.into(), crate::cfg::Value::Int(0)));
            }
        }
        if !has("TTLs") {
            constants.push(("TTLs".into(), crate::cfg::Value::Set(Vec::new())));
        }
        // HandoffRoll's `Rolling` is the model's `RollingRestart`.
        constants.push(("Rolling".into(), crate::cfg::Value::Bool(rolling)));
        // Checked on what the code answers, not on the mapped state (where
        // the history variables stay FALSE).
        let answers = [READS_LINEARIZABLE, EXPIRED_NEVER_SERVED];
        // The model's own invariant, not the spec's.
        let spec_invariant = |i: &&String| !answers.contains(&i.as_str());
        let spec_cfg = TlcConfig {
            specification: Some("SpecRo".into()),
            constants,
            invariants: cfg.invariants.iter().filter(spec_invariant).cloned().collect(),
            properties: cfg
                .properties
                .iter()
                .filter(|p| *p != REFINEMENT && !liveness::NAMES.contains(&p.as_str()))
                .cloned()
                .collect(),
            check_deadlock: false,
            ..TlcConfig::default()
        };
        let spec = HandoffRoll::new(&spec_cfg, None)?;
        if spec.cond().reads().scale().zombie().replicas().len() != 3 {
            return Err(CfgError::Unsupported("the implementation has exactly three replicas".into()));
        }
        let replica_ids: Vec<ReplicaId> = (0..3).map(ReplicaId).collect();
        let zombie = spec.cond().reads().scale().zombie();
        let index_of = |r: SpecReplica| zombie.replicas().iter().position(|&x| x == r).unwrap_or(0);
        let coordinator = ReplicaId(u8::try_from(index_of(zombie.coordinator())).unwrap_or(0));
        let peers: Vec<ReplicaId> = replica_ids.iter().copied().filter(|&r| r != coordinator).collect();
        let peers = [peers[0], peers[1]];
        let mut config = Config::new(coordinator, peers).map_err(|e| CfgError::Unsupported(e.to_string()))?;
        config.mutation = match mutation {
            Some(ImplMutation::Code(m)) => Some(m),
            _ => None,
        };
        let keys = zombie
            .keys()
            .iter()
            .map(|k| Key::new(k.name()).map_err(|e| CfgError::Unsupported(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let nat = |name: &str| -> Result<u8, CfgError> {
            u8::try_from(cfg.nat(name)?).map_err(|_| CfgError::Unsupported(format!("{name} is too large")))
        };
        // Every record costs the same: keys of one length, empty values.
        let tombstone =
            Record { stamp: Default::default(), wid: WriteId(0), value: Value::Tombstone, expires_at: None, fp: None };
        let costs: BTreeSet<usize> = keys.iter().map(|k| protocol::handoff::memory::cost(k, &tombstone)).collect();
        let [cost] = costs.into_iter().collect::<Vec<_>>()[..] else {
            return Err(CfgError::Unsupported("the model's keys must all have the same length".into()));
        };
        config.budget_bytes = usize::from(nat("Budget")?) * cost;
        config.chunk_bytes = 1;
        let deletes = spec.cond().reads().scale().ops().deletes.clone();
        let mut checks: Vec<&'static str> = Vec::new();
        let mut live = Vec::new();
        for name in cfg.invariants.iter().chain(&cfg.properties) {
            // Checked by the model itself (`checks` below).
            if name == REFINEMENT || answers.contains(&name.as_str()) || name == COND_LINEARIZABLE {
                continue;
            }
            match spec.check_name(name) {
                Some(n) => checks.push(n),
                None => match liveness::NAMES.iter().find(|n| *n == name) {
                    Some(&n) if cfg.properties.contains(name) => live.push(n),
                    _ => return Err(CfgError::UnknownDefinition { module: Self::MODULE.into(), name: name.clone() }),
                },
            }
        }
        // Refinement is checked when the cfg lists it (all shipped cfgs
        // do; a test of the liveness check leaves it out).
        if cfg.properties.iter().any(|p| p == REFINEMENT) {
            checks.push(REFINEMENT);
        }
        // `CondLinearizable` on the mapped state (what committed) and on
        // the code's failure answers, under one name.
        checks.extend([
            NO_PROTOCOL_ERROR,
            COORDINATOR_NEVER_FENCED,
            READS_LINEARIZABLE,
            COND_LINEARIZABLE,
            EXPIRED_NEVER_SERVED,
            REDUCTION_SOUND,
        ]);
        let mapped = Arc::new(spec.init());
        let mut model = HandoffImpl {
            spec,
            config,
            coordinator,
            peers,
            replica_ids,
            keys,
            max_writes: nat("MaxWrites")?,
            max_evicts: nat("MaxEvicts")?,
            max_zombies: nat("MaxZombies")?,
            max_gossip: nat("MaxGossip")?,
            max_reads: if has_reads { nat("MaxReads")? } else { 0 },
            gossip_when_done,
            rolling,
            max_lists: if has(MAX_LISTS) { nat(MAX_LISTS)? } else { 0 },
            prune_rule: match mutation {
                Some(ImplMutation::PruneAnsweredRequests) => PruneRule::AnsweredIsEnough,
                Some(ImplMutation::PruneDeclinedReseeds) => PruneRule::DeclinedIsInert,
                Some(ImplMutation::PruneRepliesByCurrent) => PruneRule::RepliesByCurrent,
                _ => PruneRule::Sound,
            },
            deletes,
            reduction: cfg.reduction,
            instances: Vec::new(),
            init: ImplState {
                replicas: Vec::new(),
                incarnation: vec![0; 3],
                zombies: Vec::new(),
                net: Default::default(),
                collected: vec![Default::default(); 3],
                zombie_collected: Default::default(),
                digests: Default::default(),
                seeded_when_ready: vec![None; 3],
                acked: Default::default(),
                wid_ctr: 1,
                evict_count: 0,
                supersedes: 0,
                read_ctr: 0,
                list_ctr: 0,
                reads: Default::default(),
                cond: state::Cond { exp_at: vec![0; usize::from(nat("MaxWrites")?)], ..Default::default() },
                mapped,
                violation: None,
                kept: false,
            },
            checks,
            liveness: live,
            kinds: Vec::new(),
            kind_index: Vec::new(),
        };
        // The kinds of step this cfg's constants let fire; the others are
        // the cfg's choice, not the model's, and are not listed.
        let (reads, conds, clock) =
            (model.max_reads > 0, model.spec.cond().max_conds() > 0, model.spec.cond().max_time() > 0);
        let lists = reads && model.max_lists > 0;
        let fires = |name: &str| match name {
            "Read" | "ZombieRead" => reads,
            "List" | "ZombieList" => lists,
            "CondPut" | "ZombieCondPut" => conds,
            "Timer(Expire)" | "Tick" => clock,
            _ => true,
        };
        model.kinds = ImplAction::NAMES.into_iter().filter(|n| fires(n)).collect();
        model.kind_index =
            ImplAction::NAMES.iter().map(|n| model.kinds.iter().position(|k| k == n).unwrap_or(usize::MAX)).collect();
        model.instances = model
            .replica_ids
            .iter()
            .map(|&r| (0..=model.max_evicts).map(|n| model.boot(r, n).0.instance()).collect())
            .collect();
        model.init = model.first_boot()?;
        Ok(model)
    }

    /// A fresh instance of replica `r` (its `incarnation`-th boot): booted
    /// at time `incarnation`, so that its instances are ordered by boot as
    /// on the platform.
    fn boot(&self, r: ReplicaId, incarnation: u8) -> (Replica, Vec<Output>) {
        let seed = (u64::from(r.0) << 32) | u64::from(incarnation);
        match Replica::boot(self.config.clone(), r, Millis(u64::from(incarnation)), seed) {
            Ok(booted) => booted,
            Err(e) => unreachable!("the model's config was validated: {e}"),
        }
    }

    /// The initial state: all three replicas booted empty and run through
    /// [`first_boot`]; it maps to the spec's `Init`, which has no messages.
    fn first_boot(&self) -> Result<ImplState, CfgError> {
        let mut s = self.init.clone();
        let booted = self.replica_ids.iter().map(|&r| self.boot(r, 0)).collect();
        s.replicas = first_boot(booted)?.into_iter().map(Arc::new).collect();
        s.mapped = Arc::new(self.map(&s));
        if !s.mapped.eq_unmarked(&self.spec.init()) {
            return Err(CfgError::Unsupported(format!("first boot does not map to Init: {:?}", s.mapped)));
        }
        Ok(s)
    }

    /// Which boot of replica `r` instance `i` is (instances are drawn from
    /// per-boot seeds, so this is a lookup).
    fn incarnation_of(&self, r: ReplicaId, i: protocol::handoff::Instance) -> u8 {
        let boots = self.instances.get(usize::from(r.0)).map(Vec::as_slice).unwrap_or_default();
        boots.iter().position(|&x| x == i).and_then(|n| u8::try_from(n).ok()).unwrap_or(u8::MAX - 1)
    }

    fn spec_replica(&self, r: ReplicaId) -> SpecReplica {
        self.scale().zombie().replicas()[usize::from(r.0)]
    }

    fn replica_id(&self, r: SpecReplica) -> ReplicaId {
        let i = self.scale().zombie().replicas().iter().position(|&x| x == r).unwrap_or(0);
        self.replica_ids[i]
    }

    fn key_of(&self, k: SpecKey) -> &Key {
        let i = self.scale().zombie().keys().iter().position(|&x| x == k).unwrap_or(0);
        &self.keys[i]
    }

    fn spec_key(&self, k: &Key) -> SpecKey {
        let i = self.keys.iter().position(|x| x == k).unwrap_or(0);
        self.scale().zombie().keys()[i]
    }

    /// The spec the implementation is checked against.
    pub fn spec(&self) -> &HandoffRoll {
        &self.spec
    }

    /// HandoffScale, which HandoffReads (and HandoffCond) extends.
    fn scale(&self) -> &HandoffScale {
        self.spec.cond().reads().scale()
    }
}

/// First boot of freshly booted replicas (given with their boot outputs),
/// run over a reliable FIFO network until all are ready: the coordinator
/// finds nobody with a generation, mints one at epoch 1, announces; the
/// peers reseed. The leftover traffic is dropped.
pub(crate) fn first_boot(booted: Vec<(Replica, Vec<Output>)>) -> Result<Vec<Replica>, CfgError> {
    /// What happens next during first boot.
    enum Event {
        Out(Output),
        Fire(ReplicaId),
    }
    let mut queue = std::collections::VecDeque::new();
    let mut replicas = Vec::new();
    for (replica, out) in booted {
        replicas.push(replica);
        queue.extend(out.into_iter().map(Event::Out));
    }
    for _ in 0..10_000 {
        if replicas.iter().all(view::is_ready) {
            return Ok(replicas);
        }
        if queue.is_empty() {
            // A quiet network: every retry timer fires.
            queue.extend(replicas.iter().map(|r| Event::Fire(r.me())));
        }
        let (target, input) = match queue.pop_front() {
            None => break,
            Some(Event::Fire(r)) => (r, Input::Timer(Timer::Retry)),
            Some(Event::Out(Output::Send(m))) => (m.to, Input::Message(m)),
            Some(Event::Out(
                Output::SetTimer { .. } | Output::Reply { .. } | Output::ReadReply { .. } | Output::ListReply { .. },
            )) => continue,
        };
        let Some(replica) = replicas.iter_mut().find(|r| r.me() == target) else { continue };
        let out = replica.handle(NOW, input).map_err(|e| CfgError::Unsupported(format!("first boot: {e}")))?;
        queue.extend(out.into_iter().map(Event::Out));
    }
    Err(CfgError::Unsupported("first boot did not converge".into()))
}

impl Model for HandoffImpl {
    type State = ImplState;
    type Action = ImplAction;

    fn init_states(&self) -> Vec<ImplState> {
        vec![self.init.clone()]
    }

    fn actions(&self, s: &ImplState, actions: &mut Vec<ImplAction>) {
        self.next_actions(s, actions);
    }

    fn next_state(&self, s: &ImplState, action: ImplAction) -> Option<ImplState> {
        self.step(s, &action)
    }

    /// Traces and the web explorer show actions as they print.
    fn format_action(&self, action: &Self::Action) -> String {
        action.to_string()
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::always(self)
    }
}

impl NumberedChecks for HandoffImpl {
    fn check_names(&self) -> &[&'static str] {
        &self.checks
    }

    /// The step into `s` did not violate check `i`.
    fn holds(&self, i: usize, s: &ImplState) -> bool {
        self.checks.get(i).is_none_or(|name| s.violation != Some(*name))
    }
}

impl Mirror for HandoffImpl {
    const MODULE: &'static str = "HandoffImpl";
    const MUTATIONS: &'static [&'static str] = &spec::names(&MUTATIONS);
    const REDUCTIONS: bool = true;

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        check_mutation(Self::MODULE, Self::MUTATIONS, mutation)?;
        HandoffImpl::new(cfg, mutation.and_then(|m| spec::named(&MUTATIONS, m)))
    }

    /// Without `MaxReads`, `MaxConds` or `MaxTime`, their steps cannot
    /// fire, by the cfg's choice, not the model's: they are not listed.
    fn action_names(&self) -> Vec<&'static str> {
        self.kinds.clone()
    }

    fn action_kind(&self, action: &ImplAction) -> usize {
        self.kind_index.get(action.kind()).copied().unwrap_or(usize::MAX)
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        self.liveness.iter().flat_map(|name| liveness::property(self, name)).collect()
    }
}
