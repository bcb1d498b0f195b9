//! The lock recipe end to end: one holder at a time, renewal keeps the
//! TTL, a holder that let its lease run out learns it by a 412, release
//! frees the lock for the next.

use std::time::{Duration, Instant};

use handoff_client::Error;
use handoff_client::recipes::Lock;

use super::fresh_ns;

// Long enough that a renewal every quarter of it, each after a request
// and before another, keeps the lease on a loaded machine.
const TTL: Duration = Duration::from_secs(4);

#[tokio::test]
async fn one_holder_at_a_time_and_renewal_keeps_the_ttl() {
    let ns = fresh_ns("lock").await;
    let sent = Instant::now();
    let mut lock = Lock::acquire(&ns, "locks/job", b"a", TTL).await.unwrap().expect("free");
    assert!(lock.valid_until() >= sent + TTL && lock.valid_until() <= Instant::now() + TTL);
    assert!(Lock::acquire(&ns, "locks/job", b"b", TTL).await.unwrap().is_none(), "held by a");

    // Renewing every quarter TTL keeps it past one TTL.
    let first_expiry = ns.get("locks/job").await.unwrap().unwrap().expires_at.expect("a TTL");
    for _ in 0..6 {
        tokio::time::sleep(TTL / 4).await;
        lock.renew().await.unwrap();
        assert!(Lock::acquire(&ns, "locks/job", b"b", TTL).await.unwrap().is_none(), "still held by a");
    }
    let read = ns.get("locks/job").await.unwrap().unwrap();
    assert_eq!(read.value, b"a");
    assert!(read.expires_at.expect("renewal keeps a TTL") > first_expiry);

    lock.release().await.unwrap();
    assert_eq!(ns.get("locks/job").await.unwrap(), None);
    let b = Lock::acquire(&ns, "locks/job", b"b", TTL).await.unwrap().expect("free after release");
    b.release().await.unwrap();
}

#[tokio::test]
async fn a_holder_whose_lease_ran_out_learns_it_by_a_412() {
    let ns = fresh_ns("lock-lost").await;
    let mut a = Lock::acquire(&ns, "l", b"a", TTL).await.unwrap().expect("free");
    tokio::time::sleep(TTL + Duration::from_secs(1)).await;
    assert!(Instant::now() > a.valid_until(), "a knows its lease ended");
    let b = Lock::acquire(&ns, "l", b"b", Duration::from_secs(30)).await.unwrap().expect("free once a's TTL ran out");

    assert!(matches!(a.renew().await, Err(Error::PreconditionFailed { current: Some(_) })), "a's renewal is refused");
    assert!(matches!(a.release().await, Err(Error::PreconditionFailed { .. })), "a cannot release b's lock");
    assert_eq!(ns.get("l").await.unwrap().unwrap().value, b"b", "b still holds it");
    b.release().await.unwrap();
    assert_eq!(ns.get("l").await.unwrap(), None);
}
