//! A state of the implementation model: the two stores, the procedures in
//! flight, and the spec state it maps to.

use std::fmt;
use std::sync::Arc;

use protocol::claim::{
    ActivationStage, Activator, ClaimRow, Completion, DurableLock, ExecutingReaper, Heartbeat, HeartbeatStep, Lease,
    MemoryDurable, MemoryLeases, Millis, OperationRow, Reaper, RequestKey,
};

use crate::mirror::remora_jobs::{FenceSet, JobsState};
use crate::spec::{TlaState, fmt_variables};

/// The model's clock, which never moves: deadlines move past it instead
/// (`time`).
pub const NOW: Millis = 1_000_000;

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ImplState {
    pub durable: MemoryDurable,
    pub leases: MemoryLeases,
    /// One per operation id, in the cfg's order.
    pub clients: Vec<Client>,
    pub reaper: Reaper,
    /// The heartbeat in flight for each claim, in the cfg's order.
    pub heartbeats: Vec<Option<Heartbeat>>,
    /// The completion in flight for each claim, in the cfg's order (only
    /// when the model checks RemoraJobs).
    pub completions: Vec<Option<Completion>>,
    /// The reaper's pass over executing claims (RemoraJobs only; idle
    /// otherwise).
    pub executing_reaper: ExecutingReaper,
    /// History: the fences of each claim's authorized attempts, in the
    /// cfg's order (the durable row keeps only the current one and a count).
    pub attempts: Vec<FenceSet>,
    /// The spec state this one maps to (a function of the fields above,
    /// kept to check the next step against). Interned: the spec has far
    /// fewer states than the implementation, so states share it.
    pub spec: Arc<JobsState>,
    /// The properties that the step into this state (or this initial
    /// state) violates. Empty on every state of a correct run, so it adds
    /// no states; a violating step gets a state of its own to report.
    pub step_violations: Vec<&'static str>,
}

/// What the refinement mapping reads of a state: everything but the spec
/// state it yields.
pub struct View<'a> {
    pub durable: &'a MemoryDurable,
    pub leases: &'a MemoryLeases,
    pub clients: &'a [Client],
    pub heartbeats: &'a [Option<Heartbeat>],
    pub completions: &'a [Option<Completion>],
    pub executing_reaper: &'a ExecutingReaper,
    pub attempts: &'a [FenceSet],
}

impl ImplState {
    pub fn view(&self) -> View<'_> {
        View {
            durable: &self.durable,
            leases: &self.leases,
            clients: &self.clients,
            heartbeats: &self.heartbeats,
            completions: &self.completions,
            executing_reaper: &self.executing_reaper,
            attempts: &self.attempts,
        }
    }
}

/// The client of one operation id: the activate request it has in flight,
/// and what the refinement mapping needs to remember of earlier ones.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Client {
    pub run: Option<Activator>,
    /// History: the last Accepted answer to this id, and whether the
    /// claim's lease was in force when it was given (`Some(true)`: it stands
    /// while that lease holds; `Some(false)`: it was wrong when given).
    pub accepted: Option<bool>,
    /// History: the furthest stage an activation of this id has reached.
    pub progress: ActivationStage,
    /// The activator in flight holds the lease the store granted it and has
    /// not waited since, up to its answer. The Durable Object serves its
    /// durable requests with no await in between, so no other request of
    /// the object runs there and its clock stands still: a loss of the
    /// lease record meanwhile is seen by nobody before the answer, as if it
    /// came right after it. The model's own record, not the activator's
    /// (`waited`), so that an activator which forgets a wait is caught.
    pub fresh_grant: bool,
}

impl TlaState for ImplState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = self.spec.variables();
        vars.extend([
            ("claimRows", list(self.durable.claims.values().map(claim_row))),
            ("operationRows", list(self.durable.operations.values().map(operation_row))),
            ("leases", list(self.leases.leases.iter().map(|(c, l)| format!("{c}: {}", lease(l))))),
            ("activators", list(self.clients.iter().filter_map(|c| c.run.as_ref()).map(activator))),
            (
                "clientHistory",
                list(self.clients.iter().map(|c| {
                    let accepted = match c.accepted {
                        None => "",
                        Some(true) => " accepted",
                        Some(false) => " accepted without lease",
                    };
                    format!("{:?}{accepted}", c.progress)
                })),
            ),
            ("reaper", self.reaper.step.name().to_string()),
            (
                "heartbeats",
                list(self.heartbeats.iter().flatten().map(|h| format!("{} {}", key(&h.request), heartbeat(&h.step)))),
            ),
            (
                "completions",
                list(
                    self.completions
                        .iter()
                        .flatten()
                        .map(|c| format!("{} {} {:?} at {}", c.operation, key(&c.request), c.outcome, c.step.name())),
                ),
            ),
            ("executingReaper", self.executing_reaper.step.name().to_string()),
        ]);
        vars
    }
}

impl fmt::Debug for ImplState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)?;
        if !self.step_violations.is_empty() {
            write!(f, "\n\\* the step here violates {}", self.step_violations.join(", "))?;
        }
        Ok(())
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    format!("<<{}>>", items.collect::<Vec<_>>().join("; "))
}

/// A stored time: `past`, or the canonical name `tK` of a live deadline.
fn time(t: Millis) -> String {
    if t <= NOW { "past".into() } else { format!("t{}", t - NOW) }
}

fn key(k: &RequestKey) -> String {
    format!("({}, {}, {})", k.claim, k.fence, k.worker)
}

fn claim_row(row: &ClaimRow) -> String {
    let reservation =
        row.reservation.as_ref().map_or("none".into(), |r| format!("{} until {}", r.worker, time(r.expires_at)));
    let lock = match &row.lock {
        None => "none".into(),
        Some(DurableLock::Activator { operation, expires_at }) => format!("{operation} until {}", time(*expires_at)),
        Some(DurableLock::Recovery) => "recovery".into(),
    };
    let recorded = row.lease_until.map_or("none".into(), time);
    let outcome = row.outcome.map_or(String::new(), |o| format!(" outcome {o:?}"));
    format!(
        "{} {:?}{outcome} attempt {} of {} ({}, {}) reservation {reservation} lock {lock} activations {} lease recorded until {recorded}",
        row.claim, row.state, row.attempt, row.max_attempts, row.fence, row.worker, row.activations
    )
}

fn operation_row(row: &OperationRow) -> String {
    let mut s = format!("{} {}", row.operation, key(&row.request));
    if let Some(r) = row.rejection {
        s.push_str(&format!(" rejected {r}"));
    }
    if let Some(k) = &row.conflict {
        s.push_str(&format!(" reused by {}", key(k)));
    }
    s
}

fn lease(l: &Lease) -> String {
    format!("({}, {}) until {}", l.fence, l.worker, time(l.expires_at))
}

fn heartbeat(step: &HeartbeatStep) -> String {
    match step {
        HeartbeatStep::Record { expires_at } => format!("{} {}", step.name(), time(*expires_at)),
        _ => step.name().to_string(),
    }
}

fn activator(a: &Activator) -> String {
    format!("{} {} {:?} at {}", a.operation, key(&a.request), a.stage, a.step.name())
}
