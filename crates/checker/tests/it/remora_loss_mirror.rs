//! The Rust mirror of `tla/RemoraClaimLeaseLoss.tla` explores exactly the
//! states TLC does on the shipped cfg; every mutation of the actions the
//! module adds is caught; and the property it restates, LeaseIsNeverRevived,
//! does fail in it, as TLC finds.

use std::path::PathBuf;

use checker::cfg::TlcConfig;
use checker::mirror::remora_loss::RemoraClaimLeaseLoss;
use checker::run::{self, RunOptions};
use checker::spec::Mirror;

fn shipped_cfg() -> TlcConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla/RemoraClaimLeaseLoss.cfg");
    TlcConfig::load(&path).unwrap()
}

/// Single-threaded BFS: a shortest counterexample, the same on every run.
fn check(cfg: &TlcConfig, mutation: Option<&str>) -> run::Report {
    let model = RemoraClaimLeaseLoss::from_cfg(cfg, mutation).unwrap();
    run::check(model, "RemoraClaimLeaseLoss.tla", "RemoraClaimLeaseLoss.cfg", mutation, &RunOptions::default())
}

/// TLC and the `tla` checker both report 43,504 distinct states.
#[test]
fn shipped_cfg_matches_tlc_and_passes() {
    let report = check(&shipped_cfg(), None);
    assert_eq!(report.violated, None, "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 43_504);
}

#[test]
fn every_mutation_is_caught() {
    let cfg = shipped_cfg();
    for (mutation, property) in [
        ("restore-expired-lease", "ExpiredLeaseIsNeverRevived"),
        ("restore-for-any-worker", "ExpiredLeaseIsNeverRevived"),
        ("replay-of-rejected", "RejectionIsFinal"),
    ] {
        let report = check(&cfg, Some(mutation));
        assert_eq!(report.violated.as_deref(), Some(property), "{mutation}: {}", run::format_trace(&report));
    }
    let mut authority_only = cfg.clone();
    authority_only.properties.clear();
    let report = check(&authority_only, Some("restore-for-any-worker"));
    assert_eq!(report.violated.as_deref(), Some("LiveLeaseMatchesAuthority"));
}

/// A restoration makes a lease for an executing claim: the unrestated
/// property fails after 8 states (TLC: the same length), the restated one
/// holds.
#[test]
fn lease_is_never_revived_fails_across_a_loss() {
    let mut cfg = shipped_cfg();
    cfg.properties.push("LeaseIsNeverRevived".into());
    let report = check(&cfg, None);
    assert_eq!(report.violated.as_deref(), Some("LeaseIsNeverRevived"));
    assert_eq!(report.trace.len(), 8, "{}", run::format_trace(&report));
    let last = report.trace.last().and_then(|step| step.action.clone()).unwrap_or_default();
    assert!(last.starts_with("RestoreLease"), "{last}");
}
