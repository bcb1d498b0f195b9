//! Runs a model (breadth-first, depth-first, or by random walks) and
//! reports the result in the one shape that the CLI prints and
//! `cargo xtask check` reads.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, RandomState};
use std::io::Write;
use std::time::{Duration, Instant};

use serde::Serialize;
use stateright::{Checker, Expectation, HasDiscoveries, Model, UniformChooser};

use crate::search::Search;
use crate::spec::{Mirror, TlaState};

/// The random walks of a [`Search::Simulation`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walks {
    /// The random seed (the same seed and budget replay the same walks
    /// only with one thread).
    pub seed: u64,
    /// A walk ends after about this many tried actions (stateright counts
    /// tries that change nothing; the depth it reports counts them too).
    pub max_depth: usize,
    /// How long to walk.
    pub budget: Duration,
}

impl Default for Walks {
    fn default() -> Self {
        Walks { seed: 1, max_depth: 100, budget: Duration::from_secs(60) }
    }
}

/// How to run the checker.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Worker threads.
    pub threads: usize,
    /// Print progress to stderr every this often (`None`: silent).
    pub progress_every: Option<Duration>,
    pub search: Search,
    /// The walks when `search` is [`Search::Simulation`].
    pub walks: Walks,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { threads: 1, progress_every: None, search: Search::Bfs, walks: Walks::default() }
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
    pub search: Search,
    pub mutation: Option<String>,
    pub unique_states: usize,
    pub states: usize,
    pub max_depth: usize,
    pub seconds: f64,
    pub verdict: &'static str,
    pub violated: Option<String>,
    pub trace: Vec<Step>,
}

/// Checks `model` as `opts.search` says, stopping at the first violated
/// property, and returns the report with a counterexample (a shortest one
/// for breadth-first search).
pub fn check<M: Mirror>(model: M, spec: &str, config: &str, mutation: Option<&str>, opts: &RunOptions) -> Report {
    let started = Instant::now();
    let builder = model.checker().threads(opts.threads.max(1)).finish_when(HasDiscoveries::AnyFailures);
    let run = Run { started, spec, config, mutation, opts };
    match opts.search {
        Search::Bfs => run.conclude(builder.spawn_bfs()),
        Search::Dfs => run.conclude(builder.spawn_dfs()),
        Search::Simulation => {
            let Walks { seed, max_depth, budget } = opts.walks;
            run.conclude(builder.timeout(budget).target_max_depth(max_depth).spawn_simulation(seed, UniformChooser))
        }
    }
}

/// A started run, waiting for its checker.
struct Run<'a> {
    started: Instant,
    spec: &'a str,
    config: &'a str,
    mutation: Option<&'a str>,
    opts: &'a RunOptions,
}

impl Run<'_> {
    /// Waits for `checker` (printing progress) and reports.
    fn conclude<M: Mirror>(&self, checker: impl Checker<M>) -> Report {
        let Run { started, spec, config, mutation, opts } = *self;
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

        // Every discovery is a violation: of an `always` property, or of an
        // `eventually` one (a path to a state without successors that never
        // met its condition; only the implementation model has these).
        // stateright keeps, per property, the last violating path it met
        // before stopping, which can be longer than needed (it stops only
        // between blocks of states): a breadth-first run searches again for a
        // shortest violation of an `always` property. The other searches, and
        // `eventually` properties, report the path stateright found (a
        // breadth-first search as deep as a random walk can be hopeless).
        let discoveries = checker.discoveries();
        let found = discoveries.iter().map(|(name, path)| (path.clone().into_vec().len(), *name)).min();
        let (violated, trace) = match (found, opts.search) {
            (None, _) => (None, Vec::new()),
            (Some((bound, name)), Search::Bfs) => match shortest_violation(checker.model(), bound) {
                Some((name, path)) => (Some(name.to_string()), trace_of::<M>(path)),
                // An `eventually` violation (an `always` one cannot be missed:
                // the search is as deep as the discovery): stateright's path.
                None => (Some(name.to_string()), trace_of::<M>(discoveries[name].clone().into_vec())),
            },
            (Some((_, name)), _) => (Some(name.to_string()), trace_of::<M>(discoveries[name].clone().into_vec())),
        };
        Report {
            spec: spec.to_string(),
            config: config.to_string(),
            checker: "stateright",
            search: opts.search,
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
}

impl Report {
    /// One line: what was checked, how far, and the verdict.
    pub fn summary(&self) -> String {
        format!(
            "{} ({}, {}): {} distinct states, {} states, depth {}, {:.1} s: {}",
            self.spec,
            self.config,
            self.search.name(),
            self.unique_states,
            self.states,
            self.max_depth,
            self.seconds,
            self.violated.as_deref().map_or("pass".to_string(), |v| format!("{v} is violated"))
        )
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
        let found =
            level.iter().filter_map(|&i| violated(&nodes[i].0).map(|name| (name, i))).min_by_key(|&(name, _)| name);
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
            .filter(|(name, value)| prev.as_ref().is_none_or(|p| p.iter().any(|(n, v)| n == name && v != value)))
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect();
        out.push(Step { action: action.take(), changed });
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
