//! The stateright mirror of `tla/HandoffReads.tla`: HandoffScale plus
//! client reads that the coordinator instance answers only after a ready
//! peer confirmed its epoch (docs/handoff.md, linearizable reads). Built on
//! the HandoffScale mirror: the state is its [`ScaleState`] plus the
//! module's four variables ([`ReadsState`]); HandoffScale's actions are
//! that mirror's steps; its invariants are that mirror's checks, plus
//! `TypeOKReads` and `ReadsLinearizable`.
//!
//! Mutations, each caught by `ReadsLinearizable`:
//! - `serve-reads-unconfirmed` answers a read without waiting for the
//!   confirmation: a zombie returns a value older than a write the new
//!   coordinator completed before the read began;
//! - `no-collect-fence` drops the fence (peers take pushes while a new
//!   coordinator instance collects): a zombie commits a write after the
//!   new instance collected, and the new instance, confirmed, answers a
//!   read without it. A confirmation round alone is not enough;
//! - `no-decline-fence` keeps only the fence of an answered collect: a
//!   coordinator that collected a peer's older instance declines the new
//!   one, which recovers from the other peer alone, takes a zombie's write
//!   and confirms a read that misses it (`tla/large/HandoffReadsEvicts2.cfg`: it needs
//!   a peer and the coordinator down together).

mod actions;
mod model;
mod state;

use crate::cfg::{CfgError, TlcConfig};
use crate::mirror::handoff::Func;
use crate::mirror::handoff_scale::HandoffScale;
use crate::properties;
use crate::spec::{self, Mirror, check_mutation};

pub use actions::{ReadsAction, stale};
pub use model::HandoffReads;
use model::{Check, MUTATIONS};
pub use state::{Decl, Read, ReadsState, Wids, ZombieMem};

const MODULE: &str = "HandoffReads";
const SPEC: &str = "SpecR";
const MAX_READS: &str = "MaxReads";
const TYPE_OK_READS: &str = "TypeOKReads";
const READS_LINEARIZABLE: &str = "ReadsLinearizable";

impl HandoffReads {
    pub fn new(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        if let Some(spec) = cfg.specification.as_deref().filter(|s| *s != SPEC) {
            return Err(CfgError::Unsupported(format!("SPECIFICATION {spec}: {MODULE} defines {SPEC}")));
        }
        if cfg.init.is_some() || cfg.next.is_some() {
            return Err(CfgError::Unsupported(format!("{MODULE} is checked through SPECIFICATION {SPEC}")));
        }
        let own = [TYPE_OK_READS, READS_LINEARIZABLE];
        let scale_cfg = TlcConfig {
            specification: Some("SpecS".into()),
            constants: cfg.constants.iter().filter(|(n, _)| n != MAX_READS).cloned().collect(),
            invariants: cfg.invariants.iter().filter(|n| !own.contains(&n.as_str())).cloned().collect(),
            properties: cfg.properties.clone(),
            check_deadlock: false,
            ..TlcConfig::default()
        };
        let scale = HandoffScale::new(&scale_cfg).map_err(|e| match e {
            CfgError::UnknownConstant { name, known, .. } => {
                CfgError::UnknownConstant { name, module: MODULE.into(), known: format!("{known}, {MAX_READS}") }
            }
            CfgError::UnknownDefinition { name, .. } => CfgError::UnknownDefinition { module: MODULE.into(), name },
            other => other,
        })?;
        let nat = |name: &str| -> Result<u8, CfgError> {
            u8::try_from(cfg.nat(name)?).map_err(|_| CfgError::Unsupported(format!("{name} is too large")))
        };
        let mut model = HandoffReads {
            max_reads: nat(MAX_READS)?,
            max_writes: nat("MaxWrites")?,
            max_epoch: nat("MaxEvicts")?.saturating_add(1),
            scale,
            mutation: None,
            checks: Vec::new(),
            names: Vec::new(),
        };
        check_mutation(MODULE, HandoffReads::MUTATIONS, mutation)?;
        model.mutation = mutation.and_then(|name| spec::named(&MUTATIONS, name));
        let own: [Check; 2] = [(TYPE_OK_READS, type_ok_reads), (READS_LINEARIZABLE, reads_linearizable)];
        (model.names, model.checks) = properties::named_checks(MODULE, cfg, &own, |n| model.scale.check_name(n))?;
        Ok(model)
    }

    /// `InitR`
    pub fn init(&self) -> ReadsState {
        let scale = self.scale.init();
        let first = scale.ext.inc[self.scale.zombie().coordinator()];
        ReadsState {
            scale,
            zmem: Default::default(),
            reads: Default::default(),
            read_ctr: 0,
            bad_read: false,
            fenced: Func::new(self.scale.zombie().peers(), |_| 0),
            newest: Func::new(self.scale.zombie().peers(), |_| first),
            dsent: Default::default(),
            decl_recv: Func::new(self.scale.zombie().peers(), |_| false),
        }
    }

    /// The HandoffScale mirror HandoffReads is built on.
    pub fn scale(&self) -> &HandoffScale {
        &self.scale
    }

    /// The name of the first invariant or property the cfg lists that
    /// does not hold in `s`.
    pub fn violated(&self, s: &ReadsState) -> Option<&'static str> {
        self.scale
            .violated(&s.scale)
            .or_else(|| self.checks.iter().find(|(_, holds)| !holds(self, s)).map(|(name, _)| *name))
    }

    /// The name of the invariant or property `name`, if the module has it.
    pub fn check_name(&self, name: &str) -> Option<&'static str> {
        self.scale.check_name(name).or_else(|| [TYPE_OK_READS, READS_LINEARIZABLE].into_iter().find(|n| *n == name))
    }
}

/// `TypeOKReads`
fn type_ok_reads(m: &HandoffReads, s: &ReadsState) -> bool {
    let ep = |e: u8| (1..=m.max_epoch).contains(&e);
    s.zmem.iter().all(|z| ep(z.epoch))
        && s.reads.iter().all(|r| ep(r.ep) && r.seen.iter().all(|w| (1..=m.max_writes).contains(w)))
        && s.read_ctr <= m.max_reads
        && s.fenced.iter().all(|(_, &f)| f <= m.max_epoch)
        && s.newest.iter().all(|(_, &n)| n <= m.max_epoch)
        && s.dsent.iter().all(|d| ep(d.inc))
}

/// `ReadsLinearizable == ~badRead`
fn reads_linearizable(_: &HandoffReads, s: &ReadsState) -> bool {
    !s.bad_read
}

extension_model!(HandoffReads, ReadsState, ReadsAction, |m, s| m.scale.violated(&s.scale));

impl Mirror for HandoffReads {
    const MODULE: &'static str = MODULE;
    const MUTATIONS: &'static [&'static str] = &spec::names(&MUTATIONS);

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        HandoffReads::new(cfg, mutation)
    }

    fn action_names(&self) -> Vec<&'static str> {
        ReadsAction::NAMES.to_vec()
    }

    fn action_kind(&self, action: &ReadsAction) -> usize {
        action.kind()
    }
}
