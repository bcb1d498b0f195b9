//! Stateright mirrors of the spec extensions `tla/HandoffAcks.tla` (every
//! replica-to-replica exchange a message) and `tla/HandoffZombie.tla`
//! (superseded coordinator instances, fenced by epoch), built on the
//! HandoffV2 mirror: the state is HandoffV2's [`State`] plus the new
//! variables ([`ExtState`]), HandoffV2's actions are the mirror's own
//! `next_state`, and every invariant is the mirror's own property.
//!
//! These are also the specs the implementation model refines
//! ([`crate::model::handoff::HandoffImpl`]): its mapped steps are checked
//! against [`ExtModel::successors`].

mod actions;
mod model;
mod state;

use std::marker::PhantomData;

use stateright::{Model, Property};

use crate::cfg::{CfgError, TlcConfig};
use crate::mirror::handoff::{Func, HandoffV2, Key, ModelValue, Replica, State, Val};
use crate::spec::{Mirror, check_mutation};

pub use actions::ExtAction;
use model::Check;
pub use model::{Acks, ExtModel, Extension, Zombies};
pub use state::{Ack, Ann, AnnAck, Decline, ExtState, GossipMsg, Snap, Zombie};

/// The mirror of `tla/HandoffAcks.tla`.
pub type HandoffAcks = ExtModel<Acks>;
/// The mirror of `tla/HandoffZombie.tla`.
pub type HandoffZombie = ExtModel<Zombies>;

/// HandoffV2's constants; HandoffZombie adds `MaxZombies`.
const BASE_CONSTANTS: [&str; 6] = ["Replicas", "Coordinator", "Keys", "MaxWrites", "MaxEvicts", "NoVal"];
const MAX_ZOMBIES: &str = "MaxZombies";
/// HandoffAcks's bound on gossip messages.
const MAX_GOSSIP: &str = "MaxGossip";
/// HandoffV2's invariants, checked on the extension's states.
const BASE_INVARIANTS: [&str; 5] =
    ["TypeOK", "EpochVerUnique", "AckedImpliesHeldUnlessDoomed", "CoordinatorHoldsOwnCommits", "EpochAgreement"];
const NO_SERVED_REGRESSION: &str = "NoServedRegression";
const TYPE_OK_ACKS: &str = "TypeOKAcks";
const TYPE_OK_ZOMBIE: &str = "TypeOKZombie";

impl<E: Extension> ExtModel<E> {
    /// Builds the model from a cfg (see [`Mirror::from_cfg`]).
    pub fn new(cfg: &TlcConfig) -> Result<Self, CfgError> {
        let mut constants: Vec<&str> = BASE_CONSTANTS.to_vec();
        constants.push(MAX_GOSSIP);
        let mut own_invariants = vec![TYPE_OK_ACKS];
        if E::ZOMBIES {
            constants.push(MAX_ZOMBIES);
            own_invariants.push(TYPE_OK_ZOMBIE);
        }
        cfg.expect_constants(E::MODULE, &constants)?;
        let invariants: Vec<&str> = BASE_INVARIANTS.iter().chain(&own_invariants).copied().collect();
        cfg.expect_definitions(E::MODULE, &invariants, &[NO_SERVED_REGRESSION])?;
        if let Some(spec) = cfg.specification.as_deref().filter(|s| *s != E::SPEC) {
            return Err(CfgError::Unsupported(format!("SPECIFICATION {spec}: {} defines {}", E::MODULE, E::SPEC)));
        }
        if cfg.init.is_some() || cfg.next.is_some() {
            return Err(CfgError::Unsupported(format!("{} is checked through SPECIFICATION {}", E::MODULE, E::SPEC)));
        }
        // The base mirror gets HandoffV2's part of the cfg.
        let base_cfg = TlcConfig {
            constants: cfg.constants.iter().filter(|(n, _)| BASE_CONSTANTS.contains(&n.as_str())).cloned().collect(),
            invariants: cfg.invariants.iter().filter(|n| BASE_INVARIANTS.contains(&n.as_str())).cloned().collect(),
            properties: cfg.properties.clone(),
            check_deadlock: false,
            ..TlcConfig::default()
        };
        let base = HandoffV2::from_cfg(&base_cfg, None)?;
        let base_properties = base.properties();
        let init_base = base.init_states().into_iter().next().ok_or_else(no_init)?;
        let (replicas, coordinator, peers, keys) = domains(&init_base).ok_or_else(no_init)?;
        let no_val = init_base
            .mem
            .values()
            .flat_map(|m| m.values())
            .find_map(|v| match v {
                Val::NoVal(n) => Some(*n),
                Val::Rec(_) => None,
            })
            .ok_or_else(no_init)?;
        let mut model = ExtModel {
            base,
            base_properties,
            replicas,
            coordinator,
            peers,
            keys,
            max_writes: small_nat(cfg, "MaxWrites")?,
            max_epoch: small_nat(cfg, "MaxEvicts")? + 1,
            max_zombies: if E::ZOMBIES { small_nat(cfg, MAX_ZOMBIES)? } else { 0 },
            max_gossip: small_nat(cfg, MAX_GOSSIP)?,
            init_base,
            no_val,
            checks: Vec::new(),
            extension: PhantomData,
        };
        let names: Vec<&str> = cfg.invariants.iter().chain(&cfg.properties).map(String::as_str).collect();
        for name in names {
            let check = model.check_for(name)?;
            model.checks.push(check);
        }
        if cfg.check_deadlock {
            model.checks.push(("Deadlock", |m: &Self, s: &ExtState| !m.successors(s).is_empty()));
        }
        if model.checks.is_empty() {
            // stateright explores only the initial states of a model with
            // no properties; TLC with nothing to check still explores all.
            model.checks.push(("TRUE", |_, _| true));
        }
        Ok(model)
    }

    /// The property the cfg names `name`.
    fn check_for(&self, name: &str) -> Result<Check<E>, CfgError> {
        if name == TYPE_OK_ACKS {
            return Ok((TYPE_OK_ACKS, type_ok_acks::<E>));
        }
        if name == TYPE_OK_ZOMBIE {
            return Ok((TYPE_OK_ZOMBIE, type_ok_zombie::<E>));
        }
        let index = self.base_properties.iter().position(|p| p.name == name);
        let (name, condition): (&'static str, fn(&Self, &ExtState) -> bool) = match index {
            Some(0) => (self.base_properties[0].name, base_property::<E, 0>),
            Some(1) => (self.base_properties[1].name, base_property::<E, 1>),
            Some(2) => (self.base_properties[2].name, base_property::<E, 2>),
            Some(3) => (self.base_properties[3].name, base_property::<E, 3>),
            Some(4) => (self.base_properties[4].name, base_property::<E, 4>),
            Some(5) => (self.base_properties[5].name, base_property::<E, 5>),
            _ => return Err(CfgError::UnknownDefinition { module: E::MODULE.into(), name: name.into() }),
        };
        Ok((name, condition))
    }

    /// The name of the invariant or property `name`, if the module has it.
    pub fn check_name(&self, name: &str) -> Option<&'static str> {
        self.check_for(name).ok().map(|(n, _)| n)
    }

    /// Every successor of `s`, with the action taken.
    pub fn successors(&self, s: &ExtState) -> Vec<(ExtAction, ExtState)> {
        let mut actions = Vec::new();
        self.next(s, &mut actions);
        actions.into_iter().filter_map(|a| self.step(s, &a).map(|t| (a, t))).collect()
    }

    /// Whether every invariant and property the cfg lists holds in `s`;
    /// the name of the first that does not.
    pub fn violated(&self, s: &ExtState) -> Option<&'static str> {
        self.checks.iter().find(|(_, holds)| !holds(self, s)).map(|(name, _)| *name)
    }

    pub fn coordinator(&self) -> Replica {
        self.coordinator
    }

    pub fn replicas(&self) -> &[Replica] {
        &self.replicas
    }

    pub fn peers(&self) -> &[Replica] {
        &self.peers
    }

    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// `Init` of the module.
    pub fn init(&self) -> ExtState {
        ExtState {
            base: self.init_base.clone(),
            acks: Default::default(),
            snaps: Default::default(),
            declines: Default::default(),
            anns: Default::default(),
            ann_acks: Default::default(),
            gossip: Default::default(),
            inc: Func::new(&self.replicas, |_| 1),
            ann_round: 0,
            cur_ack: self.no_acks(),
            prev_ack: self.no_acks(),
            zombies: Default::default(),
            supersedes: 0,
            zombie_vars: E::ZOMBIES,
        }
    }

    /// The model value `NoVal`.
    pub fn no_val(&self) -> ModelValue {
        self.no_val
    }

    pub fn max_writes(&self) -> u8 {
        self.max_writes
    }
}

fn no_init() -> CfgError {
    CfgError::Unsupported("HandoffV2's Init must be one state with every memory empty".into())
}

/// Counters, epochs and write ids are bytes in the mirror.
fn small_nat(cfg: &TlcConfig, name: &str) -> Result<u8, CfgError> {
    match cfg.nat(name)? {
        n @ 0..=200 => Ok(n as u8),
        n => Err(CfgError::WrongType {
            name: name.into(),
            expected: "a natural number at most 200",
            found: n.to_string(),
        }),
    }
}

/// Replicas, the coordinator, peers and keys, read off HandoffV2's initial
/// state (the mirror keeps its constants to itself): `mem` is a function
/// on `Replicas` of functions on `Keys`, `known` a function on `Peers`.
type Domains = (Vec<Replica>, Replica, Vec<Replica>, Vec<Key>);

fn domains(init: &State) -> Option<Domains> {
    let replicas: Vec<Replica> = init.mem.iter().map(|(r, _)| r).collect();
    let peers: Vec<Replica> = init.known.iter().map(|(p, _)| p).collect();
    let coordinator = replicas.iter().copied().find(|r| !peers.contains(r))?;
    let keys = init.mem.values().next().map(|m: &Func<Val>| m.iter().map(|(k, _)| k).collect())?;
    Some((replicas, coordinator, peers, keys))
}

/// HandoffV2's property number `I` (an invariant, or NoServedRegression,
/// which reads the step marker), on the HandoffV2 part of the state.
fn base_property<E: Extension, const I: usize>(m: &ExtModel<E>, s: &ExtState) -> bool {
    m.base_properties.get(I).is_none_or(|p| (p.condition)(&m.base, &s.base))
}

/// `TypeOKAcks`.
fn type_ok_acks<E: Extension>(m: &ExtModel<E>, s: &ExtState) -> bool {
    let ep = |e: u8| (1..=m.max_epoch).contains(&e);
    let w = |x: u8| (1..=m.max_writes).contains(&x);
    let peer = |r: &Replica| m.peers.contains(r);
    s.acks.iter().all(|a| peer(&a.src) && ep(a.ep) && w(a.ver) && w(a.wid))
        && s.snaps.iter().all(|x| x.know <= m.max_epoch)
        && s.declines.iter().all(|d| peer(&d.dst))
        && s.anns
            .iter()
            .all(|a| ep(a.ep) && (1..=m.max_epoch + 1).contains(&a.round) && (1..=m.max_epoch).contains(&a.cinc))
        && s.ann_acks.iter().all(|a| {
            peer(&a.src) && ep(a.ep) && (1..=m.max_epoch + 1).contains(&a.round) && (1..=m.max_epoch).contains(&a.pinc)
        })
        && s.inc.values().all(|&i| (1..=m.max_epoch).contains(&i))
        && s.ann_round <= m.max_epoch + 1
        && s.cur_ack.values().chain(s.prev_ack.values()).all(|&i| i <= m.max_epoch)
}

/// `TypeOKZombie`.
fn type_ok_zombie<E: Extension>(m: &ExtModel<E>, s: &ExtState) -> bool {
    s.supersedes <= m.max_zombies
        && s.zombies.iter().all(|z| {
            (1..=m.max_epoch).contains(&z.epoch)
                && z.ver_ctr <= m.max_writes
                && z.pending.iter().all(|w| w.ep == z.epoch && (1..=m.max_writes).contains(&w.ver))
        })
}

impl<E: Extension> Model for ExtModel<E> {
    type State = ExtState;
    type Action = ExtAction;

    fn init_states(&self) -> Vec<ExtState> {
        vec![self.init()]
    }

    fn actions(&self, s: &ExtState, actions: &mut Vec<ExtAction>) {
        self.next(s, actions);
    }

    fn next_state(&self, s: &ExtState, action: ExtAction) -> Option<ExtState> {
        self.step(s, &action)
    }

    /// The web explorer lists actions as TLA+ action instances.
    fn format_action(&self, action: &Self::Action) -> String {
        action.to_string()
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.checks.iter().map(|&(name, holds)| Property::always(name, holds)).collect()
    }
}

impl<E: Extension> Mirror for ExtModel<E> {
    const MODULE: &'static str = E::MODULE;
    const MUTATIONS: &'static [&'static str] = &[];

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        check_mutation(E::MODULE, Self::MUTATIONS, mutation)?;
        ExtModel::new(cfg)
    }

    /// HandoffAcks's `NextA` (HandoffZombie's `NextZ` fences the last two
    /// and adds the zombies' actions).
    fn action_names(&self) -> Vec<&'static str> {
        let mut names = actions::UNFENCED_NAMES.to_vec();
        if E::ZOMBIES {
            names.extend(["DeliverPushZ", "AnnounceToZ"]);
            names.extend(actions::ZOMBIE_NAMES);
        } else {
            names.extend(["DeliverPushA", "AnnounceToA"]);
        }
        names
    }

    fn action_kind(&self, action: &ExtAction) -> usize {
        action.kind()
    }
}
