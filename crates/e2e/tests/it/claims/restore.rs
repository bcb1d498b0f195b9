//! Executing claims survive the loss of the lease store: after all three
//! Handoff replicas are evicted at once (as a deploy does), the executing
//! worker's heartbeat restores its lease from the durable store's record,
//! and nobody else's does; a lease that had expired before the loss stays
//! expired.

use e2e::claims::{Claims, accepted, outcome, rejected};

const LONG: u64 = 60_000;

#[tokio::test]
async fn after_all_replicas_are_evicted_the_executing_workers_heartbeat_restores_its_lease() {
    let c = Claims::fresh("claims-restore").await;
    let s = &c.store;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("j", "first", 1, "w1", 30_000).await);
    assert_eq!(s.get(&c.ns, "_remora/lease/j").await.status, 200);

    s.evict_all(&c.ns).await;
    // The store lost the lease.
    s.get(&c.ns, "_remora/lease/j").await.expect_error(404, "key_not_found");
    assert!(c.get("j").await["lease"].is_null());
    // A replay now finds no lease: rejected, and that stays.
    rejected(&c.activate("j", "during-loss", 1, "w1", 30_000).await, "lease_lost");

    // Strangers restore nothing.
    assert_eq!(outcome(&c.heartbeat("j", 1, "w2", 30_000).await), ("refused".into(), Some("wrong_worker".into())));
    assert_eq!(outcome(&c.heartbeat("j", 2, "w1", 30_000).await), ("refused".into(), Some("stale_fence".into())));
    s.get(&c.ns, "_remora/lease/j").await.expect_error(404, "key_not_found");
    // The executing worker does.
    let renewed = c.heartbeat("j", 1, "w1", 30_000).await;
    assert_eq!(outcome(&renewed), ("renewed".into(), None), "{}", renewed.text());
    let view = c.get("j").await;
    assert_eq!(view["lease"]["worker"], "w1", "{view}");
    assert_eq!(view["activations"], 1);
    // The restored lease stands for the first acceptance again; the
    // rejection given during the loss stands too.
    accepted(&c.activate("j", "first", 1, "w1", 30_000).await);
    rejected(&c.activate("j", "during-loss", 1, "w1", 30_000).await, "lease_lost");
    s.save_trace(&c.ns).await;
}

#[tokio::test]
async fn a_lease_that_expired_before_the_loss_is_not_restored() {
    let c = Claims::fresh("claims-restore-expired").await;
    let s = &c.store;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("j", "first", 1, "w1", 1500).await);
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    s.evict_all(&c.ns).await;
    assert_eq!(outcome(&c.heartbeat("j", 1, "w1", 30_000).await), ("refused".into(), Some("lease_lost".into())));
    s.get(&c.ns, "_remora/lease/j").await.expect_error(404, "key_not_found");
    assert!(c.get("j").await["lease"].is_null());
}
