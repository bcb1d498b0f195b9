//! The Rust mirror of `tla/RemoraClaimActivation.tla` explores exactly the
//! states TLC does, on the shipped cfg and on others, and takes its
//! constants, invariants and properties from the cfg alone.

use std::path::PathBuf;

use checker::cfg::{CfgError, TlcConfig};
use checker::mirror::remora::{Action, Claim, Fence, Op, RemoraClaimActivation, Worker};
use checker::run::{self, RunOptions};
use checker::spec::{Mirror, TlaState};
use stateright::Model;

fn tla_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla")
}

fn shipped_text() -> String {
    std::fs::read_to_string(tla_dir().join("RemoraClaimActivation.cfg")).unwrap()
}

fn build(text: &str) -> Result<RemoraClaimActivation, CfgError> {
    RemoraClaimActivation::from_cfg(&TlcConfig::parse(text).unwrap(), None)
}

fn check_file(file: &str) -> run::Report {
    let cfg = TlcConfig::load(&tla_dir().join(file)).unwrap();
    let model = RemoraClaimActivation::from_cfg(&cfg, None).unwrap();
    let opts = RunOptions { threads: 2, progress_every: None, ..Default::default() };
    run::check(model, "RemoraClaimActivation.tla", file, None, &opts)
}

/// TLC and the `tla` checker both report 32,496 distinct states.
#[test]
fn shipped_cfg_matches_tlc_and_passes() {
    let report = check_file("RemoraClaimActivation.cfg");
    assert_eq!(report.violated, None, "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 32_496);
}

/// Two claims, two fences, two workers; the `tla` checker reports 50,432.
#[test]
fn two_claims_match_the_tla_checker_and_pass() {
    let report = check_file("RemoraClaimActivationTwoClaims.cfg");
    assert_eq!(report.violated, None, "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 50_432);
}

/// Three fences, two operations; the `tla` checker reports 8,931.
#[test]
fn three_fences_match_the_tla_checker_and_pass() {
    let report = check_file("RemoraClaimActivationThreeFences.cfg");
    assert_eq!(report.violated, None, "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 8_931);
}

#[test]
fn init_enumerates_attempt_fences_and_workers() {
    // attemptFence \in [{c1} -> {f1, f2}], attemptWorker \in [{c1} -> {w1, w2}]
    let model = build(&shipped_text()).unwrap();
    assert_eq!(model.init_states().len(), 4);
    let two = shipped_text().replace("Claims = {c1}", "Claims = {c1, c2}");
    assert_eq!(build(&two).unwrap().init_states().len(), 16);
}

#[test]
fn states_and_actions_print_in_tla_notation() {
    let model = build(&shipped_text()).unwrap();
    let init = &model.init_states()[0];
    let names: Vec<_> = init.variables().into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names,
        [
            "durableState",
            "attemptFence",
            "attemptWorker",
            "reservation",
            "lease",
            "activationStage",
            "durableLock",
            "operationRequest",
            "operationResponse",
            "conflictRequest",
            "activationEffectCount",
        ]
    );
    assert_eq!(
        format!("{init:?}"),
        "/\\ durableState = [c1 |-> \"Authorized\"]\n\
         /\\ attemptFence = [c1 |-> f1]\n\
         /\\ attemptWorker = [c1 |-> w1]\n\
         /\\ reservation = [c1 |-> w1]\n\
         /\\ lease = [c1 |-> NoWorker]\n\
         /\\ activationStage = [c1 |-> \"Idle\"]\n\
         /\\ durableLock = [c1 |-> NoOwner]\n\
         /\\ operationRequest = [o1 |-> NoRequest, o2 |-> NoRequest]\n\
         /\\ operationResponse = [o1 |-> NoResponse, o2 |-> NoResponse]\n\
         /\\ conflictRequest = [o1 |-> NoRequest, o2 |-> NoRequest]\n\
         /\\ activationEffectCount = [c1 |-> 0]"
    );
    let show = |a| model.format_action(&a);
    assert_eq!(show(Action::BindOperation(Op(0), Claim(0), Fence(1), Worker(0))), "BindOperation(o1, c1, f2, w1)");
    assert_eq!(show(Action::CommitActivation(Claim(0))), "CommitActivation(c1)");
    assert_eq!(show(Action::Done), "Done");
}

#[test]
fn only_the_cfgs_invariants_and_properties_are_checked() {
    let names =
        |text: &str| -> Vec<&'static str> { build(text).unwrap().properties().iter().map(|p| p.name).collect() };
    assert_eq!(
        names(&shipped_text()),
        [
            "TypeOK",
            "LiveLeaseMatchesAuthority",
            "ExecutingIsCommitted",
            "AcceptedResponseIsExactReplay",
            "ConflictIsChangedRequest",
            "ReapedClaimHasNoActivationEffect",
            "ReapedCoordinationIsClean",
            "RecoveryOwnsInactiveClaim",
            "ActivationAppliesAtMostOnce",
            "OperationRequestIsImmutable",
        ]
    );
    let some: String = shipped_text()
        .lines()
        .filter(|l| !l.starts_with("INVARIANT") || l.contains("TypeOK"))
        .filter(|l| !l.contains("OperationRequestIsImmutable"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(names(&some), ["TypeOK", "ActivationAppliesAtMostOnce"]);
}

/// With CHECK_DEADLOCK TRUE the mirror also looks for deadlocks, as TLC
/// does, and finds none (neither does the `tla` checker).
#[test]
fn the_spec_does_not_deadlock() {
    let text = shipped_text().replace("CHECK_DEADLOCK FALSE", "CHECK_DEADLOCK TRUE");
    let report = run::check(
        build(&text).unwrap(),
        "s",
        "c",
        None,
        &RunOptions { threads: 2, progress_every: None, ..Default::default() },
    );
    assert_eq!(report.violated, None, "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 32_496);
}

/// TLC explores every state even with nothing to check; stateright would
/// stop at the initial states of a model with no properties.
#[test]
fn a_cfg_without_invariants_still_explores_every_state() {
    let text: String = shipped_text()
        .lines()
        .filter(|l| !l.starts_with("INVARIANT") && !l.starts_with("PROPERTY"))
        .map(|l| format!("{l}\n"))
        .collect();
    let report = run::check(
        build(&text).unwrap(),
        "s",
        "c",
        None,
        &RunOptions { threads: 2, progress_every: None, ..Default::default() },
    );
    assert_eq!(report.unique_states, 32_496);
}

/// As in TLC, a model value is only itself: a cfg that makes `NoResponse`
/// and `Accepted` the same value has every operation "accepted" at once,
/// which the `tla` checker also reports in the initial state.
#[test]
fn model_values_are_compared_by_name() {
    let text = shipped_text().replace("NoResponse = NoResponse", "NoResponse = Accepted");
    let report = run::check(build(&text).unwrap(), "s", "c", None, &RunOptions::default());
    assert_eq!(report.violated.as_deref(), Some("AcceptedResponseIsExactReplay"));
    assert_eq!(report.trace.len(), 1);
}

#[test]
fn bad_cfgs_are_refused() {
    let with = |from: &str, to: &str| build(&shipped_text().replace(from, to)).err().unwrap();
    assert!(matches!(with("    Rejected = Rejected\n", ""), CfgError::MissingConstant(name) if name == "Rejected"));
    assert!(matches!(with("CONSTANTS\n", "CONSTANTS\n    MaxEvicts = 2\n"), CfgError::UnknownConstant { .. }));
    assert!(matches!(with("INVARIANT TypeOK", "INVARIANT NoSuchThing"), CfgError::UnknownDefinition { .. }));
    // An action property is not a state invariant.
    assert!(matches!(
        with("PROPERTY ActivationAppliesAtMostOnce", "INVARIANT ActivationAppliesAtMostOnce"),
        CfgError::UnknownDefinition { .. }
    ));
    // ASSUME Workers # {} and ASSUME NoWorker \notin Workers
    assert!(matches!(with("Workers = {w1, w2}", "Workers = {}"), CfgError::WrongType { .. }));
    assert!(
        matches!(with("NoWorker = NoWorker", "NoWorker = w2"), CfgError::WrongType { name, .. } if name == "NoWorker")
    );
    assert!(matches!(with("NoOwner = NoOwner", "NoOwner = 3"), CfgError::WrongType { .. }));
    // Another specification would be another state space.
    assert!(matches!(with("SPECIFICATION Spec", "SPECIFICATION Other"), CfgError::Unsupported(_)));
}
