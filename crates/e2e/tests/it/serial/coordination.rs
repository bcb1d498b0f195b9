//! The coordination primitives under evictions (alone, as the evictions
//! pace needs the machine): 8 clients increment one counter with
//! compare-and-set loops for 30 s while one replica after another is
//! evicted every half second (each once the namespace recovered from the
//! previous eviction): no increment lost, none applied twice; and a key
//! with a TTL is gone within its TTL + 1 s and stays gone through
//! evictions of every replica.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use e2e::Store;
use handoff_client::recipes::{CounterError, increment};
use handoff_client::{Client, PutOptions};

const CLIENTS: usize = 8;
const RUN: Duration = Duration::from_secs(30);
const EVICT_EVERY: Duration = Duration::from_millis(500);
const ROTATION: [&str; 3] = ["r0", "r1", "r2"];
const RECOVER: Duration = Duration::from_secs(20);

fn client() -> Client {
    Client::new(&e2e::base_url(), &e2e::admin_token()).expect("a client of HANDOFF_URL")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_counter_under_evictions_loses_no_increment_and_counts_none_twice() {
    let s = Store::from_env();
    let name = s.new_ns("counter-evictions").await;
    // A read starts the replicas (nothing else does).
    s.get(&name, "hits").await.expect_error(404, "key_not_found");
    s.wait_ready(&name, RECOVER).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let (ns, stop) = (client().namespace(&name), stop.clone());
        tasks.push(tokio::spawn(async move {
            let (mut acked, mut unknown) = (Vec::new(), 0u64);
            while !stop.load(Ordering::SeqCst) {
                match increment(&ns, "hits").await {
                    Ok(value) => acked.push(value),
                    // No definite answer within the client's deadline (it
                    // retries 503s and lost connections with the same
                    // write id): the increment may or may not have counted.
                    Err(CounterError::Store(e)) => {
                        eprintln!("counter: an increment without a definite answer: {e}");
                        unknown += 1;
                    }
                    Err(e) => panic!("increment: {e}"),
                }
            }
            (acked, unknown)
        }));
    }
    let start = Instant::now();
    let mut evictions = 0;
    while start.elapsed() < RUN {
        s.wait_ready(&name, RECOVER).await;
        tokio::time::sleep(EVICT_EVERY).await;
        s.evict(&name, ROTATION[evictions % ROTATION.len()]).await;
        evictions += 1;
    }
    stop.store(true, Ordering::SeqCst);
    let (mut values, mut unknown) = (BTreeSet::new(), 0);
    for task in tasks {
        let (acked, maybe) = task.await.expect("a client task");
        unknown += maybe;
        for value in acked {
            assert!(values.insert(value), "two increments acknowledged with the same value {value}");
        }
    }
    s.wait_ready(&name, RECOVER).await;
    let last = client().namespace(&name).get("hits").await.expect("a read").expect("the counter exists");
    let last: u64 = String::from_utf8_lossy(&last.value).parse().expect("a number");
    let acked = values.len() as u64;
    println!("counter: {acked} increments acknowledged, {unknown} unknown, final value {last}, {evictions} evictions");
    assert!(evictions >= 20, "only {evictions} evictions in {RUN:?}");
    assert!(acked > 0);
    // Every acknowledged increment counted once; an unknown one at most once.
    assert!(last >= acked && last <= acked + unknown, "final {last}, {acked} acknowledged, {unknown} unknown");
    assert!(values.iter().all(|v| *v <= last), "an acknowledged value above the final one");
    if unknown == 0 {
        assert_eq!(last, acked, "the final value is the number of acknowledged increments");
    }
}

#[tokio::test]
async fn a_key_with_a_ttl_is_gone_in_time_and_stays_gone_through_evictions() {
    let s = Store::from_env();
    let name = s.new_ns("ttl-evictions").await;
    let ns = client().namespace(&name);
    let ttl = Duration::from_secs(2);
    let written = ns.put("lease", "me", PutOptions::new().ttl(ttl)).await.expect("a PUT with a TTL");
    let put_at = Instant::now();
    // Each replica evicted once while the key lives, and once after.
    for r in ROTATION {
        s.wait_ready(&name, RECOVER).await;
        s.evict(&name, r).await;
    }
    let gone_by = put_at + ttl + Duration::from_secs(1);
    loop {
        s.wait_ready(&name, RECOVER).await;
        match ns.get("lease").await.expect("a read") {
            None => break,
            Some(found) => {
                assert!(Instant::now() < gone_by, "still there {:?} after its PUT: {found:?}", put_at.elapsed());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    for r in ROTATION {
        s.wait_ready(&name, RECOVER).await;
        s.evict(&name, r).await;
        s.wait_ready(&name, RECOVER).await;
        assert_eq!(ns.get("lease").await.expect("a read"), None, "the expired key came back after evicting {r}");
    }
    assert!(written.expires_at.is_some());
}
