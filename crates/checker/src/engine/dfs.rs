//! Depth-first search: each thread works off its own stack of states to
//! expand; a thread whose stack runs dry waits for work, and a busy thread
//! that sees a waiting one hands it the older half of its stack (the
//! states nearest the roots, with the most work below them). The run ends
//! when every thread waits and no work is left. Only the stacks hold whole
//! states, so a search whose breadth-first frontier would not fit in
//! memory still runs; its counterexamples are not shortest.

use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use stateright::Model;

use super::fingerprint::Key;
use super::liveness::Liveness;
use super::shared::{Options, Outcome, Progress, Shared, Worker, merge};

/// A state to expand, with its key and depth.
type Job<S> = (S, Key, usize);

/// Work handed between threads.
struct Pool<S> {
    batches: Mutex<Vec<Vec<Job<S>>>>,
    /// Signalled when a batch is added or the run ends.
    changed: Condvar,
    /// Threads waiting for work (changed under the `batches` lock).
    idle: AtomicUsize,
    threads: usize,
}

impl<S> Pool<S> {
    fn lock(&self) -> MutexGuard<'_, Vec<Vec<Job<S>>>> {
        self.batches.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next batch of work; `None` when the run is over (every thread
    /// waits with nothing left, or the run was stopped).
    fn take(&self, stopped: impl Fn() -> bool) -> Option<Vec<Job<S>>> {
        let mut batches = self.lock();
        loop {
            if stopped() {
                self.changed.notify_all();
                return None;
            }
            if let Some(batch) = batches.pop() {
                return Some(batch);
            }
            if self.idle.fetch_add(1, Ordering::Relaxed) + 1 == self.threads {
                self.changed.notify_all();
                return None;
            }
            batches = self.changed.wait(batches).unwrap_or_else(PoisonError::into_inner);
            self.idle.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Hands the older half of `stack` to a waiting thread, if any.
    fn share(&self, stack: &mut Vec<Job<S>>) {
        if self.idle.load(Ordering::Relaxed) == 0 || stack.len() < 2 {
            return;
        }
        let half: Vec<Job<S>> = stack.drain(..stack.len() / 2).collect();
        self.lock().push(half);
        self.changed.notify_one();
    }
}

/// Explores `model` depth-first. `kind` numbers an action's kind
/// (`0..kinds`), for the coverage counts; `liveness` are the model's
/// liveness properties besides its stateright `eventually` ones.
pub fn dfs<M>(
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
    let shared = Shared::new(model, kind, kinds, liveness, false);
    let initial: Vec<Job<M::State>> = shared.initial_states().into_iter().map(|(s, key)| (s, key, 1)).collect();
    let generated = initial.len() as u64;
    let threads = opts.threads.max(1);
    let pool = Pool { batches: Mutex::new(vec![initial]), changed: Condvar::new(), idle: AtomicUsize::new(0), threads };
    let mut progress = Progress::new(opts.progress_every);
    let workers: Vec<Worker<M::Action>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(|| search(&shared, &pool))).collect();
        progress.wait(&shared, || handles.iter().all(|h| h.is_finished()));
        handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let (steps, coverage) = merge(&shared, workers);
    shared.outcome(generated + steps, coverage)
}

/// One thread: expands states off its own stack, taking work from the pool
/// when the stack is empty and giving some back when another thread waits.
fn search<M>(shared: &Shared<'_, M>, pool: &Pool<M::State>) -> Worker<M::Action>
where
    M: Model,
    M::State: Hash + PartialEq,
{
    let mut worker = Worker::new(shared.kinds);
    while let Some(mut stack) = pool.take(|| shared.stopped()) {
        while let Some((state, key, depth)) = stack.pop() {
            if shared.stopped() {
                break;
            }
            worker.expand(shared, &state, key, depth, |s, key| stack.push((s, key, depth + 1)));
            pool.share(&mut stack);
        }
    }
    worker
}
