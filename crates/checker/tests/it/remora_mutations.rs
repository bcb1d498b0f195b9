//! Every protocol mutation of the RemoraClaimActivation mirror is caught on
//! the shipped cfg, and its shortest counterexample is pinned as a snapshot.

use std::path::PathBuf;

use checker::cfg::{CfgError, TlcConfig};
use checker::mirror::remora::RemoraClaimActivation;
use checker::run::{self, RunOptions};
use checker::spec::Mirror;

fn shipped_cfg() -> TlcConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla/RemoraClaimActivation.cfg");
    TlcConfig::load(&path).unwrap()
}

/// Single-threaded BFS: the reported counterexample is a shortest one, and
/// the same on every run.
fn check(cfg: &TlcConfig, mutation: &str) -> run::Report {
    let model = RemoraClaimActivation::from_cfg(cfg, Some(mutation)).unwrap();
    run::check(model, "RemoraClaimActivation.tla", "RemoraClaimActivation.cfg", Some(mutation), &RunOptions::default())
}

#[test]
fn every_mutation_is_caught_with_a_shortest_counterexample() {
    let cfg = shipped_cfg();
    for &mutation in RemoraClaimActivation::MUTATIONS {
        let report = check(&cfg, mutation);
        let Some(violated) = &report.violated else {
            panic!("mutation {mutation} is not caught ({} distinct states)", report.unique_states);
        };
        insta::assert_snapshot!(
            mutation,
            format!("{violated} is violated after {} states\n\n{}", report.trace.len(), run::format_trace(&report))
        );
    }
}

/// The effect applied twice violates several invariants at once; the
/// action property catches it on its own too, through the step marker.
#[test]
fn activation_applies_at_most_once_alone_catches_a_second_effect() {
    let mut cfg = shipped_cfg();
    cfg.invariants.clear();
    cfg.properties = vec!["ActivationAppliesAtMostOnce".into()];
    let report = check(&cfg, "effect-applied-twice");
    assert_eq!(report.violated.as_deref(), Some("ActivationAppliesAtMostOnce"));
    assert_eq!(report.trace.len(), 7, "{}", run::format_trace(&report));
}

#[test]
fn an_unknown_mutation_is_refused() {
    let err = RemoraClaimActivation::from_cfg(&shipped_cfg(), Some("no-such-mutation")).err().unwrap();
    assert!(matches!(err, CfgError::Unsupported(_)), "{err}");
}
