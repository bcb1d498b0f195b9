//! The stateright mirror of `tla/HandoffCond.tla`: HandoffReads plus
//! conditional writes (evaluated against committed memory with nothing
//! pending on the key; a failure answered only after a confirmation) and
//! expiring keys (a clock, an expiry per write, expiry deletes issued by the
//! coordinator). Built on the HandoffReads mirror: the state is its
//! [`ReadsState`] plus the module's eight variables ([`CondState`]);
//! HandoffReads' actions are that mirror's steps; its invariants are that
//! mirror's checks, plus the module's four.
//!
//! Mutations, each caught:
//! - `cond-unconfirmed` answers a failed condition without a confirmation:
//!   a zombie fails a condition that holds on the write the new coordinator
//!   completed before the request began (`CondLinearizable`);
//! - `cond-ignores-pending` evaluates a condition while a write to its key
//!   is pending: the conditional write commits over a write it never saw
//!   (`CondLinearizable`), which shows that the invariant checks successes
//!   too;
//! - `no-collect-fence` (HandoffReads' own): the new coordinator, confirmed,
//!   fails a condition against a memory that misses a zombie's commit
//!   (`CondLinearizable`): the confirmation needs the fence here as reads do;
//! - `serve-expired` sees a record whose expiry passed as present
//!   (`ExpiredNeverServed`);
//! - `expire-unexpired` lets the coordinator delete a record before its
//!   expiry (`ExpiryDeletesOnlyExpired`).

mod actions;
mod model;
mod state;

use crate::cfg::{CfgError, TlcConfig, Value};
use crate::mirror::handoff::Val;
use crate::mirror::handoff_reads::{HandoffReads, ReadsState};
use crate::properties;
use crate::spec::{self, Mirror, check_mutation};

pub use actions::CondAction;
pub use model::HandoffCond;
use model::{Check, MUTATIONS};
pub use state::{ABSENT, CondState, CondW, ExpIssued, Issued};

const MODULE: &str = "HandoffCond";
const SPEC: &str = "SpecC";
const MAX_CONDS: &str = "MaxConds";
const MAX_TIME: &str = "MaxTime";
const TTLS: &str = "TTLs";
const TYPE_OK_COND: &str = "TypeOKCond";
const COND_LINEARIZABLE: &str = "CondLinearizable";
const EXPIRY_DELETES_ONLY_EXPIRED: &str = "ExpiryDeletesOnlyExpired";
const EXPIRED_NEVER_SERVED: &str = "ExpiredNeverServed";
const OWN: [&str; 4] = [TYPE_OK_COND, COND_LINEARIZABLE, EXPIRY_DELETES_ONLY_EXPIRED, EXPIRED_NEVER_SERVED];

impl HandoffCond {
    pub fn new(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        if let Some(spec) = cfg.specification.as_deref().filter(|s| *s != SPEC) {
            return Err(CfgError::Unsupported(format!("SPECIFICATION {spec}: {MODULE} defines {SPEC}")));
        }
        if cfg.init.is_some() || cfg.next.is_some() {
            return Err(CfgError::Unsupported(format!("{MODULE} is checked through SPECIFICATION {SPEC}")));
        }
        check_mutation(MODULE, HandoffCond::MUTATIONS, mutation)?;
        let own_constants = [MAX_CONDS, MAX_TIME, TTLS];
        let reads_cfg = TlcConfig {
            specification: Some("SpecR".into()),
            constants: cfg.constants.iter().filter(|(n, _)| !own_constants.contains(&n.as_str())).cloned().collect(),
            invariants: cfg.invariants.iter().filter(|n| !OWN.contains(&n.as_str())).cloned().collect(),
            properties: cfg.properties.clone(),
            check_deadlock: false,
            ..TlcConfig::default()
        };
        let reads_mutation = mutation.filter(|&m| spec::named(&MUTATIONS, m) == Some(None));
        let reads = HandoffReads::new(&reads_cfg, reads_mutation).map_err(|e| match e {
            CfgError::UnknownConstant { name, known, .. } => CfgError::UnknownConstant {
                name,
                module: MODULE.into(),
                known: format!("{known}, {}", own_constants.join(", ")),
            },
            CfgError::UnknownDefinition { name, .. } => CfgError::UnknownDefinition { module: MODULE.into(), name },
            other => other,
        })?;
        let nat = |name: &str| -> Result<u8, CfgError> {
            u8::try_from(cfg.nat(name)?).map_err(|_| CfgError::Unsupported(format!("{name} is too large")))
        };
        let ttls = match cfg.constant(TTLS)? {
            Value::Set(items) => items
                .iter()
                .map(|v| match v {
                    Value::Int(n) if (1..=i64::from(u8::MAX / 2)).contains(n) => Ok(*n as u8),
                    other => Err(CfgError::WrongType {
                        name: TTLS.into(),
                        expected: "a set of positive times",
                        found: other.to_string(),
                    }),
                })
                .collect::<Result<std::collections::BTreeSet<u8>, _>>()?,
            other => {
                return Err(CfgError::WrongType { name: TTLS.into(), expected: "a set", found: other.to_string() });
            }
        };
        let mut model = HandoffCond {
            reads,
            max_conds: nat(MAX_CONDS)?,
            max_time: nat(MAX_TIME)?,
            ttls: ttls.into_iter().collect(),
            max_writes: nat("MaxWrites")?,
            max_epoch: nat("MaxEvicts")?.saturating_add(1),
            mutation: mutation.and_then(|name| spec::named(&MUTATIONS, name)).flatten(),
            checks: Vec::new(),
            names: Vec::new(),
        };
        let own: [Check; 4] = [
            (TYPE_OK_COND, type_ok_cond),
            (COND_LINEARIZABLE, cond_linearizable),
            (EXPIRY_DELETES_ONLY_EXPIRED, expiry_deletes_only_expired),
            (EXPIRED_NEVER_SERVED, expired_never_served),
        ];
        (model.names, model.checks) = properties::named_checks(MODULE, cfg, &own, |n| model.reads.check_name(n))?;
        Ok(model)
    }

    /// `InitC`
    pub fn init(&self) -> CondState {
        CondState {
            reads: self.reads.init(),
            now: 0,
            exp_at: (0..self.max_writes).map(|_| 0).collect(),
            conds: Default::default(),
            cond_ctr: 0,
            cond_issued: Default::default(),
            exp_issued: Default::default(),
            bad_cond: false,
            served_expired: false,
        }
    }

    /// The HandoffReads mirror HandoffCond is built on.
    pub fn reads(&self) -> &HandoffReads {
        &self.reads
    }

    /// `MaxConds`
    pub fn max_conds(&self) -> u8 {
        self.max_conds
    }

    /// `MaxTime`
    pub fn max_time(&self) -> u8 {
        self.max_time
    }

    /// `TTLs`, in increasing order.
    pub fn ttls(&self) -> &[u8] {
        &self.ttls
    }

    /// The name of the first invariant or property the cfg lists that
    /// does not hold in `s`.
    pub fn violated(&self, s: &CondState) -> Option<&'static str> {
        self.reads
            .violated(&s.reads)
            .or_else(|| self.checks.iter().find(|(_, holds)| !holds(self, s)).map(|(name, _)| *name))
    }

    /// The name of the invariant or property `name`, if the module has it.
    pub fn check_name(&self, name: &str) -> Option<&'static str> {
        self.reads.check_name(name).or_else(|| OWN.into_iter().find(|n| *n == name))
    }
}

/// `TypeOKCond`
fn type_ok_cond(m: &HandoffCond, s: &CondState) -> bool {
    let wid = |w: u8| (1..=m.max_writes).contains(&w);
    let wids = |ws: &crate::mirror::handoff_reads::Wids| ws.iter().all(|&w| wid(w));
    let max_ttl = m.ttls.last().copied().unwrap_or(0);
    s.now <= m.max_time
        && s.exp_at.iter().all(|&at| at <= m.max_time + max_ttl)
        && s.conds.iter().all(|x| {
            (1..=m.max_epoch).contains(&x.ep)
                && wid(x.wid)
                && (x.cond == ABSENT || wid(x.cond))
                && (x.ttl == 0 || m.ttls.contains(&x.ttl))
                && wids(&x.seen)
        })
        && s.cond_ctr <= m.max_conds
        && s.cond_issued.iter().all(|e| wid(e.wid) && wids(&e.seen))
        && s.exp_issued.iter().all(|e| wid(e.wid) && e.at <= m.max_time)
}

/// `Replaced(a, v, seen)` for the acknowledged write with id `wid`, if any:
/// no acknowledged, not doomed write of its key but itself is newer than
/// `v` and older than it, or newer than `v` and among `seen`.
fn replaced(s: &ReadsState, wid: u8, v: Val, seen: &crate::mirror::handoff_reads::Wids) -> bool {
    use crate::mirror::handoff::wins;
    let acked = &s.scale.ext.base.acked;
    acked.iter().filter(|a| a.wid == wid).all(|a| {
        acked.iter().all(|w| {
            let newer = match v {
                Val::NoVal(_) => true,
                Val::Rec(r) => wins(w.write().rec, r),
            };
            !(w.key == a.key && w.wid != a.wid && !w.doomed && newer)
                || !(wins(a.write().rec, w.write().rec) || seen.contains(&w.wid))
        })
    })
}

/// `CondLinearizable`
fn cond_linearizable(_: &HandoffCond, s: &CondState) -> bool {
    !s.bad_cond && s.cond_issued.iter().all(|e| replaced(&s.reads, e.wid, e.val, &e.seen))
}

/// `ExpiryDeletesOnlyExpired`
fn expiry_deletes_only_expired(_: &HandoffCond, s: &CondState) -> bool {
    s.exp_issued.iter().all(|e| {
        let at = s.exp_at(e.val.wid);
        at != 0 && at <= e.at && replaced(&s.reads, e.wid, Val::Rec(e.val), &Default::default())
    })
}

/// `ExpiredNeverServed == ~servedExpired`
fn expired_never_served(_: &HandoffCond, s: &CondState) -> bool {
    !s.served_expired
}

extension_model!(HandoffCond, CondState, CondAction, |m, s| m.reads.violated(&s.reads));

impl Mirror for HandoffCond {
    const MODULE: &'static str = MODULE;
    const MUTATIONS: &'static [&'static str] = &spec::names(&MUTATIONS);

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        HandoffCond::new(cfg, mutation)
    }

    fn action_names(&self) -> Vec<&'static str> {
        CondAction::NAMES.to_vec()
    }

    fn action_kind(&self, action: &CondAction) -> usize {
        action.kind()
    }
}
