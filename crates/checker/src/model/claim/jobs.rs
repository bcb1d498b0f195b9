//! The implementation model checked against `tla/RemoraJobs.tla`
//! (completion, retries up to `MaxAttempts`, dead claims, the reaping of
//! executing claims): the model of a cfg whose first line is
//! `\* MODULE ClaimJobsImpl` (crates/checker/models/slow/ClaimJobsImplOneAttempt.cfg,
//! crates/checker/models/large/ClaimJobsImpl*.cfg).
//!
//! It is the same model ([`ClaimImpl`]) with three more kinds of step, each
//! running protocol code one request at a time: the worker of an attempt
//! sends complete with an outcome (the real [`Completion`], its id bound to
//! the attempt and the outcome, so that sending it again is a replay); a
//! client creates an attempt (`durable::apply` of `Authorize`: a retry of
//! a failed or reaped claim with a higher fence, refused otherwise); and
//! the alarm's pass over executing claims (the real [`ExecutingReaper`]).
//! The mapping adds `outcome` and `usedFences`, and the refinement is
//! checked against the RemoraJobs mirror (`JobsSpec`), with its invariants
//! and action properties.

use protocol::claim::{
    Completion, DurableReply, DurableRequest, ExecutingReaper, OperationId, Outcome, Procedure, Reply, Request,
};
use stateright::{Model, Property};

use super::action::Action;
use super::host::Origin;
use super::lease_lock::{Holder, lease_lock_held_by_another};
use super::model::ClaimImpl;
use super::mutation;
use super::slots::properties;
use super::state::ImplState;
use super::time::{NOW, TTL};
use crate::cfg::{CfgError, TlcConfig};
use crate::mirror::remora::{Claim, Fence, Worker};
use crate::spec::{Mirror, check_mutation};

/// The implementation model checked against RemoraJobs.
pub struct ClaimJobsImpl(ClaimImpl);

impl AsRef<ClaimImpl> for ClaimJobsImpl {
    fn as_ref(&self) -> &ClaimImpl {
        &self.0
    }
}

impl Mirror for ClaimJobsImpl {
    const MODULE: &'static str = "ClaimJobsImpl";
    const MUTATIONS: &'static [&'static str] = mutation::JOBS_NAMES;

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        check_mutation(Self::MODULE, mutation::JOBS_NAMES, mutation)?;
        ClaimImpl::build(Self::MODULE, cfg, mutation, true).map(ClaimJobsImpl)
    }

    fn action_names(&self) -> Vec<&'static str> {
        Action::NAMES.to_vec()
    }

    fn action_kind(&self, action: &Action) -> usize {
        action.kind()
    }
}

impl Model for ClaimJobsImpl {
    type State = ImplState;
    type Action = Action;

    fn init_states(&self) -> Vec<ImplState> {
        self.0.init_states()
    }

    fn actions(&self, s: &ImplState, actions: &mut Vec<Action>) {
        self.0.actions(s, actions);
    }

    fn next_state(&self, s: &ImplState, action: Action) -> Option<ImplState> {
        self.0.next_state(s, action)
    }

    fn format_action(&self, action: &Action) -> String {
        self.0.format_action(action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties(self)
    }
}

impl ClaimImpl {
    /// The create of attempt (c, f, w), reserved until `reservation`; a new
    /// claim allows the cfg's `MaxAttempts` (RemoraClaimLeaseLoss has no
    /// limit: the protocol's default then).
    pub(super) fn authorize(&self, c: Claim, f: Fence, w: Worker, reservation: u64) -> DurableRequest {
        let n = &self.names;
        DurableRequest::Authorize {
            claim: n.claim_id(c),
            fence: n.fence(f),
            worker: n.worker_id(w),
            reservation_expires_at: reservation,
            max_attempts: self.jobs.unwrap_or(protocol::claim::DEFAULT_MAX_ATTEMPTS),
        }
    }

    /// The steps RemoraJobs adds, in every state.
    pub(super) fn jobs_actions(&self, s: &ImplState, actions: &mut Vec<Action>) {
        let n = &self.names;
        for (&c, completion) in n.claims.iter().zip(&s.completions) {
            match completion {
                None => {
                    for &f in &n.fences {
                        for &w in &n.workers {
                            actions.extend([Outcome::Succeeded, Outcome::Failed].map(|o| Action::Complete(c, f, w, o)));
                        }
                    }
                }
                Some(done) => {
                    let me = Holder::Completion(&done.request.claim);
                    if !lease_lock_held_by_another(s, me, done.poll_request(NOW)) {
                        actions.push(Action::Completion(c, done.step.name()));
                    }
                }
            }
        }
        let reaper = &s.executing_reaper;
        if !lease_lock_held_by_another(s, Holder::ExecutingReaper, reaper.poll_request(NOW)) {
            actions.push(Action::ExecutingReaper(reaper.step.name()));
        }
        for &c in &n.claims {
            for &f in &n.fences {
                actions.extend(n.workers.iter().map(|&w| Action::Authorize(c, f, w)));
            }
        }
    }

    /// The complete request of attempt (c, f, w) with outcome `o`, under an
    /// id of its own (the same request sent again is a replay).
    pub(super) fn completion(&self, c: Claim, f: Fence, w: Worker, o: Outcome) -> Completion {
        let n = &self.names;
        let key = n.request_key(c, f, w);
        let id = OperationId(format!("complete-{}-{}-{}", key.fence.0, key.worker, o.name()));
        Completion::new(id, key, o, None)
    }

    /// Serves the next request of claim `i`'s completion.
    pub(super) fn step_completion(&self, s: &mut ImplState, i: usize) {
        let Some(mut completion) = s.completions.get_mut(i).and_then(Option::take) else {
            return;
        };
        let key = completion.request.clone();
        self.step(s, &mut completion, Origin::Completion(&key));
        if completion.outcome().is_none()
            && let Some(slot) = s.completions.get_mut(i)
        {
            *slot = Some(completion);
        }
    }

    pub(super) fn step_executing_reaper(&self, s: &mut ImplState) {
        let mut reaper = std::mem::take(&mut s.executing_reaper);
        self.step(s, &mut reaper, Origin::ExecutingReaper);
        // As the reaper's: what a pass reports is the host's output.
        reaper.reaped.clear();
        reaper.more = false;
        s.executing_reaper = if reaper.outcome().is_some() { ExecutingReaper::default() } else { reaper };
    }

    /// A client creates attempt (c, f, w); the attempt's fence joins the
    /// claim's history if the durable store authorizes it.
    pub(super) fn create(&self, s: &mut ImplState, c: Claim, f: Fence, w: Worker) {
        let request = Request::Durable(self.authorize(c, f, w, NOW + TTL));
        let authorized =
            matches!(self.serve(s, &request, Origin::Client), Reply::Durable(DurableReply::Authorized { .. }));
        if let Some(used) = self.claim_index(c).and_then(|i| s.attempts.get_mut(i))
            && authorized
        {
            *used = used.with(f);
        }
    }
}
