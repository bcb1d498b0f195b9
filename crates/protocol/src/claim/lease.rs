//! The coordination store: leases, claim → (attempt, worker, expiry).
//!
//! A lease tells a worker it may keep executing; it is not authority.
//! Nothing here decides whether a claim executes: the durable commit does,
//! and it checks the lease's deadline itself. One request looks at the
//! durable store: a lease is created only for an attempt the durable store
//! shows awaiting activation ([`ClaimRow::admits_lease`]), and restored only
//! from the durable store's record of its deadline
//! ([`ClaimRow::admits_restore`]), read in the same atomic step that serves
//! the request (the hosts keep both stores in one object). Without that, an activation that validated before another one
//! committed could create the lease again for the executing claim after the
//! store lost it, and bring back a lease that had expired. What the store does guarantee is that a lease, once
//! expired, stays expired for its attempt (a host may forget an expired
//! record only after the reservation it was created under has expired too,
//! when no request can create it again): an activation still under way
//! could otherwise bring back a lease that lapsed after another activation
//! committed, and a rejected operation would then be accepted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::durable::ClaimRow;
use super::error::LeaseRefused;
use super::types::{ClaimId, Fence, Millis, WorkerId, is_live};

pub use super::types::Lease;

impl Lease {
    /// Creates the lease of attempt `fence` for `worker`, live until
    /// `expires_at`, unless the reservation it stands for has expired
    /// (`not_after`). Creating a lease the same worker already holds returns
    /// that lease unchanged: a second activation of the same attempt shares it.
    pub fn create(
        existing: Option<&Lease>,
        fence: Fence,
        worker: &WorkerId,
        expires_at: Millis,
        not_after: Millis,
        now: Millis,
    ) -> Result<Lease, LeaseRefused> {
        if !is_live(not_after, now) {
            return Err(LeaseRefused::ReservationExpired);
        }
        if !is_live(expires_at, now) {
            return Err(LeaseRefused::Lapsed);
        }
        let fresh = Lease { fence, worker: worker.clone(), expires_at };
        match existing {
            None => Ok(fresh),
            // An older attempt's lease gives way to the current attempt.
            Some(old) if old.fence < fence => Ok(fresh),
            Some(old) if old.fence > fence => Err(LeaseRefused::Superseded),
            Some(old) if !is_live(old.expires_at, now) => Err(LeaseRefused::Lapsed),
            Some(old) if old.worker == *worker => Ok(old.clone()),
            Some(_) => Err(LeaseRefused::HeldByOther),
        }
    }

    /// Renews the live lease of attempt `fence` held by `worker` until
    /// `expires_at`, or keeps its deadline if that is later: a lease's
    /// deadline never moves back (the durable store keeps a copy of it that
    /// must not outrun it). An expired lease is not renewed.
    pub fn renew(
        existing: Option<&Lease>,
        fence: Fence,
        worker: &WorkerId,
        expires_at: Millis,
        now: Millis,
    ) -> Result<Lease, LeaseRefused> {
        let Some(old) = existing else {
            return Err(LeaseRefused::NotHeld);
        };
        if old.fence > fence {
            Err(LeaseRefused::Superseded)
        } else if old.fence < fence {
            Err(LeaseRefused::NotHeld)
        } else if old.worker != *worker {
            Err(LeaseRefused::HeldByOther)
        } else if !is_live(old.expires_at, now) {
            Err(LeaseRefused::Lapsed)
        } else {
            Ok(Lease { expires_at: expires_at.max(old.expires_at), ..old.clone() })
        }
    }

    /// Restores the lease of attempt `fence` for `worker` after the store
    /// lost it: the durable store says the attempt executes and recorded
    /// its lease's deadline `lost_until` ([`ClaimRow::admits_restore`]),
    /// which must still be ahead. The
    /// restored lease runs until `expires_at`, or `lost_until` if later. A
    /// record of the attempt that is still here is not lost: a live one is
    /// renewed, an expired one stays expired; a newer attempt's stands.
    pub fn restore(
        existing: Option<&Lease>,
        fence: Fence,
        worker: &WorkerId,
        expires_at: Millis,
        lost_until: Millis,
        now: Millis,
    ) -> Result<Lease, LeaseRefused> {
        if !is_live(lost_until, now) {
            return Err(LeaseRefused::Lapsed);
        }
        match existing {
            Some(old) if old.fence >= fence => Lease::renew(existing, fence, worker, expires_at, now),
            // Lost, or only an older attempt's record is left.
            _ => Ok(Lease { fence, worker: worker.clone(), expires_at: expires_at.max(lost_until) }),
        }
    }

    /// Whether `worker` may delete `existing` (delete if owner): it may
    /// delete its own attempt's lease, live or expired, and "deleting" no
    /// lease is a no-op.
    pub fn may_delete(existing: Option<&Lease>, fence: Fence, worker: &WorkerId) -> Result<(), LeaseRefused> {
        match existing {
            Some(old) if old.fence != fence || old.worker != *worker => Err(LeaseRefused::HeldByOther),
            _ => Ok(()),
        }
    }
}

/// The lease in force at `now`, if any.
pub fn holder(existing: Option<&Lease>, now: Millis) -> Option<&Lease> {
    existing.filter(|lease| is_live(lease.expires_at, now))
}

/// A request to the coordination store.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LeaseRequest {
    Create {
        claim: ClaimId,
        fence: Fence,
        worker: WorkerId,
        expires_at: Millis,
        /// The reservation's deadline: no lease is created after it.
        not_after: Millis,
    },
    /// Who holds the claim's lease now.
    Holder {
        claim: ClaimId,
    },
    Renew {
        claim: ClaimId,
        fence: Fence,
        worker: WorkerId,
        expires_at: Millis,
    },
    /// Restore a lease the store lost, from the durable store's record of
    /// its deadline (read by the host in the same step).
    Restore {
        claim: ClaimId,
        fence: Fence,
        worker: WorkerId,
        expires_at: Millis,
    },
    /// Delete if owner.
    Delete {
        claim: ClaimId,
        fence: Fence,
        worker: WorkerId,
    },
}

impl LeaseRequest {
    /// The claim whose lease record the request reads or writes: the only
    /// record it touches.
    pub fn claim(&self) -> &ClaimId {
        match self {
            LeaseRequest::Create { claim, .. }
            | LeaseRequest::Holder { claim }
            | LeaseRequest::Renew { claim, .. }
            | LeaseRequest::Restore { claim, .. }
            | LeaseRequest::Delete { claim, .. } => claim,
        }
    }
}

/// The coordination store's reply to a [`LeaseRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LeaseReply {
    /// The lease now in force (created, shared or renewed).
    Granted {
        lease: Lease,
    },
    Holder {
        lease: Option<Lease>,
    },
    Deleted,
    Refused {
        refused: LeaseRefused,
    },
}

/// The leases of a host, by claim.
pub trait LeaseRows {
    fn lease(&self, claim: &ClaimId) -> Option<Lease>;
    fn put_lease(&mut self, claim: &ClaimId, lease: Lease);
    fn remove_lease(&mut self, claim: &ClaimId);
}

/// Serves one request at `now` on the record of its claim (`existing`),
/// with the claim's durable row (`authority`, read in the same step): the
/// reply, and the record to keep (`existing` itself unless the request
/// changed it). Pure: a host reads the record and the row, calls this, and
/// writes the record back if it changed, with nothing else touching it in
/// between.
pub fn update(
    existing: Option<&Lease>,
    request: &LeaseRequest,
    authority: Option<&ClaimRow>,
    now: Millis,
) -> (LeaseReply, Option<Lease>) {
    let unchanged = || existing.cloned();
    let grant = |result: Result<Lease, LeaseRefused>| match result {
        Ok(lease) => (LeaseReply::Granted { lease: lease.clone() }, Some(lease)),
        Err(refused) => (LeaseReply::Refused { refused }, unchanged()),
    };
    match request {
        LeaseRequest::Create { fence, worker, expires_at, not_after, .. } => grant(
            authority
                .ok_or(LeaseRefused::NotAwaitingActivation)
                .and_then(|row| row.admits_lease(*fence))
                .and_then(|()| Lease::create(existing, *fence, worker, *expires_at, *not_after, now)),
        ),
        LeaseRequest::Holder { .. } => (LeaseReply::Holder { lease: holder(existing, now).cloned() }, unchanged()),
        LeaseRequest::Renew { fence, worker, expires_at, .. } => {
            grant(Lease::renew(existing, *fence, worker, *expires_at, now))
        }
        LeaseRequest::Restore { fence, worker, expires_at, .. } => grant(
            authority
                .ok_or(LeaseRefused::NotHeld)
                .and_then(|row| row.admits_restore(*fence, worker))
                .and_then(|lost_until| Lease::restore(existing, *fence, worker, *expires_at, lost_until, now)),
        ),
        LeaseRequest::Delete { fence, worker, .. } => match Lease::may_delete(existing, *fence, worker) {
            Ok(()) => (LeaseReply::Deleted, None),
            Err(refused) => (LeaseReply::Refused { refused }, unchanged()),
        },
    }
}

/// What `request` writes when its claim has no record, and the reply it
/// then gets: `update` of an absent record, if that writes one (a lease
/// created, or restored after a loss); `None` if it writes nothing.
///
/// A host whose store writes on condition (create if absent) may write this
/// without reading first: if the condition holds, the record was absent
/// where the write took effect, so what it wrote is exactly what [`update`]
/// returns for the record there, and the reply is [`update`]'s. If the
/// condition fails (a record exists: a replay's, another attempt's, an
/// expired one), nothing was written, and the host reads the record and
/// serves the request with [`update`] instead.
pub fn update_if_absent(
    request: &LeaseRequest,
    authority: Option<&ClaimRow>,
    now: Millis,
) -> Option<(LeaseReply, Lease)> {
    match update(None, request, authority, now) {
        (reply, Some(record)) => Some((reply, record)),
        (_, None) => None,
    }
}

/// Serves one request at `now` on `rows` ([`update`] of the claim's record,
/// with its durable row `authority`).
pub fn apply(
    rows: &mut impl LeaseRows,
    request: &LeaseRequest,
    authority: Option<&ClaimRow>,
    now: Millis,
) -> LeaseReply {
    let claim = request.claim();
    let existing = rows.lease(claim);
    let (reply, record) = update(existing.as_ref(), request, authority, now);
    if record != existing {
        match record {
            Some(lease) => rows.put_lease(claim, lease),
            None => rows.remove_lease(claim),
        }
    }
    reply
}

/// The coordination store in memory, for tests and the model checker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemoryLeases {
    pub leases: BTreeMap<ClaimId, Lease>,
}

impl LeaseRows for MemoryLeases {
    fn lease(&self, claim: &ClaimId) -> Option<Lease> {
        self.leases.get(claim).cloned()
    }

    fn put_lease(&mut self, claim: &ClaimId, lease: Lease) {
        self.leases.insert(claim.clone(), lease);
    }

    fn remove_lease(&mut self, claim: &ClaimId) {
        self.leases.remove(claim);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 100;

    fn w(id: &str) -> WorkerId {
        WorkerId::from(id)
    }

    fn lease(fence: u64, worker: &str, expires_at: Millis) -> Lease {
        Lease { fence: Fence(fence), worker: w(worker), expires_at }
    }

    #[test]
    fn create_grants_a_lease_while_the_reservation_holds() {
        assert_eq!(Lease::create(None, Fence(1), &w("w1"), 200, 150, NOW), Ok(lease(1, "w1", 200)));
        assert_eq!(Lease::create(None, Fence(1), &w("w1"), 200, NOW, NOW), Err(LeaseRefused::ReservationExpired));
        assert_eq!(Lease::create(None, Fence(1), &w("w1"), NOW, 150, NOW), Err(LeaseRefused::Lapsed));
    }

    #[test]
    fn create_shares_a_live_lease_and_never_revives_an_expired_one() {
        let held = lease(1, "w1", 200);
        assert_eq!(Lease::create(Some(&held), Fence(1), &w("w1"), 300, 400, NOW), Ok(held.clone()));
        assert_eq!(Lease::create(Some(&held), Fence(1), &w("w2"), 300, 400, NOW), Err(LeaseRefused::HeldByOther));
        assert_eq!(Lease::create(Some(&held), Fence(1), &w("w1"), 300, 400, 200), Err(LeaseRefused::Lapsed));
    }

    #[test]
    fn create_replaces_an_older_attempt_and_yields_to_a_newer_one() {
        let old = lease(1, "w1", 200);
        assert_eq!(Lease::create(Some(&old), Fence(2), &w("w2"), 300, 400, NOW), Ok(lease(2, "w2", 300)));
        let newer = lease(3, "w1", 200);
        assert_eq!(Lease::create(Some(&newer), Fence(2), &w("w1"), 300, 400, NOW), Err(LeaseRefused::Superseded));
    }

    #[test]
    fn renew_extends_only_the_holders_live_lease() {
        let held = lease(1, "w1", 200);
        assert_eq!(Lease::renew(Some(&held), Fence(1), &w("w1"), 300, NOW), Ok(lease(1, "w1", 300)));
        assert_eq!(Lease::renew(Some(&held), Fence(1), &w("w1"), 300, 200), Err(LeaseRefused::Lapsed));
        assert_eq!(Lease::renew(Some(&held), Fence(1), &w("w2"), 300, NOW), Err(LeaseRefused::HeldByOther));
        assert_eq!(Lease::renew(Some(&held), Fence(0), &w("w1"), 300, NOW), Err(LeaseRefused::Superseded));
        assert_eq!(Lease::renew(Some(&held), Fence(2), &w("w1"), 300, NOW), Err(LeaseRefused::NotHeld));
        assert_eq!(Lease::renew(None, Fence(1), &w("w1"), 300, NOW), Err(LeaseRefused::NotHeld));
        assert_eq!(Lease::renew(Some(&held), Fence(1), &w("w1"), 150, NOW), Ok(held.clone()), "never moves back");
    }

    #[test]
    fn restore_brings_back_only_a_lost_lease_recorded_in_force() {
        let lost = Lease::restore(None, Fence(1), &w("w1"), 300, 250, NOW);
        assert_eq!(lost, Ok(lease(1, "w1", 300)));
        assert_eq!(Lease::restore(None, Fence(1), &w("w1"), 200, 250, NOW), Ok(lease(1, "w1", 250)), "not shorter");
        assert_eq!(Lease::restore(None, Fence(1), &w("w1"), 300, NOW, NOW), Err(LeaseRefused::Lapsed));
        let older = lease(0, "w9", 500);
        assert_eq!(Lease::restore(Some(&older), Fence(1), &w("w1"), 300, 250, NOW), Ok(lease(1, "w1", 300)));
        let expired = lease(1, "w1", NOW);
        assert_eq!(Lease::restore(Some(&expired), Fence(1), &w("w1"), 300, 250, NOW), Err(LeaseRefused::Lapsed));
        let live = lease(1, "w1", 200);
        assert_eq!(Lease::restore(Some(&live), Fence(1), &w("w1"), 300, 250, NOW), Ok(lease(1, "w1", 300)));
        let newer = lease(2, "w1", 200);
        assert_eq!(Lease::restore(Some(&newer), Fence(1), &w("w1"), 300, 250, NOW), Err(LeaseRefused::Superseded));
    }

    #[test]
    fn delete_if_owner() {
        let held = lease(1, "w1", 200);
        assert_eq!(Lease::may_delete(Some(&held), Fence(1), &w("w1")), Ok(()));
        assert_eq!(Lease::may_delete(Some(&held), Fence(1), &w("w2")), Err(LeaseRefused::HeldByOther));
        assert_eq!(Lease::may_delete(Some(&held), Fence(2), &w("w1")), Err(LeaseRefused::HeldByOther));
        assert_eq!(Lease::may_delete(None, Fence(1), &w("w1")), Ok(()));
    }

    #[test]
    fn a_lease_is_created_only_for_an_attempt_awaiting_activation() {
        let c1 = ClaimId::from("c1");
        let create = LeaseRequest::Create {
            claim: c1.clone(),
            fence: Fence(1),
            worker: w("w1"),
            expires_at: 200,
            not_after: 400,
        };
        let refused = |refused| (LeaseReply::Refused { refused }, None);
        assert_eq!(update(None, &create, None, NOW), refused(LeaseRefused::NotAwaitingActivation));
        let row = ClaimRow::authorize(c1.clone(), Fence(1), w("w1"), 400);
        assert_eq!(update(None, &create, Some(&row), NOW).1, Some(lease(1, "w1", 200)));
        let newer = ClaimRow::authorize(c1.clone(), Fence(2), w("w1"), 400);
        assert_eq!(update(None, &create, Some(&newer), NOW), refused(LeaseRefused::NotAwaitingActivation));
        let o = crate::claim::OperationId::from("o");
        let locked = row.acquire_activation_lock(&o, 300, NOW).unwrap();
        let executing = locked.commit_activation(&o, 300, NOW).unwrap();
        assert_eq!(update(None, &create, Some(&executing), NOW), refused(LeaseRefused::NotAwaitingActivation));
    }

    #[test]
    fn update_returns_the_record_to_keep() {
        let c1 = ClaimId::from("c1");
        let held = lease(1, "w1", 200);
        let holder = LeaseRequest::Holder { claim: c1.clone() };
        assert_eq!(update(Some(&held), &holder, None, 200), (LeaseReply::Holder { lease: None }, Some(held.clone())));
        let renew = LeaseRequest::Renew { claim: c1.clone(), fence: Fence(1), worker: w("w1"), expires_at: 300 };
        assert_eq!(
            update(Some(&held), &renew, None, NOW),
            (LeaseReply::Granted { lease: lease(1, "w1", 300) }, Some(lease(1, "w1", 300)))
        );
        let refused = LeaseReply::Refused { refused: LeaseRefused::Lapsed };
        assert_eq!(update(Some(&held), &renew, None, 200), (refused, Some(held.clone())), "a refusal changes nothing");
        let delete = LeaseRequest::Delete { claim: c1.clone(), fence: Fence(1), worker: w("w1") };
        assert_eq!(update(Some(&held), &delete, None, 200), (LeaseReply::Deleted, None));
        let foreign = LeaseRequest::Delete { claim: c1, fence: Fence(1), worker: w("w2") };
        let refused = LeaseReply::Refused { refused: LeaseRefused::HeldByOther };
        assert_eq!(update(Some(&held), &foreign, None, 200), (refused, Some(held)));
    }

    #[test]
    fn update_if_absent_is_update_of_an_absent_record_that_writes_one() {
        let c1 = ClaimId::from("c1");
        let row = ClaimRow::authorize(c1.clone(), Fence(1), w("w1"), 400);
        let create = |fence, worker: &str| LeaseRequest::Create {
            claim: c1.clone(),
            fence: Fence(fence),
            worker: w(worker),
            expires_at: 200,
            not_after: 400,
        };
        let granted = lease(1, "w1", 200);
        assert_eq!(
            update_if_absent(&create(1, "w1"), Some(&row), NOW),
            Some((LeaseReply::Granted { lease: granted.clone() }, granted.clone()))
        );
        assert_eq!(update(None, &create(1, "w1"), Some(&row), NOW).1, Some(granted.clone()));
        // Nothing to write blind: a refusal, a read, a renewal or a delete of
        // an absent record. The host reads first.
        assert_eq!(update_if_absent(&create(2, "w1"), Some(&row), NOW), None, "not awaiting activation");
        assert_eq!(update_if_absent(&create(1, "w1"), Some(&row), 400), None, "the reservation expired");
        assert_eq!(update_if_absent(&LeaseRequest::Holder { claim: c1.clone() }, Some(&row), NOW), None);
        let renew = LeaseRequest::Renew { claim: c1.clone(), fence: Fence(1), worker: w("w1"), expires_at: 300 };
        assert_eq!(update_if_absent(&renew, Some(&row), NOW), None);
        let delete = LeaseRequest::Delete { claim: c1.clone(), fence: Fence(1), worker: w("w1") };
        assert_eq!(update_if_absent(&delete, Some(&row), NOW), None);
        // Where a record exists the blind write must not stand: update of it
        // differs (shared, refused), which is why the write is conditional.
        assert_eq!(update(Some(&lease(1, "w1", 150)), &create(1, "w1"), Some(&row), NOW).1, Some(lease(1, "w1", 150)));
        assert_eq!(
            update(Some(&lease(1, "w2", 150)), &create(1, "w1"), Some(&row), NOW).0,
            LeaseReply::Refused { refused: LeaseRefused::HeldByOther }
        );
    }

    #[test]
    fn apply_keeps_an_expired_lease_on_record_until_deleted() {
        let c1 = ClaimId::from("c1");
        let mut rows = MemoryLeases::default();
        let row = ClaimRow::authorize(c1.clone(), Fence(1), w("w1"), 400);
        let row = Some(&row);
        let create = LeaseRequest::Create {
            claim: c1.clone(),
            fence: Fence(1),
            worker: w("w1"),
            expires_at: 200,
            not_after: 400,
        };
        assert_eq!(apply(&mut rows, &create, row, NOW), LeaseReply::Granted { lease: lease(1, "w1", 200) });
        let holder = LeaseRequest::Holder { claim: c1.clone() };
        assert_eq!(apply(&mut rows, &holder, row, NOW), LeaseReply::Holder { lease: Some(lease(1, "w1", 200)) });
        assert_eq!(apply(&mut rows, &holder, row, 200), LeaseReply::Holder { lease: None });
        assert_eq!(apply(&mut rows, &create, row, 200), LeaseReply::Refused { refused: LeaseRefused::Lapsed });
        let delete = LeaseRequest::Delete { claim: c1.clone(), fence: Fence(1), worker: w("w1") };
        assert_eq!(apply(&mut rows, &delete, row, 200), LeaseReply::Deleted);
        assert!(rows.leases.is_empty());
        let renew = LeaseRequest::Renew { claim: c1, fence: Fence(1), worker: w("w1"), expires_at: 300 };
        assert_eq!(apply(&mut rows, &renew, row, 200), LeaseReply::Refused { refused: LeaseRefused::NotHeld });
    }
}
