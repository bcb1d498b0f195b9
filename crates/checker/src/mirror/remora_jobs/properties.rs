//! The invariants and action properties RemoraJobs defines, named as in
//! the spec (the modules' below are their mirrors').

use super::model::{Invariant, RemoraJobs as M, StepPredicate};
use super::state::{JOBS_ACTION_PROPERTY_NAMES as NAMES, JobsState, Outcome};
use crate::mirror::remora::ClaimFunc;
use crate::mirror::remora::DurableState::Executing;
use crate::mirror::remora::NO_WORKER;

pub const INVARIANTS: &[(&str, Invariant)] = &[
    ("TypeOKJobs", type_ok_jobs),
    ("AtMostOneActivationEffectPerAttempt", at_most_one_activation_effect_per_attempt),
    ("CompletedClaimIsNeverReaped", completed_claim_is_never_reaped),
    ("CompletedClaimHoldsNoLease", completed_claim_holds_no_lease),
    ("AtMostMaxAttempts", at_most_max_attempts),
];

pub const ACTION_PROPERTIES: &[(&str, StepPredicate)] =
    &[(NAMES[0], activation_applies_at_most_once_per_attempt), (NAMES[1], dead_claim_stays_dead)];

fn implies(a: bool, b: bool) -> bool {
    !a || b
}

/// `outcome \in [Claims -> Outcomes] /\ usedFences \in [Claims -> SUBSET
/// Fences]`: the outcomes are `Outcome`s by construction; a set holds only
/// fences of the cfg, and nothing is set past the domain.
fn type_ok_jobs(m: &M, s: &JobsState) -> bool {
    let fences = m.k.fences.iter().fold(0u64, |bits, f| bits | 1 << f.0);
    s.outcome == ClaimFunc::new(&m.k.claims, |c| s.outcome[c])
        && s.used_fences == ClaimFunc::new(&m.k.claims, |c| s.used_fences[c])
        && m.k.claims.iter().all(|&c| s.used_fences[c].0 & !fences == 0)
}

fn at_most_one_activation_effect_per_attempt(m: &M, s: &JobsState) -> bool {
    m.k.claims.iter().all(|&c| s.loss.base.activation_effect_count[c] <= 1)
}

fn completed_claim_is_never_reaped(m: &M, s: &JobsState) -> bool {
    m.k.claims.iter().all(|&c| implies(s.outcome[c] != Outcome::Pending, s.loss.base.durable_state[c] == Executing))
}

fn completed_claim_holds_no_lease(m: &M, s: &JobsState) -> bool {
    m.k.claims.iter().all(|&c| {
        implies(
            s.outcome[c] != Outcome::Pending,
            s.loss.base.lease[c] == NO_WORKER && !s.loss.lease_lost[c] && s.loss.base.activation_effect_count[c] == 1,
        )
    })
}

fn at_most_max_attempts(m: &M, s: &JobsState) -> bool {
    m.k.claims
        .iter()
        .all(|&c| s.used_fences[c].len() <= m.max_attempts && s.used_fences[c].contains(s.loss.base.attempt_fence[c]))
}

fn activation_applies_at_most_once_per_attempt(m: &M, s: &JobsState, t: &JobsState) -> bool {
    m.k.claims.iter().all(|&c| {
        let (b, n) = (&s.loss.base, &t.loss.base);
        implies(
            b.activation_effect_count[c] == 1 && n.attempt_fence[c] == b.attempt_fence[c],
            n.activation_effect_count[c] == 1,
        )
    })
}

fn dead_claim_stays_dead(m: &M, s: &JobsState, t: &JobsState) -> bool {
    m.k.claims.iter().all(|&c| implies(m.dead(s, c), m.dead(t, c)))
}
