//! The Rust mirror of `tla/RemoraJobs.tla` explores exactly the states TLC
//! does on the shipped cfg; each of the module's invariants and action
//! properties is broken by a mutation of the actions the module adds; and
//! the two properties of the modules below that the module restates do
//! fail in it.

use std::path::PathBuf;

use checker::cfg::{TlcConfig, Value};
use checker::mirror::remora_jobs::RemoraJobs;
use checker::run::{self, RunOptions};
use checker::spec::Mirror;

fn shipped_cfg() -> TlcConfig {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla/RemoraJobs.cfg");
    TlcConfig::load(&path).unwrap()
}

/// Single-threaded BFS: a shortest counterexample, the same on every run.
fn check(cfg: &TlcConfig, mutation: Option<&str>) -> run::Report {
    let model = RemoraJobs::from_cfg(cfg, mutation).unwrap();
    run::check(model, "RemoraJobs.tla", "RemoraJobs.cfg", mutation, &RunOptions::default())
}

/// The shipped cfg checking only `invariants` and `properties`.
fn checking(invariants: &[&str], properties: &[&str]) -> TlcConfig {
    let mut cfg = shipped_cfg();
    cfg.invariants = invariants.iter().map(|s| s.to_string()).collect();
    cfg.properties = properties.iter().map(|s| s.to_string()).collect();
    cfg
}

fn violated(cfg: &TlcConfig, mutation: Option<&str>) -> Option<String> {
    let report = check(cfg, mutation);
    assert!(report.violated.is_none() || !report.trace.is_empty(), "a violation without a trace");
    report.violated
}

/// The violated check and the length of the shortest counterexample.
fn caught(cfg: &TlcConfig, mutation: &str) -> (Option<String>, usize) {
    let report = check(cfg, Some(mutation));
    (report.violated, report.trace.len())
}

/// TLC reports 6,080 distinct states (depth 18).
#[test]
fn shipped_cfg_matches_tlc_and_passes() {
    let report = check(&shipped_cfg(), None);
    assert_eq!(report.violated, None, "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 6_080);
}

#[test]
fn a_completed_claim_reaped_is_caught() {
    let cfg = shipped_cfg();
    assert_eq!(caught(&cfg, "reap-completed"), (Some("CompletedClaimIsNeverReaped".into()), 8));
}

/// With more fences than attempts allowed (MaxAttempts = 1: a second
/// attempt is one too many), a retry past the limit is caught.
#[test]
fn a_retry_beyond_the_limit_is_caught() {
    let mut cfg = shipped_cfg();
    for (name, value) in &mut cfg.constants {
        if name == "MaxAttempts" {
            *value = Value::Int(1);
        }
    }
    // Unmutated, no retry is ever authorized (2,840 states, as TLC).
    assert_eq!(violated(&cfg, None), None);
    assert_eq!(caught(&cfg, "retry-beyond-limit"), (Some("AtMostMaxAttempts".into()), 5));
    cfg.invariants.clear();
    cfg.properties = vec!["DeadClaimStaysDead".into()];
    assert_eq!(violated(&cfg, Some("retry-beyond-limit")).as_deref(), Some("DeadClaimStaysDead"));
}

#[test]
fn a_retry_with_the_same_fence_is_caught() {
    let cfg = checking(&[], &["ActivationAppliesAtMostOncePerAttempt"]);
    assert_eq!(caught(&cfg, "retry-same-fence"), (Some("ActivationAppliesAtMostOncePerAttempt".into()), 8));
}

#[test]
fn a_failed_attempt_activated_again_is_caught() {
    let cfg = checking(&["AtMostOneActivationEffectPerAttempt"], &[]);
    assert_eq!(caught(&cfg, "fail-requeues-attempt"), (Some("AtMostOneActivationEffectPerAttempt".into()), 11));
}

/// A retry starts the new attempt's count at 0, which the base module's
/// per-claim property forbids; an executing attempt can now be reaped,
/// which ReapedClaimHasNoActivationEffect forbids. Both are restated.
#[test]
fn the_restated_properties_of_the_modules_below_fail() {
    let cfg = checking(&[], &["ActivationAppliesAtMostOnce"]);
    assert_eq!(violated(&cfg, None).as_deref(), Some("ActivationAppliesAtMostOnce"));
    let cfg = checking(&["ReapedClaimHasNoActivationEffect"], &[]);
    assert_eq!(violated(&cfg, None).as_deref(), Some("ReapedClaimHasNoActivationEffect"));
}

#[test]
fn a_cfg_with_an_unknown_check_or_constant_is_refused() {
    let cfg = checking(&["NoSuchInvariant"], &[]);
    assert!(RemoraJobs::from_cfg(&cfg, None).is_err());
    let mut cfg = shipped_cfg();
    cfg.constants.retain(|(name, _)| name != "MaxAttempts");
    assert!(RemoraJobs::from_cfg(&cfg, None).is_err());
}
