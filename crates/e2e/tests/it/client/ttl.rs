//! TTLs: a key with one reads as absent once it expires (and is not
//! listed), a GET reports when it expires, and a PUT without one clears it.

use std::time::{Duration, SystemTime};

use handoff_client::{Error, PutOptions};

use super::fresh_ns;

const TTL: Duration = Duration::from_millis(1500);
/// Past the TTL with room for the time between the client and the store.
const PAST_TTL: Duration = Duration::from_millis(2500);
/// How far the store's clock may be from this one (same machine here).
const CLOCKS: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_key_reads_as_absent_once_its_ttl_runs_out() {
    let ns = fresh_ns("ttl").await;
    let before = SystemTime::now();
    let written = ns.put("k", "v", PutOptions::new().ttl(TTL)).await.unwrap();
    let after = SystemTime::now();
    let read = ns.get("k").await.unwrap().expect("present before its TTL");
    assert_eq!(read.expires_at, written.expires_at, "the PUT and the GET report the same expiry");
    let expires_at = read.expires_at.expect("a key with a TTL has an expiry");
    assert!(expires_at > before + TTL - CLOCKS && expires_at < after + TTL + CLOCKS, "{expires_at:?}");
    ns.put("stays", "v", PutOptions::new()).await.unwrap();

    tokio::time::sleep(PAST_TTL).await;
    assert_eq!(ns.get("k").await.unwrap(), None);
    let listed: Vec<String> = ns.list_all("").await.unwrap().into_iter().map(|l| l.key).collect();
    assert_eq!(listed, ["stays"], "an expired key is not listed");
    // Expired is absent: If-Match on the old version fails without ETag,
    // and a create applies.
    match ns.put("k", "w", PutOptions::new().if_match(written.etag)).await {
        Err(Error::PreconditionFailed { current: None }) => {}
        other => panic!("expected 412 without ETag, got {other:?}"),
    }
    ns.put("k", "new", PutOptions::new().if_absent()).await.unwrap();
    assert_eq!(ns.get("k").await.unwrap().unwrap().value, b"new");
}

#[tokio::test]
async fn a_put_without_ttl_clears_it() {
    let ns = fresh_ns("ttl-clear").await;
    ns.put("k", "v", PutOptions::new().ttl(TTL)).await.unwrap();
    let written = ns.put("k", "w", PutOptions::new()).await.unwrap();
    assert_eq!(written.expires_at, None);
    tokio::time::sleep(PAST_TTL).await;
    let read = ns.get("k").await.unwrap().expect("no TTL any more");
    assert_eq!((read.value.as_slice(), read.expires_at), (&b"w"[..], None));
}

#[tokio::test]
async fn a_ttl_out_of_range_is_refused() {
    let ns = fresh_ns("ttl-range").await;
    for ttl in [Duration::ZERO, Duration::from_secs(30 * 86_400 + 1)] {
        match ns.put("k", "v", PutOptions::new().ttl(ttl)).await {
            Err(Error::Http { status: 400, .. }) => {}
            other => panic!("TTL {ttl:?}: expected 400, got {other:?}"),
        }
    }
    assert_eq!(ns.get("k").await.unwrap(), None);
}
