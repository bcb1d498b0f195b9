//! The memory budget (16 MiB of keys, values and tombstones per
//! namespace, the default): a namespace filled to it refuses the next
//! write with a clean 507 and changes nothing; at the budget, each replica
//! evicted in turn recovers through chunked snapshots with every key
//! intact, and a deleted key stays deleted.

use std::time::Duration;

use e2e::{Found, Store, replica_field};

const RECOVER: Duration = Duration::from_secs(30);
/// Values of ~1 MB: 16 fit in the 16 MiB budget, a 17th does not.
const VALUE_BYTES: usize = 1_000_000;
const FITS: usize = 16;

fn value(i: usize) -> Vec<u8> {
    let mut v = vec![u8::try_from(i).unwrap_or(0); VALUE_BYTES];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

async fn check_all(s: &Store, ns: &str, deleted: usize) {
    for i in 0..FITS {
        let resp = s.get_settled(ns, &format!("k{i}"), RECOVER).await;
        if i == deleted {
            resp.expect_error(404, "key_not_found");
        } else {
            assert_eq!(resp.status, 200, "k{i}: {}", resp.text());
            assert!(Found::parse(&resp).value == value(i), "k{i} changed");
        }
    }
}

#[tokio::test]
async fn a_full_namespace_refuses_cleanly_and_recovers_from_every_eviction() {
    let s = Store::from_env();
    let ns = s.new_ns("budget").await;
    for i in 0..FITS {
        let ack = s.put_until_ack(&ns, &format!("k{i}"), &value(i), &e2e::new_wid(), RECOVER).await;
        assert!(ack.is_some(), "k{i} not acknowledged");
    }
    let resp = s.put(&ns, "one-too-many", &value(FITS)).await;
    resp.expect_error(507, "namespace_full");
    s.get(&ns, "one-too-many").await.expect_error(404, "key_not_found");
    let status = s.wait_ready(&ns, RECOVER).await;
    for r in ["r0", "r1", "r2"] {
        let bytes = replica_field(&status, r, "bytes").as_u64().unwrap_or(0);
        let budget = replica_field(&status, r, "budget").as_u64().unwrap_or(0);
        assert_eq!(budget, 16 * 1024 * 1024, "{r}: {status}");
        assert!(bytes >= (FITS * VALUE_BYTES) as u64 && bytes <= budget, "{r} holds {bytes}: {status}");
    }
    // A delete frees a value's bytes (its tombstone costs only the key).
    let deleted = 3;
    assert_eq!(s.delete(&ns, &format!("k{deleted}")).await.status, 200);
    check_all(&s, &ns, deleted).await;
    for r in ["r1", "r2", "r0"] {
        s.evict(&ns, r).await;
        let status = s.wait_ready(&ns, RECOVER).await;
        let bytes = replica_field(&status, r, "bytes").as_u64().unwrap_or(0);
        assert!(bytes >= ((FITS - 1) * VALUE_BYTES) as u64, "{r} recovered {bytes} bytes: {status}");
        check_all(&s, &ns, deleted).await;
    }
}
