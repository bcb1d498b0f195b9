//! The stateright mirror of `tla/HandoffRoll.tla`: HandoffCond plus push
//! acks that name the acking incarnation (a coordinator commits only on an
//! ack of an incarnation it has not seen replaced, `AckedByLive`; a zombie
//! by the `reg` it had when it was superseded) and rolling restarts (with
//! `Rolling`, an eviction waits until every replica is ready). Built on the
//! HandoffCond mirror: the state is its [`CondState`] plus `acksBy` and
//! `zreg` ([`RollState`]); HandoffCond's actions are that mirror's steps;
//! its invariants are that mirror's checks, plus `TypeOKRoll` and
//! `RollLosesNothing`.
//!
//! Mutations, each caught by `RollLosesNothing`:
//! - `count-stale-ack` counts an ack whatever incarnation sent it (what
//!   HandoffCond allows): a peer acks, is replaced, its new incarnation
//!   reseeds from the coordinator before the commit, the old ack commits a
//!   write only the coordinator holds, and the coordinator's restart loses
//!   it;
//! - `zombie-counts-stale-ack` does so only at a zombie (`zreg` unused):
//!   the peer is replaced and reseeded before the coordinator is
//!   superseded, and the zombie commits, on the old ack, a write nobody
//!   holds (`tla/large/HandoffRollZombie.cfg`).

mod actions;
mod model;
mod state;

use crate::cfg::{CfgError, TlcConfig};
use crate::mirror::handoff_cond::HandoffCond;
use crate::properties;
use crate::spec::{self, Mirror, check_mutation};

pub use actions::RollAction;
pub use model::HandoffRoll;
use model::{Check, MUTATIONS};
pub use state::{AckBy, RollState, ZombieReg};

const MODULE: &str = "HandoffRoll";
const SPEC: &str = "SpecRo";
const ROLLING: &str = "Rolling";
const TYPE_OK_ROLL: &str = "TypeOKRoll";
/// `RollLosesNothing`: under a rolling restart no acknowledged write is
/// doomed.
pub const ROLL_LOSES_NOTHING: &str = "RollLosesNothing";
const OWN: [&str; 2] = [TYPE_OK_ROLL, ROLL_LOSES_NOTHING];

impl HandoffRoll {
    pub fn new(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        if let Some(spec) = cfg.specification.as_deref().filter(|s| *s != SPEC) {
            return Err(CfgError::Unsupported(format!("SPECIFICATION {spec}: {MODULE} defines {SPEC}")));
        }
        if cfg.init.is_some() || cfg.next.is_some() {
            return Err(CfgError::Unsupported(format!("{MODULE} is checked through SPECIFICATION {SPEC}")));
        }
        check_mutation(MODULE, HandoffRoll::MUTATIONS, mutation)?;
        let cond_cfg = TlcConfig {
            specification: Some("SpecC".into()),
            constants: cfg.constants.iter().filter(|(n, _)| n != ROLLING).cloned().collect(),
            invariants: cfg.invariants.iter().filter(|n| !OWN.contains(&n.as_str())).cloned().collect(),
            properties: cfg.properties.clone(),
            check_deadlock: false,
            ..TlcConfig::default()
        };
        let cond = HandoffCond::new(&cond_cfg, None).map_err(|e| match e {
            CfgError::UnknownConstant { name, known, .. } => {
                CfgError::UnknownConstant { name, module: MODULE.into(), known: format!("{known}, {ROLLING}") }
            }
            CfgError::UnknownDefinition { name, .. } => CfgError::UnknownDefinition { module: MODULE.into(), name },
            other => other,
        })?;
        let rolling = match cfg.constants.iter().find(|(n, _)| n == ROLLING) {
            Some(_) => cfg.boolean_or(ROLLING, false)?,
            None => return Err(CfgError::Unsupported(format!("{MODULE} needs the constant {ROLLING}"))),
        };
        let nat = |name: &str| -> Result<u8, CfgError> {
            u8::try_from(cfg.nat(name)?).map_err(|_| CfgError::Unsupported(format!("{name} is too large")))
        };
        let mut model = HandoffRoll {
            cond,
            rolling,
            max_writes: nat("MaxWrites")?,
            max_epoch: nat("MaxEvicts")?.saturating_add(1),
            mutation: mutation.and_then(|name| spec::named(&MUTATIONS, name)),
            checks: Vec::new(),
            names: Vec::new(),
        };
        let own: [Check; 2] = [(TYPE_OK_ROLL, type_ok_roll), (ROLL_LOSES_NOTHING, roll_loses_nothing)];
        (model.names, model.checks) = properties::named_checks(MODULE, cfg, &own, |n| model.cond.check_name(n))?;
        Ok(model)
    }

    /// `InitRo`
    pub fn init(&self) -> RollState {
        RollState { cond: self.cond.init(), acks_by: Default::default(), zreg: Default::default() }
    }

    /// The HandoffCond mirror HandoffRoll is built on.
    pub fn cond(&self) -> &HandoffCond {
        &self.cond
    }

    /// `Rolling`
    pub fn rolling(&self) -> bool {
        self.rolling
    }

    /// The name of the first invariant or property the cfg lists that
    /// does not hold in `s`.
    pub fn violated(&self, s: &RollState) -> Option<&'static str> {
        self.cond
            .violated(&s.cond)
            .or_else(|| self.checks.iter().find(|(_, holds)| !holds(self, s)).map(|(name, _)| *name))
    }

    /// The name of the invariant or property `name`, if the module has it.
    pub fn check_name(&self, name: &str) -> Option<&'static str> {
        self.cond.check_name(name).or_else(|| OWN.into_iter().find(|n| *n == name))
    }
}

/// `TypeOKRoll`
fn type_ok_roll(m: &HandoffRoll, s: &RollState) -> bool {
    let inc_max = m.max_epoch;
    let peers = m.cond.reads().scale().zombie().peers();
    s.acks_by.iter().all(|a| {
        peers.contains(&a.src)
            && (1..=m.max_epoch).contains(&a.ep)
            && (1..=m.max_writes).contains(&a.ver)
            && (1..=m.max_writes).contains(&a.wid)
            && (1..=inc_max).contains(&a.pinc)
    }) && s.zreg.iter().all(|z| (1..=m.max_epoch).contains(&z.epoch) && z.reg.values().all(|&i| i <= inc_max))
}

/// `RollLosesNothing == Rolling => \A w \in acked : ~w.doomed`
fn roll_loses_nothing(m: &HandoffRoll, s: &RollState) -> bool {
    !m.rolling || s.cond.reads.scale.ext.base.acked.iter().all(|w| !w.doomed)
}

extension_model!(HandoffRoll, RollState, RollAction, |m, s| m.cond.violated(&s.cond));

impl Mirror for HandoffRoll {
    const MODULE: &'static str = MODULE;
    const MUTATIONS: &'static [&'static str] = &spec::names(&MUTATIONS);

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        HandoffRoll::new(cfg, mutation)
    }

    fn action_names(&self) -> Vec<&'static str> {
        RollAction::NAMES.to_vec()
    }

    fn action_kind(&self, action: &RollAction) -> usize {
        action.kind()
    }
}
