//! Runs a mirror exhaustively (BFS) and reports the result in the one
//! shape that the CLI prints and `cargo xtask check` reads.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, RandomState};
use std::io::Write;
use std::time::{Duration, Instant};

use serde::Serialize;
use stateright::{Checker, Expectation, HasDiscoveries, Model};

use crate::spec::{Mirror, TlaState};

/// How to run the checker.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Worker threads for the BFS.
    pub threads: usize,
    /// Print progress to stderr every this often (`None`: silent).
    pub progress_every: Option<Duration>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            threads: 1,
            progress_every: None,
        }
    }
}

/// One step of a counterexample: the action taken (`None` for the initial
/// state) and every variable whose value it changed (all of them for the
/// initial state).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Step {
    pub action: Option<String>,
    pub changed: Vec<(String, String)>,
}

/// The result of one exhaustive check.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub spec: String,
    pub config: String,
    pub checker: &'static str,
    pub mutation: Option<String>,
    pub unique_states: usize,
    pub states: usize,
    pub max_depth: usize,
    pub seconds: f64,
    pub verdict: &'static str,
    pub violated: Option<String>,
    pub trace: Vec<Step>,
}

/// Checks `model` exhaustively with BFS, stopping at the first violated
/// property, and returns the report with a shortest counterexample.
pub fn check<M: Mirror>(model: M, spec: &str, config: &str, mutation: Option<&str>, opts: &RunOptions) -> Report {
    let started = Instant::now();
    let checker = model
        .checker()
        .threads(opts.threads.max(1))
        .finish_when(HasDiscoveries::AnyFailures)
        .spawn_bfs();
    if let Some(every) = opts.progress_every {
        let mut last = Instant::now();
        let mut last_count = 0usize;
        while !checker.is_done() {
            std::thread::sleep(Duration::from_millis(100));
            if last.elapsed() >= every {
                let count = checker.unique_state_count();
                let rate = (count.saturating_sub(last_count)) as f64 / last.elapsed().as_secs_f64();
                eprintln!(
                    "  {} distinct states, depth {}, {:.0} states/s, {:.0} s",
                    count,
                    checker.max_depth(),
                    rate,
                    started.elapsed().as_secs_f64()
                );
                let _ = std::io::stderr().flush();
                last = Instant::now();
                last_count = count;
            }
        }
    }
    let checker = checker.join();
    let seconds = started.elapsed().as_secs_f64();

    // Only safety properties (`always`) are registered; any discovery is a
    // violation. stateright keeps, per property, the last violating path it
    // met before stopping, which can be longer than needed (it stops only
    // between blocks of states): search again for a shortest one.
    let found = checker
        .discoveries()
        .into_values()
        .map(|path| path.into_vec().len())
        .min();
    let (violated, trace) = match found {
        Some(bound) => {
            let (name, path) = shortest_violation(checker.model(), bound)
                .expect("a breadth-first search as deep as stateright's counterexample finds one");
            (Some(name.to_string()), trace_of::<M>(path))
        }
        None => (None, Vec::new()),
    };
    Report {
        spec: spec.to_string(),
        config: config.to_string(),
        checker: "stateright",
        mutation: mutation.map(str::to_string),
        unique_states: checker.unique_state_count(),
        states: checker.state_count(),
        max_depth: checker.max_depth(),
        seconds,
        verdict: if violated.is_some() { "violation" } else { "pass" },
        violated,
        trace,
    }
}

/// A path as stateright gives it: each state with the action taken from it.
type Steps<M> = Vec<(<M as Model>::State, Option<<M as Model>::Action>)>;

/// A state met by the search, with its parent's index and the action from it.
type Node<M> = (<M as Model>::State, Option<(usize, <M as Model>::Action)>);

/// A shortest path to a state violating a property of `model`, among the
/// paths of at most `bound` states. Ties go to the first property by name,
/// then to the first state in breadth-first order.
fn shortest_violation<M: Model<State: Hash>>(model: &M, bound: usize) -> Option<(&'static str, Steps<M>)>
where
    M::State: Clone,
    M::Action: Clone,
{
    let properties = model.properties();
    let violated = |s: &M::State| {
        properties
            .iter()
            .filter(|p| p.expectation == Expectation::Always && !(p.condition)(model, s))
            .map(|p| p.name)
            .min()
    };
    let mut nodes: Vec<Node<M>> = Vec::new();
    let mut seen = HashSet::new();
    let hasher = RandomState::new();
    let mut level = Vec::new();
    for s in model.init_states() {
        if seen.insert(hasher.hash_one(&s)) {
            level.push(nodes.len());
            nodes.push((s, None));
        }
    }
    for _ in 0..bound {
        let found = level
            .iter()
            .filter_map(|&i| violated(&nodes[i].0).map(|name| (name, i)))
            .min_by_key(|&(name, _)| name);
        if let Some((name, mut i)) = found {
            let mut path = vec![(nodes[i].0.clone(), None)];
            while let Some((parent, action)) = &nodes[i].1 {
                path.push((nodes[*parent].0.clone(), Some(action.clone())));
                i = *parent;
            }
            path.reverse();
            return Some((name, path));
        }
        let mut next = Vec::new();
        let mut actions = Vec::new();
        for i in level {
            model.actions(&nodes[i].0, &mut actions);
            for action in actions.drain(..) {
                if let Some(s) = model.next_state(&nodes[i].0, action.clone())
                    && seen.insert(hasher.hash_one(&s))
                {
                    next.push(nodes.len());
                    nodes.push((s, Some((i, action))));
                }
            }
        }
        level = next;
    }
    None
}

fn trace_of<M: Model<State: TlaState>>(steps: Vec<(M::State, Option<M::Action>)>) -> Vec<Step>
where
    M::Action: std::fmt::Display,
{
    let mut out = Vec::with_capacity(steps.len());
    let mut prev: Option<Vec<(&'static str, String)>> = None;
    let mut action: Option<String> = None;
    for (state, next_action) in steps {
        let vars = state.variables();
        let changed = vars
            .iter()
            .filter(|(name, value)| {
                prev.as_ref()
                    .is_none_or(|p| p.iter().any(|(n, v)| n == name && v != value))
            })
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect();
        out.push(Step {
            action: action.take(),
            changed,
        });
        action = next_action.map(|a| a.to_string());
        prev = Some(vars);
    }
    out
}

/// Prints a counterexample in TLA+-like notation, as TLC would.
pub fn format_trace(report: &Report) -> String {
    let mut s = String::new();
    for (i, step) in report.trace.iter().enumerate() {
        match &step.action {
            None => s.push_str(&format!("State {}: <Initial predicate>\n", i + 1)),
            Some(a) => s.push_str(&format!("State {}: <{a}>\n", i + 1)),
        }
        for (name, value) in &step.changed {
            s.push_str(&format!("/\\ {name} = {value}\n"));
        }
        s.push('\n');
    }
    s
}
