//! Breadth-first search, level by level: the threads share out the states
//! of one level in chunks and each collects the new states it meets; the
//! next level is what they collected. Every state of a level is at its
//! least depth, so the first violating state met is at the least depth of
//! any, and its parents lead back along a shortest path. The threads live
//! for the whole search and meet at a barrier between levels, where what each
//! collected becomes its part of the next level as it is (no copy: a copy of
//! the whole level by one thread, while the others waited, was about a tenth
//! of a large run). With a depth bound the last level is not expanded: the
//! run is then complete for the states within the bound, and only for them.

use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, PoisonError, RwLock};

use stateright::Model;

use super::fingerprint::Key;
use super::liveness::Liveness;
use super::shared::{Options, Outcome, Progress, Shared, Worker, merge};

/// States a thread takes from the level at a time.
const CHUNK: usize = 256;

/// A level of the search: states and their keys.
type Level<S> = Vec<(S, Key)>;

/// What the threads of a breadth-first search share.
struct Levels<S> {
    /// The level being expanded, in one part per thread.
    current: RwLock<Vec<Level<S>>>,
    /// Per part: the next position in it to hand out.
    cursors: Vec<AtomicUsize>,
    /// What each thread collected of the next level.
    collected: Vec<Mutex<Level<S>>>,
    /// The depth of the states of `current`.
    depth: AtomicUsize,
    /// Set by the leader between levels: no level is left, or the run
    /// stopped. Read only after the barrier, so every thread decides alike.
    done: AtomicBool,
    barrier: Barrier,
}

/// Explores `model` breadth-first. `kind` numbers an action's kind
/// (`0..kinds`), for the coverage counts; `liveness` are the model's
/// liveness properties besides its stateright `eventually` ones.
pub fn bfs<M>(
    model: &M,
    kind: &(dyn Fn(&M::Action) -> usize + Sync),
    kinds: usize,
    liveness: &[Liveness<M>],
    opts: Options,
) -> Outcome
where
    M: Model + Sync + 'static,
    M::State: Hash + PartialEq + Send + Sync,
    M::Action: Send,
{
    let shared = Shared::new(model, kind, kinds, liveness, opts.depth_bound.is_some());
    let initial = shared.initial_states();
    let generated = initial.len() as u64;
    let threads = opts.threads.max(1);
    let mut parts: Vec<Level<M::State>> = (0..threads).map(|_| Vec::new()).collect();
    parts[0] = initial;
    let levels = Levels {
        current: RwLock::new(parts),
        cursors: (0..threads).map(|_| AtomicUsize::new(0)).collect(),
        collected: (0..threads).map(|_| Mutex::default()).collect(),
        depth: AtomicUsize::new(1),
        done: AtomicBool::new(false),
        barrier: Barrier::new(threads),
    };
    let mut progress = Progress::new(opts.progress_every);
    let (shared_ref, levels_ref) = (&shared, &levels);
    let workers: Vec<Worker<M::Action>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            (0..threads).map(|t| scope.spawn(move || search(shared_ref, levels_ref, opts.depth_bound, t))).collect();
        progress.wait(&shared, || handles.iter().all(|h| h.is_finished()));
        handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let (steps, coverage) = merge(&shared, workers);
    shared.outcome(generated + steps, coverage)
}

/// Thread `me`: expands its share of each level, then waits for the others;
/// one of them (the barrier's leader) then makes the collected states the
/// next level and decides whether the search is over.
fn search<M>(shared: &Shared<'_, M>, levels: &Levels<M::State>, bound: Option<usize>, me: usize) -> Worker<M::Action>
where
    M: Model,
    M::State: Hash + PartialEq,
{
    let mut worker = Worker::new(shared.kinds);
    loop {
        {
            let current = levels.current.read().unwrap_or_else(PoisonError::into_inner);
            let depth = levels.depth.load(Ordering::Relaxed);
            let expand = bound.is_none_or(|bound| depth < bound);
            let mut next = std::mem::take(&mut *levels.collected[me].lock().unwrap_or_else(PoisonError::into_inner));
            // Its own part first, then helps with the others'.
            for p in (0..current.len()).map(|i| (me + i) % current.len()).filter(|_| expand) {
                let part = &current[p];
                loop {
                    let start = levels.cursors[p].fetch_add(CHUNK, Ordering::Relaxed);
                    if start >= part.len() || shared.stopped() {
                        break;
                    }
                    for (state, key) in &part[start..(start + CHUNK).min(part.len())] {
                        worker.expand(shared, state, *key, depth, |s, key| next.push((s, key)));
                    }
                }
            }
            *levels.collected[me].lock().unwrap_or_else(PoisonError::into_inner) = next;
        }
        if levels.barrier.wait().is_leader() {
            let mut current = levels.current.write().unwrap_or_else(PoisonError::into_inner);
            // The vectors keep their memory from level to level: fresh
            // pages cost the kernel's zeroing every time.
            for (part, collected) in current.iter_mut().zip(&levels.collected) {
                let mut collected = collected.lock().unwrap_or_else(PoisonError::into_inner);
                std::mem::swap(part, &mut collected);
                collected.clear();
            }
            for cursor in &levels.cursors {
                cursor.store(0, Ordering::Relaxed);
            }
            levels.depth.fetch_add(1, Ordering::Relaxed);
            // A bounded run's last level is met and checked, not expanded:
            // nothing is collected from it, so the search ends after it.
            levels.done.store(current.iter().all(Vec::is_empty) || shared.stopped(), Ordering::Relaxed);
        }
        levels.barrier.wait();
        if levels.done.load(Ordering::Relaxed) {
            return worker;
        }
    }
}
