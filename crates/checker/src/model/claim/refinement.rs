//! Checking the mapped behaviour against the spec, through the 1:1 mirror
//! of RemoraClaimActivation (crate::mirror::remora): no part of that spec is
//! written again here.
//!
//! A mapped initial state must be one of the mirror's initial states; a
//! mapped step must leave the state unchanged (a stutter) or reach one of
//! the mirror's successors of the mapped predecessor. The mirror evaluates
//! its action properties on the step it took; its invariants are evaluated
//! on the mapped state.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use stateright::{Model, Property};

use crate::mirror::remora::{self, RemoraClaimActivation};

/// A mirror successor with its marker cleared, and the action properties
/// the mirror's step into it violated.
type Successors = Arc<Vec<(remora::State, Vec<&'static str>)>>;

pub struct Refinement {
    mirror: RemoraClaimActivation,
    properties: Vec<Property<RemoraClaimActivation>>,
    initial: HashSet<remora::State>,
    /// Successors by mapped state: there are at most as many mapped states
    /// as the spec has, far fewer than implementation states.
    successors: Mutex<HashMap<remora::State, Successors>>,
    /// One copy of each mapped state.
    interned: Mutex<HashSet<Arc<remora::State>>>,
}

impl Refinement {
    /// The mirror's constants and names.
    pub fn constants(&self) -> &'static remora::Constants {
        self.mirror.constants()
    }

    pub fn new(mirror: RemoraClaimActivation) -> Refinement {
        Refinement {
            properties: mirror.properties(),
            initial: mirror.init_states().into_iter().collect(),
            mirror,
            successors: Mutex::new(HashMap::new()),
            interned: Mutex::new(HashSet::new()),
        }
    }

    /// The shared copy of `s`.
    pub fn intern(&self, s: remora::State) -> Arc<remora::State> {
        let mut interned = self.interned.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shared) = interned.get(&s) {
            return shared.clone();
        }
        let shared = Arc::new(s);
        interned.insert(shared.clone());
        shared
    }

    /// The names of the mirror's invariants and action properties, in the
    /// cfg's order.
    pub fn property_names(&self) -> Vec<&'static str> {
        self.properties.iter().map(|p| p.name).collect()
    }

    pub fn is_initial(&self, s: &remora::State) -> bool {
        self.initial.contains(s)
    }

    /// The action properties violated by the spec step `p` → `n`, or `None`
    /// when no action of the spec takes `p` to `n` and it is no stutter.
    pub fn step(&self, p: &remora::State, n: &remora::State) -> Option<Vec<&'static str>> {
        if p == n {
            return Some(Vec::new());
        }
        self.successors(p).iter().find(|(s, _)| s == n).map(|(_, violated)| violated.clone())
    }

    /// The mirror's properties that `n`, reached by a step violating the
    /// action properties `violated`, fails.
    pub fn failing(&self, n: &remora::State, violated: &[&'static str]) -> Vec<&'static str> {
        let marked = remora::State { step_violations: violated.iter().copied().collect(), ..*n };
        self.properties.iter().filter(|p| !(p.condition)(&self.mirror, &marked)).map(|p| p.name).collect()
    }

    fn successors(&self, p: &remora::State) -> Successors {
        let cached = self.successors.lock().unwrap_or_else(PoisonError::into_inner).get(p).cloned();
        if let Some(successors) = cached {
            return successors;
        }
        let mut actions = Vec::new();
        self.mirror.actions(p, &mut actions);
        let successors: Successors = Arc::new(
            actions
                .into_iter()
                .filter_map(|a| self.mirror.next_state(p, a))
                .map(|mut s| {
                    let violated = std::mem::take(&mut s.step_violations);
                    (s, violated.names())
                })
                .collect(),
        );
        self.successors.lock().unwrap_or_else(PoisonError::into_inner).insert(*p, successors.clone());
        successors
    }
}
