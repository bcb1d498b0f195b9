//! Builds the model from a `.cfg`: the constants, the spec's `ASSUME`s,
//! and the invariants and properties to check.

use stateright::Property;

use super::model::RemoraClaimActivation;
use super::mutation::{self, Mutation};
use super::properties::{ACTION_PROPERTIES, INVARIANTS, deadlock_free};
use super::values::{CAP, Claim, Constants, Fence, Op, Worker};
use crate::cfg::{CfgError, TlcConfig};
use crate::compact::Names;
use crate::spec::{Mirror, check_mutation};

/// The module's constants (also those of the modules that extend it and
/// of the claims model, which share them).
pub(crate) const CONSTANTS: &[&str] = &[
    "Claims",
    "Fences",
    "Workers",
    "Operations",
    "NoWorker",
    "NoOwner",
    "NoRequest",
    "NoResponse",
    "Accepted",
    "Rejected",
];

pub(super) fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<RemoraClaimActivation, CfgError> {
    let module = RemoraClaimActivation::MODULE;
    check_mutation(module, mutation::NAMES, mutation)?;
    cfg.expect_constants(module, CONSTANTS)?;
    let invariant_names: Vec<&str> = INVARIANTS.iter().map(|(name, _)| *name).collect();
    let property_names: Vec<&str> = ACTION_PROPERTIES.iter().map(|(name, ..)| *name).collect();
    cfg.expect_definitions(module, &invariant_names, &property_names)?;
    check_specification(cfg)?;

    let k = Names::leak(constants(cfg)?);
    let checked_invariants = cfg.invariants.iter().filter_map(|name| {
        let (name, holds) = INVARIANTS.iter().find(|(known, _)| known == name)?;
        Some(Property::always(name, *holds))
    });
    let listed_actions: Vec<_> =
        ACTION_PROPERTIES.iter().filter(|(name, ..)| cfg.properties.iter().any(|p| p == name)).collect();
    let checked_markers = listed_actions.iter().map(|(name, _, unviolated)| Property::always(name, *unviolated));
    let mut properties: Vec<_> = checked_invariants.chain(checked_markers).collect();
    if cfg.check_deadlock {
        properties.push(Property::always("Deadlock", deadlock_free));
    }
    if properties.is_empty() {
        // stateright explores only the initial states of a model with no
        // properties; TLC with nothing to check still explores them all.
        properties.push(Property::always("TRUE", |_, _| true));
    }

    let mut instances = Vec::new();
    RemoraClaimActivation::instances(k, &mut instances);
    Ok(RemoraClaimActivation {
        k,
        instances,
        properties,
        action_properties: listed_actions.iter().map(|(name, step, _)| (*name, *step)).collect(),
        mutation: mutation.map(|m| Mutation::from_name(m).expect("every name in mutation::NAMES parses")),
    })
}

/// The constants, with the spec's `ASSUME`s checked, and their names.
pub fn constants(cfg: &TlcConfig) -> Result<Constants, CfgError> {
    let mut names = Names::default();
    // ASSUME Claims # {} /\ Fences # {} /\ Workers # {} /\ Operations # {}:
    // `Names::set` refuses an empty set. Fences and workers are values, not
    // domains: any number fits.
    let claims = names.set::<Claim>(cfg, CAP)?;
    let fences = names.set::<Fence>(cfg, usize::from(u8::MAX))?;
    let workers = names.set::<Worker>(cfg, usize::from(u8::MAX))?;
    let operations = names.set::<Op>(cfg, CAP)?;
    // ASSUME NoWorker \notin Workers
    let no_worker = cfg.model_value("NoWorker")?;
    if names.find::<Worker>(&no_worker).is_some() {
        return Err(CfgError::WrongType {
            name: "NoWorker".into(),
            expected: "a model value outside Workers (ASSUME NoWorker \\notin Workers)",
            found: no_worker,
        });
    }
    // ASSUME NoRequest \notin RequestKeys holds for every model value: a
    // model value is never a triple.
    Ok(Constants {
        no_worker: names.intern(&no_worker),
        no_owner: names.value(cfg, "NoOwner")?,
        no_request: names.value(cfg, "NoRequest")?,
        no_response: names.value(cfg, "NoResponse")?,
        accepted: names.value(cfg, "Accepted")?,
        rejected: names.value(cfg, "Rejected")?,
        names,
        claims,
        fences,
        workers,
        operations,
    })
}

/// The mirror explores `Spec`; a cfg that names another formula would get a
/// verdict TLC does not give.
fn check_specification(cfg: &TlcConfig) -> Result<(), CfgError> {
    match (&cfg.specification, &cfg.init, &cfg.next) {
        (Some(spec), None, None) if spec == "Spec" => Ok(()),
        (None, Some(init), Some(next)) if init == "Init" && next == "Next" => Ok(()),
        _ => Err(CfgError::Unsupported(
            "RemoraClaimActivation is mirrored as SPECIFICATION Spec (or INIT Init and NEXT Next)".into(),
        )),
    }
}
