//! The reaper works in bounded batches: 10,000 expired claims are reaped
//! while requests for other claims keep being answered in between passes.

use std::time::{Duration, Instant};

use e2e::Store;
use e2e::claims::Claims;

const CLAIMS: u64 = 10_000;
/// The target for a GET of another claim while the reaper works, checked
/// for the 95th percentile: all but the slowest few of the 120-210 GETs a
/// run sends. The slowest GET is checked against half the time the reaping
/// took: the GETs are sent one after another, so a reaper that held the
/// object for its whole queue would leave one GET waiting for nearly all of
/// it. Measured against `cargo xtask dev` on the 2-core machine
/// (2026-12-04): quiet, eight runs reaped in 1.3-2.3 s with every GET
/// within 100 ms (p99 24-54 ms, the slowest 26-70 ms); with two CPU hogs
/// beside it, three runs had p99 82-104 ms and the slowest 116-161 ms:
/// single stalls of a saturated local runtime, which the percentile
/// leaves out and the half-the-reaping bound still catches if the reaper
/// held the object.
const GET_TARGET: Duration = Duration::from_millis(100);

#[tokio::test]
async fn ten_thousand_expired_claims_are_reaped_while_gets_of_other_claims_answer() {
    let c = Claims::fresh("claims-reap-10k").await;
    let s = Store::from_env();
    for i in 0..4 {
        assert_eq!(c.create(&format!("other-{i}"), 1, "w", 600_000).await.status, 201);
    }
    let ns = e2e::enc(&c.ns);
    // The reservations expire 3 s after the bulk create; the GETs start half
    // a second before, whatever the warm-up below took (a slow first lease
    // read once left the reaper nearly done before the first GET).
    let expire_soon = tokio::time::Instant::now() + Duration::from_millis(2500);
    let bulk =
        s.request("POST", &format!("/v1/{ns}/_test/claims?count={CLAIMS}&reservation_ttl_ms=3000"), None, &[]).await;
    assert_eq!(bulk.status, 200, "{}", bulk.text());
    let count = || async { s.request("GET", &format!("/v1/{ns}/_test/claims"), None, &[]).await.json() };
    assert_eq!(count().await["authorized"].as_u64(), Some(CLAIMS + 4));
    // Warm the path (the namespace's replicas start on the first lease read).
    c.get("other-0").await;
    tokio::time::sleep_until(expire_soon).await;

    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut i = 0;
    let reaped_all = loop {
        let t = Instant::now();
        let view = c.get(&format!("other-{}", i % 4)).await;
        latencies.push(t.elapsed());
        assert_eq!(view["state"], "authorized", "{view}");
        i += 1;
        if i % 10 == 0 {
            let n = count().await;
            if n["reaped"].as_u64() == Some(CLAIMS) {
                break n;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "not reaped in 2 minutes: {}", count().await);
    };
    latencies.sort();
    let max = latencies.last().copied().unwrap_or_default();
    let p95 = latencies[latencies.len() * 95 / 100];
    let p99 = latencies[latencies.len() * 99 / 100];
    println!(
        "reaped {CLAIMS} claims in {:?}; {} GETs meanwhile, p50 {:?}, p95 {p95:?}, p99 {p99:?}, max {max:?}; slowest {:?}",
        started.elapsed(),
        latencies.len(),
        latencies[latencies.len() / 2],
        &latencies[latencies.len().saturating_sub(5)..]
    );
    assert_eq!(reaped_all["authorized"].as_u64(), Some(4), "{reaped_all}");
    assert!(latencies.len() >= 20, "too few GETs to show anything: {}", latencies.len());
    let reaping = started.elapsed();
    assert!(p95 <= GET_TARGET, "the 95th percentile GET took {p95:?} while the reaper worked");
    assert!(max < reaping / 2, "a GET took {max:?} of the {reaping:?} the reaping took: the reaper held the object");
}
