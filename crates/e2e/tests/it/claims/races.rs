//! Activation against the reaper, in both orders, with the activation held
//! in the middle (its lease write waits while the Handoff peers are paused),
//! and concurrent activations of one claim.

use std::time::Duration;

use e2e::claims::{Claims, accepted, outcome, rejected};
use serde_json::Value;

const LONG: u64 = 60_000;
const SETTLE: Duration = Duration::from_secs(20);

/// A namespace whose Handoff replicas are up (the lease store), so that a
/// pause of the peers holds lease writes rather than the coordinator's boot.
async fn warm(c: &Claims) {
    assert_eq!(c.create("warm-up", 1, "w", LONG).await.status, 201);
    accepted(&c.activate("warm-up", "warm-up", 1, "w", LONG).await);
    c.store.wait_ready(&c.ns, SETTLE).await;
}

#[tokio::test]
async fn the_reaper_first_then_the_activation_is_rejected() {
    let c = Claims::fresh("claims-reap-first").await;
    assert_eq!(c.create("j", 1, "w1", 1_000).await.status, 201);
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    // The alarm may have reaped it already; the hook reaps it otherwise.
    let reaped = c.reap().await;
    assert!(reaped.is_empty() || reaped == ["j"], "{reaped:?}");
    assert_eq!(c.get("j").await["state"], "reaped");
    rejected(&c.activate("j", "k", 1, "w1", LONG).await, "reaped");
    let view = c.get("j").await;
    assert_eq!((view["activations"].as_u64(), &view["lease"]), (Some(0), &Value::Null), "{view}");
}

#[tokio::test]
async fn the_activation_first_then_the_reaper_leaves_it_executing() {
    let c = Claims::fresh("claims-activate-first").await;
    assert_eq!(c.create("j", 1, "w1", 3_000).await.status, 201);
    accepted(&c.activate("j", "k", 1, "w1", LONG).await);
    tokio::time::sleep(Duration::from_millis(4_000)).await;
    assert!(c.reap().await.is_empty(), "an executing claim is never reaped");
    let view = c.get("j").await;
    assert_eq!((view["state"].as_str(), view["activations"].as_u64()), (Some("executing"), Some(1)), "{view}");
    accepted(&c.activate("j", "k", 1, "w1", LONG).await);
}

/// The activation is creating its lease when the reservation expires and
/// the alarm reaps the claim: it must not commit and must leave no lease.
/// The lease is one conditional create, decided while the reservation
/// holds; the stall comes at its write (no peer can ack it while both are
/// paused), so when it is acknowledged the durable row is already reaped:
/// the lock is refused (`reaped`), the activation removes the lease it
/// created (compensation) and answers `reservation_expired`. (With a read
/// before the write, as before, the stall came at the read, the decision
/// after it found the row reaped, and the answer was `lease_lost`.)
#[tokio::test]
async fn the_reaper_wins_while_the_activation_waits_for_the_lease_store() {
    let c = Claims::fresh("claims-race-reaper").await;
    warm(&c).await;
    assert_eq!(c.create("j", 1, "w1", 2_000).await.status, 201);
    // Peers drop every message for 8 s: the lease cannot be read or written
    // before then, long after the reservation (2 s) expired.
    for r in ["r1", "r2"] {
        c.store.pause(&c.ns, r, 8_000).await;
    }
    let resp = c.activate_settled("j", "k", 1, "w1", LONG, SETTLE).await;
    rejected(&resp, "reservation_expired");
    let view = c.get("j").await;
    assert_eq!(view["state"], "reaped", "{view}");
    assert_eq!((view["activations"].as_u64(), &view["lease"]), (Some(0), &Value::Null), "{view}");
    c.store.get(&c.ns, "_remora/lease/j").await.expect_error(404, "key_not_found");
    // A retry of the same operation replays the recorded answer.
    rejected(&c.activate("j", "k", 1, "w1", LONG).await, "reservation_expired");
}

/// The same pause, but the reservation outlives it: the activation commits
/// before the deadline, and the reaper finds the claim executing.
#[tokio::test]
async fn the_activation_wins_while_the_reaper_waits_for_the_deadline() {
    let c = Claims::fresh("claims-race-activation").await;
    warm(&c).await;
    assert_eq!(c.create("j", 1, "w1", 10_000).await.status, 201);
    for r in ["r1", "r2"] {
        c.store.pause(&c.ns, r, 1_500).await;
    }
    accepted(&c.activate_settled("j", "k", 1, "w1", LONG, SETTLE).await);
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    assert!(c.reap().await.is_empty());
    let view = c.get("j").await;
    assert_eq!((view["state"].as_str(), view["activations"].as_u64()), (Some("executing"), Some(1)), "{view}");
}

#[tokio::test]
async fn concurrent_activations_under_different_keys_apply_the_effect_once() {
    let c = Claims::fresh("claims-concurrent").await;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move { c.activate_settled("j", &format!("key-{i}"), 1, "w1", LONG, SETTLE).await })
        })
        .collect();
    for task in tasks {
        let resp = task.await.expect("task");
        assert_eq!(outcome(&resp), ("accepted".into(), None), "{}", resp.text());
    }
    let view = c.get("j").await;
    assert_eq!((view["state"].as_str(), view["activations"].as_u64()), (Some("executing"), Some(1)), "{view}");
}
