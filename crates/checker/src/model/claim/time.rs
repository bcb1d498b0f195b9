//! Time in the model: symbolic deadlines.
//!
//! The protocol compares deadlines only with `now` (and makes new ones as
//! `now + ttl`), so what matters about a deadline is whether it has passed,
//! and which stored deadlines are the same instant (a lease's deadline is
//! both in the coordination store and in the activator that will prove it
//! at commit). The model keeps `now` at [`NOW`] and lets any live deadline
//! pass at any moment (`Elapse`): it assumes no order between different
//! deadlines, so no check can rest on timing. After every step the stored
//! times are renamed canonically: a passed deadline becomes `NOW`, and the
//! live ones `NOW + 1`, `NOW + 2`, ... in order of first appearance, so
//! that states differing only in the values of equal-or-unequal instants
//! are one state. New deadlines are `NOW + TTL`, above every canonical name.

use protocol::claim::{
    ActivatorStep, ClaimId, ClaimRow, CompletionStep, DurableLock, ExecutingReaper, ExecutingReaperStep, HeartbeatStep,
    Millis,
};

use super::state::ImplState;
pub use super::state::NOW;

/// Every lifetime the model's procedures ask for. Any positive value would
/// do; this one is above the canonical names of live deadlines.
pub const TTL: Millis = 1_000;

/// Calls `f` on every stored time, in a fixed order.
fn for_each_time(s: &mut ImplState, mut f: impl FnMut(&mut Millis)) {
    for row in s.durable.claims.values_mut() {
        if let Some(reservation) = &mut row.reservation {
            f(&mut reservation.expires_at);
        }
        if let Some(DurableLock::Activator { expires_at, .. }) = &mut row.lock {
            f(expires_at);
        }
        if let Some(lease_until) = &mut row.lease_until {
            f(lease_until);
        }
    }
    for lease in s.leases.leases.values_mut() {
        f(&mut lease.expires_at);
    }
    for run in s.clients.iter_mut().filter_map(|c| c.run.as_mut()) {
        match &mut run.step {
            ActivatorStep::CreateLease { reservation_expires_at } => f(reservation_expires_at),
            ActivatorStep::AcquireLock { lease, .. }
            | ActivatorStep::Commit { lease, .. }
            | ActivatorStep::RecordLease { lease }
            | ActivatorStep::RecordGrant { lease } => f(&mut lease.expires_at),
            _ => {}
        }
    }
    for heartbeat in s.heartbeats.iter_mut().flatten() {
        if let HeartbeatStep::Record { expires_at } = &mut heartbeat.step {
            f(expires_at);
        }
    }
    for completion in s.completions.iter_mut().flatten() {
        if let CompletionStep::Commit { lease_expires_at } = &mut completion.step {
            f(lease_expires_at);
        }
    }
    if let ExecutingReaperStep::Reap { lease: Some(lease), .. } = &mut s.executing_reaper.step {
        f(&mut lease.expires_at);
    }
}

/// Renames the stored times canonically (see the module doc).
pub fn canonicalize(s: &mut ImplState) {
    let mut live: Vec<Millis> = Vec::new();
    for_each_time(s, |t| {
        if *t <= NOW {
            *t = NOW;
        } else {
            let k = live.iter().position(|x| x == t).unwrap_or_else(|| {
                live.push(*t);
                live.len() - 1
            });
            *t = NOW + 1 + k as Millis;
        }
    });
}

/// The deadline `instant` passes, wherever it is stored. One order between
/// deadlines is known and kept: the lease deadline the durable store
/// recorded for a claim is a copy of an earlier deadline of the claim's
/// lease, which only grows (renewals and restorations take the later one),
/// taken under the claim's lease lock; so when the lease's deadline passes
/// (the record's, or a copy on its way to the durable store while the
/// record is lost: a heartbeat's, an activator's, the executing reaper's),
/// the recorded one has passed too.
pub fn elapse(s: &mut ImplState, instant: Millis) {
    let lease_of = |s: &ImplState, claim: &ClaimId| -> Vec<Millis> {
        let record = s.leases.leases.get(claim).map(|l| l.expires_at);
        let carried =
            s.heartbeats.iter().flatten().filter(|h| h.request.claim == *claim).filter_map(|h| match h.step {
                HeartbeatStep::Record { expires_at } => Some(expires_at),
                _ => None,
            });
        let recording = s
            .clients
            .iter()
            .filter_map(|c| c.run.as_ref())
            .filter(|r| r.request.claim == *claim)
            .filter_map(|r| match &r.step {
                ActivatorStep::RecordLease { lease } | ActivatorStep::RecordGrant { lease } => Some(lease.expires_at),
                _ => None,
            });
        let read = s.durable.claims.get(claim).and_then(|row| reaper_carries(&s.executing_reaper, row));
        record.into_iter().chain(carried).chain(recording).chain(read).collect()
    };
    let passing: Vec<ClaimId> =
        s.durable.claims.keys().filter(|c| lease_of(s, c).contains(&instant)).cloned().collect();
    for claim in passing {
        if let Some(row) = s.durable.claims.get_mut(&claim) {
            row.lease_until = row.lease_until.map(|_| NOW);
        }
    }
    for_each_time(s, |t| {
        if *t == instant {
            *t = NOW;
        }
    });
}

/// Whether a stored time is a deadline still ahead.
pub fn is_live(t: Millis) -> bool {
    protocol::claim::types::is_live(t, NOW)
}

/// The deadline of the claim's lease that the executing reaper read and
/// carries to the durable store (where a refused reap records it), if it
/// is the attempt's.
pub(super) fn reaper_carries(reaper: &ExecutingReaper, row: &ClaimRow) -> Option<Millis> {
    match &reaper.step {
        ExecutingReaperStep::Reap { claim, lease: Some(l), .. }
            if *claim == row.claim && l.fence == row.fence && l.worker == row.worker =>
        {
            Some(l.expires_at)
        }
        _ => None,
    }
}
