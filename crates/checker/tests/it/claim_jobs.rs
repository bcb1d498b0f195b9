//! The implementation model against RemoraJobs (`checker::model::claim::
//! ClaimJobsImpl`): the real completion, retries and reaping of executing
//! claims, mapped to RemoraJobs' variables. The cfgs
//! (`models/slow/ClaimJobsImplOneAttempt.cfg`, `models/large/ClaimJobsImpl*.cfg`)
//! check every path; here the paths that made RemoraJobs change
//! (docs/remora.md 3, "The implementation against RemoraJobs") are taken
//! one by one, and each mutation breaks the property it names on its path.

use std::path::PathBuf;

use checker::cfg::TlcConfig;
use checker::mirror::remora::{DurableState, NO_WORKER};
use checker::mirror::remora_jobs::Outcome;
use checker::model::claim::{Action, ClaimJobsImpl, Deadline, ImplState};
use checker::spec::Mirror;
use protocol::claim::Outcome::{Failed, Succeeded};
use stateright::Model;

use checker::mirror::remora::{ActivationStage, Op};

use crate::claim_paths::{ACTIVATE, C1, F1, F2, O1, W1};

const O2: Op = Op(1);

fn cfg_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/large/ClaimJobsImpl.cfg");
    std::fs::read_to_string(path).unwrap()
}

fn build(text: &str, mutation: Option<&str>) -> ClaimJobsImpl {
    ClaimJobsImpl::from_cfg(&TlcConfig::parse(text).unwrap(), mutation).unwrap()
}

/// Takes `path` from the initial state of attempt (c1, f1, w1); returns the
/// state reached and every property a step violated.
fn walk(model: &ClaimJobsImpl, path: &[Action]) -> (ImplState, Vec<&'static str>) {
    let mut s = model.init_states().into_iter().find(|s| s.spec.loss.base.attempt_fence[C1] == F1).unwrap();
    let mut violated = Vec::new();
    for &action in path {
        let mut enabled = Vec::new();
        model.actions(&s, &mut enabled);
        assert!(enabled.contains(&action), "{action:?} is not enabled in\n{s:?}");
        s = model.next_state(&s, action).unwrap();
        violated.extend(s.step_violations.iter().copied());
    }
    (s, violated)
}

/// The worker completes its attempt with `o`, through to the release.
fn complete(o: protocol::claim::Outcome) -> [Action; 5] {
    [
        Action::Complete(C1, F1, W1, o),
        Action::Completion(C1, "validate"),
        Action::Completion(C1, "check_lease"),
        Action::Completion(C1, "commit"),
        Action::Completion(C1, "release"),
    ]
}

fn path(parts: &[&[Action]]) -> Vec<Action> {
    parts.concat()
}

/// Takes every step of `op`'s activator until it has answered; returns the
/// state reached and every property a step violated.
fn finish_activator(model: &ClaimJobsImpl, mut s: ImplState, op: Op) -> (ImplState, Vec<&'static str>) {
    let mut violated = Vec::new();
    for _ in 0..20 {
        let mut enabled = Vec::new();
        model.actions(&s, &mut enabled);
        let Some(&step) = enabled.iter().find(|a| matches!(a, Action::Activator(o, _) if *o == op)) else {
            return (s, violated);
        };
        s = model.next_state(&s, step).unwrap();
        violated.extend(s.step_violations.iter().copied());
    }
    panic!("the activator of {op:?} did not answer in 20 steps:\n{s:?}");
}

/// AuthorizeRetry needs no guard on the old attempt's activations: one
/// that validated before the attempt was reaped and the retry authorized
/// goes on, is refused its lock and its commit, compensates and is
/// rejected, every step refining RemoraJobs (RemoraJobs asked that no such
/// activation be in flight, which the durable store cannot see).
#[test]
fn a_retry_leaves_an_activation_of_the_old_attempt_only_compensation() {
    let model = build(&cfg_text(), None);
    let retried = [
        Action::Activate(O1, C1, F1, W1),
        Action::Activator(O1, "validate"),
        Action::Elapse(Deadline::Reservation(C1)),
        Action::Reaper("scan"),
        Action::Reaper("lock"),
        Action::Reaper("reap"),
        Action::Authorize(C1, F2, W1),
    ];
    let (s, violated) = walk(&model, &retried);
    assert_eq!(violated, Vec::<&str>::new());
    assert_eq!(s.spec.loss.base.activation_stage[C1], ActivationStage::Idle);
    // The old activation waits while the new attempt is authorized; its
    // reservation lapses too, and the reaper makes the claim dead.
    let dead = [
        Action::Activator(O1, "create_lease"),
        Action::Elapse(Deadline::Reservation(C1)),
        Action::Reaper("scan"),
        Action::Reaper("lock"),
        Action::Reaper("reap"),
    ];
    let (s, violated) = walk(&model, &path(&[&retried, &dead]));
    assert_eq!(violated, Vec::<&str>::new());
    assert_eq!(s.spec.loss.base.durable_state[C1], DurableState::Reaped);
    let (s, violated) = finish_activator(&model, s, O1);
    assert_eq!(violated, Vec::<&str>::new());
    assert!(s.clients[0].run.is_none() && s.clients[0].accepted.is_none(), "answered, not accepted");
    assert!(s.durable.operations.values().any(|row| row.rejection.is_some()), "rejected");
    assert_eq!(s.spec.loss.base.activation_effect_count[C1], 0, "the new attempt has no effect");
    assert!(s.leases.leases.is_empty(), "compensated");
}

/// CompleteWithLostLease: the completion reads the lease, the store loses
/// it, and the commit goes ahead on the deadline the durable store
/// recorded (the lease was restorable).
#[test]
fn a_completion_commits_on_a_lease_lost_after_its_read() {
    let model = build(&cfg_text(), None);
    let lost = [
        Action::Complete(C1, F1, W1, Succeeded),
        Action::Completion(C1, "validate"),
        Action::Completion(C1, "check_lease"),
        Action::LoseLease(C1),
    ];
    let (s, violated) = walk(&model, &path(&[&ACTIVATE, &lost]));
    assert_eq!(violated, Vec::<&str>::new());
    assert!(s.spec.loss.lease_lost[C1], "restorable");
    let (s, violated) = walk(&model, &path(&[&ACTIVATE, &lost, &[Action::Completion(C1, "commit")]]));
    assert_eq!(violated, Vec::<&str>::new());
    assert_eq!(s.spec.outcome[C1], Outcome::Succeeded);
    assert!(!s.spec.loss.lease_lost[C1]);
}

/// CompensateEndedAttempt: a second activation of the attempt, refused the
/// lease the first one created, awaits recovery; the attempt executes, its
/// lease lapses and the executing reaper reaps it; the second activation
/// then compensates and finishes, every step refining RemoraJobs.
#[test]
fn an_activation_that_outlives_its_reaped_attempt_compensates() {
    let model = build(&cfg_text(), None);
    let outlived = [
        Action::Activate(O1, C1, F1, W1),
        Action::Activator(O1, "validate"),
        Action::Activator(O1, "create_lease"),
        Action::Activator(O1, "acquire_lock"),
        Action::Activate(O2, C1, F1, W1),
        Action::Activator(O2, "validate"),
        Action::Activator(O1, "commit"),
        Action::Activator(O1, "record_grant"),
        Action::Activator(O2, "create_lease"),
        Action::Elapse(Deadline::Lease(C1)),
        Action::ExecutingReaper("scan"),
        Action::ExecutingReaper("read_lease"),
        Action::ExecutingReaper("reap"),
        Action::Activator(O2, "await_recovery"),
        Action::Activator(O2, "compensate"),
    ];
    let (s, violated) = walk(&model, &outlived);
    assert_eq!(violated, Vec::<&str>::new());
    assert_eq!(s.spec.loss.base.durable_state[C1], DurableState::Reaped);
    assert_eq!(s.spec.loss.base.activation_stage[C1], ActivationStage::Finished);
}

/// Complete (and the release after it), then a retry after a failure: each
/// step refines RemoraJobs and keeps its checks.
#[test]
fn a_failed_attempt_completes_and_a_retry_starts_the_next() {
    let model = build(&cfg_text(), None);
    let (done, violated) = walk(&model, &path(&[&ACTIVATE, &complete(Failed)]));
    assert_eq!(violated, Vec::<&str>::new());
    assert_eq!(done.spec.outcome[C1], Outcome::Failed);
    assert_eq!(done.spec.loss.base.lease[C1], NO_WORKER);
    assert!(done.leases.leases.is_empty(), "released");
    let (retried, violated) = walk(&model, &path(&[&ACTIVATE, &complete(Failed), &[Action::Authorize(C1, F2, W1)]]));
    assert_eq!(violated, Vec::<&str>::new());
    assert_eq!(retried.spec.loss.base.durable_state[C1], DurableState::Authorized);
    assert_eq!(retried.spec.outcome[C1], Outcome::Pending);
    assert_eq!(retried.spec.used_fences[C1].len(), 2);
}

/// The executing reaper reaps an attempt whose lease lapsed (ReapExecuting).
#[test]
fn an_executing_attempt_whose_lease_lapsed_is_reaped() {
    let model = build(&cfg_text(), None);
    let reap = [
        Action::Elapse(Deadline::Lease(C1)),
        Action::ExecutingReaper("scan"),
        Action::ExecutingReaper("read_lease"),
        Action::ExecutingReaper("reap"),
    ];
    let (s, violated) = walk(&model, &path(&[&ACTIVATE, &reap]));
    assert_eq!(violated, Vec::<&str>::new());
    assert_eq!(s.spec.loss.base.durable_state[C1], DurableState::Reaped);
}

/// Each mutation, on a path that reaches what it breaks, is caught by the
/// property named.
#[test]
fn every_mutation_is_caught_by_the_property_it_breaks() {
    let text = cfg_text();
    let reap_completed =
        [Action::ExecutingReaper("scan"), Action::ExecutingReaper("read_lease"), Action::ExecutingReaper("reap")];
    let lapsed = [
        Action::Elapse(Deadline::Lease(C1)),
        Action::Complete(C1, F1, W1, Succeeded),
        Action::Completion(C1, "validate"),
        Action::Completion(C1, "check_lease"),
        Action::Completion(C1, "commit"),
    ];
    // The lease lost after a commit, before any activation recorded its
    // deadline: nobody can restore it. (An activation that commits on a
    // fresh grant records it in the same instant: o2 waited for o1's lock,
    // so it commits with no deadline recorded and reads the lease again.)
    let unrecorded = [
        Action::Activate(O1, C1, F1, W1),
        Action::Activator(O1, "validate"),
        Action::Activator(O1, "create_lease"),
        Action::Activator(O1, "acquire_lock"),
        Action::Activate(O2, C1, F1, W1),
        Action::Activator(O2, "validate"),
        Action::Activator(O2, "create_lease"),
        Action::Activator(O2, "acquire_lock"),
        Action::Elapse(Deadline::ActivatorLock(C1)),
        Action::Activator(O2, "acquire_lock"),
        Action::Activator(O2, "commit"),
        Action::Activator(O1, "commit"),
        Action::Complete(C1, F1, W1, Succeeded),
        Action::Completion(C1, "validate"),
        Action::Completion(C1, "check_lease"),
        Action::LoseLease(C1),
        Action::Completion(C1, "commit"),
    ];
    let one_attempt = text.replace("MaxAttempts = 2", "MaxAttempts = 1");
    let cases: [(&str, &str, Vec<Action>, &str); 5] = [
        (
            "reaper-reaps-completed",
            &text,
            path(&[&ACTIVATE, &complete(Succeeded), &reap_completed]),
            "CompletedClaimIsNeverReaped",
        ),
        ("completion-keeps-lease", &text, path(&[&ACTIVATE, &complete(Succeeded)]), "CompletedClaimHoldsNoLease"),
        ("complete-without-lease-check", &text, path(&[&ACTIVATE, &lapsed]), "JobsSpec"),
        ("commit-ignores-recorded-deadline", &text, unrecorded.to_vec(), "JobsSpec"),
        (
            "retry-beyond-limit",
            &one_attempt,
            path(&[&ACTIVATE, &complete(Failed), &[Action::Authorize(C1, F2, W1)]]),
            "AtMostMaxAttempts",
        ),
    ];
    for (mutation, cfg, steps, property) in cases {
        let (_, violated) = walk(&build(cfg, Some(mutation)), &steps);
        assert!(violated.contains(&property), "{mutation}: {violated:?}");
    }
    // Unmutated, the paths keep every check (the failure path and the
    // retry: above): the lapsed and the unrecorded lease refuse the commit.
    let (s, unmutated) = walk(&build(&text, None), &path(&[&ACTIVATE, &complete(Succeeded)]));
    assert_eq!((unmutated, s.spec.outcome[C1]), (vec![], Outcome::Succeeded));
    let (s, unmutated) = walk(&build(&text, None), &unrecorded);
    assert_eq!((unmutated, s.spec.outcome[C1]), (vec![], Outcome::Pending), "the commit is refused");
    assert_eq!(ClaimJobsImpl::MUTATIONS.len(), 5);
}
