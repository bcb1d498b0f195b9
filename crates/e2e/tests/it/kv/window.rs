//! The coordinator's pending window under paused peers: a burst of ~1 MB
//! PUTs while both peers are paused fills the window (4 MiB of
//! uncommitted writes); the writes beyond it get 503 + `Retry-After`
//! (`overloaded`), status shows the pending bytes within the bound, the
//! isolate is not reset, and every acknowledged write is readable after.

use std::time::Duration;

use e2e::{Found, Store, replica_field};

const WRITES: usize = 10;
const VALUE_BYTES: usize = 1_000_000;
/// The protocol's default pending window in bytes (`max_pending_bytes`).
const WINDOW_BYTES: u64 = 4 * 1024 * 1024;
const PAUSE_MS: u64 = 4000;

#[tokio::test]
async fn a_full_pending_window_answers_503_and_stays_bounded() {
    let s = Store::from_env();
    let ns = s.new_ns("window").await;
    // A created namespace starts its replicas on its first client request.
    e2e::Ack::parse(&s.put(&ns, "warm", b"up").await);
    let before = s.wait_ready(&ns, Duration::from_secs(60)).await;
    s.pause(&ns, "r1", PAUSE_MS).await;
    s.pause(&ns, "r2", PAUSE_MS).await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..WRITES {
        let ns = ns.clone();
        tasks.spawn(async move {
            let value = vec![u8::try_from(i).unwrap_or(0); VALUE_BYTES];
            (i, value.clone(), Store::from_env().put(&ns, &format!("k{i}"), &value).await)
        });
    }
    // While the peers are paused: the window holds at most its bound.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let during = s.status(&ns).await;
    let pending_bytes = replica_field(&during, "r0", "pending_bytes").as_u64().unwrap_or(u64::MAX);
    assert!(pending_bytes <= WINDOW_BYTES, "pending {pending_bytes} bytes: {during}");
    let mut acked = Vec::new();
    let mut overloaded = 0;
    while let Some(done) = tasks.join_next().await {
        let (i, value, resp) = done.expect("task");
        match resp.status {
            200 => acked.push((i, value)),
            503 => {
                assert!(resp.header("retry-after").is_some(), "k{i}: 503 without Retry-After");
                if resp.error_code() == "overloaded" {
                    overloaded += 1;
                }
            }
            other => panic!("k{i}: {other} {}", resp.text()),
        }
    }
    assert!(overloaded > 0, "no write was refused by the full window ({} acked)", acked.len());
    // No isolate reset: the same object instances.
    let after = s.wait_ready(&ns, Duration::from_secs(60)).await;
    for r in ["r0", "r1", "r2"] {
        assert_eq!(replica_field(&after, r, "object"), replica_field(&before, r, "object"), "{r} was reset");
    }
    for (i, value) in acked {
        let found = Found::parse(&s.get_settled(&ns, &format!("k{i}"), Duration::from_secs(15)).await);
        assert!(found.value == value, "k{i} changed");
    }
}
