//! The stateright mirror of `tla/HandoffScale.tla`: HandoffZombie plus
//! deletes, snapshots in chunks, digest anti-entropy, the tombstone floor
//! and the memory budget. Built on the HandoffZombie mirror: the state is
//! HandoffZombie's [`ExtState`] plus the module's six variables
//! ([`ScaleState`]); actions HandoffScale takes over are that mirror's
//! steps; its invariants are that mirror's properties, plus the module's
//! own.
//!
//! This is also the spec the implementation model refines
//! ([`crate::model::handoff::HandoffImpl`]).

mod actions;
mod model;
mod state;

use std::collections::BTreeSet;

use crate::cfg::{CfgError, TlcConfig, Value};
use crate::mirror::handoff::{Func, KeySet, Msgs, Val};
use crate::mirror::handoff_ext::HandoffZombie;
use crate::properties;
use crate::spec::{Mirror, check_mutation};

pub use actions::ScaleAction;
use model::Check;
pub use model::HandoffScale;
pub use state::{Chunk, Digest, Ops, Records, ScaleState, Stamp, above};

const MODULE: &str = "HandoffScale";
const SPEC: &str = "SpecS";
/// HandoffZombie's constants, and the module's own.
const ZOMBIE_CONSTANTS: [&str; 8] =
    ["Replicas", "Coordinator", "Keys", "MaxWrites", "MaxEvicts", "NoVal", "MaxGossip", "MaxZombies"];
const DELETES: &str = "Deletes";
const BUDGET: &str = "Budget";
/// HandoffZombie's invariants and property, checked by its mirror.
const ZOMBIE_CHECKS: [&str; 8] = [
    "TypeOK",
    "TypeOKAcks",
    "TypeOKZombie",
    "EpochVerUnique",
    "AckedImpliesHeldUnlessDoomed",
    "CoordinatorHoldsOwnCommits",
    "EpochAgreement",
    "NoServedRegression",
];
const TYPE_OK_SCALE: &str = "TypeOKScale";
const NO_RESURRECTION: &str = "NoResurrection";
const PENDING_ABOVE_FLOOR: &str = "PendingAboveFloor";

impl HandoffScale {
    pub fn new(cfg: &TlcConfig) -> Result<Self, CfgError> {
        let mut constants = ZOMBIE_CONSTANTS.to_vec();
        constants.extend([DELETES, BUDGET]);
        cfg.expect_constants(MODULE, &constants)?;
        let mut invariants: Vec<&str> = ZOMBIE_CHECKS[..7].to_vec();
        invariants.extend([TYPE_OK_SCALE, NO_RESURRECTION, PENDING_ABOVE_FLOOR]);
        cfg.expect_definitions(MODULE, &invariants, &[ZOMBIE_CHECKS[7]])?;
        if let Some(spec) = cfg.specification.as_deref().filter(|s| *s != SPEC) {
            return Err(CfgError::Unsupported(format!("SPECIFICATION {spec}: {MODULE} defines {SPEC}")));
        }
        if cfg.init.is_some() || cfg.next.is_some() {
            return Err(CfgError::Unsupported(format!("{MODULE} is checked through SPECIFICATION {SPEC}")));
        }
        let zombie_cfg = TlcConfig {
            specification: Some("SpecZ".into()),
            constants: cfg.constants.iter().filter(|(n, _)| ZOMBIE_CONSTANTS.contains(&n.as_str())).cloned().collect(),
            invariants: cfg.invariants.iter().filter(|n| ZOMBIE_CHECKS.contains(&n.as_str())).cloned().collect(),
            properties: cfg.properties.clone(),
            check_deadlock: false,
            ..TlcConfig::default()
        };
        let zombie = HandoffZombie::new(&zombie_cfg)?;
        let nat = |name: &str| -> Result<u8, CfgError> {
            u8::try_from(cfg.nat(name)?).map_err(|_| CfgError::Unsupported(format!("{name} is too large")))
        };
        let max_writes = nat("MaxWrites")?;
        let deletes = match cfg.constant(DELETES)? {
            Value::Set(items) => items
                .iter()
                .map(|v| match v {
                    Value::Int(n) if (1..=i64::from(max_writes)).contains(n) => Ok(*n as u8),
                    other => Err(CfgError::WrongType {
                        name: DELETES.into(),
                        expected: "a set of write ids in 1..MaxWrites",
                        found: other.to_string(),
                    }),
                })
                .collect::<Result<BTreeSet<u8>, _>>()?,
            other => {
                return Err(CfgError::WrongType { name: DELETES.into(), expected: "a set", found: other.to_string() });
            }
        };
        let keys = zombie.keys().to_vec();
        let subsets = (0..1u32 << keys.len())
            .map(|bits| keys.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, &k)| k).collect())
            .collect();
        let mut model = HandoffScale {
            ops: Ops { deletes, no_val: Val::NoVal(zombie.no_val()) },
            zombie,
            budget: nat(BUDGET)?,
            max_gossip: nat("MaxGossip")?,
            max_writes,
            max_epoch: nat("MaxEvicts")?.saturating_add(1),
            subsets,
            no_served_regression: cfg.properties.iter().any(|p| p == ZOMBIE_CHECKS[7]),
            checks: Vec::new(),
            names: Vec::new(),
        };
        let own: [Check; 3] = [
            (TYPE_OK_SCALE, type_ok_scale),
            (NO_RESURRECTION, no_resurrection),
            (PENDING_ABOVE_FLOOR, pending_above_floor),
        ];
        (model.names, model.checks) = properties::named_checks(MODULE, cfg, &own, |n| model.zombie.check_name(n))?;
        Ok(model)
    }

    /// `InitS`
    pub fn init(&self) -> ScaleState {
        let replicas = self.zombie.replicas();
        ScaleState {
            ext: self.zombie.init(),
            floor: Func::new(replicas, |_| Stamp::default()),
            got: Func::new(replicas, |_| self.none_got()),
            chunks: Msgs::default(),
            digs: Msgs::default(),
            gsp: Msgs::default(),
            reg: Func::new(self.zombie.peers(), |_| 1),
        }
    }

    /// Every successor of `s`, with the action taken.
    pub fn successors(&self, s: &ScaleState) -> Vec<(ScaleAction, ScaleState)> {
        let mut actions = Vec::new();
        self.next(s, &mut actions);
        actions.into_iter().filter_map(|a| self.step(s, &a).map(|t| (a, t))).collect()
    }

    /// The name of the first invariant or property the cfg lists that
    /// does not hold in `s`.
    pub fn violated(&self, s: &ScaleState) -> Option<&'static str> {
        self.zombie
            .violated(&s.ext)
            .or_else(|| self.checks.iter().find(|(_, holds)| !holds(self, s)).map(|(name, _)| *name))
    }

    /// The name of the invariant or property `name`, if the module has it.
    pub fn check_name(&self, name: &str) -> Option<&'static str> {
        self.zombie
            .check_name(name)
            .or_else(|| [TYPE_OK_SCALE, NO_RESURRECTION, PENDING_ABOVE_FLOOR].into_iter().find(|n| *n == name))
    }

    /// The HandoffZombie mirror HandoffScale is built on.
    pub fn zombie(&self) -> &HandoffZombie {
        &self.zombie
    }

    /// `Concrete`, `MergeValAt` and friends.
    pub fn ops(&self) -> &Ops {
        &self.ops
    }

    /// `SUBSET Keys`, in the order `NextS` is unrolled.
    pub fn subsets(&self) -> &[KeySet] {
        &self.subsets
    }
}

/// `TypeOKScale`
fn type_ok_scale(m: &HandoffScale, s: &ScaleState) -> bool {
    let stamp = |f: &Stamp| f.ep <= m.max_epoch && f.ver <= m.max_writes;
    let inc = |i: u8| (1..=m.max_epoch).contains(&i);
    s.floor.values().all(stamp)
        && s.chunks.iter().all(|c| c.know <= m.max_epoch && stamp(&c.floor) && inc(c.inc))
        && s.digs.iter().all(|d| d.know <= m.max_epoch && stamp(&d.floor) && inc(d.inc))
        && s.gsp.iter().all(|g| stamp(&g.floor))
        && s.reg.values().all(|&i| i <= m.max_epoch)
}

/// `NoResurrection`
fn no_resurrection(m: &HandoffScale, s: &ScaleState) -> bool {
    let mem = &s.ext.base.mem;
    m.zombie.replicas().iter().all(|&r| {
        !s.ext.base.is_ready(r)
            || m.zombie.keys().iter().all(|&k| {
                match mem[r][k] {
                Val::Rec(t) if m.ops.dead_at(mem[r][k], s.floor[r]) => m.zombie.replicas().iter().all(|&q| {
                    !matches!(mem[q][k], Val::Rec(x) if !m.ops.is_tomb(mem[q][k]) && crate::mirror::handoff::wins(t, x))
                }),
                _ => true,
            }
            })
    })
}

/// `PendingAboveFloor`
fn pending_above_floor(m: &HandoffScale, s: &ScaleState) -> bool {
    let fl = s.floor[m.zombie.coordinator()];
    s.ext.base.pending.iter().all(|pw| above(crate::mirror::handoff::Rec { ep: pw.ep, ver: pw.ver, wid: pw.wid }, fl))
}

extension_model!(HandoffScale, ScaleState, ScaleAction, |m, s| m.zombie.violated(&s.ext));

impl Mirror for HandoffScale {
    const MODULE: &'static str = MODULE;
    const MUTATIONS: &'static [&'static str] = &[];

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        check_mutation(MODULE, Self::MUTATIONS, mutation)?;
        HandoffScale::new(cfg)
    }

    fn action_names(&self) -> Vec<&'static str> {
        ScaleAction::NAMES.to_vec()
    }

    fn action_kind(&self, action: &ScaleAction) -> usize {
        action.kind()
    }
}
