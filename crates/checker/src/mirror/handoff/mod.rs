//! 1:1 stateright mirrors of `tla/Handoff.tla` ([`Handoff`]) and of its
//! corrected version `tla/HandoffV2.tla` ([`HandoffV2`]): replication and
//! recovery of a memory-only KV store whose replicas are evicted at will
//! (a fixed write coordinator, epoch-tagged records, a collect/announce
//! recovery handshake). The two modules differ only in four recovery
//! guards, switched by [`Version::V2_RECOVERY`].
//!
//! The state is exactly the module's variables ([`State`]), one
//! [`Action`] variant per TLA+ action, the invariants under their spec
//! names, and every constant from the `.cfg`, so that the unique state
//! count equals TLC's distinct states (95,028 on `tla/Handoff.cfg`).
//!
//! - `values`: model values, functions, records (TLA+ notation).
//! - `state`: the variables and the spec's operators over them.
//! - `actions`: `Next`, one function per action.
//! - `properties`: the invariants and `NoServedRegression`.

mod actions;
mod model;
mod properties;
mod state;
mod values;

use std::marker::PhantomData;

use stateright::{Model, Property};

use crate::cfg::{CfgError, TlcConfig};
use crate::spec::{self, Mirror, check_mutation};

pub use actions::Action;
pub use model::{HandoffModel, Original, V2, Version};
use model::{MUTATIONS, Mutation, STRONG_COORDINATOR_COMPLETENESS};
pub use state::{KeySet, Msgs, Replicas, State, WriteSet, mem_ep_max, merge_mem, merge_val, wins};
pub use values::{AckedW, Func, Key, ModelValue, PendingW, PushMsg, Rec, Replica, Status, Val};

use properties::NO_SERVED_REGRESSION;

/// The mirror of `tla/Handoff.tla`.
pub type Handoff = HandoffModel<Original>;
/// The mirror of `tla/HandoffV2.tla`.
pub type HandoffV2 = HandoffModel<V2>;

const CONSTANTS: [&str; 6] = ["Replicas", "Coordinator", "Keys", "MaxWrites", "MaxEvicts", "NoVal"];

impl<V: Version> Mirror for HandoffModel<V> {
    const MODULE: &'static str = V::MODULE;
    const MUTATIONS: &'static [&'static str] = &spec::names(&MUTATIONS);

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        cfg.expect_constants(V::MODULE, &CONSTANTS)?;
        let all = properties::invariants::<V>();
        let names: Vec<&str> = all.iter().map(|(name, _)| *name).collect();
        cfg.expect_definitions(V::MODULE, &names, &[NO_SERVED_REGRESSION])?;
        check_mutation(V::MODULE, Self::MUTATIONS, mutation)?;
        let mutation = mutation.and_then(|m| spec::named(&MUTATIONS, m));
        expect_formula("SPECIFICATION", &cfg.specification, "Spec")?;
        expect_formula("INIT", &cfg.init, "Init")?;
        expect_formula("NEXT", &cfg.next, "Next")?;

        let replicas = model_values("Replicas", &cfg.model_value_set("Replicas")?)?;
        let coordinator_name = cfg.model_value("Coordinator")?;
        // ASSUME Coordinator \in Replicas
        let coordinator =
            *replicas.iter().find(|r| r.name() == coordinator_name).ok_or_else(|| CfgError::WrongType {
                name: "Coordinator".into(),
                expected: "an element of Replicas (ASSUME Coordinator \\in Replicas)",
                found: coordinator_name.clone(),
            })?;
        let invariants =
            cfg.invariants.iter().filter_map(|name| all.iter().find(|(n, _)| n == name).copied()).collect();
        if mutation == Some(Mutation::StrongCoordinatorCompleteness)
            && !cfg.invariants.iter().any(|n| n == "CoordinatorHoldsOwnCommits")
        {
            return Err(CfgError::Unsupported(format!(
                "mutation {STRONG_COORDINATOR_COMPLETENESS} changes CoordinatorHoldsOwnCommits, \
                 which the cfg does not check"
            )));
        }
        Ok(HandoffModel {
            peers: replicas.iter().copied().filter(|&r| r != coordinator).collect(),
            replicas,
            coordinator,
            keys: model_values("Keys", &cfg.model_value_set("Keys")?)?,
            max_writes: small_nat(cfg, "MaxWrites")?,
            max_evicts: small_nat(cfg, "MaxEvicts")?,
            no_val: ModelValue::new(0, &cfg.model_value("NoVal")?),
            invariants,
            no_served_regression: cfg.properties.iter().any(|p| p == NO_SERVED_REGRESSION),
            check_deadlock: cfg.check_deadlock,
            mutation,
            version: PhantomData,
        })
    }

    fn action_names(&self) -> Vec<&'static str> {
        Action::NAMES.to_vec()
    }

    fn action_kind(&self, action: &Action) -> usize {
        action.kind()
    }
}

/// The cfg may name the spec's formulas (`SPECIFICATION Spec`), but no
/// other: the mirror implements only `Init` and `Next`.
fn expect_formula(section: &str, given: &Option<String>, defined: &str) -> Result<(), CfgError> {
    match given {
        Some(name) if name != defined => {
            Err(CfgError::Unsupported(format!("{section} {name}: the Handoff mirror implements only {defined}")))
        }
        _ => Ok(()),
    }
}

fn model_values(constant: &str, names: &[String]) -> Result<Vec<ModelValue>, CfgError> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let index =
                u8::try_from(i).map_err(|_| CfgError::Unsupported(format!("{constant} has more than 256 elements")))?;
            Ok(ModelValue::new(index, name))
        })
        .collect()
}

/// Counters, epochs and write ids are stored in a byte; bounds this large
/// are far beyond what any checker could explore anyway.
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

impl<V: Version> Model for HandoffModel<V> {
    type State = State;
    type Action = Action;

    /// `Init`
    fn init_states(&self) -> Vec<State> {
        vec![State {
            mem: Func::new(&self.replicas, |_| Func::new(&self.keys, |_| Val::NoVal(self.no_val))),
            status: Func::new(&self.replicas, |_| Status::Ready),
            seeded: Func::new(&self.replicas, |_| Default::default()),
            known: Func::new(&self.peers, |_| 1),
            epoch: 1,
            collect_max: 0,
            ver_ctr: 0,
            wid_ctr: 1,
            pending: Default::default(),
            net: Default::default(),
            acked: Default::default(),
            evict_count: 0,
            served_regression: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        self.next(s, actions);
    }

    /// One step of `Next`; the step is also where `NoServedRegressionStep`
    /// is evaluated, since it relates the state before and after.
    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut t = self.step(s, &action)?;
        t.served_regression = self.no_served_regression && !properties::no_served_regression_step(self, s, &t);
        Some(t)
    }

    /// The web explorer lists actions as TLA+ action instances.
    fn format_action(&self, action: &Self::Action) -> String {
        action.to_string()
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut checks: Vec<Property<Self>> =
            self.invariants.iter().map(|&(name, check)| Property::always(name, check)).collect();
        if self.no_served_regression {
            checks.push(Property::always(NO_SERVED_REGRESSION, properties::no_served_regression));
        }
        if self.check_deadlock {
            checks.push(Property::always(properties::DEADLOCK, properties::deadlock_free));
        }
        if checks.is_empty() {
            // stateright explores only the initial states of a model with
            // no properties; TLC with nothing to check still explores all.
            checks.push(Property::always("TRUE", |_, _| true));
        }
        checks
    }
}
