//! Checking the mapped behaviour against the spec, through the 1:1 mirror
//! of RemoraClaimLeaseLoss (crate::mirror::remora_loss, built on the
//! RemoraClaimActivation mirror): no part of the spec is written again here.
//!
//! A mapped initial state must be one of the mirror's initial states; a
//! mapped step must leave the state unchanged (a stutter) or reach one of
//! the mirror's successors of the mapped predecessor. Action properties are
//! the mirror's, evaluated on the mapped step; invariants are evaluated on
//! the mapped state.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use stateright::{Model, Property};

use crate::mirror::remora::{Claim, Constants, Worker};
use crate::mirror::remora_loss::{LossState, LossViolations, RemoraClaimLeaseLoss};

/// The mirror's successors of a state, markers cleared.
type Successors = Arc<Vec<LossState>>;

pub struct Refinement {
    mirror: RemoraClaimLeaseLoss,
    properties: Vec<Property<RemoraClaimLeaseLoss>>,
    initial: HashSet<LossState>,
    /// Successors by mapped state: there are at most as many mapped states
    /// as the spec has, far fewer than implementation states.
    successors: Mutex<HashMap<LossState, Successors>>,
    /// One copy of each mapped state.
    interned: Mutex<HashSet<Arc<LossState>>>,
}

impl Refinement {
    /// The mirror's constants and names.
    pub fn constants(&self) -> &'static Constants {
        self.mirror.constants()
    }

    pub fn new(mirror: RemoraClaimLeaseLoss) -> Refinement {
        Refinement {
            properties: mirror.properties(),
            initial: mirror.init_states().into_iter().collect(),
            mirror,
            successors: Mutex::new(HashMap::new()),
            interned: Mutex::new(HashSet::new()),
        }
    }

    /// The shared copy of `s`.
    pub fn intern(&self, s: LossState) -> Arc<LossState> {
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
        self.mirror.property_names()
    }

    pub fn is_initial(&self, s: &LossState) -> bool {
        self.initial.contains(s)
    }

    /// Whether some action of the spec takes `p` to `n`, or `n` is `p`.
    pub fn is_step(&self, p: &LossState, n: &LossState) -> bool {
        p == n || self.successors(p).iter().any(|s| s == n)
    }

    /// The action properties the step `p` → `n` violates.
    pub fn step_violations(&self, p: &LossState, n: &LossState) -> LossViolations {
        self.mirror.step_violations(p, n)
    }

    /// `RenewLease(c, w)`'s guard in `s` (a renewal changes no variable).
    pub fn renew_lease(&self, s: &LossState, c: Claim, w: Worker) -> bool {
        self.mirror.renew_lease(s, c, w)
    }

    /// The mirror's properties that `n`, reached by a step violating the
    /// action properties `violated`, fails.
    pub fn failing(&self, n: &LossState, violated: LossViolations) -> Vec<&'static str> {
        let marked = LossState { step_violations: violated, ..*n };
        self.properties.iter().filter(|p| !(p.condition)(&self.mirror, &marked)).map(|p| p.name).collect()
    }

    fn successors(&self, p: &LossState) -> Successors {
        let cached = self.successors.lock().unwrap_or_else(PoisonError::into_inner).get(p).cloned();
        if let Some(successors) = cached {
            return successors;
        }
        let successors: Successors = Arc::new(
            self.mirror
                .successors(p)
                .into_iter()
                .map(|mut s| {
                    s.step_violations.clear();
                    s
                })
                .collect(),
        );
        self.successors.lock().unwrap_or_else(PoisonError::into_inner).insert(*p, successors.clone());
        successors
    }
}
