//! A model of the real Remora claim-activation code ([`protocol::claim`]),
//! checked against `tla/RemoraClaimLeaseLoss.tla` (RemoraClaimActivation
//! with lease renewal and the loss of the coordination store) through a
//! refinement mapping.
//!
//! Every step runs protocol code: a client sends a new activate request or
//! heartbeat, one procedure in flight (an activator per operation id, the
//! reaper, a heartbeat per claim) sends its next request and the store
//! serves it with `durable::apply`/`lease::apply`, or time passes one
//! deadline (the environment: lock loss, reservation and lease expiry; see
//! `time.rs`), or the coordination store loses a claim's lease record (the
//! environment: a deploy, the loss of the Handoff replicas). Each step maps (`mapping.rs`) to a spec state, and is checked
//! (`refinement.rs`) to be an action of the spec or a stutter, with every
//! invariant and action property of the cfg. Mutations (`mutation.rs`) are
//! injected by the host (`host.rs`).
//!
//! Modelling choices: a request and its reply are one step (a store serves
//! each request atomically, and a reply is neither lost nor duplicated); a
//! client has one activate request in flight per operation id, may send any
//! request once it is answered, and meanwhile may reuse the id for another
//! request (answered 409 at the binding); an operation id is scoped to its
//! claim, so a client uses an id on one claim (the spec's operations are
//! the pairs of a claim and an id; the shipped cfg has one claim);
//! procedures do not crash (the spec has no crashed activator). The constants come from a cfg whose first line
//! is `\* MODULE ClaimImpl` (crates/checker/models/slow/ClaimImpl.cfg). docs/remora.md section 3 has
//! the argument and the numbers.

mod action;
mod host;
mod jobs;
mod lease_lock;
mod mapping;
mod model;
mod mutation;
mod names;
mod refinement;
mod slots;
mod state;
mod time;

use protocol::claim::{
    ActivationStage, Activator, ActivatorConfig, ActivatorStep, Answer, Completion, CompletionStep, DurableLock,
    ExecutingReaper, ExecutingReaperStep, Heartbeat, HeartbeatStep, MemoryDurable, MemoryLeases, Procedure, Progress,
    Reaper, durable,
};
use stateright::{Model, Property};

pub use action::{Action, Deadline};
pub use jobs::ClaimJobsImpl;
use lease_lock::{Holder, lease_lock_held_by_another};
pub use model::ClaimImpl;
use model::PROCEDURES_TAKE_EVERY_REPLY;
pub use mutation::Mutation;
pub use state::{Client, ImplState};

use crate::cfg::{CfgError, TlcConfig};
use crate::mirror::remora::{Claim, Fence, Op, Worker};
use crate::mirror::remora_jobs::{FenceSet, JOBS_SPEC, RemoraJobs};
use crate::mirror::remora_loss::{LOSS_SPEC, RemoraClaimLeaseLoss};
use crate::spec::{Mirror, check_mutation};
use host::Origin;
use names::Names;
use refinement::{Interned, Refinement, Refines};
use slots::{SLOTS, properties};
use state::View;
use time::{NOW, TTL};

impl Mirror for ClaimImpl {
    const MODULE: &'static str = "ClaimImpl";
    const MUTATIONS: &'static [&'static str] = mutation::NAMES;

    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError> {
        check_mutation(Self::MODULE, mutation::NAMES, mutation)?;
        ClaimImpl::build(Self::MODULE, cfg, mutation, false)
    }

    fn action_names(&self) -> Vec<&'static str> {
        Action::NAMES[..Action::LOSS_KINDS].to_vec()
    }

    fn action_kind(&self, action: &Action) -> usize {
        action.kind()
    }
}

impl AsRef<ClaimImpl> for ClaimImpl {
    fn as_ref(&self) -> &ClaimImpl {
        self
    }
}

const ACTIVATOR: ActivatorConfig = ActivatorConfig { lease_ttl: TTL, lock_ttl: TTL };

/// RemoraJobs' constant.
const MAX_ATTEMPTS: &str = "MaxAttempts";

impl ClaimImpl {
    /// The model of `cfg`, checked against RemoraJobs (`jobs`, the cfg
    /// setting `MaxAttempts`) or RemoraClaimLeaseLoss.
    pub(super) fn build(module: &str, cfg: &TlcConfig, mutation: Option<&str>, jobs: bool) -> Result<Self, CfgError> {
        let mut constants = crate::mirror::remora::CONSTANTS.to_vec();
        if jobs {
            constants.push(MAX_ATTEMPTS);
        }
        cfg.expect_constants(module, &constants)?;
        if cfg.specification.is_some() || cfg.init.is_some() || cfg.next.is_some() {
            return Err(CfgError::Unsupported(format!(
                "{module} is the implementation, not a spec: its cfg names no SPECIFICATION, INIT or NEXT"
            )));
        }
        if cfg.check_deadlock {
            return Err(CfgError::Unsupported(
                "the model does not look for deadlocks: the cfg must say CHECK_DEADLOCK FALSE".into(),
            ));
        }
        let spec_name = if jobs { JOBS_SPEC } else { LOSS_SPEC };
        // The spec's invariants and properties are the mirror's: it checks
        // that the cfg names only ones it has.
        let mirror_cfg = TlcConfig {
            module: None,
            specification: Some(spec_name.into()),
            init: None,
            next: None,
            constants: cfg.constants.clone(),
            invariants: cfg.invariants.clone(),
            properties: cfg.properties.iter().filter(|p| *p != spec_name).cloned().collect(),
            check_deadlock: false,
            ..TlcConfig::default()
        };
        let (refinement, max_attempts): (Box<dyn Refines>, _) = if jobs {
            let max_attempts = cfg.nat(MAX_ATTEMPTS)?;
            (Box::new(Refinement::new(RemoraJobs::from_cfg(&mirror_cfg, None)?)), Some(max_attempts))
        } else {
            (Box::new(Refinement::new(RemoraClaimLeaseLoss::from_cfg(&mirror_cfg, None)?)), None)
        };
        let mut checked = refinement.property_names();
        let refinement_property = cfg.properties.iter().any(|p| p == spec_name).then_some(spec_name);
        checked.extend(refinement_property);
        checked.push(PROCEDURES_TAKE_EVERY_REPLY);
        if checked.len() > SLOTS {
            return Err(CfgError::Unsupported(format!("{module} checks at most {SLOTS} properties")));
        }
        Ok(ClaimImpl {
            names: Names { k: refinement.constants() },
            refinement,
            interned: Interned::default(),
            checked,
            refinement_property,
            jobs: max_attempts,
            mutation: mutation.and_then(Mutation::from_name),
        })
    }

    /// Each (fence, worker) assignment to the claims, in the cfg's order.
    fn attempts(&self) -> Vec<Vec<(Fence, Worker)>> {
        let n = &self.names;
        n.claims.iter().fold(vec![Vec::new()], |partial, _| {
            partial
                .iter()
                .flat_map(|prefix| {
                    n.fences.iter().flat_map(move |&f| {
                        n.workers.iter().map(move |&w| {
                            let mut next = prefix.clone();
                            next.push((f, w));
                            next
                        })
                    })
                })
                .collect()
        })
    }

    fn operation_index(&self, op: Op) -> Option<usize> {
        self.names.k.operations.iter().position(|o| *o == op)
    }

    pub(super) fn claim_index(&self, c: Claim) -> Option<usize> {
        self.names.k.claims.iter().position(|x| *x == c)
    }

    /// Maps `s`, checks it (and the step from `prev`, if any) and records
    /// what it violates.
    fn check(&self, prev: Option<&ImplState>, mut s: ImplState, renewal: Option<(Claim, Worker)>) -> ImplState {
        time::canonicalize(&mut s);
        self.withdraw_lapsed_acceptances(&mut s);
        let spec = self.interned.intern(self.map(&s));
        let mut violated = std::mem::take(&mut s.step_violations);
        let is_step = match prev {
            None => self.refinement.is_initial(&spec),
            // A renewal is RenewLease: allowed by its guard, and a stutter.
            Some(p) => match renewal {
                Some((c, w)) => p.spec == spec && self.refinement.renew_lease(&p.spec, c, w),
                None => self.refinement.is_step(&p.spec, &spec),
            },
        };
        if let Some(name) = self.refinement_property.filter(|_| !is_step) {
            violated.push(name);
        }
        // A stutter leaves the spec state, and so every invariant's verdict,
        // as it was in the predecessor, which has been checked already.
        if prev.is_none_or(|p| p.spec != spec) {
            violated.extend(self.refinement.failing(prev.map(|p| &*p.spec), &spec));
        }
        violated.retain(|name| self.checked.contains(name));
        violated.sort_unstable();
        violated.dedup();
        ImplState { spec, step_violations: violated, ..s }
    }

    /// An acceptance stands while the lease it was given under is in force;
    /// once that lease has lapsed, was lost or released by a completion, it
    /// is withdrawn for good (the spec's ExpireLease, LoseLease, Complete),
    /// even if the lease is restored later (RestoreLease answers nothing):
    /// the history forgets it.
    fn withdraw_lapsed_acceptances(&self, s: &mut ImplState) {
        let n = &self.names;
        for (&op, client) in n.operations.iter().zip(s.clients.iter_mut()) {
            if client.accepted != Some(true) {
                continue;
            }
            let op = n.operation_id(op);
            let claim = s.durable.operations.keys().find(|(_, o)| *o == op).map(|(c, _)| c);
            if !mapping::lease_in_force(claim.and_then(|c| s.durable.claims.get(c)), &s.leases) {
                client.accepted = None;
            }
        }
    }

    /// Serves the next request of the activator of client `i`.
    fn step_activator(&self, s: &mut ImplState, i: usize) {
        let Some(mut run) = s.clients.get_mut(i).and_then(|c| c.run.take()) else {
            return;
        };
        let key = run.request.clone();
        let checked_lease = run.step == ActivatorStep::CheckLease;
        let recording = matches!(run.step, ActivatorStep::RecordLease { .. } | ActivatorStep::RecordGrant { .. });
        let creating = matches!(run.step, ActivatorStep::CreateLease { .. });
        let recording_grant = matches!(run.step, ActivatorStep::RecordGrant { .. });
        let progress = self.step(s, &mut run, Origin::Activator(&key));
        let waits = progress == Some(Progress::Waits);
        if waits
            && self.mutation == Some(Mutation::GrantSurvivesWait)
            && let ActivatorStep::AcquireLock { waited, .. } = &mut run.step
        {
            *waited = false;
        }
        let granted = creating && matches!(run.step, ActivatorStep::AcquireLock { .. });
        // The model looks at the store when the answer is decided (the
        // lease check, or the recording of a grant): an acceptance is right
        // only while the lease is in force. Recording a lease read changes
        // no answer, unless
        // the attempt no longer executes (it completed, or a newer attempt
        // was authorized, its lease still on record): then the recording is
        // refused and the activation rejects.
        let executing =
            s.durable.claims.get(&run.request.claim).is_some_and(|row| row.check_executing(&run.request).is_ok());
        let found_lease = checked_lease && matches!(run.step, ActivatorStep::RecordLease { .. });
        // Or at the recording of a grant, which answers from the grant.
        let accepted = (found_lease && executing) || (recording_grant && run.outcome() == Some(&Answer::Accepted));
        // Such an activation does not finish in the spec's terms: it is
        // rejected (RejectPrecondition), which leaves the stage as it was.
        let rejects_after_all =
            (found_lease && !executing) || (recording && matches!(run.step, ActivatorStep::RecordRejection { .. }));
        let lease_in_force = mapping::lease_in_force(s.durable.claims.get(&run.request.claim), &s.leases);
        let Some(client) = s.clients.get_mut(i) else {
            return;
        };
        if !rejects_after_all {
            client.progress = client.progress.max(run.stage);
        }
        if accepted {
            client.accepted = Some(lease_in_force);
        }
        // The segment with no await ends at the next lease request, pause
        // or answer.
        let durable_next = matches!(run.poll_request(time::NOW), Some(protocol::claim::Request::Durable(_)));
        client.fresh_grant = (granted || client.fresh_grant) && !waits && durable_next;
        if run.outcome().is_none() {
            client.run = Some(run);
        }
    }

    fn step_reaper(&self, s: &mut ImplState) {
        let mut reaper = std::mem::take(&mut s.reaper);
        self.step(s, &mut reaper, Origin::Reaper);
        // The next alarm starts a new pass. What a pass reports (`reaped`,
        // `more`) is the host's output, which no procedure reads: the model
        // forgets it, so that passes differing only in their report are one
        // state.
        reaper.reaped.clear();
        reaper.more = false;
        s.reaper = if reaper.outcome().is_some() { Reaper::default() } else { reaper };
    }

    /// Serves the next request of claim `i`'s heartbeat; returns the
    /// renewal it made, if any (a renewal, not a restoration: the lease
    /// store granted a `Renew`).
    fn step_heartbeat(&self, s: &mut ImplState, i: usize, c: Claim) -> Option<(Claim, Worker)> {
        let mut heartbeat = s.heartbeats.get_mut(i)?.take()?;
        let renewing = matches!(heartbeat.step, HeartbeatStep::Renew);
        self.step(s, &mut heartbeat, Origin::Heartbeat);
        let renewed = renewing && matches!(heartbeat.step, HeartbeatStep::Record { .. });
        let worker = self.names.worker(&heartbeat.request.worker);
        if heartbeat.outcome().is_none()
            && let Some(slot) = s.heartbeats.get_mut(i)
        {
            *slot = Some(heartbeat);
        }
        renewed.then_some((c, worker))
    }

    /// Where `deadline` is stored, and its instant if it is still ahead.
    fn instant(&self, s: &ImplState, deadline: Deadline) -> Option<u64> {
        let n = &self.names;
        let row = |c| s.durable.claims.get(&n.claim_id(c));
        let t = match deadline {
            Deadline::Reservation(c) => row(c)?.reservation.as_ref()?.expires_at,
            Deadline::ActivatorLock(c) => match row(c)?.lock.as_ref()? {
                DurableLock::Activator { expires_at, .. } => *expires_at,
                DurableLock::Recovery => return None,
            },
            Deadline::Lease(c) => s.leases.leases.get(&n.claim_id(c))?.expires_at,
            Deadline::RecordedLease(c) => row(c)?.lease_until?,
            Deadline::CarriedBy(op) => match &s.clients.get(self.operation_index(op)?)?.run.as_ref()?.step {
                ActivatorStep::CreateLease { reservation_expires_at } => *reservation_expires_at,
                ActivatorStep::AcquireLock { lease, .. }
                | ActivatorStep::Commit { lease, .. }
                | ActivatorStep::RecordLease { lease }
                | ActivatorStep::RecordGrant { lease } => lease.expires_at,
                _ => return None,
            },
            Deadline::CarriedByHeartbeat(c) => match s.heartbeats.get(self.claim_index(c)?)?.as_ref()?.step {
                HeartbeatStep::Record { expires_at } => expires_at,
                _ => return None,
            },
            Deadline::CarriedByCompletion(c) => match s.completions.get(self.claim_index(c)?)?.as_ref()?.step {
                CompletionStep::Commit { lease_expires_at } => lease_expires_at,
                _ => return None,
            },
            Deadline::CarriedByExecutingReaper => match &s.executing_reaper.step {
                ExecutingReaperStep::Reap { lease: Some(lease), .. } => lease.expires_at,
                _ => return None,
            },
        };
        time::is_live(t).then_some(t)
    }

    /// The deadlines that can pass, each instant once.
    fn deadlines(&self, s: &ImplState) -> Vec<Deadline> {
        let n = &self.names;
        let stored = n.claims.iter().flat_map(|&c| {
            [Deadline::Reservation(c), Deadline::ActivatorLock(c), Deadline::Lease(c), Deadline::RecordedLease(c)]
        });
        let carried = n
            .operations
            .iter()
            .map(|&op| Deadline::CarriedBy(op))
            .chain(n.claims.iter().map(|&c| Deadline::CarriedByHeartbeat(c)))
            .chain(n.claims.iter().map(|&c| Deadline::CarriedByCompletion(c)))
            .chain([Deadline::CarriedByExecutingReaper]);
        let mut seen = Vec::new();
        stored
            .chain(carried)
            .filter(|&d| match self.instant(s, d) {
                Some(t) if !seen.contains(&t) => {
                    seen.push(t);
                    true
                }
                _ => false,
            })
            .collect()
    }
}

impl Model for ClaimImpl {
    type State = ImplState;
    type Action = Action;

    fn init_states(&self) -> Vec<ImplState> {
        let n = &self.names;
        self.attempts()
            .into_iter()
            .map(|attempts| {
                let mut durable = MemoryDurable::default();
                // Each claim was authorized at its own time: its reservation
                // is a deadline of its own.
                for (i, (&c, &(f, w))) in n.claims.iter().zip(&attempts).enumerate() {
                    let create = self.authorize(c, f, w, NOW + TTL + i as u64);
                    durable::apply(&mut durable, &create, NOW);
                }
                let leases = MemoryLeases::default();
                let clients: Vec<Client> = n
                    .operations
                    .iter()
                    .map(|_| Client { run: None, accepted: None, progress: ActivationStage::Idle, fresh_grant: false })
                    .collect();
                let heartbeats: Vec<Option<Heartbeat>> = n.claims.iter().map(|_| None).collect();
                let completions: Vec<Option<Completion>> = n.claims.iter().map(|_| None).collect();
                let executing_reaper = ExecutingReaper::default();
                let attempts: Vec<FenceSet> = attempts.iter().map(|&(f, _)| FenceSet::of(f)).collect();
                let view = View {
                    durable: &durable,
                    leases: &leases,
                    clients: &clients,
                    heartbeats: &heartbeats,
                    completions: &completions,
                    executing_reaper: &executing_reaper,
                    attempts: &attempts,
                };
                let spec = self.interned.intern(self.map_view(&view));
                let s = ImplState {
                    spec,
                    durable,
                    leases,
                    clients,
                    reaper: Reaper::default(),
                    heartbeats,
                    completions,
                    executing_reaper,
                    attempts,
                    step_violations: Vec::new(),
                };
                self.check(None, s, None)
            })
            .collect()
    }

    fn actions(&self, s: &ImplState, actions: &mut Vec<Action>) {
        let n = &self.names;
        for (&op, client) in n.operations.iter().zip(&s.clients) {
            // An id is used on one claim (ids are scoped per claim).
            let used_on = n
                .claims
                .iter()
                .find(|&&c| s.durable.operations.contains_key(&(n.claim_id(c), n.operation_id(op))))
                .copied();
            let claims: Vec<Claim> = n.claims.iter().copied().filter(|c| used_on.is_none_or(|u| u == *c)).collect();
            match &client.run {
                None => {
                    for &c in &claims {
                        for &f in &n.fences {
                            actions.extend(n.workers.iter().map(|&w| Action::Activate(op, c, f, w)));
                        }
                    }
                }
                Some(run) => {
                    if !lease_lock_held_by_another(
                        s,
                        Holder::Activator(&n.operation_id(op)),
                        run.poll_request(time::NOW),
                    ) {
                        actions.push(Action::Activator(op, run.step.name()));
                    }
                    for &c in &claims {
                        for &f in &n.fences {
                            actions.extend(
                                n.workers
                                    .iter()
                                    .filter(|&&w| n.request_key(c, f, w) != run.request)
                                    .map(|&w| Action::Reuse(op, c, f, w)),
                            );
                        }
                    }
                }
            }
        }
        actions.push(Action::Reaper(s.reaper.step.name()));
        for (&c, heartbeat) in n.claims.iter().zip(&s.heartbeats) {
            match heartbeat {
                None => {
                    for &f in &n.fences {
                        actions.extend(n.workers.iter().map(|&w| Action::Heartbeat(c, f, w)));
                    }
                }
                Some(h) => {
                    if !lease_lock_held_by_another(s, Holder::Heartbeat(&h.request.claim), h.poll_request(time::NOW)) {
                        actions.push(Action::HeartbeatStep(c, h.step.name()));
                    }
                }
            }
        }
        if self.jobs.is_some() {
            self.jobs_actions(s, actions);
        }
        // An activator runs its durable requests with no await between, in
        // one instant of the object: from its commit (which checks the
        // lease's deadline) to the recording of its grant, no time passes.
        // With a fresh grant (`Client::fresh_grant`) no other request sees
        // the claim's lease record before its answer, so a loss of the
        // record is observed only after it.
        let runs = || s.clients.iter().filter_map(|cl| cl.run.as_ref().map(|run| (cl.fresh_grant, run)));
        if !runs().any(|(_, run)| matches!(run.step, ActivatorStep::RecordGrant { .. })) {
            actions.extend(self.deadlines(s).into_iter().map(Action::Elapse));
        }
        let fresh = |c: Claim| runs().any(|(fresh, run)| fresh && run.request.claim == n.claim_id(c));
        actions.extend(
            n.claims
                .iter()
                .filter(|&&c| s.leases.leases.contains_key(&n.claim_id(c)) && !fresh(c))
                .map(|&c| Action::LoseLease(c)),
        );
    }

    fn next_state(&self, prev: &ImplState, action: Action) -> Option<ImplState> {
        let n = &self.names;
        let mut s = prev.clone();
        s.step_violations.clear();
        let mut renewal = None;
        match action {
            Action::Activate(op, c, f, w) => {
                let i = self.operation_index(op)?;
                let run = Activator::new(n.operation_id(op), n.request_key(c, f, w), ACTIVATOR);
                s.clients.get_mut(i)?.run = Some(run);
                self.step_activator(&mut s, i);
            }
            Action::Reuse(op, c, f, w) => {
                let key = n.request_key(c, f, w);
                let mut reuse = Activator::new(n.operation_id(op), key.clone(), ACTIVATOR);
                self.step(&mut s, &mut reuse, Origin::Activator(&key));
            }
            Action::Activator(op, _) => self.step_activator(&mut s, self.operation_index(op)?),
            Action::Reaper(_) => self.step_reaper(&mut s),
            Action::Heartbeat(c, f, w) => {
                let i = self.claim_index(c)?;
                *s.heartbeats.get_mut(i)? = Some(Heartbeat::new(n.request_key(c, f, w), TTL));
                renewal = self.step_heartbeat(&mut s, i, c);
            }
            Action::HeartbeatStep(c, _) => renewal = self.step_heartbeat(&mut s, self.claim_index(c)?, c),
            Action::Elapse(deadline) => {
                let instant = self.instant(&s, deadline)?;
                time::elapse(&mut s, instant);
            }
            Action::LoseLease(c) => {
                s.leases.leases.remove(&n.claim_id(c))?;
            }
            Action::Complete(c, f, w, o) => {
                let i = self.claim_index(c)?;
                *s.completions.get_mut(i)? = Some(self.completion(c, f, w, o));
                self.step_completion(&mut s, i);
            }
            Action::Completion(c, _) => self.step_completion(&mut s, self.claim_index(c)?),
            Action::ExecutingReaper(_) => self.step_executing_reaper(&mut s),
            Action::Authorize(c, f, w) => self.create(&mut s, c, f, w),
        }
        Some(self.check(Some(prev), s, renewal))
    }

    /// Traces and the web explorer show actions with the cfg's names.
    fn format_action(&self, action: &Self::Action) -> String {
        action.show(&self.names)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties(self)
    }
}
