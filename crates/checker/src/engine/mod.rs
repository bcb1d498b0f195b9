//! The exhaustive search engine, for any stateright [`Model`]:
//! breadth-first (`bfs.rs`: level by level, so the first violation found
//! is at the least depth) or depth-first (`dfs.rs`: a stack per thread,
//! work handed to idle threads), on as many threads as asked.
//!
//! What a run keeps is what decides how large a run fits in memory: every
//! state met is one fingerprint and its parent's in [`Visited`](visited::Visited) (16 bytes);
//! whole states live only in the frontier (the level being expanded and the
//! next, or the stacks). A counterexample is rebuilt from the parents by
//! replaying the model ([`replay`]). Each step is counted against the
//! action it took ([`Counts`]), which is what `--coverage` reports.
//!
//! `always` properties are checked on every state met: a state violating one
//! stops the run. Liveness properties (`liveness.rs`: `<>Q`, `P ~> Q`,
//! `<>[]Q`, and stateright's `eventually`, which is `<>Q`) are checked on
//! every behaviour, finite or infinite: each state carries the bits of the
//! properties its path owes ([`Key`]), a state without successors must owe
//! nothing, and the graph a run records shows every cycle that would owe
//! something forever. The bits are part of what makes a state distinct
//! (stateright keeps the bits of the first path that reached a state, and
//! so can miss a path that reaches it with other bits), so a run with
//! liveness properties counts pairs of a state and its bits, and keeps 24
//! bytes per such pair and 16 per step for the graph. `sometimes`
//! properties are not checked (no model has one).

mod bfs;
mod dfs;
mod fingerprint;
mod liveness;
mod shared;
#[cfg(test)]
mod tests;
mod visited;

use std::hash::Hash;

use stateright::Model;

pub use bfs::bfs;
pub use dfs::dfs;
pub use fingerprint::{Fingerprint, Fingerprinter, Key, Pending, fingerprint};
use liveness::Checks;
pub use liveness::{Condition, Liveness};
pub use shared::{Counts, Options, Outcome};
use shared::{all_liveness, checked_liveness};

/// The names of the liveness properties a run of `model` checks (its
/// `eventually` ones and `liveness`), as a bounded run reports them unchecked.
pub fn liveness_names<M: Model + 'static>(model: &M, liveness: &[Liveness<M>]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = all_liveness(model, liveness).iter().map(Liveness::name).collect();
    // A property checked in parts has one name.
    names.dedup();
    names
}

/// A path as stateright gives it: each state with the action taken from it.
pub type Steps<M> = Vec<(<M as Model>::State, Option<<M as Model>::Action>)>;

/// The states and actions of the path whose fingerprints are `path`,
/// found again by running the model (with the same `liveness` properties,
/// and `bounded` in depth or not, as the run that found it: that decides
/// what its keys carry) from its initial states.
pub fn replay<M: Model + 'static>(
    model: &M,
    liveness: &[Liveness<M>],
    bounded: bool,
    path: &[Fingerprint],
) -> Option<Steps<M>>
where
    M::State: Hash + PartialEq,
    M::Action: Clone,
{
    let checks = Checks::new(&checked_liveness(model, liveness, bounded));
    let key = |s: &M::State, before| match checks.is_empty() {
        true => Key { node: fingerprint(s), pending: 0 },
        false => Key::new(fingerprint(s), checks.owed(model, s, before)),
    };
    let (&first, rest) = path.split_first()?;
    let mut state = model.init_states().into_iter().find(|s| key(s, None).node == first)?;
    let mut pending = key(&state, None).pending;
    let mut steps = Vec::with_capacity(path.len());
    for &next_fp in rest {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        let (action, next) = actions.into_iter().find_map(|a| {
            model.next_state(&state, a.clone()).filter(|n| key(n, Some(pending)).node == next_fp).map(|n| (a, n))
        })?;
        pending = key(&next, Some(pending)).pending;
        steps.push((state, Some(action)));
        state = next;
    }
    steps.push((state, None));
    Some(steps)
}
