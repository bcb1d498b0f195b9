//! The lease calls travel as frames on one socket from the claim object to
//! the coordinator `{ns}:r0` (`crate::tunnel` in the Worker), not as one
//! HTTP request each; a lost socket (its coordinator evicted) costs no
//! call: the calls go over HTTP until a new socket is open.

use std::time::{Duration, Instant};

use e2e::claims::{Claims, accepted};
use e2e::replica_field;

const LONG: u64 = 60_000;
const ACTIVATIONS: u64 = 20;

/// Creates and activates claims `{prefix}-0..n`, each accepted.
async fn activate_many(c: &Claims, prefix: &str, n: u64) {
    for i in 0..n {
        let claim = format!("{prefix}-{i}");
        assert_eq!(c.create(&claim, 1, "w1", LONG).await.status, 201, "{claim}");
        accepted(&c.activate(&claim, &format!("{claim}-act"), 1, "w1", LONG).await);
    }
}

/// r0's `calls_in_frames`.
async fn calls_in_frames(c: &Claims) -> u64 {
    let status = c.store.status(&c.ns).await;
    replica_field(&status, "r0", "calls_in_frames").as_u64().unwrap_or_else(|| panic!("no calls_in_frames: {status}"))
}

#[tokio::test]
async fn lease_calls_go_as_frames_and_survive_the_coordinators_eviction() {
    let c = Claims::fresh("claims-link").await;
    activate_many(&c, "a", ACTIVATIONS).await;
    // The first call opens the link, the second the socket (both over
    // HTTP); a few more may go over HTTP while the socket opens.
    let framed = calls_in_frames(&c).await;
    assert!(framed >= ACTIVATIONS / 2, "{framed} of {ACTIVATIONS} lease creates came as frames");

    // The evicted coordinator's socket goes with it: the calls after it
    // are answered (over HTTP, then on a new socket), none is lost.
    c.store.evict(&c.ns, "r0").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    for round in 0.. {
        activate_many(&c, &format!("b{round}"), 3).await;
        if calls_in_frames(&c).await > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no call came as a frame after the eviction");
    }
}
