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
//! `always` properties are checked on every state met: a state violating one
//! stops the run. `eventually` properties are checked as stateright checks
//! them, on the paths that end in a state without successors (a path that
//! closes a cycle is not checked): each state carries the bits of the
//! `eventually` properties that no state of its path satisfied yet
//! ([`Key`]), and a state without successors whose bits are not all clear
//! violates the first of them. The bits are part of what makes a state
//! distinct (stateright keeps the bits of the first path that reached a
//! state, and so can miss a path that reaches it with other bits), so a run
//! with `eventually` properties counts pairs of a state and its bits.
//! `sometimes` properties are not checked (no model has one).

mod bfs;
mod dfs;
#[cfg(test)]
mod tests;
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

/// The `eventually` properties not yet satisfied on a path, bit `i` for the
/// model's `i`th `eventually` property.
pub type Pending = u64;

/// What the search tells apart: a state's fingerprint and the `eventually`
/// properties its path has not satisfied yet. `node` is what the visited
/// set and the parents hold: the fingerprint itself when nothing is
/// pending (so a model without `eventually` properties is searched exactly
/// as before), else a hash of both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub node: Fingerprint,
    pub pending: Pending,
}

impl Key {
    pub fn new(fp: Fingerprint, pending: Pending) -> Key {
        let node = if pending == 0 {
            fp
        } else {
            foldhash::quality::FixedState::with_seed(0x1319_8a2e_0370_7344).hash_one((fp, pending)).max(1)
        };
        Key { node, pending }
    }
}

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
    /// The `eventually` properties (at most 64: bits of [`Pending`]).
    eventually: Vec<Property<M>>,
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
            eventually: model
                .properties()
                .into_iter()
                .filter(|p| p.expectation == Expectation::Eventually)
                .take(Pending::BITS as usize)
                .collect(),
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
    /// `false` (and the run stops) if an `eventually` property is still
    /// pending.
    fn at_end(&self, key: Key) -> bool {
        let Some(p) = self.eventually.iter().enumerate().find(|(i, _)| key.pending & (1 << i) != 0) else {
            return true;
        };
        let mut first = self.violation.lock().unwrap_or_else(PoisonError::into_inner);
        first.get_or_insert((p.1.name, key.node));
        self.stop.store(true, Ordering::Relaxed);
        false
    }

    /// The key of `state`, reached by a path on which the properties of
    /// `pending` were not satisfied before it.
    fn key(&self, state: &M::State, fp: Fingerprint, pending: Pending) -> Key {
        Key::new(fp, still_pending(self.model, &self.eventually, state, pending))
    }

    /// The initial states not met before, each admitted.
    fn initial_states(&self) -> Vec<(M::State, Key)> {
        let mut out = Vec::new();
        let all = all_pending(&self.eventually);
        for s in self.model.init_states() {
            let key = self.key(&s, fingerprint(&s), all);
            if self.visited.insert(key.node, visited::NO_PARENT) {
                let ok = self.admit(&s, key.node, 1);
                out.push((s, key));
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
            let next_key = match key.pending {
                0 => Key { node: self.fingerprinter.of(&next), pending: 0 },
                pending => shared.key(&next, self.fingerprinter.of(&next), pending),
            };
            let next_fp = next_key.node;
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
                push(next, next_key);
                if !ok {
                    break;
                }
            }
        }
        self.actions = actions;
        if !successors {
            shared.at_end(key);
        }
    }
}

/// All of `eventually`, pending.
fn all_pending<M: Model>(eventually: &[Property<M>]) -> Pending {
    (0..eventually.len()).fold(0, |bits, i| bits | (1 << i))
}

/// `pending`, less the properties `state` satisfies.
fn still_pending<M: Model>(model: &M, eventually: &[Property<M>], state: &M::State, pending: Pending) -> Pending {
    eventually
        .iter()
        .enumerate()
        .filter(|&(i, p)| pending & (1 << i) != 0 && (p.condition)(model, state))
        .fold(pending, |bits, (i, _)| bits & !(1 << i))
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
    let eventually: Vec<Property<M>> =
        model.properties().into_iter().filter(|p| p.expectation == Expectation::Eventually).collect();
    let key = |s: &M::State, pending| Key::new(fingerprint(s), still_pending(model, &eventually, s, pending));
    let (&first, rest) = path.split_first()?;
    let mut pending = all_pending(&eventually);
    let mut state = model.init_states().into_iter().find(|s| key(s, pending).node == first)?;
    pending = key(&state, pending).pending;
    let mut steps = Vec::with_capacity(path.len());
    for &next_fp in rest {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        let (action, next) = actions.into_iter().find_map(|a| {
            model.next_state(&state, a.clone()).filter(|n| key(n, pending).node == next_fp).map(|n| (a, n))
        })?;
        pending = key(&next, pending).pending;
        steps.push((state, Some(action)));
        state = next;
    }
    steps.push((state, None));
    Some(steps)
}
