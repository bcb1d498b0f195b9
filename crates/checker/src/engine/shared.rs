//! What the two searches (`bfs.rs`, `dfs.rs`) share: a run's options
//! and outcome, the state the threads of one run share, a thread's worker,
//! and the progress line.

use std::hash::Hash;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use stateright::{Expectation, Model, Property};

use super::fingerprint::{Fingerprint, Fingerprinter, Key, Pending, fingerprint};
use super::liveness::{Checks, Graph, Liveness};
use super::visited::{self, Visited};

/// How to run a search.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub threads: usize,
    /// Print progress to stderr this often (`None`: silent).
    pub progress_every: Option<Duration>,
    /// Breadth-first only: expand no state of this depth (an initial state
    /// has depth 1), so the run meets exactly the states at most this many
    /// states deep and checks every step between them (`None`: the whole
    /// graph); it checks the `always` properties only, no liveness property.
    /// Depth-first search ignores it: a state it first meets along a
    /// long path may lie within the bound along a shorter one.
    pub depth_bound: Option<usize>,
}

/// How often an action was taken during a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Steps it took (TLC's "states found" of an action).
    pub fired: u64,
    /// Steps of those that reached a state met for the first time (TLC's
    /// "distinct states" of an action). Which action reaches a state first
    /// depends on the order of the search, so with several threads this can
    /// differ between runs; `fired` does not.
    pub distinct: u64,
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Distinct states.
    pub unique: usize,
    /// Initial states plus every step taken (TLC's "states generated").
    pub generated: u64,
    /// The depth of the deepest state met (an initial state has depth 1).
    pub max_depth: usize,
    /// The first violation found: the property and the fingerprints of a
    /// path from an initial state to the violating state (a shortest one
    /// in a breadth-first search), or, for a liveness property violated by
    /// a cycle, to the last state of the cycle.
    pub violation: Option<(&'static str, Vec<Fingerprint>)>,
    /// For a violation by a cycle: the position in the path of the state
    /// its last state steps back to.
    pub lasso: Option<usize>,
    /// Per action kind (the model's `kind` numbering).
    pub coverage: Vec<Counts>,
}

/// The model and everything the threads of one run share.
pub(super) struct Shared<'a, M: Model> {
    model: &'a M,
    /// The `always` properties.
    properties: Vec<Property<M>>,
    /// The liveness properties.
    checks: Checks<M>,
    /// The initial nodes, then every thread's graph (runs with liveness
    /// properties only).
    graph: Mutex<Graph>,
    kind: &'a (dyn Fn(&M::Action) -> usize + Sync),
    pub(super) kinds: usize,
    visited: Visited,
    /// Set on the first violation (or to stop for any other reason).
    stop: AtomicBool,
    violation: Mutex<Option<(&'static str, Fingerprint)>>,
    max_depth: AtomicUsize,
}

impl<'a, M: Model> Shared<'a, M>
where
    M::State: Hash + PartialEq,
{
    pub(super) fn new(
        model: &'a M,
        kind: &'a (dyn Fn(&M::Action) -> usize + Sync),
        kinds: usize,
        liveness: &[Liveness<M>],
        bounded: bool,
    ) -> Self
    where
        M: 'static,
    {
        Shared {
            model,
            properties: model.properties().into_iter().filter(|p| p.expectation == Expectation::Always).collect(),
            checks: Checks::new(&checked_liveness(model, liveness, bounded)),
            graph: Mutex::default(),
            kind,
            kinds,
            visited: Visited::default(),
            stop: AtomicBool::new(false),
            violation: Mutex::new(None),
            max_depth: AtomicUsize::new(0),
        }
    }

    /// Records a newly met state: checks the properties on it; `false`
    /// (and the run stops) if one is violated.
    fn admit(&self, state: &M::State, fp: Fingerprint, depth: usize) -> bool {
        // A load first: a read-modify-write of a line every thread shares,
        // once per new state, moves the line between cores every time.
        if depth > self.max_depth.load(Ordering::Relaxed) {
            self.max_depth.fetch_max(depth, Ordering::Relaxed);
        }
        let violated = self.properties.iter().find(|p| !(p.condition)(self.model, state));
        let Some(p) = violated else { return true };
        let mut first = self.violation.lock().unwrap_or_else(PoisonError::into_inner);
        first.get_or_insert((p.name, fp));
        self.stop.store(true, Ordering::Relaxed);
        false
    }

    /// Records that `state`, the last of a path (`key`), has no successor:
    /// the path stutters there forever. `false` (and the run stops) if it
    /// still owes a liveness property or fails a `<>[]` goal there.
    fn at_end(&self, state: &M::State, key: Key) -> bool {
        if self.checks.is_empty() {
            return true;
        }
        let Some(name) = self.checks.at_end(key.pending, self.checks.unsettled(self.model, state)) else {
            return true;
        };
        let mut first = self.violation.lock().unwrap_or_else(PoisonError::into_inner);
        first.get_or_insert((name, key.node));
        self.stop.store(true, Ordering::Relaxed);
        false
    }

    /// The key of `state`, reached by a path that owed `before` (`None`:
    /// an initial state).
    fn key(&self, state: &M::State, fp: Fingerprint, before: Option<Pending>) -> Key {
        if self.checks.is_empty() {
            return Key { node: fp, pending: 0 };
        }
        Key::new(fp, self.checks.owed(self.model, state, before))
    }

    /// A node of the graph: its key, what it owes, the `<>[]` goals it fails.
    fn node(&self, state: &M::State, key: Key) -> (Fingerprint, Pending, u64) {
        (key.node, key.pending, self.checks.unsettled(self.model, state))
    }

    /// The initial states not met before, each admitted.
    pub(super) fn initial_states(&self) -> Vec<(M::State, Key)> {
        let mut out = Vec::new();
        for s in self.model.init_states() {
            let key = self.key(&s, fingerprint(&s), None);
            if self.visited.insert(key.node, visited::NO_PARENT) {
                if !self.checks.is_empty() {
                    let node = self.node(&s, key);
                    self.graph.lock().unwrap_or_else(PoisonError::into_inner).nodes.push(node);
                }
                let ok = self.admit(&s, key.node, 1);
                out.push((s, key));
                if !ok {
                    break;
                }
            }
        }
        out
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// What the run found; when it found no violation, the cycles of the
    /// graph of a run with liveness properties are checked first.
    pub(super) fn outcome(&self, generated: u64, coverage: Vec<Counts>) -> Outcome {
        let violation = self.violation.lock().unwrap_or_else(PoisonError::into_inner).take();
        let mut lasso = None;
        let violation = match violation {
            Some((name, fp)) => Some((name, self.visited.path_to(fp))),
            None if !self.checks.is_empty() => {
                let graph = std::mem::take(&mut *self.graph.lock().unwrap_or_else(PoisonError::into_inner));
                graph.violating_cycle(&self.checks).and_then(|(name, cycle)| {
                    let mut path = self.visited.path_to(*cycle.first()?);
                    lasso = Some(path.len() - 1);
                    path.extend(&cycle[1..]);
                    Some((name, path))
                })
            }
            None => None,
        };
        Outcome {
            unique: self.visited.count(),
            generated,
            max_depth: self.max_depth.load(Ordering::Relaxed),
            violation,
            lasso,
            coverage,
        }
    }

    /// Adds a thread's graph to the run's.
    fn keep_graph(&self, graph: Graph) {
        if !self.checks.is_empty() {
            self.graph.lock().unwrap_or_else(PoisonError::into_inner).append(graph);
        }
    }
}

/// Slots of a thread's cache of fingerprints met lately (512 KiB: half a
/// core's L2 here). Most successors are states met moments ago (two orders
/// of the same pair of steps reach the same state): on the Remora cfg of
/// `bench models` about 73% of lookups end here, each sparing a lock of a
/// shared shard and a miss in a table of hundreds of megabytes. A hit is
/// exact: every fingerprint in it has been looked up in [`Visited`].
const RECENT: usize = 1 << 16;

/// One thread's scratch space and tallies.
pub(super) struct Worker<A> {
    actions: Vec<A>,
    fingerprinter: Fingerprinter,
    /// Fingerprints this thread met lately, direct-mapped by their low
    /// bits (see [`RECENT`]).
    recent: Vec<Fingerprint>,
    coverage: Vec<Counts>,
    generated: u64,
    /// The nodes and steps this thread met (runs with liveness properties).
    graph: Graph,
}

impl<A> Worker<A> {
    pub(super) fn new(kinds: usize) -> Self {
        Worker {
            actions: Vec::new(),
            fingerprinter: Fingerprinter::default(),
            recent: vec![0; RECENT],
            coverage: vec![Counts::default(); kinds],
            generated: 0,
            graph: Graph::default(),
        }
    }

    /// Takes every enabled action from `state` (at `depth`) and hands each
    /// successor met for the first time to `push`.
    pub(super) fn expand<M: Model<Action = A>>(
        &mut self,
        shared: &Shared<'_, M>,
        state: &M::State,
        key: Key,
        depth: usize,
        mut push: impl FnMut(M::State, Key),
    ) where
        M::State: Hash + PartialEq,
    {
        let fp = key.node;
        let mut actions = std::mem::take(&mut self.actions);
        shared.model.actions(state, &mut actions);
        let mut successors = false;
        for action in actions.drain(..) {
            let kind = (shared.kind)(&action);
            let Some(next) = shared.model.next_state(state, action) else { continue };
            successors = true;
            self.generated += 1;
            let counts = &mut self.coverage[kind];
            counts.fired += 1;
            // A step back to the same state (a stutter such as `Done`)
            // finds nothing new: no need to look it up. Compared by
            // fingerprint, which every other successor needs anyway (a
            // comparison of whole states costs as much as hashing them
            // for the models whose states hold the protocol's maps).
            let next_key = shared.key(&next, self.fingerprinter.of(&next), Some(key.pending));
            let next_fp = next_key.node;
            if next_fp == fp {
                continue;
            }
            let liveness = !shared.checks.is_empty();
            if liveness {
                self.graph.edges.push((fp, next_fp));
            }
            let slot = next_fp as usize % RECENT;
            if self.recent[slot] == next_fp {
                continue;
            }
            self.recent[slot] = next_fp;
            if shared.visited.insert(next_fp, fp) {
                counts.distinct += 1;
                if liveness {
                    self.graph.nodes.push(shared.node(&next, next_key));
                }
                let ok = shared.admit(&next, next_fp, depth + 1);
                push(next, next_key);
                if !ok {
                    break;
                }
            }
        }
        self.actions = actions;
        if !successors {
            shared.at_end(state, key);
        }
    }
}

/// The model's stateright `eventually` properties (as `<>Q`), then
/// `liveness`.
/// The liveness properties a run checks, and so what its keys carry: all
/// of them ([`all_liveness`]), or none in a run bounded in depth (a state at
/// the bound has successors the run never sees).
pub(super) fn checked_liveness<M: Model + 'static>(
    model: &M,
    liveness: &[Liveness<M>],
    bounded: bool,
) -> Vec<Liveness<M>> {
    if bounded { Vec::new() } else { all_liveness(model, liveness) }
}

pub(super) fn all_liveness<M: Model + 'static>(model: &M, liveness: &[Liveness<M>]) -> Vec<Liveness<M>> {
    let eventually = model.properties().into_iter().filter(|p| p.expectation == Expectation::Eventually);
    eventually
        .map(|p| {
            let condition = p.condition;
            Liveness::eventually(p.name, move |m: &M, s: &M::State| condition(m, s))
        })
        .chain(liveness.iter().cloned())
        .collect()
}

/// Sums the threads' tallies; their graphs go to the run's.
pub(super) fn merge<M: Model>(
    shared: &Shared<'_, M>,
    workers: impl IntoIterator<Item = Worker<M::Action>>,
) -> (u64, Vec<Counts>)
where
    M::State: Hash + PartialEq,
{
    let kinds = shared.kinds;
    let mut generated = 0;
    let mut coverage = vec![Counts::default(); kinds];
    for mut w in workers {
        shared.keep_graph(std::mem::take(&mut w.graph));
        generated += w.generated;
        for (total, c) in coverage.iter_mut().zip(w.coverage) {
            total.fired += c.fired;
            total.distinct += c.distinct;
        }
    }
    (generated, coverage)
}

/// Prints `N distinct states, depth D, R states/s, T s` every so often
/// (the line `cargo xtask check` shows live).
pub(super) struct Progress {
    every: Option<Duration>,
    started: Instant,
    last: Instant,
    last_count: usize,
}

impl Progress {
    pub(super) fn new(every: Option<Duration>) -> Self {
        let now = Instant::now();
        Progress { every, started: now, last: now, last_count: 0 }
    }

    /// Waits until `done` (polling), printing progress meanwhile.
    pub(super) fn wait<M: Model>(&mut self, shared: &Shared<'_, M>, done: impl Fn() -> bool)
    where
        M::State: Hash + PartialEq,
    {
        while !done() {
            std::thread::sleep(Duration::from_millis(20));
            self.tick(shared);
        }
    }

    fn tick<M: Model>(&mut self, shared: &Shared<'_, M>)
    where
        M::State: Hash + PartialEq,
    {
        let Some(every) = self.every else { return };
        if self.last.elapsed() < every {
            return;
        }
        let count = shared.visited.count();
        let rate = count.saturating_sub(self.last_count) as f64 / self.last.elapsed().as_secs_f64();
        eprintln!(
            "  {count} distinct states, depth {}, {rate:.0} states/s, {:.0} s",
            shared.max_depth.load(Ordering::Relaxed),
            self.started.elapsed().as_secs_f64()
        );
        let _ = std::io::stderr().flush();
        self.last = Instant::now();
        self.last_count = count;
    }
}
