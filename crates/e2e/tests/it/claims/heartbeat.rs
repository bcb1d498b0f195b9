//! Heartbeats keep the executing worker's lease alive; without them it
//! expires, an expired lease is never renewed or accepted again, and the
//! reaper reaps the attempt.

use std::time::{Duration, Instant};

use e2e::claims::{Claims, accepted, outcome, rejected};
use serde_json::Value;

const LONG: u64 = 60_000;
/// The lease's lifetime; heartbeats come every second, well inside it.
const LEASE_MS: u64 = 5_000;

#[tokio::test]
async fn heartbeats_keep_the_lease_and_their_absence_loses_it() {
    let c = Claims::fresh("claims-heartbeat").await;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    let hb = c.heartbeat("j", 1, "w1", LEASE_MS).await;
    assert_eq!(outcome(&hb), ("refused".into(), Some("not_executing".into())), "before the activation");
    accepted(&c.activate("j", "k", 1, "w1", LEASE_MS).await);

    // Twice the lease's lifetime, renewed every second.
    let started = Instant::now();
    let mut last = 0;
    while started.elapsed() < Duration::from_millis(2 * LEASE_MS) {
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        let hb = c.heartbeat("j", 1, "w1", LEASE_MS).await;
        assert_eq!(outcome(&hb), ("renewed".into(), None), "{}", hb.text());
        let expires_at = hb.json()["lease"]["expires_at"].as_u64().expect("expires_at");
        assert!(expires_at >= last, "renewals move the deadline forward: {last} then {expires_at}");
        last = expires_at;
    }
    accepted(&c.activate("j", "k", 1, "w1", LEASE_MS).await);
    assert_eq!(c.get("j").await["lease"]["worker"], "w1");

    // No heartbeat for longer than the lease: it expires for good, and the
    // reaper reaps the attempt (`ReapExecuting`), which its worker is told.
    let view = c.wait_state("j", "reaped", Duration::from_millis(LEASE_MS + 6_000)).await;
    assert_eq!((view["lease"].clone(), view["activations"].as_u64()), (Value::Null, Some(1)), "{view}");
    let hb = c.heartbeat("j", 1, "w1", LEASE_MS).await;
    assert_eq!(outcome(&hb), ("refused".into(), Some("reaped".into())), "{}", hb.text());
    rejected(&c.activate("j", "k", 1, "w1", LEASE_MS).await, "reaped");
    rejected(&c.activate("j", "k2", 1, "w1", LEASE_MS).await, "reaped");
    let view = c.get("j").await;
    assert_eq!((view["state"].as_str(), view["activations"].as_u64()), (Some("reaped"), Some(1)), "{view}");
}
