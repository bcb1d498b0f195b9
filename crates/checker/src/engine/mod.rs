//! The exhaustive search engine, for any stateright [`Model`]:
//! breadth-first (`bfs.rs`: level by level, so the first violation found
//! is at the least depth) or depth-first (`dfs.rs`: a stack per thread,
//! work handed to idle threads), on as many threads as asked.
//!
//! What a run keeps is what decides how large a run fits in memory: every
//! state met is one fingerprint and its parent's in [`Visited`] (16 bytes);
//! whole states live only in the frontier (the level being expanded and the
//! next, or the stacks). A counterexample is rebuilt from the parents by
//! replaying the model ([`replay`]). Each step is counted against the
//! action it took ([`Counts`]), which is what `--coverage` reports.
//!
//! Only `always` properties are checked (the models register no other
//! kind): a state violating one stops the run.

mod bfs;
mod dfs;
mod visited;

use std::hash::{BuildHasher, Hash, Hasher};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use stateright::{Expectation, Model, Property};

pub use bfs::bfs;
pub use dfs::dfs;
use visited::Visited;

/// A state's 64-bit hash, never 0 (0 marks "no parent").
pub type Fingerprint = u64;

/// The fingerprint of a state (see [`Fingerprinter`]).
pub fn fingerprint<T: Hash>(value: &T) -> Fingerprint {
    Fingerprinter::default().of(value)
}

/// Fingerprints states: foldhash (quality) with a fixed seed, so that the
/// same state has the same fingerprint in every run and on every thread.
/// A derived `Hash` makes one small write per field; they are gathered
/// into a buffer first and hashed in one pass, several times fewer mixing
/// rounds than hashing each write. The buffer is kept between states.
#[derive(Default)]
pub struct Fingerprinter {
    bytes: Bytes,
}

impl Fingerprinter {
    pub fn of<T: Hash>(&mut self, value: &T) -> Fingerprint {
        self.bytes.0.clear();
        value.hash(&mut self.bytes);
        foldhash::quality::FixedState::with_seed(0x243f_6a88_85a3_08d3).hash_one(&self.bytes.0[..]).max(1)
    }
}

/// A `Hasher` that keeps what is written.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Hasher for Bytes {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.0.push(byte);
    }

    /// Never asked: the bytes are hashed by foldhash.
    fn finish(&self) -> u64 {
        0
    }
}

/// How to run a search.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub threads: usize,
    /// Print progress to stderr this often (`None`: silent).
    pub progress_every: Option<Duration>,
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
    /// in a breadth-first search).
    pub violation: Option<(&'static str, Vec<Fingerprint>)>,
    /// Per action kind (the model's `kind` numbering).
    pub coverage: Vec<Counts>,
}

/// The model and everything the threads of one run share.
struct Shared<'a, M: Model> {
    model: &'a M,
    /// The `always` properties.
    properties: Vec<Property<M>>,
    kind: &'a (dyn Fn(&M::Action) -> usize + Sync),
    kinds: usize,
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
    fn new(model: &'a M, kind: &'a (dyn Fn(&M::Action) -> usize + Sync), kinds: usize) -> Self {
        Shared {
            model,
            properties: model.properties().into_iter().filter(|p| p.expectation == Expectation::Always).collect(),
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

    /// The initial states not met before, each admitted.
    fn initial_states(&self) -> Vec<(M::State, Fingerprint)> {
        let mut out = Vec::new();
        for s in self.model.init_states() {
            let fp = fingerprint(&s);
            if self.visited.insert(fp, visited::NO_PARENT) {
                let ok = self.admit(&s, fp, 1);
                out.push((s, fp));
                if !ok {
                    break;
                }
            }
        }
        out
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn outcome(&self, generated: u64, coverage: Vec<Counts>) -> Outcome {
        let violation = self.violation.lock().unwrap_or_else(PoisonError::into_inner).take();
        Outcome {
            unique: self.visited.count(),
            generated,
            max_depth: self.max_depth.load(Ordering::Relaxed),
            violation: violation.map(|(name, fp)| (name, self.visited.path_to(fp))),
            coverage,
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
struct Worker<A> {
    actions: Vec<A>,
    fingerprinter: Fingerprinter,
    /// Fingerprints this thread met lately, direct-mapped by their low
    /// bits (see [`RECENT`]).
    recent: Vec<Fingerprint>,
    coverage: Vec<Counts>,
    generated: u64,
}

impl<A> Worker<A> {
    fn new(kinds: usize) -> Self {
        Worker {
            actions: Vec::new(),
            fingerprinter: Fingerprinter::default(),
            recent: vec![0; RECENT],
            coverage: vec![Counts::default(); kinds],
            generated: 0,
        }
    }

    /// Takes every enabled action from `state` (at `depth`) and hands each
    /// successor met for the first time to `push`.
    fn expand<M: Model<Action = A>>(
        &mut self,
        shared: &Shared<'_, M>,
        state: &M::State,
        fp: Fingerprint,
        depth: usize,
        mut push: impl FnMut(M::State, Fingerprint),
    ) where
        M::State: Hash + PartialEq,
    {
        let mut actions = std::mem::take(&mut self.actions);
        shared.model.actions(state, &mut actions);
        for action in actions.drain(..) {
            let kind = (shared.kind)(&action);
            let Some(next) = shared.model.next_state(state, action) else { continue };
            self.generated += 1;
            let counts = &mut self.coverage[kind];
            counts.fired += 1;
            // A step back to the same state (a stutter such as `Done`)
            // finds nothing new: no need to look it up. Compared by
            // fingerprint, which every other successor needs anyway (a
            // comparison of whole states costs as much as hashing them
            // for the models whose states hold the protocol's maps).
            let next_fp = self.fingerprinter.of(&next);
            if next_fp == fp {
                continue;
            }
            let slot = next_fp as usize % RECENT;
            if self.recent[slot] == next_fp {
                continue;
            }
            self.recent[slot] = next_fp;
            if shared.visited.insert(next_fp, fp) {
                counts.distinct += 1;
                let ok = shared.admit(&next, next_fp, depth + 1);
                push(next, next_fp);
                if !ok {
                    break;
                }
            }
        }
        self.actions = actions;
    }
}

/// Sums the threads' tallies.
fn merge<A>(kinds: usize, workers: impl IntoIterator<Item = Worker<A>>) -> (u64, Vec<Counts>) {
    let mut generated = 0;
    let mut coverage = vec![Counts::default(); kinds];
    for w in workers {
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
struct Progress {
    every: Option<Duration>,
    started: Instant,
    last: Instant,
    last_count: usize,
}

impl Progress {
    fn new(every: Option<Duration>) -> Self {
        let now = Instant::now();
        Progress { every, started: now, last: now, last_count: 0 }
    }

    /// Waits until `done` (polling), printing progress meanwhile.
    fn wait<M: Model>(&mut self, shared: &Shared<'_, M>, done: impl Fn() -> bool)
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

/// A path as stateright gives it: each state with the action taken from it.
pub type Steps<M> = Vec<(<M as Model>::State, Option<<M as Model>::Action>)>;

/// The states and actions of the path whose fingerprints are `path`,
/// found again by running the model from its initial states.
pub fn replay<M: Model>(model: &M, path: &[Fingerprint]) -> Option<Steps<M>>
where
    M::State: Hash + PartialEq,
    M::Action: Clone,
{
    let (&first, rest) = path.split_first()?;
    let mut state = model.init_states().into_iter().find(|s| fingerprint(s) == first)?;
    let mut steps = Vec::with_capacity(path.len());
    for &next_fp in rest {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        let (action, next) = actions
            .into_iter()
            .find_map(|a| model.next_state(&state, a.clone()).filter(|n| fingerprint(n) == next_fp).map(|n| (a, n)))?;
        steps.push((state, Some(action)));
        state = next;
    }
    steps.push((state, None));
    Some(steps)
}
