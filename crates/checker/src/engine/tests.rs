//! `eventually` properties on small graphs: checked on the paths that end
//! in a state without successors, whichever path reaches a shared state.

use stateright::{Model, Property};

use super::{Options, Outcome, bfs, dfs, replay};

/// A graph of numbered states from 0: `edges[s]` are the successors of `s`.
struct Graph {
    edges: Vec<Vec<u8>>,
    /// `Eventually(s = goal)`.
    goal: u8,
}

impl Model for Graph {
    type State = u8;
    type Action = u8;

    fn init_states(&self) -> Vec<u8> {
        vec![0]
    }

    fn actions(&self, s: &u8, actions: &mut Vec<u8>) {
        actions.extend(self.edges.get(usize::from(*s)).into_iter().flatten());
    }

    fn next_state(&self, _: &u8, action: u8) -> Option<u8> {
        Some(action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::eventually("ReachesGoal", |m: &Graph, s: &u8| *s == m.goal)]
    }
}

fn searches(model: &Graph) -> Vec<Outcome> {
    let kind = |_: &u8| 0;
    let mut out = Vec::new();
    for threads in [1, 2] {
        let opts = Options { threads, progress_every: None };
        out.push(bfs(model, &kind, 1, opts));
        out.push(dfs(model, &kind, 1, opts));
    }
    out
}

/// 0 -> 1 -> 3 and 0 -> 2 -> 3: two paths join at the end state 3.
fn diamond(goal: u8) -> Graph {
    Graph { edges: vec![vec![1, 2], vec![3], vec![3], vec![]], goal }
}

#[test]
fn a_path_that_joins_one_that_met_the_goal_is_still_checked() {
    // Only 0 -> 1 -> 3 passes through 1: 0 -> 2 -> 3 ends without it,
    // whichever path reached 3 first.
    for outcome in searches(&diamond(1)) {
        let (name, path) = outcome.violation.expect("0 -> 2 -> 3 never reaches the goal");
        assert_eq!(name, "ReachesGoal");
        let steps = replay(&diamond(1), &path).expect("the path replays");
        let states: Vec<u8> = steps.iter().map(|(s, _)| *s).collect();
        assert_eq!(states, [0, 2, 3]);
    }
}

#[test]
fn every_end_past_the_goal_passes() {
    for outcome in searches(&diamond(3)) {
        assert!(outcome.violation.is_none(), "{:?}", outcome.violation);
        // Each state with what is pending on the way to it: 0, 1, 2 and
        // 3 with the goal unmet before it, none after it met.
        assert_eq!(outcome.unique, 4);
    }
}

#[test]
fn a_cycle_is_not_an_end() {
    // 0 <-> 1, no end state: nothing to check (stateright's semantics).
    let cycle = Graph { edges: vec![vec![1], vec![0]], goal: 7 };
    for outcome in searches(&cycle) {
        assert!(outcome.violation.is_none(), "{:?}", outcome.violation);
    }
}
