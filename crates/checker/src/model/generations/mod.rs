//! Total death, first boot and the new-generation path, checked on the
//! real code (module `HandoffGenerations`; docs/handoff.md 5.9).
//!
//! HandoffScale's regime keeps a ready replica at every eviction, so the
//! implementation model ([`super::handoff`]) starts after first boot and
//! never sees a namespace die. This model drops that guard: with
//! `FirstBoot = TRUE` it starts from three freshly booted replicas (first
//! boot explored, every interleaving), otherwise from first boot run to
//! ready; any replica may be evicted at any time (`MaxEvicts`; the
//! optional `EvictBeforeDeath` narrows that to before the total death),
//! and
//! `TotalDeath` evicts every ready replica at once (`MaxDeaths`), leaving
//! the ones still recovering. The
//! coordinator then finds nobody to collect from and mints a new
//! generation; survivors of the dead one (a peer still recovering, with
//! part of a snapshot) reboot into it; ghosts of the dead generation stay
//! in the network, deliverable forever.
//!
//! There is no spec state to map to (the specs have no generations), so
//! the checks are stated on the replicas, with ghost history:
//!
//! - `NoProtocolError`: every delivery is accepted, except a ghost of an
//!   older generation, which must be refused (and change nothing);
//! - `GenerationsIsolated`: a replica of generation g holds only writes
//!   issued in g -- no ghost of a dead generation is ever merged;
//! - `MintOnlyAfterTotalDeath`: a coordinator instance mints a new
//!   generation only if, at some instant since it booted, no other
//!   replica was ready (the code's own claim: first boot, or every replica
//!   that could serve was gone; a peer may have finished recovering since,
//!   from sources that are now dead -- its copy dies with the generation);
//! - `PartialCollectOnlyAfterTotalDeath`: a coordinator instance chooses
//!   its epoch without the snapshot of every peer (a mint, or going on with
//!   what it collected from a peer that died since: docs/handoff.md 5.8)
//!   only if, at some instant since it booted, no other replica was ready;
//! - `AckedImpliesHeldUnlessDoomed`: HandoffV2's loss model with one
//!   addition for this regime: a write is doomed when an eviction drops
//!   its last copy, or when its generation dies (a mint after a total
//!   death: what a recovering peer held of it is not a copy anyone can
//!   serve, docs/handoff.md 5.9);
//! - `EpochVerUnique`: a (generation, key, ep, ver) names one write, over
//!   memories, pushes and acknowledgements;
//! - `ServesAgain` (a property, `<>[]`): every behaviour ends with the
//!   three replicas ready in one generation. The evictions and deaths are
//!   bounded, so on every behaviour they stop; whatever they did before,
//!   the namespace must then recover by the protocol's own messages and
//!   timers. The engine checks it on every path, cycles included, without
//!   fairness (`engine`, `liveness.rs`). The mutation
//!   `WaitForDeadSnapshot` (a collecting coordinator waits for the
//!   snapshot of a peer that died) violates it: the namespace stays
//!   unavailable for good (docs/handoff.md 5.8).

mod step;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use protocol::handoff::config::Mutation;
use protocol::handoff::{Config, Generation, Key, Message, Millis, Replica, ReplicaId, Stamp, Status, Timer, WriteId};
use stateright::{Model, Property};

use crate::cfg::{CfgError, Reduction, TlcConfig};
use crate::engine::Liveness;
use crate::properties::{self, NumberedChecks};
use crate::spec::{Mirror, TlaState, check_mutation, fmt_variables};

/// The model (module name `HandoffGenerations`).
pub struct HandoffGenerations {
    config: Config,
    coordinator: ReplicaId,
    keys: Vec<Key>,
    max_writes: u8,
    max_evicts: u8,
    max_deaths: u8,
    max_gossip: u8,
    /// `EvictBeforeDeath` (default FALSE): single evictions only before
    /// the total death, so that what survives it is a recovering replica.
    evict_before_death: bool,
    /// `TimersWhenQuiet` (default FALSE): timers fire only where no
    /// delivery changes anything (the liveness cfg's scheduler).
    timers_when_quiet: bool,
    /// Whether the model drops what can change nothing (`step` says what).
    reduction: Reduction,
    /// The mutation `PruneByReplicasOnly`: the reductions' old rule,
    /// unsound (`step`, `may_reboot`).
    prune_by_replicas_only: bool,
    /// The mutation `PruneRequestsByOwnGeneration`: another old rule, as
    /// unsound (`step`, `answers_may_reboot`).
    prune_requests_by_own_generation: bool,
    /// The mutation `RebootByDroppedReplies`: a sound but tangled rule,
    /// whose drops depend on other messages it drops (`step`, `drops_alone`).
    reboot_by_dropped_replies: bool,
    checks: Vec<&'static str>,
    /// Whether the cfg lists `ServesAgain`.
    serves_again: bool,
    init: GenState,
}

pub const NO_PROTOCOL_ERROR: &str = "NoProtocolError";
pub const GENERATIONS_ISOLATED: &str = "GenerationsIsolated";
pub const MINT_ONLY_AFTER_TOTAL_DEATH: &str = "MintOnlyAfterTotalDeath";
pub const PARTIAL_COLLECT_ONLY_AFTER_TOTAL_DEATH: &str = "PartialCollectOnlyAfterTotalDeath";
pub const ACKED_IMPLIES_HELD: &str = "AckedImpliesHeldUnlessDoomed";
pub const EPOCH_VER_UNIQUE: &str = "EpochVerUnique";
/// The liveness property a cfg may list (module docs).
pub const SERVES_AGAIN: &str = "ServesAgain";
/// What the model drops (a message it prunes, a heartbeat) changed
/// something.
pub const REDUCTION_SOUND: &str = "ReductionSound";
/// Whether the reductions drop a message depends on another message they
/// drop (the premise of `Reduction::KeepOne`'s argument fails).
pub const DROPS_INDEPENDENT: &str = "DropsIndependent";
const CHECKS: [&str; 6] = [
    NO_PROTOCOL_ERROR,
    GENERATIONS_ISOLATED,
    MINT_ONLY_AFTER_TOTAL_DEATH,
    PARTIAL_COLLECT_ONLY_AFTER_TOTAL_DEATH,
    ACKED_IMPLIES_HELD,
    EPOCH_VER_UNIQUE,
];
/// The protocol mutations the model runs, by name (`--mutation NAME`).
const MUTATIONS: [(&str, Mutation); 3] = [
    ("WaitForDeadSnapshot", Mutation::WaitForDeadSnapshot),
    ("GoOnWhenUncollectedDeclined", Mutation::GoOnWhenUncollectedDeclined),
    ("TakeStaleDecline", Mutation::TakeStaleDecline),
];

/// The model's own mutations: the reductions' old, unsound rules.
const PRUNE_BY_REPLICAS_ONLY: &str = "PruneByReplicasOnly";
const PRUNE_REQUESTS_BY_OWN_GENERATION: &str = "PruneRequestsByOwnGeneration";
const REBOOT_BY_DROPPED_REPLIES: &str = "RebootByDroppedReplies";

/// An acknowledged write (ghost).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Acked {
    pub generation: Option<Generation>,
    pub key: Key,
    pub stamp: Stamp,
    pub wid: WriteId,
    pub doomed: bool,
}

/// One state: the current instance of each replica, the network, and
/// ghost history.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct GenState {
    pub replicas: Vec<Arc<Replica>>,
    /// Boots of each replica so far (0: the first).
    pub incarnation: Vec<u8>,
    /// Every message sent (heartbeats aside, with the reductions on: they
    /// change nothing), by a stable hash: unordered, duplicating, lossy;
    /// ghosts included.
    pub net: BTreeMap<u64, Arc<Message>>,
    /// Ghost: the generation each write was issued in, by write id - 1.
    pub issued: Vec<Option<Generation>>,
    pub acked: Vec<Acked>,
    /// Ghost: every generation minted so far.
    pub minted: BTreeSet<Generation>,
    pub evictions: u8,
    pub deaths: u8,
    /// Ghost: since the current coordinator instance booted, there was an
    /// instant at which no other replica was ready.
    pub nobody_ready_since_boot: bool,
    pub violation: Option<&'static str>,
    /// `Reduction::KeepOne` only: a step has kept what it would drop.
    pub kept: bool,
}

/// One step of the environment or of a replica.
#[derive(Clone, Debug, PartialEq)]
pub enum GenAction {
    /// A client PUT of key number `key` reaches the coordinator.
    Put { key: usize },
    /// The network delivers a copy of a message to the current instance.
    Deliver(Arc<Message>),
    /// A timer fires (whenever the model chooses).
    Timer(ReplicaId, Timer),
    /// The platform evicts a replica, whatever the others' state.
    Evict(ReplicaId),
    /// Every ready replica is evicted at once (a deploy, or a run of bad
    /// luck); replicas still recovering survive it.
    TotalDeath,
    /// `Reduction::KeepOne`: the step, keeping what it would drop (and
    /// from then on what follows from that).
    Keep(Box<GenAction>),
}

impl GenAction {
    const NAMES: [&'static str; 6] = ["Put", "Deliver", "Timer(Retry)", "Timer(Gossip)", "Evict", "TotalDeath"];

    fn kind(&self) -> usize {
        match self {
            GenAction::Put { .. } => 0,
            GenAction::Deliver(_) => 1,
            GenAction::Timer(_, Timer::Gossip) => 3,
            GenAction::Timer(..) => 2,
            GenAction::Evict(_) => 4,
            GenAction::TotalDeath => 5,
            GenAction::Keep(a) => a.kind(),
        }
    }
}

impl fmt::Display for GenAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenAction::Put { key } => write!(f, "Put(key {key})"),
            GenAction::Deliver(m) => {
                write!(f, "Deliver({} {} -> {}, generation {:?})", m.body.kind(), m.from, m.to, m.generation)
            }
            GenAction::Timer(r, t) => write!(f, "Timer({r}, {t:?})"),
            GenAction::Evict(r) => write!(f, "Evict({r})"),
            GenAction::TotalDeath => f.write_str("TotalDeath"),
            GenAction::Keep(a) => write!(f, "{a}, keeping what it drops"),
        }
    }
}

const CONSTANTS: [&str; 6] = ["Keys", "MaxWrites", "MaxEvicts", "MaxDeaths", "MaxGossip", "FirstBoot"];
/// The model's optional constant, which narrows the single evictions.
const OPTIONAL: [&str; 2] = ["EvictBeforeDeath", "TimersWhenQuiet"];

impl HandoffGenerations {
    pub fn new(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        cfg.expect_constants_optional(Self::MODULE, &CONSTANTS, &OPTIONAL)?;
        cfg.expect_definitions(Self::MODULE, &CHECKS, &[SERVES_AGAIN])?;
        let nat = |name: &str| -> Result<u8, CfgError> {
            u8::try_from(cfg.nat(name)?).map_err(|_| CfgError::Unsupported(format!("{name} is too large")))
        };
        let keys = cfg
            .model_value_set("Keys")?
            .into_iter()
            .map(|k| Key::new(k).map_err(|e| CfgError::Unsupported(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let coordinator = ReplicaId(0);
        let mut config =
            Config::new(coordinator, [ReplicaId(1), ReplicaId(2)]).map_err(|e| CfgError::Unsupported(e.to_string()))?;
        // One record a chunk: a snapshot of two keys takes two chunks.
        config.chunk_bytes = 1;
        config.mutation = MUTATIONS.iter().find(|(name, _)| Some(*name) == mutation).map(|&(_, m)| m);
        let mut checks: Vec<&'static str> =
            CHECKS.iter().copied().filter(|c| cfg.invariants.iter().any(|i| i == c)).collect();
        if !checks.contains(&NO_PROTOCOL_ERROR) {
            checks.push(NO_PROTOCOL_ERROR);
        }
        checks.extend([REDUCTION_SOUND, DROPS_INDEPENDENT]);
        let mut model = HandoffGenerations {
            config,
            coordinator,
            keys,
            max_writes: nat("MaxWrites")?,
            max_evicts: nat("MaxEvicts")?,
            max_deaths: nat("MaxDeaths")?,
            max_gossip: nat("MaxGossip")?,
            evict_before_death: cfg.boolean_or("EvictBeforeDeath", false)?,
            timers_when_quiet: cfg.boolean_or("TimersWhenQuiet", false)?,
            reduction: cfg.reduction,
            prune_by_replicas_only: mutation == Some(PRUNE_BY_REPLICAS_ONLY),
            prune_requests_by_own_generation: mutation == Some(PRUNE_REQUESTS_BY_OWN_GENERATION),
            reboot_by_dropped_replies: mutation == Some(REBOOT_BY_DROPPED_REPLIES),
            checks,
            serves_again: cfg.properties.iter().any(|p| p == SERVES_AGAIN),
            init: GenState {
                replicas: Vec::new(),
                incarnation: vec![0; 3],
                net: BTreeMap::new(),
                issued: Vec::new(),
                acked: Vec::new(),
                minted: BTreeSet::new(),
                evictions: 0,
                deaths: 0,
                nobody_ready_since_boot: true,
                violation: None,
                kept: false,
            },
        };
        let mut init = model.init.clone();
        let booted: Vec<_> = (0..3).map(|r| model.boot(&init, ReplicaId(r))).collect();
        if cfg.boolean_or("FirstBoot", false)? {
            // Explored: three fresh replicas and their boot messages.
            for (replica, out) in booted {
                init.replicas.push(Arc::new(replica));
                model.send(&mut init, &out);
            }
        } else {
            // Run, as in the implementation model: all three ready in
            // the first generation, the network empty.
            init.replicas = super::handoff::first_boot(booted)?.into_iter().map(Arc::new).collect();
            init.minted = init.replicas.iter().filter_map(|r| r.generation()).collect();
        }
        model.init = init;
        Ok(model)
    }

    /// The host's time: the number of boots so far. Boots are the only
    /// events whose order the code reads (instances and generations are
    /// ordered by it), and a later boot is later.
    fn now(s: &GenState) -> Millis {
        Millis(s.incarnation.iter().map(|&n| u64::from(n)).sum())
    }

    /// A fresh instance of `r`, booted now.
    fn boot(&self, s: &GenState, r: ReplicaId) -> (Replica, Vec<protocol::handoff::Output>) {
        let incarnation = s.incarnation.get(usize::from(r.0)).copied().unwrap_or(0);
        let seed = (u64::from(r.0) << 32) | u64::from(incarnation);
        match Replica::boot(self.config.clone(), r, Self::now(s), seed) {
            Ok(booted) => booted,
            Err(e) => unreachable!("the model's config was validated: {e}"),
        }
    }
}

impl Model for HandoffGenerations {
    type State = GenState;
    type Action = GenAction;

    fn init_states(&self) -> Vec<GenState> {
        vec![self.init.clone()]
    }

    fn actions(&self, s: &GenState, actions: &mut Vec<GenAction>) {
        self.next_actions(s, actions);
    }

    fn next_state(&self, s: &GenState, action: GenAction) -> Option<GenState> {
        self.step(s, &action)
    }

    fn format_action(&self, action: &GenAction) -> String {
        action.to_string()
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::always(self)
    }
}

impl NumberedChecks for HandoffGenerations {
    fn check_names(&self) -> &[&'static str] {
        &self.checks
    }

    fn holds(&self, i: usize, s: &GenState) -> bool {
        self.checks.get(i).is_none_or(|name| s.violation != Some(*name))
    }
}

impl Mirror for HandoffGenerations {
    const MODULE: &'static str = "HandoffGenerations";
    const MUTATIONS: &'static [&'static str] = &[
        "WaitForDeadSnapshot",
        "GoOnWhenUncollectedDeclined",
        "TakeStaleDecline",
        PRUNE_BY_REPLICAS_ONLY,
        PRUNE_REQUESTS_BY_OWN_GENERATION,
        REBOOT_BY_DROPPED_REPLIES,
    ];
    const REDUCTIONS: bool = true;

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        check_mutation(Self::MODULE, Self::MUTATIONS, mutation)?;
        HandoffGenerations::new(cfg, mutation)
    }

    fn action_names(&self) -> Vec<&'static str> {
        GenAction::NAMES.to_vec()
    }

    fn action_kind(&self, action: &GenAction) -> usize {
        action.kind()
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        if !self.serves_again {
            return Vec::new();
        }
        vec![Liveness::eventually_always(SERVES_AGAIN, |_: &Self, s: &GenState| serving(s))]
    }
}

/// All three replicas ready, in one generation.
fn serving(s: &GenState) -> bool {
    let generation = s.replicas.first().map(|r| r.generation());
    s.replicas.len() == 3 && s.replicas.iter().all(|r| r.phase() == Status::Ready && Some(r.generation()) == generation)
}

impl TlaState for GenState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = Vec::new();
        for r in &self.replicas {
            let s = r.status();
            let name = match r.me().0 {
                0 => "r0",
                1 => "r1",
                _ => "r2",
            };
            let mem: Vec<String> = r
                .memory()
                .iter()
                .map(|(k, rec)| format!("{k}@{}.{}#{}", rec.stamp.ep.0, rec.stamp.ver.0, rec.wid.0))
                .collect();
            vars.push((
                name,
                format!(
                    "{} {} epoch {} generation {:?} mem [{}]",
                    s.role,
                    s.status,
                    s.epoch.0,
                    s.generation.map(|g| (g.minted_at, g.nonce % 1000)),
                    mem.join(",")
                ),
            ));
        }
        let acked: Vec<String> = self
            .acked
            .iter()
            .map(|w| {
                format!(
                    "{}@{}.{}#{}{}",
                    w.key,
                    w.stamp.ep.0,
                    w.stamp.ver.0,
                    w.wid.0,
                    if w.doomed { " doomed" } else { "" }
                )
            })
            .collect();
        vars.push(("acked", acked.join(", ")));
        vars.push(("evictions", self.evictions.to_string()));
        vars.push(("generations", self.minted.len().to_string()));
        let net: Vec<String> = self
            .net
            .values()
            .map(|m| format!("{} {}->{} gen {:?}", m.body.kind(), m.from, m.to, m.generation.map(|g| g.minted_at)))
            .collect();
        vars.push(("net", net.join("; ")));
        vars
    }
}

impl fmt::Debug for GenState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
