//! An idle namespace survives a period longer than the hibernation
//! timeout: the replicas' heartbeats keep their Durable Objects alive.
//!
//! The control makes the test able to fail for the right reason: the
//! in-memory benchmark baseline (one Durable Object, no heartbeats) is
//! written at the same time and must have lost its data after the same
//! idle period. If it has not, hibernation did not happen and the test
//! proved nothing, so it fails.

use std::time::Duration;

use e2e::{Ack, Found, Store, replica_field};

/// workerd hibernates an object after about 10 s without work (its memory
/// is then gone: seen locally at 14 s).
const IDLE: Duration = Duration::from_secs(25);

#[tokio::test]
async fn idle_namespace_keeps_its_data() {
    let s = Store::from_env();
    let ns = s.new_ns("idle").await;
    let mut acks = Vec::new();
    for k in ["a", "b", "c"] {
        acks.push((k, Ack::parse(&s.put(&ns, k, format!("value of {k}").as_bytes()).await)));
    }
    let control = s.request("PUT", &format!("/_bench/mem/{ns}/kv/a"), Some(b"control".to_vec()), &[]).await;
    assert_eq!(control.status, 200, "control write: {}", control.text());
    let before = s.wait_ready(&ns, Duration::from_secs(10)).await;

    tokio::time::sleep(IDLE).await;

    let control = s.request("GET", &format!("/_bench/mem/{ns}/kv/a"), None, &[]).await;
    assert_eq!(
        control.status,
        404,
        "control: the in-memory baseline kept its data through {IDLE:?} idle, so hibernation did not happen and \
         this test proves nothing: {}",
        control.text()
    );
    for (k, ack) in &acks {
        let found = Found::parse(&s.get(&ns, k).await);
        assert_eq!(found.value, format!("value of {k}").as_bytes());
        assert_eq!(found.stamp(), ack.stamp());
    }
    // No replica was restarted meanwhile (same object instances), and the
    // keepalive traffic flowed: each replica kept receiving heartbeats (one
    // every 2 s from each of the two others, plus gossip) while no client
    // called. Locally a pending timer alone already prevents hibernation;
    // on the platform an object that receives no request is still evicted
    // after 70-140 s, and these incoming heartbeats are what prevents that.
    let after = s.status(&ns).await;
    let received = |st: &serde_json::Value, r: &str| replica_field(st, r, "msgs_in").as_u64().unwrap_or(0);
    for r in ["r0", "r1", "r2"] {
        assert_eq!(
            replica_field(&after, r, "object"),
            replica_field(&before, r, "object"),
            "{r} was restarted: {after}"
        );
        assert!(replica_field(&after, r, "uptime_ms").as_u64().unwrap_or(0) >= IDLE.as_millis() as u64, "{after}");
        let during = received(&after, r).saturating_sub(received(&before, r));
        assert!(
            during >= 20,
            "{r} received only {during} replica messages in {IDLE:?} idle (heartbeats: ~25 expected)"
        );
    }
}
