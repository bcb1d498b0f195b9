//! Runs a model (breadth-first, depth-first, or by random walks) and
//! reports the result in the one shape that the CLI prints and
//! `cargo xtask check` reads.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, RandomState};
use std::io::Write;
use std::time::{Duration, Instant};

use serde::Serialize;
use stateright::{Checker, Expectation, HasDiscoveries, Model, UniformChooser};

use crate::cfg::Reduction;
use crate::engine::{self, Steps};
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
    /// Breadth-first only: the greatest depth explored
    /// (`engine::Options::depth_bound`); the report then says the run is
    /// complete to that depth only, and judges no coverage.
    pub depth_bound: Option<usize>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { threads: 1, progress_every: None, search: Search::Bfs, walks: Walks::default(), depth_bound: None }
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
    /// Whether the model's reductions were on (`--no-reduction`: off).
    pub reduction: Reduction,
    pub unique_states: usize,
    pub states: usize,
    pub max_depth: usize,
    /// A breadth-first run stopped at this depth: it is complete for the
    /// states within it (every one met, every step between them checked)
    /// and says nothing of the states beyond.
    pub depth_bound: Option<usize>,
    /// A run bounded in depth whose graph ended within the bound (nothing
    /// new followed its deepest level, which was above the bound): it met
    /// every reachable state, as a run without the bound would, though it
    /// still checked no liveness property.
    pub ended_within_bound: bool,
    /// The liveness properties a run bounded in depth did not check (they
    /// need the whole graph): it checked the invariants and steps only.
    pub liveness_unchecked: Vec<&'static str>,
    pub seconds: f64,
    pub verdict: &'static str,
    pub violated: Option<String>,
    pub trace: Vec<Step>,
    /// How often each action fired (exhaustive searches only), in the
    /// model's order of actions.
    pub coverage: Option<Vec<ActionCoverage>>,
    /// The actions that made the verdict "vacuous": never fired though the
    /// cfg does not say they cannot, or fired though it says they cannot.
    pub unfired: Vec<String>,
}

/// How often one kind of action was taken in an exhaustive run.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ActionCoverage {
    /// The action's name (the spec's, for a mirror).
    pub action: &'static str,
    /// Steps it took.
    pub fired: u64,
    /// Steps of those that reached a state met for the first time (which
    /// action reaches a state first depends on the search order).
    pub distinct: u64,
}

/// Checks `model` as `opts.search` says, stopping at the first violated
/// property, and returns the report with a counterexample (a shortest one
/// for breadth-first search) and, for an exhaustive search, how often each
/// action fired.
pub fn check<M: Mirror>(model: M, spec: &str, config: &str, mutation: Option<&str>, opts: &RunOptions) -> Report {
    let started = Instant::now();
    let run = Run { started, spec, config, mutation, opts };
    if matches!(opts.search, Search::Bfs | Search::Dfs) {
        return run.exhaustive(&model);
    }
    let builder = model.checker().threads(opts.threads.max(1)).finish_when(HasDiscoveries::AnyFailures);
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
    /// Runs the engine's breadth- or depth-first search and reports.
    fn exhaustive<M: Mirror>(&self, model: &M) -> Report {
        let depth_bound = self.opts.depth_bound.filter(|_| self.opts.search == Search::Bfs);
        let engine_opts = engine::Options {
            threads: self.opts.threads.max(1),
            progress_every: self.opts.progress_every,
            depth_bound,
        };
        let kind = |a: &M::Action| model.action_kind(a);
        let names = model.action_names();
        let liveness = model.liveness();
        let outcome = match self.opts.search {
            Search::Dfs => engine::dfs(model, &kind, names.len(), &liveness, engine_opts),
            _ => engine::bfs(model, &kind, names.len(), &liveness, engine_opts),
        };
        let seconds = self.started.elapsed().as_secs_f64();
        let (violated, trace) = match &outcome.violation {
            None => (None, Vec::new()),
            Some((name, path)) => {
                // The engine stops at the first violation it meets. A
                // breadth-first one is at the least depth, but which of the
                // violations at that depth comes first depends on the
                // threads: search that depth again, in order, for the same
                // counterexample on every run. (A cycle is found after the
                // search: it is reported as found.)
                let shortest = (self.opts.search == Search::Bfs && outcome.lasso.is_none())
                    .then(|| shortest_violation(model, path.len()))
                    .flatten();
                let replayed = || engine::replay(model, &liveness, depth_bound.is_some(), path);
                match shortest.or_else(|| replayed().map(|steps| (*name, steps))) {
                    Some((name, steps)) => {
                        let mut trace = trace_of::<M>(model, steps);
                        if let Some(back) = outcome.lasso {
                            trace.push(Step {
                                action: Some(format!("Back to state {} (forever)", back + 1)),
                                changed: Vec::new(),
                            });
                        }
                        (Some(name.to_string()), trace)
                    }
                    // Cannot happen (the model is deterministic); keep the
                    // violation rather than lose it.
                    None => (Some(name.to_string()), Vec::new()),
                }
            }
        };
        let coverage = names
            .iter()
            .zip(&outcome.coverage)
            .map(|(&action, c)| ActionCoverage { action, fired: c.fired, distinct: c.distinct })
            .collect();
        Report {
            spec: self.spec.to_string(),
            config: self.config.to_string(),
            checker: "stateright",
            search: self.opts.search,
            mutation: self.mutation.map(str::to_string),
            reduction: Reduction::On,
            unique_states: outcome.unique,
            states: outcome.generated as usize,
            max_depth: outcome.max_depth,
            depth_bound,
            // The bound's level is met but not expanded: only a graph whose
            // last level lies above it is known to end there.
            ended_within_bound: violated.is_none() && depth_bound.is_some_and(|bound| outcome.max_depth < bound),
            liveness_unchecked: match depth_bound {
                Some(_) => engine::liveness_names(model, &liveness),
                None => Vec::new(),
            },
            seconds,
            verdict: if violated.is_some() { "violation" } else { "pass" },
            violated,
            trace,
            coverage: Some(coverage),
            unfired: Vec::new(),
        }
    }

    /// Waits for stateright's random walks (printing progress) and reports.
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
        // met its condition; only models with such properties get here for
        // an exhaustive search, see `check`). stateright keeps, per
        // property, the last violating path it met before stopping, which
        // can be longer than needed: a breadth-first run searches again for
        // a shortest violation of an `always` property. Random walks and
        // `eventually` properties report the path stateright found.
        let discoveries = checker.discoveries();
        let found = discoveries.iter().map(|(name, path)| (path.clone().into_vec().len(), *name)).min();
        let model = checker.model();
        let found_path = |name: &str| discoveries[name].clone().into_vec();
        let (violated, trace) = match (found, opts.search) {
            (None, _) => (None, Vec::new()),
            (Some((bound, name)), Search::Bfs) => match shortest_violation(model, bound) {
                Some((name, path)) => (Some(name.to_string()), trace_of::<M>(model, path)),
                None => (Some(name.to_string()), trace_of::<M>(model, found_path(name))),
            },
            (Some((_, name)), _) => (Some(name.to_string()), trace_of::<M>(model, found_path(name))),
        };
        Report {
            spec: spec.to_string(),
            config: config.to_string(),
            checker: "stateright",
            search: opts.search,
            mutation: mutation.map(str::to_string),
            reduction: Reduction::On,
            unique_states: checker.unique_state_count(),
            states: checker.state_count(),
            max_depth: checker.max_depth(),
            depth_bound: None,
            ended_within_bound: false,
            liveness_unchecked: Vec::new(),
            seconds,
            verdict: if violated.is_some() { "violation" } else { "pass" },
            violated,
            trace,
            coverage: None,
            unfired: Vec::new(),
        }
    }
}

impl Report {
    /// One line: what was checked, how far, and the verdict.
    pub fn summary(&self) -> String {
        format!(
            "{} ({}, {}{}{}): {} distinct states, {} states, depth {}, {:.1} s: {}",
            self.spec,
            self.config,
            self.search.name(),
            match self.reduction {
                Reduction::On => "",
                Reduction::Off => ", no reduction",
                Reduction::KeepOne => ", one step's drops kept",
            },
            match (self.depth_bound, self.liveness_unchecked.as_slice()) {
                (Some(bound), names) => {
                    let reach = match self.ended_within_bound {
                        true => {
                            format!(", the whole graph (it ends at depth {}, within the bound {bound})", self.max_depth)
                        }
                        false => format!(", complete to depth {bound} only"),
                    };
                    match names {
                        [] => reach,
                        names => format!("{reach}, liveness not checked: {}", names.join(", ")),
                    }
                }
                (None, _) => String::new(),
            },
            self.unique_states,
            self.states,
            self.max_depth,
            self.seconds,
            match (&self.violated, self.unfired.is_empty()) {
                (Some(v), _) => format!("{v} is violated"),
                (None, true) => "pass".to_string(),
                (None, false) => format!("vacuous: {}", self.unfired.join("; ")),
            }
        )
    }

    /// Fails a passing exhaustive run (verdict "vacuous") when an action
    /// never fired and the cfg does not declare that it cannot
    /// (`expected_unfired`, its `\* UNFIRED` lines), when a declared
    /// action fired after all, or when a declaration names no action of the
    /// model (a typo, or a renamed action, would otherwise never be
    /// checked): a spec that passes because an action can never happen
    /// checks less than it seems to.
    /// A run bounded in depth is not judged (an action may first fire
    /// deeper), unless its graph ended within the bound.
    pub fn judge_coverage(&mut self, expected_unfired: &[String]) {
        let Some(coverage) = &self.coverage else { return };
        if self.verdict != "pass" || (self.depth_bound.is_some() && !self.ended_within_bound) {
            return;
        }
        self.unfired = coverage
            .iter()
            .filter_map(|c| {
                let expected = expected_unfired.iter().any(|n| n == c.action);
                match (c.fired, expected) {
                    (0, false) => Some(format!("{} never fired", c.action)),
                    (n, true) if n > 0 => Some(format!("{} fired {n} times though the cfg says UNFIRED", c.action)),
                    _ => None,
                }
            })
            .collect();
        self.unfired.extend(
            expected_unfired
                .iter()
                .filter(|n| !coverage.iter().any(|c| c.action == n.as_str()))
                .map(|n| format!("UNFIRED {n} names no action of this model")),
        );
        if !self.unfired.is_empty() {
            self.verdict = "vacuous";
        }
    }

    /// The coverage as a table: one line per action.
    pub fn coverage_table(&self) -> String {
        let Some(coverage) = &self.coverage else {
            return "no coverage: only exhaustive searches count actions\n".to_string();
        };
        let width = coverage.iter().map(|c| c.action.len()).max().unwrap_or(0).max("action".len());
        let mut s = format!("{:<width$}  {:>12}  {:>12}\n", "action", "fired", "distinct");
        for c in coverage {
            s.push_str(&format!("{:<width$}  {:>12}  {:>12}\n", c.action, c.fired, c.distinct));
        }
        s
    }
}

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

fn trace_of<M: Mirror>(model: &M, steps: Steps<M>) -> Vec<Step> {
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
        action = next_action.map(|a| model.format_action(&a));
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
