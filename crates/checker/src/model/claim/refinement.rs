//! Checking the mapped behaviour against the spec, through a 1:1 mirror:
//! RemoraClaimLeaseLoss's (crate::mirror::remora_loss, built on the
//! RemoraClaimActivation mirror) or RemoraJobs' (crate::mirror::remora_jobs,
//! built on the former): no part of the spec is written again here.
//!
//! A mapped initial state must be one of the mirror's initial states; a
//! mapped step must leave the state unchanged (a stutter) or reach one of
//! the mirror's successors of the mapped predecessor. Action properties are
//! the mirror's, evaluated on the mapped step; invariants are evaluated on
//! the mapped state. The mapping always yields RemoraJobs' variables
//! ([`JobsState`]); against RemoraClaimLeaseLoss only its part of them
//! ([`JobsState::loss`]) is compared.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use stateright::{Model, Property};

use crate::mirror::remora::{Claim, Constants, Worker};
use crate::mirror::remora_jobs::{JobsState, RemoraJobs};
use crate::mirror::remora_loss::{LossState, RemoraClaimLeaseLoss};

/// A mirror the model refines: the part of a mapped state it reads, its
/// successors and its checks.
pub trait Spec: Model<State: Copy + Eq + Hash + Send + Sync> + Send + Sync + 'static {
    /// The part of RemoraJobs' variables this spec has.
    fn view(s: &JobsState) -> Self::State;
    /// `s` with its step-violation markers cleared.
    fn unmarked(s: Self::State) -> Self::State;
    /// `t` marked with the action properties the step `s` → `t` violates.
    fn marked(&self, s: &Self::State, t: Self::State) -> Self::State;
    fn successors(&self, s: &Self::State) -> Vec<Self::State>;
    fn property_names(&self) -> Vec<&'static str>;
    /// The RemoraClaimLeaseLoss mirror (this one, or the one below).
    fn loss(&self) -> &RemoraClaimLeaseLoss;
}

impl Spec for RemoraClaimLeaseLoss {
    fn view(s: &JobsState) -> LossState {
        s.loss
    }
    fn unmarked(s: LossState) -> LossState {
        LossState { step_violations: Default::default(), ..s }
    }
    fn marked(&self, s: &LossState, t: LossState) -> LossState {
        LossState { step_violations: self.step_violations(s, &t), ..t }
    }
    fn successors(&self, s: &LossState) -> Vec<LossState> {
        RemoraClaimLeaseLoss::successors(self, s)
    }
    fn property_names(&self) -> Vec<&'static str> {
        RemoraClaimLeaseLoss::property_names(self)
    }
    fn loss(&self) -> &RemoraClaimLeaseLoss {
        self
    }
}

impl Spec for RemoraJobs {
    fn view(s: &JobsState) -> JobsState {
        *s
    }
    fn unmarked(s: JobsState) -> JobsState {
        JobsState { step_violations: 0, loss: RemoraClaimLeaseLoss::unmarked(s.loss), ..s }
    }
    fn marked(&self, s: &JobsState, t: JobsState) -> JobsState {
        RemoraJobs::marked(self, s, t)
    }
    fn successors(&self, s: &JobsState) -> Vec<JobsState> {
        RemoraJobs::successors(self, s)
    }
    fn property_names(&self) -> Vec<&'static str> {
        RemoraJobs::property_names(self)
    }
    fn loss(&self) -> &RemoraClaimLeaseLoss {
        RemoraJobs::loss(self)
    }
}

/// What the model asks of the refinement, whichever spec it checks.
pub trait Refines: Send + Sync {
    fn is_initial(&self, s: &JobsState) -> bool;
    /// Whether some action of the spec takes `p` to `n`, or `n` is `p`.
    fn is_step(&self, p: &JobsState, n: &JobsState) -> bool;
    /// The spec's invariants and action properties that `n` (reached from
    /// `p`, if any) fails.
    fn failing(&self, p: Option<&JobsState>, n: &JobsState) -> Vec<&'static str>;
    /// The names of the spec's invariants and action properties, in the
    /// cfg's order.
    fn property_names(&self) -> Vec<&'static str>;
    /// `RenewLease(c, w)`'s guard in `s` (a renewal changes no variable).
    fn renew_lease(&self, s: &JobsState, c: Claim, w: Worker) -> bool;
    fn constants(&self) -> &'static Constants;
}

/// The successors of a state, markers cleared.
type Successors<S> = Arc<Vec<S>>;

pub struct Refinement<S: Spec> {
    mirror: S,
    properties: Vec<Property<S>>,
    initial: HashSet<S::State>,
    /// Successors by mapped state: there are at most as many mapped states
    /// as the spec has, far fewer than implementation states.
    successors: Mutex<HashMap<S::State, Successors<S::State>>>,
}

impl<S: Spec> Refinement<S> {
    pub fn new(mirror: S) -> Refinement<S> {
        Refinement {
            properties: mirror.properties(),
            initial: mirror.init_states().into_iter().collect(),
            mirror,
            successors: Mutex::new(HashMap::new()),
        }
    }

    fn successors(&self, p: &S::State) -> Successors<S::State> {
        let cached = self.successors.lock().unwrap_or_else(PoisonError::into_inner).get(p).cloned();
        if let Some(successors) = cached {
            return successors;
        }
        let successors: Successors<S::State> =
            Arc::new(self.mirror.successors(p).into_iter().map(S::unmarked).collect());
        self.successors.lock().unwrap_or_else(PoisonError::into_inner).insert(*p, successors.clone());
        successors
    }
}

impl<S: Spec> Refines for Refinement<S> {
    fn is_initial(&self, s: &JobsState) -> bool {
        self.initial.contains(&S::view(s))
    }

    fn is_step(&self, p: &JobsState, n: &JobsState) -> bool {
        let (p, n) = (S::view(p), S::view(n));
        p == n || self.successors(&p).contains(&n)
    }

    fn failing(&self, p: Option<&JobsState>, n: &JobsState) -> Vec<&'static str> {
        let n = S::view(n);
        let marked = match p {
            Some(p) => self.mirror.marked(&S::view(p), n),
            None => n,
        };
        self.properties.iter().filter(|p| !(p.condition)(&self.mirror, &marked)).map(|p| p.name).collect()
    }

    fn property_names(&self) -> Vec<&'static str> {
        self.mirror.property_names()
    }

    fn renew_lease(&self, s: &JobsState, c: Claim, w: Worker) -> bool {
        self.mirror.loss().renew_lease(&s.loss, c, w)
    }

    fn constants(&self) -> &'static Constants {
        self.mirror.loss().constants()
    }
}

/// One copy of each mapped state: the spec has far fewer states than the
/// implementation, so states share it.
#[derive(Default)]
pub struct Interned(Mutex<HashSet<Arc<JobsState>>>);

impl Interned {
    /// The shared copy of `s`.
    pub fn intern(&self, s: JobsState) -> Arc<JobsState> {
        let mut interned = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shared) = interned.get(&s) {
            return shared.clone();
        }
        let shared = Arc::new(s);
        interned.insert(shared.clone());
        shared
    }
}
