//! The implementation model against RemoraJobs (`checker::model::claim::
//! ClaimJobsImpl`): the real completion, retries and reaping of executing
//! claims, mapped to RemoraJobs' variables. Its cfg is a counterexample
//! until RemoraJobs is revised (docs/remora.md 3): the refinement fails
//! where the spec asks more than the implementation can do. The steps it
//! adds refine the spec on their own paths, and each mutation breaks the
//! property it names there.

use std::path::PathBuf;

use checker::cfg::TlcConfig;
use checker::mirror::remora::{DurableState, NO_WORKER};
use checker::mirror::remora_jobs::Outcome;
use checker::model::claim::{Action, ClaimJobsImpl, Deadline, ImplState};
use checker::run::{self, RunOptions};
use checker::spec::Mirror;
use protocol::claim::Outcome::{Failed, Succeeded};
use stateright::Model;

use crate::claim_paths::{ACTIVATE, C1, F1, F2, W1};

fn cfg_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/counterexamples/ClaimJobsImpl.cfg");
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

/// Single-threaded BFS: the shortest counterexample, the same on every run.
#[test]
fn the_cfg_fails_where_authorize_retry_asks_what_the_store_cannot_see() {
    let report =
        run::check(build(&cfg_text(), None), "ClaimJobsImpl", "ClaimJobsImpl.cfg", None, &RunOptions::default());
    assert_eq!(report.violated.as_deref(), Some("JobsSpec"), "{}", run::format_trace(&report));
    assert_eq!(report.unique_states, 8_919);
    let last = report.trace.last().and_then(|step| step.action.clone());
    assert_eq!(last.as_deref(), Some("Authorize(c1, f2, w1)"), "{}", run::format_trace(&report));
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
    let one_attempt = text.replace("MaxAttempts = 2", "MaxAttempts = 1");
    let cases: [(&str, &str, Vec<Action>, &str); 4] = [
        (
            "reaper-reaps-completed",
            &text,
            path(&[&ACTIVATE, &complete(Succeeded), &reap_completed]),
            "CompletedClaimIsNeverReaped",
        ),
        ("completion-keeps-lease", &text, path(&[&ACTIVATE, &complete(Succeeded)]), "CompletedClaimHoldsNoLease"),
        ("complete-without-lease-check", &text, path(&[&ACTIVATE, &lapsed]), "JobsSpec"),
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
    // Unmutated, the success path keeps every check (the failure path and
    // the retry: above).
    let (_, unmutated) = walk(&build(&text, None), &path(&[&ACTIVATE, &complete(Succeeded)]));
    assert_eq!(unmutated, Vec::<&str>::new());
    assert_eq!(ClaimJobsImpl::MUTATIONS.len(), 4);
}
