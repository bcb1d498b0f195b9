//! Anti-entropy and expiry where the models' bounds (one key, small values)
//! cannot reach: a chunk filled by records the other side already holds,
//! and a record committed after its expiry. Found by a review on
//! 2026-12-07.

use super::net::{C, Net, P1, P2, Weather};
use crate::handoff::{Body, Epoch, Key, Message, Record, Stamp, Value, Version, WriteId, WriteReply};

fn committed(net: &Net, req: crate::handoff::ClientRequestId) -> bool {
    net.replies_to(req).iter().any(|r| matches!(r, WriteReply::Committed { .. }))
}

/// A small key after "a" in key order, in the same digest bucket as "a".
fn in_the_bucket_of_a() -> String {
    let bucket = |k: &str| crate::handoff::memory::bucket(&Key::new(k).unwrap());
    (0..100_000).map(|i| format!("b{i}")).find(|k| bucket(k) == bucket("a")).unwrap()
}

/// Whether C and P2 come to hold a record only P1 was given (a write whose
/// push to P2 was lost, say), after `large`: a record of a whole chunk that
/// every replica holds, earlier in key order in the same digest bucket.
fn gossip_brings_what_only_p1_holds(large: bool) -> (bool, bool) {
    let mut net = Net::new(11, Weather::CALM);
    assert!(net.run_until(30_000, Net::all_ready));
    if large {
        let req = net.put("a", &vec![7u8; 1_048_500], 1);
        assert!(net.run_until(5_000, |n| committed(n, req)));
        net.run_for(20_000);
        let a = Key::new("a").unwrap();
        assert!([C, P1, P2].iter().all(|&r| net.replica(r).memory().get(&a).is_some()));
    }
    let c = net.replica(C);
    let (generation, instance) = (c.generation(), c.instance());
    let record = Record {
        stamp: Stamp { ep: Epoch(1), ver: Version(1_000) },
        wid: WriteId(99),
        value: Value::Bytes(b"x".to_vec()),
        expires_at: None,
        fp: None,
    };
    let key = Key::new(in_the_bucket_of_a()).unwrap();
    net.inject(Message::new(generation, C, P1, Body::Push { instance, key: key.clone(), record }));
    net.run_for(2_000);
    assert!(net.replica(P1).memory().get(&key).is_some());
    net.run_for(120_000); // 24 gossip periods
    (net.replica(C).memory().get(&key).is_some(), net.replica(P2).memory().get(&key).is_some())
}

#[test]
fn gossip_converges() {
    assert_eq!(gossip_brings_what_only_p1_holds(false), (true, true));
}

/// Each answer to a digest used to start at the bucket's first key: the
/// large record, which the asker holds, filled every answer and the small
/// one never travelled (docs/handoff.md 5.10).
#[test]
fn gossip_converges_past_a_chunk_the_other_side_holds() {
    assert_eq!(gossip_brings_what_only_p1_holds(true), (true, true));
}

/// A record that expires before its write commits (1 ms to live) is
/// deleted within a retry interval, not when the expiry timer armed for a
/// later record (a day away) fires: until then it counts against the
/// budget.
#[test]
fn a_record_expired_by_its_commit_is_deleted_soon() {
    let mut net = Net::new(12, Weather::CALM);
    assert!(net.run_until(30_000, Net::all_ready));
    let long = net.put_with(None, "long", b"v", 1, None, Some(24 * 3600 * 1000));
    assert!(net.run_until(5_000, |n| committed(n, long)));
    let short = net.put_with(None, "short", b"v", 2, None, Some(1));
    assert!(net.run_until(5_000, |n| committed(n, short)));
    net.run_for(60_000);
    let held = net.replica(C).memory().get(&Key::new("short").unwrap()).cloned();
    assert!(held.as_ref().is_none_or(Record::is_tombstone), "still held a minute after it expired: {held:?}");
}
