//! Conditional writes, expiring keys and listings (HandoffCond) on the test
//! network: the tags, the write id given again, a condition that waits for
//! a pending write or a confirmation, compare-and-set under evictions,
//! expiry across a coordinator's recovery, and listing every key exactly
//! once.

use super::net::{ALL, C, Net, P1, P2, Weather};
use crate::handoff::{
    ClientRequestId, Cond, HandleError, Input, Key, List, ListEntry, MAX_JOINED, MAX_LIST_LIMIT, MAX_TTL_MS, Output,
    Read, Record, Status, Tag, Value, WriteId, WriteReply,
};

fn booted(seed: u64, weather: Weather) -> Net {
    let mut net = Net::new(seed, weather);
    assert!(net.run_until(30_000, Net::all_ready), "first boot did not converge");
    net
}

/// The first answer request `req` got, once it has one (at most 10 s).
fn answer(net: &mut Net, req: ClientRequestId) -> WriteReply {
    assert!(net.run_until(10_000, |n| !n.replies_to(req).is_empty()), "request {req:?} was never answered");
    net.replies_to(req)[0].clone()
}

fn committed_tag(reply: &WriteReply) -> Tag {
    match reply {
        WriteReply::Committed { tag, .. } => *tag,
        other => panic!("not committed: {other:?}"),
    }
}

/// A PUT run to its answer.
fn put(net: &mut Net, key: &str, value: &[u8], wid: u128, cond: Option<Cond>, ttl_ms: Option<u64>) -> WriteReply {
    let req = net.put_with(None, key, value, wid, cond, ttl_ms);
    answer(net, req)
}

/// What a read of `key` sees: its value's record, none if absent (never
/// written, deleted or expired).
fn read_record(net: &mut Net, key: &str) -> Option<Record> {
    match net.read(key) {
        Read::Committed(rec) => rec.filter(|r| !r.is_tombstone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_write_gets_its_own_tag_and_conditions_check_it() {
    let mut net = booted(1, Weather::CALM);
    let first = committed_tag(&put(&mut net, "k", b"v", 1, Some(Cond::IfAbsent), None));
    assert_eq!(read_record(&mut net, "k").map(|r| r.tag()), Some(first));
    // The same bytes again: a new write, a new tag.
    let second = committed_tag(&put(&mut net, "k", b"v", 2, Some(Cond::IfMatch(first)), None));
    assert_ne!(first, second);
    // A stale tag, or If-None-Match on a present key: refused, with the
    // current tag; nothing changes.
    let stale = put(&mut net, "k", b"w", 3, Some(Cond::IfMatch(first)), None);
    assert_eq!(stale, WriteReply::PreconditionFailed { current: Some(second) });
    let present = put(&mut net, "k", b"w", 4, Some(Cond::IfAbsent), None);
    assert_eq!(present, WriteReply::PreconditionFailed { current: Some(second) });
    assert_eq!(read_record(&mut net, "k").map(|r| r.tag()), Some(second));
    // A conditional delete, then the key is absent again.
    let req = net.delete_if("k", 5, Some(first));
    assert_eq!(answer(&mut net, req), WriteReply::PreconditionFailed { current: Some(second) });
    let req = net.delete_if("k", 6, Some(second));
    let deleted = committed_tag(&answer(&mut net, req));
    let gone = put(&mut net, "k", b"x", 7, Some(Cond::IfMatch(deleted)), None);
    assert_eq!(gone, WriteReply::PreconditionFailed { current: None }, "a tombstone is no value to match");
    assert!(matches!(put(&mut net, "k", b"x", 8, Some(Cond::IfAbsent), None), WriteReply::Committed { .. }));
    assert!(net.errors.is_empty(), "{:?}", net.errors);
}

#[test]
fn retries_joining_one_pending_write_are_bounded() {
    let mut net = booted(3, Weather::CALM);
    let first = net.put_with(None, "k", b"v", 12, None, None);
    let joined: Vec<_> = (1..MAX_JOINED).map(|_| net.put_with(None, "k", b"v", 12, None, None)).collect();
    let beyond = net.put_with(None, "k", b"v", 12, None, None);
    assert!(matches!(answer(&mut net, beyond), WriteReply::Overloaded { .. }), "one retry too many");
    let committed = answer(&mut net, first);
    assert!(matches!(committed, WriteReply::Committed { .. }), "{committed:?}");
    for req in joined {
        assert_eq!(answer(&mut net, req), committed, "every joined retry gets the write's answer");
    }
    assert_eq!(put(&mut net, "k", b"v", 12, None, None), committed, "and a retry after it too");
}

#[test]
fn a_write_id_given_again_is_the_first_answer_or_a_conflict() {
    let mut net = booted(2, Weather::CALM);
    let req = net.put_with(None, "k", b"v", 9, Some(Cond::IfAbsent), Some(60_000));
    // While pending: the same request waits with the first.
    let again = net.put_with(None, "k", b"v", 9, Some(Cond::IfAbsent), Some(60_000));
    let first = answer(&mut net, req);
    assert_eq!(answer(&mut net, again), first);
    // After: the same request gets the same answer (not a failed
    // condition: the key is no longer absent, but the write id is checked
    // first).
    assert_eq!(put(&mut net, "k", b"v", 9, Some(Cond::IfAbsent), Some(60_000)), first);
    // Another value, condition or time to live under the same write id.
    for (value, cond, ttl) in [
        (&b"w"[..], Some(Cond::IfAbsent), Some(60_000)),
        (&b"v"[..], None, Some(60_000)),
        (&b"v"[..], Some(Cond::IfAbsent), Some(60_001)),
        (&b"v"[..], Some(Cond::IfAbsent), None),
    ] {
        assert_eq!(put(&mut net, "k", value, 9, cond, ttl), WriteReply::WriteIdReused, "{value:?} {cond:?} {ttl:?}");
    }
    let req = net.delete_if("k", 9, None);
    assert_eq!(answer(&mut net, req), WriteReply::WriteIdReused, "a delete is another request");
    assert_eq!(net.replica(C).status().pending, 0);
}

#[test]
fn a_condition_waits_for_the_pending_write_to_its_key() {
    let mut net = booted(3, Weather::CALM);
    let plain = net.put("k", b"v1", 1);
    // Reaches the coordinator while `plain` is pending: it waits, then holds
    // on `plain`'s record, which it could not have seen before.
    let cas = net.put_with(None, "k", b"v2", 2, Some(Cond::IfAbsent), None);
    let absent_too = net.put_with(None, "k", b"v3", 3, Some(Cond::IfAbsent), None);
    let plain_tag = committed_tag(&answer(&mut net, plain));
    assert_eq!(answer(&mut net, cas), WriteReply::PreconditionFailed { current: Some(plain_tag) });
    assert_eq!(answer(&mut net, absent_too), WriteReply::PreconditionFailed { current: Some(plain_tag) });
    let follow = net.put_with(None, "k", b"v4", 4, Some(Cond::IfMatch(plain_tag)), None);
    let second = net.put_with(None, "k", b"v5", 5, Some(Cond::IfMatch(plain_tag)), None);
    let won = committed_tag(&answer(&mut net, follow));
    // The second was evaluated after the first committed: it lost.
    assert_eq!(answer(&mut net, second), WriteReply::PreconditionFailed { current: Some(won) });
}

#[test]
fn a_superseded_coordinator_never_fails_a_condition_from_its_stale_memory() {
    let mut net = booted(4, Weather::CALM);
    let first = committed_tag(&put(&mut net, "k", b"v1", 1, None, None));
    net.supersede_coordinator();
    assert!(net.run_until(30_000, |n| n.status(C) == Status::Ready), "the new coordinator recovers");
    let newer = committed_tag(&put(&mut net, "k", b"v2", 2, None, None));
    // A request still in flight to the old instance: its memory says
    // `first`, so If-Match `newer` fails there, but no peer confirms its
    // epoch any more; it learns it was superseded and says so.
    let req = net.put_with(Some(0), "k", b"v3", 3, Some(Cond::IfMatch(newer)), None);
    assert_eq!(answer(&mut net, req), WriteReply::Superseded);
    // And If-Match `first`, which holds on its stale memory, is issued but
    // can never commit: the peers refuse its epoch.
    let req = net.put_with(Some(0), "k", b"v4", 4, Some(Cond::IfMatch(first)), None);
    let zombie_reply = answer(&mut net, req);
    assert!(matches!(zombie_reply, WriteReply::Superseded), "{zombie_reply:?}");
    assert_eq!(read_record(&mut net, "k").map(|r| r.tag()), Some(newer));
}

#[test]
fn compare_and_set_counts_exactly_under_evictions() {
    for seed in 0..6 {
        let mut net = booted(100 + seed, Weather::STORMY);
        let mut wid = 1_000u128;
        let mut successes = 0u64;
        // Requests that may or may not have taken effect: unanswered, or
        // answered by an instance that learned it was superseded (its
        // pending write may still have reached a peer).
        let mut maybe = 0u64;
        let victims = [P1, C, P2, C, P1, P2];
        for round in 0..36 {
            if round % 6 == 5 {
                // One replica at a time: every acknowledged write keeps a copy.
                net.evict(victims[(round / 6) % victims.len()]);
                assert!(net.run_until(60_000, Net::all_ready), "seed {seed}: recovery");
            }
            let (count, tag) = counter(&mut net, "n");
            wid += 1;
            let cond = tag.map_or(Cond::IfAbsent, Cond::IfMatch);
            let req = net.put_with(None, "n", &(count + 1).to_le_bytes(), wid, Some(cond), None);
            if !net.run_until(20_000, |n| !n.replies_to(req).is_empty()) {
                maybe += 1;
                continue;
            }
            match net.replies_to(req)[0] {
                WriteReply::Committed { .. } => successes += 1,
                WriteReply::Superseded => maybe += 1,
                WriteReply::PreconditionFailed { .. } | WriteReply::Unavailable { .. } => {}
                other => panic!("seed {seed}: {other:?}"),
            }
        }
        // Every increment that committed counts exactly once: from the value
        // it was conditioned on, to one more.
        net.weather = Weather::CALM;
        net.run_for(5_000);
        let (count, _) = counter(&mut net, "n");
        assert!(successes >= 18, "seed {seed}: only {successes} increments acknowledged");
        assert!(count >= successes, "seed {seed}: {count} < {successes} acknowledged increments");
        assert!(count <= successes + maybe, "seed {seed}: {count} > {successes} + {maybe}: an increment applied twice");
        assert!(net.errors.is_empty(), "seed {seed}: {:?}", net.errors);
    }
}

/// The counter at `key` and its tag (0 and none while absent), read until a
/// read is answered.
fn counter(net: &mut Net, key: &str) -> (u64, Option<Tag>) {
    loop {
        let req = net.start_read(None, key);
        if !net.run_until(10_000, |n| n.read_answer(req).is_some()) {
            continue;
        }
        match net.read_answer(req).cloned() {
            Some(Read::Committed(None)) => return (0, None),
            Some(Read::Committed(Some(rec))) => {
                let Value::Bytes(b) = &rec.value else { return (0, None) };
                let bytes: [u8; 8] = b.as_slice().try_into().unwrap_or_default();
                return (u64::from_le_bytes(bytes), Some(rec.tag()));
            }
            _ => net.run_for(1_000),
        }
    }
}

#[test]
fn an_expired_key_reads_as_absent_and_the_coordinator_deletes_it() {
    let mut net = booted(5, Weather::CALM);
    let start = net.now;
    let reply = put(&mut net, "k", b"v", 1, None, Some(3_000));
    let WriteReply::Committed { expires_at: Some(at), .. } = reply else { panic!("{reply:?}") };
    assert!(at >= start.plus(3_000) && at <= net.now.plus(3_000), "expires 3 s after it was issued");
    assert_eq!(read_record(&mut net, "k").and_then(|r| r.expires_at), Some(at));
    net.run_until(10_000, |n| n.now >= at);
    assert_eq!(read_record(&mut net, "k"), None, "absent from its expiry on");
    let gone = put(&mut net, "k", b"w", 2, Some(Cond::IfMatch(committed_tag(&reply))), None);
    assert_eq!(gone, WriteReply::PreconditionFailed { current: None });
    // The coordinator deleted it with a committed tombstone, everywhere.
    net.run_for(2_000);
    for r in ALL {
        let held = net.replica(r).memory().get(&Key::new("k").unwrap()).cloned();
        assert!(held.as_ref().is_none_or(|h| h.is_tombstone()), "{r}: {held:?}");
    }
    // A PUT without a time to live clears the expiry.
    let reply = put(&mut net, "k", b"x", 3, None, None);
    assert!(matches!(reply, WriteReply::Committed { expires_at: None, .. }), "{reply:?}");
}

#[test]
fn expiry_survives_the_coordinators_recovery() {
    let mut net = booted(6, Weather::CALM);
    let reply = put(&mut net, "k", b"v", 1, None, Some(10_000));
    let WriteReply::Committed { expires_at: Some(at), .. } = reply else { panic!("{reply:?}") };
    net.evict(C);
    assert!(net.run_until(30_000, |n| n.status(C) == Status::Ready), "recovered");
    assert!(net.now < at, "recovered before the expiry");
    // The new instance collected the record with its expiry.
    assert_eq!(read_record(&mut net, "k").and_then(|r| r.expires_at), Some(at));
    net.run_until(20_000, |n| n.now >= at.plus(1_000));
    assert_eq!(read_record(&mut net, "k"), None);
    for r in ALL {
        let held = net.replica(r).memory().get(&Key::new("k").unwrap()).cloned();
        assert!(held.as_ref().is_none_or(|h| h.is_tombstone()), "{r}: the new coordinator expired it: {held:?}");
    }
    // And a peer evicted after that reseeds the tombstone, not the value.
    net.evict(P1);
    assert!(net.run_until(30_000, Net::all_ready));
    assert_eq!(read_record(&mut net, "k"), None);
}

#[test]
fn listing_pages_through_every_visible_key_exactly_once() {
    let mut net = booted(7, Weather::CALM);
    let mut wid = 0;
    for key in ["a/1", "a/2", "a/3", "a/4", "a/5", "b/1", "_remora/lease", "a/6"] {
        wid += 1;
        put(&mut net, key, key.as_bytes(), wid, None, None);
    }
    let req = net.delete("a/3", 100);
    answer(&mut net, req);
    put(&mut net, "a/4", b"short", 101, None, Some(1));
    net.run_for(10);
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let List::Page { entries, next } = net.list("a/", after.as_deref(), 2, Some("_remora/")) else {
            panic!("not a page")
        };
        assert!(entries.len() <= 2);
        seen.extend(entries.iter().map(|e: &ListEntry| e.key.as_str().to_string()));
        match next {
            Some(k) => after = Some(k.as_str().to_string()),
            None => break,
        }
    }
    assert_eq!(seen, ["a/1", "a/2", "a/5", "a/6"], "deleted and expired keys are absent; b/ is another prefix");
    // The whole namespace without the reserved prefix, in one page.
    let List::Page { entries, next } = net.list("", None, 1000, Some("_remora/")) else { panic!() };
    let keys: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!((keys, next), (vec!["a/1", "a/2", "a/5", "a/6", "b/1"], None));
    let a1 = &entries[0];
    assert_eq!((a1.bytes, a1.expires_at), (3, None));
    assert_eq!(Some(a1.tag), read_record(&mut net, "a/1").map(|r| r.tag()));
}

#[test]
fn a_listing_waits_for_a_confirmation_like_a_read() {
    let mut net = booted(8, Weather::CALM);
    net.weather = Weather { drop_pct: 100, dup_pct: 0, max_delay_ms: 1 };
    let req = ClientRequestId(77);
    let input = Input::List { req, prefix: String::new(), after: None, limit: 10, hide: None };
    let mut c = net.replica(C).clone();
    let out = c.handle(net.now, input).unwrap();
    assert!(!out.iter().any(|o| matches!(o, Output::ListReply { .. })), "no answer before a peer confirms: {out:?}");
}

#[test]
fn out_of_range_times_to_live_and_limits_are_typed_errors() {
    let net = booted(9, Weather::CALM);
    let mut c = net.replica(C).clone();
    let key = Key::new("k").unwrap();
    for ttl_ms in [0, MAX_TTL_MS + 1] {
        let input = Input::Put {
            req: ClientRequestId(1),
            key: key.clone(),
            value: Vec::new(),
            wid: WriteId(1),
            cond: None,
            ttl_ms: Some(ttl_ms),
        };
        let before = c.clone();
        assert!(matches!(c.handle(net.now, input), Err(HandleError::TtlOutOfRange { .. })));
        assert_eq!(c, before);
    }
    for limit in [0, MAX_LIST_LIMIT + 1] {
        let input = Input::List { req: ClientRequestId(2), prefix: String::new(), after: None, limit, hide: None };
        assert!(matches!(c.handle(net.now, input), Err(HandleError::LimitOutOfRange { .. })));
    }
}
