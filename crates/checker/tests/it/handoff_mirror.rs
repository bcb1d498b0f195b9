//! Parity of the Handoff mirror with TLC, and its handling of the cfg.

use std::path::PathBuf;

use checker::cfg::{CfgError, TlcConfig};
use checker::mirror::handoff::Handoff;
use checker::run::{self, RunOptions};
use checker::spec::Mirror;

fn tla_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla")
}

fn load(name: &str) -> TlcConfig {
    TlcConfig::load(&tla_dir().join(name)).unwrap()
}

/// TLC (and the `tla` checker) report 95,028 distinct states on
/// Handoff.cfg with every invariant and NoServedRegression holding.
#[test]
fn handoff_cfg_matches_tlc_distinct_states() {
    let model = Handoff::from_cfg(&load("Handoff.cfg"), None).unwrap();
    let report = run::check(model, "Handoff", "Handoff.cfg", None, &RunOptions { threads: 2, ..Default::default() });
    assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
    assert_eq!(report.unique_states, 95_028);
}

/// The cfg says CHECK_DEADLOCK FALSE; checking it anyway shows that the
/// spec never gets stuck (some step, if only a stuttering one, is always
/// enabled), so the invariants are not passing vacuously on dead ends.
#[test]
fn handoff_cfg_has_no_deadlock() {
    let mut cfg = load("Handoff.cfg");
    cfg.check_deadlock = true;
    let report = run::check(
        Handoff::from_cfg(&cfg, None).unwrap(),
        "Handoff",
        "Handoff.cfg",
        None,
        &RunOptions { threads: 2, ..Default::default() },
    );
    assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
    assert_eq!(report.unique_states, 95_028);
}

/// Any constants the spec allows, not only the shipped cfg: four replicas,
/// a coordinator that is not listed first, two keys. The count is the
/// `tla` checker's (tla-checker 0.24.11) on the same cfg.
const FOUR_REPLICAS: &str = "
SPECIFICATION Spec
CONSTANTS
    Replicas = {a, b, c, d}
    Coordinator = c
    Keys = {x, y}
    MaxWrites = 1
    MaxEvicts = 1
    NoVal = none
INVARIANT TypeOK EpochVerUnique AckedImpliesHeldUnlessDoomed
INVARIANT CoordinatorHoldsOwnCommits EpochAgreement
PROPERTY NoServedRegression
CHECK_DEADLOCK FALSE
";

#[test]
fn other_constants_match_the_tla_checker() {
    let cfg = TlcConfig::parse(FOUR_REPLICAS).unwrap();
    let report =
        run::check(Handoff::from_cfg(&cfg, None).unwrap(), "Handoff", "FOUR_REPLICAS", None, &RunOptions::default());
    assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
    assert_eq!(report.unique_states, 6_357);
}

/// With nothing to check TLC still explores every state; so must the
/// mirror (stateright alone would stop at the initial state).
#[test]
fn a_cfg_without_properties_still_explores_everything() {
    let mut cfg = load("Handoff.cfg");
    cfg.invariants.clear();
    cfg.properties.clear();
    let report = run::check(
        Handoff::from_cfg(&cfg, None).unwrap(),
        "Handoff",
        "Handoff.cfg",
        None,
        &RunOptions { threads: 2, ..Default::default() },
    );
    assert_eq!(report.unique_states, 95_028);
}

#[test]
fn cfg_mistakes_are_typed_errors() {
    let shipped = std::fs::read_to_string(tla_dir().join("Handoff.cfg")).unwrap();
    let error = |from: &str, to: &str| {
        assert!(shipped.contains(from), "{from:?} is not in Handoff.cfg");
        let cfg = TlcConfig::parse(&shipped.replace(from, to)).unwrap();
        Handoff::from_cfg(&cfg, None).err().expect("the cfg was accepted")
    };
    assert!(
        matches!(error("NoVal = NoVal", "NoVal = NoVal Extra = 1"), CfgError::UnknownConstant { name, .. } if name == "Extra")
    );
    assert!(matches!(error("MaxWrites = 2", ""), CfgError::MissingConstant(name) if name == "MaxWrites"));
    assert!(
        matches!(error("INVARIANT TypeOK", "INVARIANT TypeOk"), CfgError::UnknownDefinition { name, .. } if name == "TypeOk")
    );
    assert!(matches!(error("PROPERTY NoServedRegression", "PROPERTY Liveness"), CfgError::UnknownDefinition { .. }));
    assert!(
        matches!(error("Coordinator = r0", "Coordinator = r9"), CfgError::WrongType { name, .. } if name == "Coordinator")
    );
    assert!(
        matches!(error("MaxEvicts = 2", "MaxEvicts = {r0}"), CfgError::WrongType { name, .. } if name == "MaxEvicts")
    );
    assert!(matches!(error("Keys = {k1}", "Keys = 1"), CfgError::WrongType { name, .. } if name == "Keys"));
    assert!(matches!(error("SPECIFICATION Spec", "SPECIFICATION Other"), CfgError::Unsupported(_)));

    let cfg = TlcConfig::parse(&shipped).unwrap();
    assert!(matches!(Handoff::from_cfg(&cfg, Some("no-such-bug")), Err(CfgError::Unsupported(_))));
}
