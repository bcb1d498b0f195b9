//! Evictions (the `_test/evict` hook resets a replica's Durable Object so
//! its memory is gone, as on a real eviction): of each replica, the
//! coordinator included, between writes; the namespace recovers and serves.

use std::time::Duration;

use e2e::{Ack, Found, Store, replica_field};

const RECOVER: Duration = Duration::from_secs(25);

async fn write_all(s: &Store, ns: &str, round: usize) -> Vec<(String, Vec<u8>, Ack)> {
    let mut out = Vec::new();
    for k in 0..8 {
        let key = format!("k{k}");
        let value = format!("round {round} value {k}").into_bytes();
        let ack = s.put_until_ack(ns, &key, &value, &e2e::new_wid(), RECOVER).await.expect("write acknowledged");
        out.push((key, value, ack));
    }
    out
}

async fn check_all(s: &Store, ns: &str, written: &[(String, Vec<u8>, Ack)]) {
    for (key, value, ack) in written {
        let found = Found::parse(&s.get_settled(ns, key, RECOVER).await);
        assert_eq!(&found.value, value, "{key}");
        assert_eq!(found.stamp(), ack.stamp(), "{key}");
        assert_eq!(found.wid, ack.wid, "{key}");
    }
}

#[tokio::test]
async fn each_replica_evicted_between_writes() {
    let s = Store::from_env();
    let ns = s.new_ns("evict-each").await;
    let mut written = write_all(&s, &ns, 0).await;
    s.wait_ready(&ns, RECOVER).await;
    for (round, r) in ["r1", "r2", "r0", "r0", "r1"].into_iter().enumerate() {
        let before = s.status(&ns).await;
        let epoch_before = replica_field(&before, "r0", "epoch").as_u64().unwrap_or(0);
        let evicted = s.evict(&ns, r).await;
        assert_ne!(evicted["before"], evicted["after"], "{evicted}");
        assert_eq!(evicted["evicted"], r);
        // Right after the reset the replica has lost its memory; whatever
        // it reports, the data must come back from the others.
        check_all(&s, &ns, &written).await;
        let after = s.wait_ready(&ns, RECOVER).await;
        let epoch_after = replica_field(&after, "r0", "epoch").as_u64().unwrap_or(0);
        if r == "r0" {
            assert!(epoch_after > epoch_before, "a new coordinator takes a new epoch: {epoch_before} -> {epoch_after}");
        } else {
            assert_eq!(epoch_after, epoch_before, "a peer eviction does not change the epoch");
        }
        // Every replica holds every key again (reseeded / collected).
        for name in ["r0", "r1", "r2"] {
            assert_eq!(replica_field(&after, name, "keys"), 8, "{name} after evicting {r}: {after}");
        }
        written = write_all(&s, &ns, round + 1).await;
        check_all(&s, &ns, &written).await;
    }
    s.save_trace(&ns).await;
}

#[tokio::test]
async fn all_three_evicted_the_namespace_restarts_and_serves() {
    let s = Store::from_env();
    let ns = s.new_ns("evict-all").await;
    write_all(&s, &ns, 0).await;
    let gen_before = replica_field(&s.wait_ready(&ns, RECOVER).await, "r0", "generation").clone();
    // At once: evicted one after the other, a peer is back (reseeded from
    // the coordinator, in well under a second) before the next goes, and
    // the namespace lives on.
    s.evict_all(&ns).await;
    // Every replica that held the data was evicted: losing it is allowed.
    // The namespace must come back and serve.
    let written = write_all(&s, &ns, 1).await;
    check_all(&s, &ns, &written).await;
    let after = s.wait_ready(&ns, RECOVER).await;
    assert_ne!(
        replica_field(&after, "r0", "generation"),
        &gen_before,
        "a namespace that died restarts as a new generation"
    );
    s.save_trace(&ns).await;
}

/// All three evicted one after another while the coordinator collects: r2
/// drops peer messages, so the new r0 takes r1's snapshot (and the
/// generation) only; then r1 and r2 are evicted before r2 answered. Nobody
/// is ready, and the coordinator goes on with what it collected, in the
/// same generation (docs/handoff.md 5.8), instead of waiting for good for a
/// snapshot that no replica can give (it did: collecting, both peers
/// recovering, every request a 503).
#[tokio::test]
async fn all_three_evicted_in_turn_while_the_coordinator_collects_keeps_what_it_collected() {
    let s = Store::from_env();
    let ns = s.new_ns("evict-turn").await;
    let written = write_all(&s, &ns, 0).await;
    // Both peers hold every write (a write commits on the first ack).
    let deadline = std::time::Instant::now() + RECOVER;
    let before = loop {
        let st = s.wait_ready(&ns, RECOVER).await;
        if ["r1", "r2"].iter().all(|r| replica_field(&st, r, "keys") == written.len()) {
            break st;
        }
        assert!(std::time::Instant::now() < deadline, "the peers never held every write: {st}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    s.pause(&ns, "r2", 20_000).await;
    s.evict(&ns, "r0").await;
    // A request starts the new r0 (and waits out its recovery: a 503).
    s.get(&ns, "k0").await.expect_error(503, "recovering");
    let st = s.status(&ns).await;
    assert_eq!(replica_field(&st, "r0", "status"), "collect", "{st}");
    assert_eq!(replica_field(&st, "r0", "generation"), replica_field(&before, "r0", "generation"), "{st}");
    s.evict(&ns, "r1").await;
    s.evict(&ns, "r2").await;
    check_all(&s, &ns, &written).await;
    let after = s.wait_ready(&ns, RECOVER).await;
    assert_eq!(replica_field(&after, "r0", "generation"), replica_field(&before, "r0", "generation"), "{after}");
    s.save_trace(&ns).await;
}

#[tokio::test]
async fn recovering_coordinator_answers_503_with_retry_after() {
    let s = Store::from_env();
    let ns = s.new_ns("evict-503").await;
    let ack = Ack::parse(&s.put(&ns, "k", b"kept").await);
    s.wait_ready(&ns, RECOVER).await;
    // r1 drops every peer message for 20 s, so a new coordinator cannot
    // finish collecting (it needs both peers) until the pause ends (long
    // enough for the requests below on a loaded 2-core machine).
    s.pause(&ns, "r1", 20_000).await;
    s.evict(&ns, "r0").await;
    for resp in [s.get(&ns, "k").await, s.put(&ns, "k2", b"v").await] {
        resp.expect_error(503, "recovering");
        let retry_after: u64 = resp.header("retry-after").and_then(|v| v.parse().ok()).expect("Retry-After in seconds");
        assert!((1..=60).contains(&retry_after), "{retry_after}");
    }
    let st = s.status(&ns).await;
    assert!(matches!(replica_field(&st, "r0", "status").as_str(), Some("collect" | "announce")), "{st}");
    // Once the peer answers again the namespace serves, with the data.
    let found = Found::parse(&s.get_settled(&ns, "k", RECOVER).await);
    assert_eq!(found.value, b"kept");
    assert_eq!(found.stamp(), ack.stamp());
    Ack::parse(&s.put(&ns, "k2", b"v").await);
}

#[tokio::test]
async fn writes_commit_with_one_peer_down() {
    let s = Store::from_env();
    let ns = s.new_ns("one-peer").await;
    Ack::parse(&s.put(&ns, "warm", b"up").await);
    // With r2 unreachable, a write still commits on r1's ack.
    s.pause(&ns, "r2", 3_000).await;
    let ack = Ack::parse(&s.put(&ns, "k", b"held by r0 and r1").await);
    assert_eq!(Found::parse(&s.get(&ns, "k").await).stamp(), ack.stamp());
}

#[tokio::test]
async fn writes_and_reads_go_on_when_the_preferred_peer_is_down() {
    let s = Store::from_env();
    let ns = s.new_ns("preferred-down").await;
    Ack::parse(&s.put(&ns, "warm", b"up").await);
    let st = s.status(&ns).await;
    assert_eq!(replica_field(&st, "r0", "preferred_peer").as_str(), Some("r1"), "{st}");
    // The coordinator waits for r1 and holds r2's copies back; with r1
    // unreachable a delivery to it fails, r2 becomes the peer it waits for,
    // and writes and reads commit on r2's answers.
    s.pause(&ns, "r1", 3_000).await;
    let ack = Ack::parse(&s.put(&ns, "k", b"held by r0 and r2").await);
    assert_eq!(Found::parse(&s.get(&ns, "k").await).stamp(), ack.stamp());
    let st = s.status(&ns).await;
    assert_eq!(replica_field(&st, "r0", "preferred_peer").as_str(), Some("r2"), "{st}");
    assert!(replica_field(&st, "r2", "keys").as_u64() >= Some(2), "r2 holds the writes: {st}");
}

#[tokio::test]
async fn evict_hook_errors() {
    let s = Store::from_env();
    let ns = s.new_ns("evict-errors").await;
    s.request("POST", &format!("/v1/{ns}/_test/evict/r3"), None, &[]).await.expect_error(400, "invalid_replica");
    s.request("POST", &format!("/v1/{ns}/_test/evict/"), None, &[]).await.expect_error(400, "invalid_replica");
    s.request("POST", "/v1/a%2Fb/_test/evict/r0", None, &[]).await.expect_error(400, "invalid_namespace");
    s.request("POST", &format!("/v1/{ns}/_test/pause/r1?ms=0"), None, &[]).await.expect_error(400, "bad_request");
}

/// The hop between replicas carries a batch up to 1 MB as one WebSocket
/// frame and a bigger one over HTTP (docs/operating.md 4.7): values
/// on either side of that line replicate, and come back after the
/// coordinator and then a peer are evicted (the collect's and the
/// reseed's chunks, up to 1 MiB each, go back as the peers' own
/// deliveries when they do not fit in an answer frame). Both ways work
/// here; that a frame stays under the platform's limit is the constant's
/// job (`socket::MAX_FRAME_BYTES`): the local workerd also took 2 MB.
#[tokio::test]
async fn values_either_side_of_the_frame_limit_replicate_and_recover() {
    let s = Store::from_env();
    let ns = s.new_ns("evict-frames").await;
    let mut written = Vec::new();
    for (k, len) in [("fits", 990_000), ("over", 1_000_000), ("max", 1024 * 1024)] {
        let value: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let ack = s.put_until_ack(&ns, k, &value, &e2e::new_wid(), RECOVER).await.expect("write acknowledged");
        written.push((k.to_string(), value, ack));
    }
    check_all(&s, &ns, &written).await;
    for r in ["r0", "r1"] {
        s.evict(&ns, r).await;
        check_all(&s, &ns, &written).await;
        let after = s.wait_ready(&ns, RECOVER).await;
        for name in ["r0", "r1", "r2"] {
            assert_eq!(replica_field(&after, name, "keys"), 3, "{name} after evicting {r}: {after}");
        }
    }
}
