//! Linearizable GETs on workerd: a GET is answered only after a peer
//! confirmed that the coordinator is current (docs/handoff.md 5.17). With
//! both peers paused nobody can confirm, so the GET gets a clear 503
//! `not_confirmed` with `Retry-After` after the confirmation wait, never a
//! possibly stale value; once a peer answers again, the same GET succeeds.

use std::time::{Duration, Instant};

use e2e::{Found, Store};

const PAUSE_MS: u64 = 8000;

#[tokio::test]
async fn a_get_that_no_peer_can_confirm_is_a_503_not_a_guess() {
    let s = Store::from_env();
    let ns = s.new_ns("reads-unconfirmed").await;
    e2e::Ack::parse(&s.put(&ns, "k", b"v").await);
    s.wait_ready(&ns, Duration::from_secs(60)).await;
    s.pause(&ns, "r1", PAUSE_MS).await;
    s.pause(&ns, "r2", PAUSE_MS).await;
    let started = Instant::now();
    let resp = s.get(&ns, "k").await;
    let waited = started.elapsed();
    resp.expect_error(503, "not_confirmed");
    assert!(resp.header("retry-after").is_some(), "503 without Retry-After");
    assert!(waited >= Duration::from_secs(4), "answered after {waited:?}: it did not wait for a confirmation");
    // The pause ends; the next GET is confirmed and answered.
    tokio::time::sleep(Duration::from_millis(PAUSE_MS)).await;
    let found = Found::parse(&s.get(&ns, "k").await);
    assert_eq!(found.value, b"v");
}
