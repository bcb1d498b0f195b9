//! Executing claims survive the loss of the lease store: after all three
//! Handoff replicas are evicted at once (as a deploy does), the executing
//! worker's heartbeat restores its lease from the durable store's record,
//! and nobody else's does; a lease that had expired before the loss stays
//! expired. No claim is stranded: one whose lease was lost and whose worker
//! stopped is reaped once the recorded deadline passed.

use std::time::{Duration, Instant};

use e2e::claims::{Claims, accepted, completed, outcome, refused, rejected};
use serde_json::{Value, json};

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
    // Refused: the lease lapsed, or (once the alarm has run) the reaper
    // reaped the claim.
    let (result, reason) = outcome(&c.heartbeat("j", 1, "w1", 30_000).await);
    assert_eq!(result, "refused");
    assert!(matches!(reason.as_deref(), Some("lease_lost" | "reaped")), "{reason:?}");
    s.get(&c.ns, "_remora/lease/j").await.expect_error(404, "key_not_found");
    assert!(c.get("j").await["lease"].is_null());
}

/// How long after its lease's deadline the reaper reaps a stranded claim at
/// most: the alarm is set for the recorded deadline; one that finds the
/// claim skipped looks again a second later (`REAPER_RETRY_MS`). Generous:
/// the machine is small and shared.
const REAPER_PERIOD: Duration = Duration::from_millis(1_000);
const SLACK: Duration = Duration::from_millis(4_000);

/// No stranded claim (issue 32 item 5): the lease record of an executing
/// claim is lost with the lease store's replicas and its worker never
/// heartbeats again; once the deadline the claim store recorded for it has
/// passed, the reaper reaps it (`ReapExecuting`), as a failed attempt: a
/// new attempt may follow, or the claim is dead after its last. The worker
/// is told: its heartbeat and its completion answer `reaped`.
#[tokio::test]
async fn an_executing_claim_whose_lease_record_was_lost_is_reaped_in_time() {
    let c = Claims::fresh("claims-stranded").await;
    let s = &c.store;
    const TTL: u64 = 2_000;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    let last = json!({ "claim": "k", "fence": 1, "worker": "w1", "reservation_ttl_ms": LONG, "max_attempts": 1 });
    assert_eq!(c.create_raw(&last).await.status, 201);
    let started = Instant::now();
    accepted(&c.activate("j", "first", 1, "w1", TTL).await);
    accepted(&c.activate("k", "first", 1, "w1", TTL).await);
    s.evict_all(&c.ns).await;
    s.get(&c.ns, "_remora/lease/j").await.expect_error(404, "key_not_found");
    assert_eq!(c.get("j").await["state"], "executing", "restorable until its deadline");

    let within = Duration::from_millis(TTL) + REAPER_PERIOD + SLACK;
    let view = c.wait_state("j", "reaped", within).await;
    assert!(started.elapsed() <= within, "reaped after {:?}", started.elapsed());
    assert_eq!((view["attempt"].as_u64(), view["activations"].as_u64()), (Some(1), Some(1)), "{view}");
    let dead = c.wait_state("k", "dead", Duration::from_millis(TTL) + REAPER_PERIOD + SLACK).await;
    assert!(dead["outcome"].is_null(), "reaped on its last attempt, not failed: {dead}");

    // Its worker is told.
    refused(&c.heartbeat("j", 1, "w1", TTL).await, "reaped");
    refused(&c.complete("j", "done", 1, "w1", "succeeded", Value::Null).await, "reaped");
    refused(&c.complete("k", "done", 1, "w1", "succeeded", Value::Null).await, "reaped");
    assert_eq!(c.get("j").await["state"], "reaped", "nothing changed it");
    // A reaped attempt counts: the next one is the second, and runs.
    assert_eq!(c.create("j", 2, "w2", LONG).await.status, 201);
    accepted(&c.activate("j", "second", 2, "w2", LONG).await);
    completed(&c.complete("j", "done-2", 2, "w2", "succeeded", Value::Null).await, "succeeded");
    assert_eq!(c.get("j").await["attempt"], 2);
    c.create("k", 2, "w2", LONG).await.expect_error(409, "claim_dead");
}

/// The lease record of an executing claim is lost, and its worker goes on
/// heartbeating: its first heartbeat restores the lease, the reaper leaves
/// the claim alone well past the lost lease's deadline, and it completes.
#[tokio::test]
async fn an_executing_claim_whose_lease_record_was_lost_is_restored_by_its_heartbeat_and_completes() {
    let c = Claims::fresh("claims-stranded-restored").await;
    let s = &c.store;
    // Evicting the three replicas and the first heartbeat must fit in it:
    // 2 s did not, once, on a loaded 2-core machine (the heartbeat then
    // rightly found the deadline passed: lease_lost).
    const TTL: u64 = 5_000;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("j", "first", 1, "w1", TTL).await);
    s.evict_all(&c.ns).await;
    s.get(&c.ns, "_remora/lease/j").await.expect_error(404, "key_not_found");
    let renewed = c.heartbeat("j", 1, "w1", TTL).await;
    assert_eq!(outcome(&renewed), ("renewed".into(), None), "{}", renewed.text());
    assert_eq!(c.get("j").await["lease"]["worker"], "w1", "restored");
    // Past the lost lease's deadline and the reaper's period, twice over.
    let until = Instant::now() + 2 * (Duration::from_millis(TTL) + REAPER_PERIOD);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let renewed = c.heartbeat("j", 1, "w1", TTL).await;
        assert_eq!(outcome(&renewed), ("renewed".into(), None), "{}", renewed.text());
    }
    let view = c.get("j").await;
    assert_eq!(view["state"], "executing", "{view}");
    completed(&c.complete("j", "done", 1, "w1", "succeeded", json!({ "ok": true })).await, "succeeded");
    assert_eq!(c.get("j").await["state"], "succeeded");
}

/// A lease is created on condition its record is absent; where a record is
/// there (here: the last attempt's, expired, left by a worker that
/// stopped), the create is refused and the lease store falls back to a read,
/// `lease::update` and a write on condition the record is the one read: the
/// new attempt's activation is accepted, and its lease replaces the old.
#[tokio::test]
async fn a_new_attempts_lease_replaces_the_last_attempts_record() {
    let c = Claims::fresh("claims-replace").await;
    let s = &c.store;
    const TTL: u64 = 1_000;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("j", "first", 1, "w1", TTL).await);
    // Its worker stops: the claim is reaped once the lease's deadline passed,
    // and the expired record stays.
    c.wait_state("j", "reaped", Duration::from_millis(TTL) + REAPER_PERIOD + SLACK).await;
    let old = s.get(&c.ns, "_remora/lease/j").await;
    assert_eq!(old.status, 200, "{}", old.text());
    assert_eq!((old.json()["fence"].as_u64(), old.json()["worker"].as_str()), (Some(1), Some("w1")));

    assert_eq!(c.create("j", 2, "w2", LONG).await.status, 201);
    accepted(&c.activate("j", "second", 2, "w2", LONG).await);
    let new = s.get(&c.ns, "_remora/lease/j").await;
    assert_eq!((new.json()["fence"].as_u64(), new.json()["worker"].as_str()), (Some(2), Some("w2")), "{}", new.text());
    assert_ne!(new.headers.get("etag"), old.headers.get("etag"));
    // A replay of the attempt reads that lease and writes nothing.
    accepted(&c.activate("j", "again", 2, "w2", LONG).await);
    assert_eq!(s.get(&c.ns, "_remora/lease/j").await.headers.get("etag"), new.headers.get("etag"), "not rewritten");
    assert_eq!(c.get("j").await["activations"], 1);
}
