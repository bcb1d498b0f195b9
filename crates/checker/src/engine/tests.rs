//! Liveness properties on small graphs: checked on the paths that end in a
//! state without successors, whichever path reaches a shared state, and on
//! the cycles.

use stateright::{Model, Property};

use super::{Liveness, Options, Outcome, bfs, dfs, fingerprint, replay};

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
    searches_with(model, &[])
}

fn searches_with(model: &Graph, liveness: &[Liveness<Graph>]) -> Vec<Outcome> {
    let kind = |_: &u8| 0;
    let mut out = Vec::new();
    for threads in [1, 2] {
        let opts = Options { threads, progress_every: None, depth_bound: None };
        out.push(bfs(model, &kind, 1, liveness, opts));
        out.push(dfs(model, &kind, 1, liveness, opts));
    }
    out
}

/// The states of a violation's path, replayed.
fn states(model: &Graph, liveness: &[Liveness<Graph>], outcome: &Outcome) -> Vec<u8> {
    let (_, path) = outcome.violation.as_ref().expect("a violation");
    let steps = replay(model, liveness, false, path).expect("the path replays");
    steps.iter().map(|(s, _)| *s).collect()
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
        assert_eq!(outcome.violation.as_ref().map(|v| v.0), Some("ReachesGoal"));
        assert_eq!(states(&diamond(1), &[], &outcome), [0, 2, 3]);
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

/// Without an end state, a behaviour is infinite: one that loops forever
/// without the goal violates `<>goal` (stateright's own search passed it).
#[test]
fn a_cycle_that_never_meets_the_goal_is_a_violation() {
    // 0 -> 1 <-> 2, goal 7 never met.
    let cycle = Graph { edges: vec![vec![1], vec![2], vec![1]], goal: 7 };
    for outcome in searches(&cycle) {
        assert_eq!(outcome.violation.as_ref().map(|v| v.0), Some("ReachesGoal"));
        assert_eq!(outcome.lasso, Some(1), "the loop goes back to state 1");
        assert_eq!(states(&cycle, &[], &outcome), [0, 1, 2]);
    }
    // A loop that passes the goal on the way pays it.
    let paid = Graph { goal: 2, ..cycle };
    for outcome in searches(&paid) {
        assert!(outcome.violation.is_none(), "{:?}", outcome.violation);
    }
}

/// The graph of `Graph` with the property `s = 1 ~> s = 3`.
fn one_leads_to_three() -> Vec<Liveness<Graph>> {
    vec![Liveness::leads_to("OneLeadsToThree", |_: &Graph, s: &u8| *s == 1, |_: &Graph, s: &u8| *s == 3)]
}

/// `P ~> Q` is owed again each time `P` holds: a path that meets `Q` and
/// then `P` again, and ends without `Q`, violates it (a check that clears a
/// property for good once it held passes it).
#[test]
fn leads_to_is_owed_again_after_it_was_paid() {
    // 0 -> 1 -> 3 -> 1 -> ...: a cycle that pays at every turn.
    let pays = Graph { edges: vec![vec![1], vec![3], vec![], vec![1]], goal: 0 };
    for outcome in searches_with(&pays, &one_leads_to_three()) {
        assert!(outcome.violation.is_none(), "{:?}", outcome.violation);
    }
    // 0 -> 1 -> 3 -> 2 -> 1 -> 4 (the end): after 3, 1 again, never paid.
    let owes = Graph { edges: vec![vec![1], vec![3, 4], vec![1], vec![2], vec![]], goal: 0 };
    for outcome in searches_with(&owes, &one_leads_to_three()) {
        assert_eq!(outcome.violation.as_ref().map(|v| v.0), Some("OneLeadsToThree"));
        assert_eq!(states(&owes, &one_leads_to_three(), &outcome), [0, 1, 4]);
    }
}

/// `<>[]Q` must hold where a finite path ends and at every state of a
/// cycle a path ends in.
#[test]
fn eventually_always_holds_at_the_end_and_around_every_cycle() {
    let stays = || vec![Liveness::eventually_always("StaysAtLeastTwo", |_: &Graph, s: &u8| *s >= 2)];
    // 0 -> 2 -> 3 (end): holds from 2 on.
    let settles = Graph { edges: vec![vec![2], vec![], vec![3], vec![]], goal: 0 };
    for outcome in searches_with(&settles, &stays()) {
        assert!(outcome.violation.is_none(), "{:?}", outcome.violation);
    }
    // 0 -> 2 -> 3 -> 1 (end): the end fails it.
    let falls = Graph { edges: vec![vec![2], vec![], vec![3], vec![1]], goal: 0 };
    for outcome in searches_with(&falls, &stays()) {
        assert_eq!(outcome.violation.as_ref().map(|v| v.0), Some("StaysAtLeastTwo"));
    }
    // 0 -> 2 -> 3 -> 1 -> 2: a cycle through 1, which fails it forever after.
    let loops = Graph { edges: vec![vec![2], vec![2], vec![3], vec![1]], goal: 0 };
    for outcome in searches_with(&loops, &stays()) {
        assert_eq!(outcome.violation.as_ref().map(|v| v.0), Some("StaysAtLeastTwo"));
        assert!(outcome.lasso.is_some());
    }
}

/// Points `(x, y)` of a 10 x 10 grid from `(0, 0)`, a step adding one to
/// either: the states at depth `d` (an initial state has depth 1) are those
/// with `x + y = d - 1`; `x + y < 6` fails at depth 7.
struct Grid;

impl Model for Grid {
    type State = (u8, u8);
    type Action = (u8, u8);

    fn init_states(&self) -> Vec<(u8, u8)> {
        vec![(0, 0)]
    }

    fn actions(&self, &(x, y): &(u8, u8), actions: &mut Vec<(u8, u8)>) {
        actions.extend([(x + 1, y), (x, y + 1)].into_iter().filter(|&(x, y)| x < 10 && y < 10));
    }

    fn next_state(&self, _: &(u8, u8), action: (u8, u8)) -> Option<(u8, u8)> {
        Some(action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always("Near", |_: &Grid, &(x, y): &(u8, u8)| x + y < 6)]
    }
}

fn bounded(depth_bound: Option<usize>, threads: usize) -> Outcome {
    bfs(&Grid, &|_: &(u8, u8)| 0, 1, &[], Options { threads, progress_every: None, depth_bound })
}

/// A bounded breadth-first run meets exactly the states within the bound,
/// checks each (a violation within it is found, one beyond is not), and
/// expands none at the bound.
#[test]
fn a_depth_bound_stops_the_search_at_that_depth_and_no_sooner() {
    for threads in [1, 2] {
        for bound in 1..=6 {
            let outcome = bounded(Some(bound), threads);
            // Points with x + y < bound: 1 + 2 + ... + bound.
            assert_eq!(outcome.unique, bound * (bound + 1) / 2, "bound {bound}");
            assert_eq!(outcome.max_depth, bound);
            assert!(outcome.violation.is_none(), "bound {bound}: {:?}", outcome.violation);
            // Every step out of the levels above the bound, none out of it.
            let steps: usize = (1..bound).map(|d| 2 * d).sum();
            assert_eq!(outcome.generated, 1 + steps as u64, "bound {bound}");
        }
        let at_seven = bounded(Some(7), threads);
        assert_eq!(at_seven.violation.as_ref().map(|v| (v.0, v.1.len())), Some(("Near", 7)));
        let whole = bounded(None, threads);
        assert_eq!(whole.violation.as_ref().map(|v| v.0), Some("Near"));
    }
}

/// A run bounded in depth checks no liveness property: a state at the
/// bound has successors it never sees, so "nothing follows" is unknown
/// there (the run's report names the properties it left unchecked).
#[test]
fn a_bounded_run_checks_no_liveness_property() {
    let kind = |_: &u8| 0;
    for threads in [1, 2] {
        let whole = Options { threads, progress_every: None, depth_bound: None };
        let bounded = Options { depth_bound: Some(3), ..whole };
        // 0 -> 2 -> 3 violates `<>(s = 1)` at its end; checked, the
        // property also makes two states of 3 (owed via 2, paid via 1).
        assert!(bfs(&diamond(1), &kind, 1, &[], whole).violation.is_some());
        let outcome = bfs(&diamond(1), &kind, 1, &[], bounded);
        assert!(outcome.violation.is_none(), "{:?}", outcome.violation);
        assert_eq!(outcome.unique, 4, "states 0 to 3, without the bits of a property");
    }
}

/// A bounded run's path replays as that run keyed it: by the states alone,
/// though the model has an `eventually` property (whose bits would make
/// other keys).
#[test]
fn a_bounded_run_s_path_replays_without_liveness_bits() {
    // `<>(s = 7)` is owed all along 0 -> 2 -> 3.
    let model = diamond(7);
    let path: Vec<_> = [0u8, 2, 3].iter().map(fingerprint).collect();
    let steps = replay(&model, &[], true, &path).expect("the bounded run's path replays");
    assert_eq!(steps.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [0, 2, 3]);
    assert!(replay(&model, &[], false, &path).is_none(), "keyed with the property's bits, it is another path");
}
