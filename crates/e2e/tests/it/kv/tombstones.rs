//! Tombstone collection: once a namespace is quiet and the replicas'
//! digests agree, the coordinator raises the floor and every replica drops
//! the tombstones below it (docs/handoff.md 5.16). The deleted keys must
//! stay deleted afterwards, through the eviction of each replica in turn
//! (a recovering replica reseeds from peers that no longer hold the
//! tombstones, and pushes or gossip from before the delete are refused at
//! the floor).

use std::time::{Duration, Instant};

use e2e::{Found, Store, replica_field};
use serde_json::Value;

const RECOVER: Duration = Duration::from_secs(30);
/// Digests go every 5 s; the floor rises after a quiet round in which they
/// agree.
const COLLECTED_WITHIN: Duration = Duration::from_secs(90);
const KEYS: usize = 6;
const DELETED: [usize; 3] = [0, 2, 4];

fn key(i: usize) -> String {
    format!("t{i}")
}

fn value(i: usize) -> Vec<u8> {
    format!("value {i}").into_bytes()
}

fn tombstones(status: &Value, r: &str) -> Option<u64> {
    replica_field(status, r, "tombstones").as_u64()
}

async fn check_keys(s: &Store, ns: &str) {
    for i in 0..KEYS {
        let resp = s.get_settled(ns, &key(i), RECOVER).await;
        if DELETED.contains(&i) {
            resp.expect_error(404, "key_not_found");
        } else {
            assert_eq!(resp.status, 200, "{}: {}", key(i), resp.text());
            assert!(Found::parse(&resp).value == value(i), "{} changed", key(i));
        }
    }
}

#[tokio::test]
async fn deleted_keys_stay_deleted_after_their_tombstones_are_collected_and_every_replica_is_evicted() {
    let s = Store::from_env();
    let ns = s.new_ns("tombstones").await;
    for i in 0..KEYS {
        let ack = s.put_until_ack(&ns, &key(i), &value(i), &e2e::new_wid(), RECOVER).await;
        assert!(ack.is_some(), "{} not acknowledged", key(i));
    }
    for i in DELETED {
        assert_eq!(s.delete(&ns, &key(i)).await.status, 200, "delete {}", key(i));
    }
    let status = s.wait_ready(&ns, RECOVER).await;
    assert!(
        ["r0", "r1", "r2"].iter().any(|r| tombstones(&status, r).is_some_and(|n| n > 0)),
        "no tombstone held right after the deletes: {status}"
    );

    // Quiet: the floor rises and every replica drops its tombstones.
    let started = Instant::now();
    loop {
        let status = s.status(&ns).await;
        if ["r0", "r1", "r2"].iter().all(|r| tombstones(&status, r) == Some(0)) {
            break;
        }
        assert!(started.elapsed() < COLLECTED_WITHIN, "tombstones not collected within {COLLECTED_WITHIN:?}: {status}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    check_keys(&s, &ns).await;

    for r in ["r1", "r2", "r0"] {
        s.evict(&ns, r).await;
        s.wait_ready(&ns, RECOVER).await;
        check_keys(&s, &ns).await;
    }
}
