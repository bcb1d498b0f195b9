//! Liveness as TLA+ states it -- `<>Q`, `P ~> Q`, `<>[]Q` -- checked on
//! every behaviour of a model without fairness: every maximal path, finite
//! or not.
//!
//! A path *owes* an `Eventually` property from its initial state until a
//! state satisfies the goal, and a `LeadsTo` property from every state that
//! satisfies the trigger (again, after it was paid) until a state, that one
//! or a later one, satisfies the goal. What a path owes is part of a
//! state's key ([`super::Key`]), so two paths that reach one state owing
//! different things are told apart.
//!
//! - A finite path ends in a state without successors, where the system
//!   stutters forever: nothing may be owed there, and every `<>[]Q` goal
//!   must hold there.
//! - An infinite path ends in a cycle of the graph of (state, owed) nodes.
//!   A run with liveness properties records that graph ([`Graph`]); after
//!   the search its strongly connected components give every cycle: one on
//!   which a property is owed at every node never pays it, and one through
//!   a node where a `<>[]Q` goal fails fails it infinitely often.
//!
//! Without fairness every cycle is a behaviour, so a cycle that only an
//! unfair scheduler would follow is reported too: the check may be
//! stronger than the spec's, never weaker.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use stateright::Model;

use super::fingerprint::{Fingerprint, Pending};

/// A condition on a model's states.
pub type Condition<M> = Arc<dyn Fn(&M, &<M as Model>::State) -> bool + Send + Sync>;

/// A liveness property.
pub enum Liveness<M: Model> {
    /// `<>Q`: some state of every behaviour satisfies `goal` (stateright's
    /// `eventually`).
    Eventually { name: &'static str, goal: Condition<M> },
    /// `P ~> Q`: every state that satisfies `trigger` is followed, at it or
    /// later, by one that satisfies `goal`.
    LeadsTo { name: &'static str, trigger: Condition<M>, goal: Condition<M> },
    /// `<>[]Q`: every behaviour ends satisfying `goal` forever.
    EventuallyAlways { name: &'static str, goal: Condition<M> },
}

impl<M: Model> Clone for Liveness<M> {
    fn clone(&self) -> Self {
        match self {
            Liveness::Eventually { name, goal } => Liveness::Eventually { name, goal: Arc::clone(goal) },
            Liveness::LeadsTo { name, trigger, goal } => {
                Liveness::LeadsTo { name, trigger: Arc::clone(trigger), goal: Arc::clone(goal) }
            }
            Liveness::EventuallyAlways { name, goal } => Liveness::EventuallyAlways { name, goal: Arc::clone(goal) },
        }
    }
}

impl<M: Model> Liveness<M> {
    pub fn eventually(name: &'static str, goal: impl Fn(&M, &M::State) -> bool + Send + Sync + 'static) -> Self {
        Liveness::Eventually { name, goal: Arc::new(goal) }
    }

    pub fn leads_to(
        name: &'static str,
        trigger: impl Fn(&M, &M::State) -> bool + Send + Sync + 'static,
        goal: impl Fn(&M, &M::State) -> bool + Send + Sync + 'static,
    ) -> Self {
        Liveness::LeadsTo { name, trigger: Arc::new(trigger), goal: Arc::new(goal) }
    }

    pub fn eventually_always(name: &'static str, goal: impl Fn(&M, &M::State) -> bool + Send + Sync + 'static) -> Self {
        Liveness::EventuallyAlways { name, goal: Arc::new(goal) }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Liveness::Eventually { name, .. }
            | Liveness::LeadsTo { name, .. }
            | Liveness::EventuallyAlways { name, .. } => name,
        }
    }
}

/// The name a run reports when a model has more liveness properties of one
/// kind than the bits of a [`Pending`]: it is never checked for fewer.
pub const TOO_MANY: &str = "more than 64 liveness properties of one kind";

/// A model's liveness properties, numbered: `Eventually` and `LeadsTo`
/// each own a bit of what a path owes, `EventuallyAlways` a bit of the
/// goals a state fails.
pub struct Checks<M: Model> {
    owed: Vec<Liveness<M>>,
    settled: Vec<Liveness<M>>,
    too_many: bool,
}

impl<M: Model> Checks<M> {
    pub fn new(all: &[Liveness<M>]) -> Self {
        let (settled, owed): (Vec<_>, Vec<_>) =
            all.iter().cloned().partition(|p| matches!(p, Liveness::EventuallyAlways { .. }));
        let too_many = owed.len() > Pending::BITS as usize || settled.len() > u64::BITS as usize;
        Checks { owed, settled, too_many }
    }

    pub fn is_empty(&self) -> bool {
        self.owed.is_empty() && self.settled.is_empty() && !self.too_many
    }

    /// What a path owes after `state`, reached owing `before` (`None`: an
    /// initial state).
    pub fn owed(&self, model: &M, state: &M::State, before: Option<Pending>) -> Pending {
        let mut bits = before.unwrap_or(0);
        for (i, p) in self.owed.iter().enumerate().take(Pending::BITS as usize) {
            let bit = 1 << i;
            match p {
                Liveness::Eventually { goal, .. } => {
                    if before.is_none() {
                        bits |= bit;
                    }
                    if bits & bit != 0 && goal(model, state) {
                        bits &= !bit;
                    }
                }
                Liveness::LeadsTo { trigger, goal, .. } => {
                    if trigger(model, state) {
                        bits |= bit;
                    }
                    if bits & bit != 0 && goal(model, state) {
                        bits &= !bit;
                    }
                }
                Liveness::EventuallyAlways { .. } => {}
            }
        }
        bits
    }

    /// The `<>[]` goals `state` fails, bit `j` for the `j`th.
    pub fn unsettled(&self, model: &M, state: &M::State) -> u64 {
        self.settled
            .iter()
            .enumerate()
            .take(u64::BITS as usize)
            .filter(|(_, p)| matches!(p, Liveness::EventuallyAlways { goal, .. } if !goal(model, state)))
            .fold(0, |bits, (j, _)| bits | (1 << j))
    }

    /// The property violated by a path that stutters forever in a state
    /// owing `owed` and failing the `<>[]` goals `unsettled`, if any.
    pub fn at_end(&self, owed: Pending, unsettled: u64) -> Option<&'static str> {
        if self.too_many {
            return Some(TOO_MANY);
        }
        first(&self.owed, owed).or_else(|| first(&self.settled, unsettled))
    }
}

/// The name of the property of the lowest bit set in `bits`.
fn first<M: Model>(props: &[Liveness<M>], bits: u64) -> Option<&'static str> {
    (bits != 0).then(|| props.get(bits.trailing_zeros() as usize).map_or(TOO_MANY, Liveness::name))
}

/// The graph of (state, owed) nodes of a run, for the cycles: each thread
/// keeps its own, merged at the end.
#[derive(Default)]
pub struct Graph {
    /// Every node met once: its key, what it owes and the `<>[]` goals it
    /// fails.
    pub nodes: Vec<(Fingerprint, Pending, u64)>,
    /// Every step between two different nodes (a step that changes nothing
    /// is no step: the models return no successor for it).
    pub edges: Vec<(Fingerprint, Fingerprint)>,
}

impl Graph {
    pub fn append(&mut self, mut other: Graph) {
        self.nodes.append(&mut other.nodes);
        self.edges.append(&mut other.edges);
    }

    /// A cycle that violates one of `checks`: the property's name and the
    /// cycle's nodes in order (the last steps back to the first).
    pub fn violating_cycle<M: Model>(mut self, checks: &Checks<M>) -> Option<(&'static str, Vec<Fingerprint>)> {
        self.nodes.sort_unstable_by_key(|n| n.0);
        self.nodes.dedup_by_key(|n| n.0);
        let index = |fp: Fingerprint| self.nodes.binary_search_by_key(&fp, |n| n.0).ok();
        let mut edges: Vec<(u32, u32)> = self
            .edges
            .iter()
            .filter_map(|&(a, b)| Some((u32::try_from(index(a)?).ok()?, u32::try_from(index(b)?).ok()?)))
            .collect();
        drop(std::mem::take(&mut self.edges));
        let graph = Csr::new(self.nodes.len(), &mut edges);
        drop(edges);
        let keys = |cycle: Vec<u32>| cycle.into_iter().map(|i| self.nodes[i as usize].0).collect();
        // `P ~> Q`, `<>Q`: a cycle on which the property is owed throughout.
        for (i, p) in checks.owed.iter().enumerate().take(Pending::BITS as usize) {
            let owes = |n: u32| self.nodes[n as usize].1 & (1 << i) != 0;
            if let Some(cycle) = graph.cycle(owes, owes) {
                return Some((p.name(), keys(cycle)));
            }
        }
        // `<>[]Q`: a cycle through a node that fails the goal.
        for (j, p) in checks.settled.iter().enumerate().take(u64::BITS as usize) {
            let fails = |n: u32| self.nodes[n as usize].2 & (1 << j) != 0;
            if let Some(cycle) = graph.cycle(|_| true, fails) {
                return Some((p.name(), keys(cycle)));
            }
        }
        None
    }
}

/// A graph in compressed sparse rows: the successors of node `i` are
/// `to[start[i]..start[i + 1]]`.
struct Csr {
    start: Vec<usize>,
    to: Vec<u32>,
}

impl Csr {
    fn new(nodes: usize, edges: &mut [(u32, u32)]) -> Csr {
        edges.sort_unstable();
        let mut start = vec![0; nodes + 1];
        let mut to = Vec::with_capacity(edges.len());
        let mut last = None;
        for &(a, b) in edges.iter() {
            if last == Some((a, b)) {
                continue;
            }
            last = Some((a, b));
            start[a as usize + 1] += 1;
            to.push(b);
        }
        for i in 0..nodes {
            start[i + 1] += start[i];
        }
        Csr { start, to }
    }

    fn successors(&self, n: u32) -> &[u32] {
        &self.to[self.start[n as usize]..self.start[n as usize + 1]]
    }

    /// A cycle of nodes that all satisfy `inside`, through a node that
    /// satisfies `through`, if any: found among the strongly connected
    /// components of the nodes `inside` (Tarjan's algorithm, iterative).
    fn cycle(&self, inside: impl Fn(u32) -> bool, through: impl Fn(u32) -> bool) -> Option<Vec<u32>> {
        let n = self.start.len() - 1;
        let mut t = Tarjan { index: vec![UNSEEN; n], low: vec![0; n], on_stack: vec![false; n], ..Tarjan::default() };
        for root in (0..n as u32).filter(|&r| inside(r)) {
            if t.index[root as usize] != UNSEEN {
                continue;
            }
            t.enter(root, self.start[root as usize]);
            while let Some(&(v, at)) = t.path.last() {
                if at < self.start[v as usize + 1] {
                    if let Some(top) = t.path.last_mut() {
                        top.1 += 1;
                    }
                    let w = self.to[at];
                    if !inside(w) {
                        continue;
                    }
                    if t.index[w as usize] == UNSEEN {
                        t.enter(w, self.start[w as usize]);
                    } else if t.on_stack[w as usize] {
                        t.low[v as usize] = t.low[v as usize].min(t.index[w as usize]);
                    }
                    continue;
                }
                t.path.pop();
                if let Some(&(u, _)) = t.path.last() {
                    t.low[u as usize] = t.low[u as usize].min(t.low[v as usize]);
                }
                if t.low[v as usize] == t.index[v as usize] {
                    let component = t.pop_component(v);
                    if component.len() > 1
                        && let Some(&start) = component.iter().find(|&&w| through(w))
                    {
                        return self.loop_through(start, &component);
                    }
                }
            }
        }
        None
    }

    /// A shortest cycle from `start` back to it within `component`.
    fn loop_through(&self, start: u32, component: &[u32]) -> Option<Vec<u32>> {
        let members: std::collections::HashSet<u32> = component.iter().copied().collect();
        let mut parent: HashMap<u32, u32> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            for &w in self.successors(v).iter().filter(|w| members.contains(w)) {
                if w == start {
                    let mut cycle = vec![v];
                    while let Some(&p) = parent.get(cycle.last()?) {
                        cycle.push(p);
                    }
                    cycle.reverse();
                    return Some(cycle);
                }
                if w != start && !parent.contains_key(&w) {
                    parent.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        None
    }
}

/// Tarjan's bookkeeping: each node's discovery index and low link, the
/// stack of nodes not yet in a component, and the depth-first path (a node
/// and the position of its next edge).
#[derive(Default)]
struct Tarjan {
    index: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<u32>,
    path: Vec<(u32, usize)>,
    counter: u32,
}

/// A node not yet discovered.
const UNSEEN: u32 = u32::MAX;

impl Tarjan {
    fn enter(&mut self, v: u32, first_edge: usize) {
        self.index[v as usize] = self.counter;
        self.low[v as usize] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v as usize] = true;
        self.path.push((v, first_edge));
    }

    /// The component whose root is `v`: the stack down to `v`.
    fn pop_component(&mut self, v: u32) -> Vec<u32> {
        let mut component = Vec::new();
        while let Some(w) = self.stack.pop() {
            self.on_stack[w as usize] = false;
            component.push(w);
            if w == v {
                break;
            }
        }
        component
    }
}

#[cfg(test)]
mod tests {
    use super::Csr;

    fn csr(nodes: usize, edges: &[(u32, u32)]) -> Csr {
        Csr::new(nodes, &mut edges.to_vec())
    }

    #[test]
    fn finds_a_cycle_through_the_node_asked_for() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3 -> 4 -> 3.
        let g = csr(5, &[(0, 1), (1, 2), (2, 1), (2, 3), (3, 4), (4, 3)]);
        assert_eq!(g.cycle(|_| true, |n| n == 2), Some(vec![2, 1]));
        assert_eq!(g.cycle(|_| true, |n| n == 4), Some(vec![4, 3]));
        assert_eq!(g.cycle(|_| true, |n| n == 0), None);
        // Only among the nodes inside: without 1, no cycle through 2.
        assert_eq!(g.cycle(|n| n != 1, |n| n == 2), None);
    }

    #[test]
    fn a_dag_has_no_cycle() {
        let g = csr(4, &[(0, 1), (0, 2), (1, 3), (2, 3), (1, 3)]);
        assert_eq!(g.cycle(|_| true, |_| true), None);
    }
}
