//! The implementation model (`checker::model::claim`): the real protocol code,
//! mapped to RemoraClaimLeaseLoss's variables, refines it on the shipped cfg
//! and keeps every invariant and property; the cfg is its one source of
//! constants.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::path::PathBuf;

use checker::cfg::{CfgError, TlcConfig};
use checker::mirror::remora::{ActivationStage, Claim, DurableState, Fence, NO_WORKER, Op, Worker};
use checker::mirror::remora_loss::{LossAction, RemoraClaimLeaseLoss};
use checker::model::claim::{Action, ClaimImpl, Deadline};
use checker::run::{self, RunOptions};
use checker::spec::Mirror;
use stateright::Model;

use crate::claim_paths::ACTIVATE;

/// Distinct states of the shipped cfg with one fence.
const ONE_FENCE_STATES: usize = 104_634;

fn shipped_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/slow/ClaimImpl.cfg");
    std::fs::read_to_string(path).unwrap()
}

fn build(text: &str) -> Result<ClaimImpl, CfgError> {
    ClaimImpl::from_cfg(&TlcConfig::parse(text).unwrap(), None)
}

fn check(text: &str) -> run::Report {
    let opts = RunOptions { threads: 2, progress_every: None, ..Default::default() };
    run::check(build(text).unwrap(), "ClaimImpl", "ClaimImpl.cfg", None, &opts)
}

/// The shipped cfg (Claims = {c1}, two fences, two workers, two
/// operations). Slow without optimizations: `cargo test --release`, or
/// `cargo xtask check`.
#[test]
#[ignore = "about two minutes in release, far longer in debug"]
fn shipped_cfg_passes() {
    let report = check(&shipped_text());
    assert_eq!(report.violated, None, "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 1_051_892);
}

/// One fence: two activations of the same attempt race each other, the
/// reaper and the deadlines, with every check; small enough for a debug build.
#[test]
fn one_fence_two_operations_passes() {
    let text = shipped_text().replace("Fences = {f1, f2}", "Fences = {f1}");
    let report = check(&text);
    assert_eq!(report.violated, None, "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, ONE_FENCE_STATES);
}

/// The happy path, step by step: the model runs the real procedures to an
/// accepted activation, and the mapped state says so.
#[test]
fn an_activation_runs_to_an_accepted_answer() {
    let model = build(&shipped_text()).unwrap();
    let (o1, c1, f1, w1) = (Op(0), Claim(0), Fence(0), Worker(0));
    let mut s = model.init_states().remove(0);
    let k = s.spec.loss.base.k;
    for action in ACTIVATE {
        let mut enabled = Vec::new();
        model.actions(&s, &mut enabled);
        assert!(enabled.contains(&action), "{action:?} is not enabled in\n{s:?}");
        s = model.next_state(&s, action).unwrap();
        assert!(s.step_violations.is_empty(), "{action:?}: {s:?}");
    }
    assert_eq!(s.spec.loss.base.durable_state[c1], DurableState::Executing);
    assert_eq!(s.spec.loss.base.activation_stage[c1], ActivationStage::Finished);
    assert_eq!(s.spec.loss.base.operation_response[o1], k.accepted);
    assert_eq!(s.spec.loss.base.activation_effect_count[c1], 1);

    // The lease lapses: the acceptance is withdrawn with it (ExpireLease),
    // and a replay is rejected.
    s = model.next_state(&s, Action::Elapse(Deadline::Lease(c1))).unwrap();
    assert_eq!(s.spec.loss.base.operation_response[o1], k.no_response);
    for action in [
        Action::Activate(o1, c1, f1, w1),
        Action::Activator(o1, "validate"),
        Action::Activator(o1, "check_lease"),
        Action::Activator(o1, "record_rejection"),
    ] {
        s = model.next_state(&s, action).unwrap();
        assert!(s.step_violations.is_empty(), "{action:?}: {s:?}");
    }
    assert_eq!(s.spec.loss.base.operation_response[o1], k.rejected);
}

/// After the coordination store lost the lease of an executing claim, the
/// executing worker's heartbeat restores it from the durable store's record
/// (the spec's RestoreLease), and a stranger's is refused.
#[test]
fn a_lost_lease_is_restored_by_the_executing_workers_heartbeat_only() {
    let model = build(&shipped_text()).unwrap();
    let (o1, c1, f1, w1, w2) = (Op(0), Claim(0), Fence(0), Worker(0), Worker(1));
    let run = |mut s, path: &[Action]| {
        for &action in path {
            let mut enabled = Vec::new();
            model.actions(&s, &mut enabled);
            assert!(enabled.contains(&action), "{action:?} is not enabled in\n{s:?}");
            s = model.next_state(&s, action).unwrap();
            assert!(s.step_violations.is_empty(), "{action:?}: {s:?}");
        }
        s
    };
    let accepted = run(
        model.init_states().remove(0),
        &[
            Action::Activate(o1, c1, f1, w1),
            Action::Activator(o1, "validate"),
            Action::Activator(o1, "create_lease"),
            Action::Activator(o1, "acquire_lock"),
            Action::Activator(o1, "commit"),
            Action::Activator(o1, "record_grant"),
            Action::LoseLease(c1),
        ],
    );
    let k = accepted.spec.loss.base.k;
    assert!(accepted.spec.loss.lease_lost[c1], "restorable");
    assert_eq!(accepted.spec.loss.base.operation_response[o1], k.no_response, "the acceptance is withdrawn");
    let stranger = run(accepted.clone(), &[Action::Heartbeat(c1, f1, w2)]);
    assert!(stranger.heartbeats.iter().all(Option::is_none), "refused at once: wrong worker");
    assert_eq!(stranger.spec.loss.base.lease[c1], NO_WORKER);
    let restored = run(
        accepted,
        &[
            Action::Heartbeat(c1, f1, w1),
            Action::HeartbeatStep(c1, "renew"),
            Action::HeartbeatStep(c1, "restore"),
            Action::HeartbeatStep(c1, "record"),
        ],
    );
    assert_eq!(restored.spec.loss.base.lease[c1], w1);
    assert!(!restored.spec.loss.lease_lost[c1]);
    assert_eq!(restored.spec.loss.base.operation_response[o1], k.no_response, "a restoration answers nothing");
}

#[test]
fn the_cfg_is_the_one_source_of_constants() {
    let model = build(&shipped_text()).unwrap();
    assert_eq!(model.init_states().len(), 4, "attemptFence and attemptWorker range over the cfg's sets");
    let two = shipped_text().replace("Claims = {c1}", "Claims = {c1, c2}");
    assert_eq!(build(&two).unwrap().init_states().len(), 16);

    let unknown = shipped_text().replace("CHECK_DEADLOCK FALSE", "CONSTANT Extra = 1\nCHECK_DEADLOCK FALSE");
    assert!(matches!(build(&unknown), Err(CfgError::UnknownConstant { .. })));
    let misspelt = shipped_text().replace("INVARIANT TypeOK", "INVARIANT TypeOk");
    assert!(matches!(build(&misspelt), Err(CfgError::UnknownDefinition { .. })));
    let spec = format!("SPECIFICATION Spec\n{}", shipped_text());
    assert!(matches!(build(&spec), Err(CfgError::Unsupported(_))));
    let deadlock = shipped_text().replace("CHECK_DEADLOCK FALSE", "");
    assert!(matches!(build(&deadlock), Err(CfgError::Unsupported(_))));
}

#[test]
fn the_cfg_says_which_properties_are_checked() {
    let model = build(&shipped_text()).unwrap();
    let names: Vec<_> = model.properties().iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        [
            "TypeOK",
            "TypeOKLoss",
            "LiveLeaseMatchesAuthority",
            "ExecutingIsCommitted",
            "AcceptedResponseIsExactReplay",
            "ConflictIsChangedRequest",
            "ReapedClaimHasNoActivationEffect",
            "ReapedCoordinationIsClean",
            "RecoveryOwnsInactiveClaim",
            "LostLeaseIsAbsent",
            "ActivationAppliesAtMostOnce",
            "OperationRequestIsImmutable",
            "LeaseHolderIsStable",
            "RejectionIsFinal",
            "ExpiredLeaseIsNeverRevived",
            "LeaseIsLostOnlyInForce",
            "LossSpec",
            "ProceduresTakeEveryReply",
        ]
    );
    let fewer = shipped_text().replace("PROPERTY LossSpec\n", "").replace("INVARIANT TypeOK\n", "");
    let names: Vec<_> = build(&fewer).unwrap().properties().iter().map(|p| p.name).collect();
    assert!(!names.contains(&"LossSpec") && !names.contains(&"TypeOK"));
}

#[test]
fn an_unknown_mutation_is_refused() {
    let cfg = TlcConfig::parse(&shipped_text()).unwrap();
    let err = ClaimImpl::from_cfg(&cfg, Some("no-such-mutation")).err().unwrap();
    assert!(matches!(err, CfgError::Unsupported(_)), "{err}");
}

/// Slow (3 to 50 s each on 2 cores): `cargo xtask check --slow` and
/// `cargo xtask test` run them; the default check skips `::slow::`.
mod slow {
    use super::*;

    /// The check is not vacuous: the implementation's steps take every action
    /// of the spec (`Done` and `RenewLease` aside, which change nothing).
    #[test]
    fn every_spec_action_is_taken_by_some_step() {
        let text = shipped_text().replace("Fences = {f1, f2}", "Fences = {f1}");
        let model = build(&text).unwrap();
        let spec = std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla/RemoraClaimLeaseLoss.cfg"),
        )
        .unwrap()
        .replace("Fences = {f1, f2}", "Fences = {f1}");
        let mirror = RemoraClaimLeaseLoss::from_cfg(&TlcConfig::parse(&spec).unwrap(), None).unwrap();

        let mut taken = BTreeSet::new();
        let mut seen = HashSet::new();
        let mut queue: VecDeque<_> = model.init_states().into();
        let mut actions = Vec::new();
        while let Some(s) = queue.pop_front() {
            model.actions(&s, &mut actions);
            for action in actions.drain(..) {
                let Some(next) = model.next_state(&s, action) else {
                    continue;
                };
                if next.spec != s.spec {
                    let mut spec_actions = Vec::new();
                    mirror.actions(&s.spec.loss, &mut spec_actions);
                    let matched = spec_actions.into_iter().find(|&a| {
                        mirror.next_state(&s.spec.loss, a).is_some_and(|mut t| {
                            t.step_violations.clear();
                            t == next.spec.loss
                        })
                    });
                    taken.insert(matched.map_or("", |a| LossAction::NAMES[a.kind()]).to_string());
                }
                if seen.insert(next.clone()) {
                    queue.push_back(next);
                }
            }
        }
        assert_eq!(
            taken.into_iter().collect::<Vec<_>>(),
            [
                "AcquireActivationLock",
                "AcquireRecoveryLock",
                "BindOperation",
                "CommitActivation",
                "CommitActivationWithLostLease",
                "CompensateRejectedActivation",
                "CreateLease",
                "ExpireLease",
                "ExpireLostLease",
                "ExpireReservation",
                "FinishRecovery",
                "LoseActivatorLock",
                "LoseLease",
                "RecreateLease",
                "RejectOperationReuse",
                "RejectPrecondition",
                "ReplayOfUnrejected",
                "RestoreLease",
                "StartActivation",
            ]
        );
    }
}
