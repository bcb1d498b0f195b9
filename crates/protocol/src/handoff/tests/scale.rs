//! HandoffScale on the test network: the budget, the pending window, pushes
//! with backoff, the tombstone floor, chunked snapshots, and what an idle
//! namespace costs.

use super::net::{ALL, C, Net, P1, P2, Weather};
use crate::handoff::{
    Body, ClientRequestId, Config, Epoch, Input, Key, Message, Millis, Output, Read, Record, Replica, Stamp, Value,
    Version, WriteId, WriteReply,
};

fn booted(net: Net) -> Net {
    let mut net = net;
    assert!(net.run_until(30_000, Net::all_ready), "first boot did not converge");
    net
}

fn config() -> Config {
    Config::new(C, [P1, P2]).unwrap()
}

fn replies(net: &Net, req: ClientRequestId) -> Vec<WriteReply> {
    net.replies_to(req).into_iter().cloned().collect()
}

fn committed(net: &Net, req: ClientRequestId) -> bool {
    replies(net, req).iter().any(|r| matches!(r, WriteReply::Committed { .. }))
}

fn stamp(ep: u64, ver: u64) -> Stamp {
    Stamp { ep: Epoch(ep), ver: Version(ver) }
}

fn key(i: usize) -> String {
    format!("key-{i:04}")
}

/// What a put of `len` bytes to `key` costs in memory.
fn put_cost(key: &str, len: usize) -> usize {
    let record =
        Record { stamp: Stamp::ZERO, wid: WriteId(0), value: Value::Bytes(vec![0; len]), expires_at: None, fp: None };
    crate::handoff::memory::cost(&Key::new(key).unwrap(), &record)
}

#[test]
fn a_write_beyond_the_budget_is_refused_and_changes_nothing() {
    let mut c = config();
    c.budget_bytes = 4 * put_cost(&key(0), 1024);
    let mut net = booted(Net::with_config(1, Weather::CALM, c));
    for i in 0..4 {
        let req = net.put(&key(i), &[7; 1024], i as u128 + 1);
        assert!(net.run_until(5_000, |n| committed(n, req)), "write {i} fits");
    }
    let before = net.replica(C).clone();
    let req = net.put(&key(4), &[7; 1024], 99);
    assert!(
        matches!(replies(&net, req).as_slice(), [WriteReply::Full { needed, budget, .. }] if *needed > 0 && *budget == net.config.budget_bytes),
        "{:?}",
        replies(&net, req)
    );
    assert_eq!(*net.replica(C), before, "a refused write changes nothing");
    // Overwriting a key in place needs no room; a delete frees room once
    // the floor collects its tombstone.
    let same = net.put(&key(0), &[8; 1024], 100);
    assert!(net.run_until(5_000, |n| committed(n, same)));
    let del = net.delete(&key(1), 101);
    assert!(net.run_until(5_000, |n| committed(n, del)));
    net.run_for(20_000);
    assert_eq!(net.replica(C).memory().tombstones(), 0, "collected");
    let now_fits = net.put(&key(4), &[7; 1024], 102);
    assert!(net.run_until(5_000, |n| committed(n, now_fits)));
    assert!(net.replica(C).status().bytes <= net.config.budget_bytes);
}

#[test]
fn the_pending_window_sheds_load_by_bytes_and_by_count() {
    let mut c = config();
    c.max_pending_bytes = 3 * put_cost(&key(0), 1024) + 500;
    c.max_pending = 5;
    let mut net = booted(Net::with_config(2, Weather::CALM, c));
    net.weather = Weather { drop_pct: 100, dup_pct: 0, max_delay_ms: 1 };
    let big: Vec<ClientRequestId> = (0..4).map(|i| net.put(&key(i), &[1; 1024], i as u128 + 1)).collect();
    assert!(matches!(replies(&net, big[3]).as_slice(), [WriteReply::Overloaded { .. }]), "bytes");
    let small: Vec<ClientRequestId> = (4..7).map(|i| net.put(&key(i), b"x", i as u128 + 1)).collect();
    assert!(replies(&net, small[1]).is_empty(), "the fifth pending write fits");
    assert!(matches!(replies(&net, small[2]).as_slice(), [WriteReply::Overloaded { .. }]), "count");
    let s = net.replica(C).status();
    assert_eq!(s.pending, 5);
    assert!(s.pending_bytes <= net.config.max_pending_bytes);
    // The network heals: every admitted write commits.
    net.weather = Weather::CALM;
    assert!(net.run_until(10_000, |n| big[..3].iter().chain(&small[..2]).all(|&r| committed(n, r))));
}

#[test]
fn an_unacknowledged_write_is_pushed_again_with_a_doubling_wait() {
    let mut net = booted(Net::new(3, Weather::CALM));
    net.weather = Weather { drop_pct: 100, dup_pct: 0, max_delay_ms: 1 };
    let pushes_before = net.sent.get("push").map_or(0, |c| c.0);
    let req = net.put("k", b"v", 1);
    net.run_for(10_000);
    let pushes = net.sent.get("push").map_or(0, |c| c.0) - pushes_before;
    // At 0, 250, 750 ms, then every second (retry_max_ms) from 1750 to
    // 9750, to both peers; without backoff it would be 41 rounds.
    assert_eq!(pushes, 2 * 12, "pushes in 10 s");
    net.weather = Weather::CALM;
    assert!(net.run_until(5_000, |n| committed(n, req)), "the next push after the network heals commits");
}

/// The hazard tombstone collection must rule out: a ghost push of a write
/// older than a collected tombstone arriving after the collection.
#[test]
fn a_ghost_push_older_than_a_collected_tombstone_is_refused() {
    let mut net = booted(Net::new(4, Weather::CALM));
    let put = net.put("k", b"old", 1);
    assert!(net.run_until(5_000, |n| committed(n, put)));
    let del = net.delete("k", 2);
    assert!(net.run_until(5_000, |n| committed(n, del)));
    net.run_for(20_000);
    for r in ALL {
        assert_eq!(net.replica(r).floor(), stamp(1, 2), "{r}: the floor covers the delete");
        assert!(net.replica(r).memory().is_empty(), "{r}: the tombstone is collected");
    }
    let generation = net.replica(C).generation();
    let ghost = Record {
        stamp: stamp(1, 1),
        wid: WriteId(1),
        value: Value::Bytes(b"old".to_vec()),
        expires_at: None,
        fp: None,
    };
    let instance = net.replica(C).instance();
    let acks_before = net.sent.get("push_ack_by").map_or(0, |c| c.0);
    for p in [P1, P2] {
        net.inject(Message::new(
            generation,
            C,
            p,
            Body::Push { instance, key: Key::new("k").unwrap(), record: ghost.clone() },
        ));
    }
    net.run_for(20_000);
    for r in ALL {
        assert!(net.replica(r).memory().is_empty(), "{r}: the ghost did not resurrect the key");
    }
    assert_eq!(net.sent.get("push_ack_by").map_or(0, |c| c.0), acks_before, "and it was not acked");
    assert_eq!(net.read("k"), Read::Committed(None));
    assert!(net.errors.is_empty(), "{:?}", net.errors);
}

#[test]
fn a_delete_of_an_absent_key_leaves_no_tombstone_behind() {
    let mut net = booted(Net::new(5, Weather::CALM));
    let del = net.delete("never-written", 1);
    assert!(net.run_until(5_000, |n| committed(n, del)));
    net.run_for(20_000);
    for r in ALL {
        let s = net.replica(r).status();
        assert_eq!((s.keys, s.tombstones, s.bytes), (0, 0, 0), "{r}");
    }
}

fn filled(seed: u64, keys: usize, chunk_bytes: usize) -> Net {
    let mut c = config();
    c.chunk_bytes = chunk_bytes;
    let mut net = booted(Net::with_config(seed, Weather::CALM, c));
    let reqs: Vec<ClientRequestId> = (0..keys).map(|i| net.put(&key(i), &[i as u8; 100], i as u128 + 1)).collect();
    assert!(net.run_until(30_000, |n| reqs.iter().all(|&r| committed(n, r))));
    net.run_for(12_000);
    net
}

#[test]
fn snapshots_travel_in_chunks_and_resume_after_lost_messages() {
    let mut net = filled(6, 60, 1_000);
    let all = net.replica(C).memory().clone();
    assert_eq!(all.live_keys(), 60);
    let replies_before = net.sent.get("reseed_reply").map_or(0, |c| c.0);
    net.weather = Weather { drop_pct: 30, dup_pct: 10, max_delay_ms: 20 };
    net.evict(P1);
    assert!(net.run_until(60_000, Net::all_ready), "the peer recovers through a lossy network");
    assert_eq!(net.replica(P1).memory(), &all, "every record, from chunks of about 1 KB");
    let chunks = net.sent.get("reseed_reply").map_or(0, |c| c.0) - replies_before;
    assert!(chunks >= 2 * 60 * 100 / 1_000, "{chunks} chunks");
    net.evict(C);
    assert!(net.run_until(60_000, Net::all_ready), "the coordinator recovers too");
    for i in 0..60 {
        assert!(
            matches!(net.read(&key(i)), Read::Committed(Some(Record { value: Value::Bytes(_), .. }))),
            "{}",
            key(i)
        );
    }
    assert!(net.errors.is_empty(), "{:?}", net.errors);
}

/// What the replicas send each other while nobody writes, by kind.
fn idle_traffic(keys: usize) -> Vec<(&'static str, u64, u64)> {
    let mut net = filled(7, keys, crate::handoff::memory::MAX_CHUNK_BYTES);
    let before = net.sent.clone();
    net.run_for(60_000);
    net.sent
        .iter()
        .map(|(kind, (n, bytes))| {
            let (n0, b0) = before.get(kind).copied().unwrap_or_default();
            (*kind, n - n0, bytes - b0)
        })
        .filter(|(_, n, _)| *n > 0)
        .collect()
}

#[test]
fn an_idle_namespace_costs_the_same_whatever_it_holds() {
    let empty = idle_traffic(0);
    let full = idle_traffic(200);
    assert!(full.iter().all(|(kind, _, _)| ["heartbeat", "digest"].contains(kind)), "{full:?}");
    // The same messages; their sizes differ only in a few varint bytes (a
    // digest is 2 KiB whatever the memory holds; the floor's version
    // number takes a byte more at 200 writes).
    assert_eq!(empty.len(), full.len());
    for ((kind, n, bytes), (kind2, n2, bytes2)) in empty.iter().zip(&full) {
        assert_eq!((kind, n), (kind2, n2));
        assert!(bytes2.abs_diff(*bytes) <= 4 * n, "{kind}: {bytes} vs {bytes2} bytes");
    }
}

#[test]
fn a_recovering_peer_asks_the_coordinator_first() {
    let (_, out) = Replica::boot(config(), P1, Millis(0), 1).unwrap();
    let asked: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            Output::Send(m) => Some((m.to, m.body.kind())),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [(C, "reseed")]);
}

#[test]
fn a_recovering_peer_takes_no_pushes() {
    let net = booted(Net::new(8, Weather::CALM));
    let generation = net.replica(C).generation();
    let (mut fresh, _) = Replica::boot(net.config.clone(), P1, net.now, 3).unwrap();
    let before = fresh.clone();
    let push = Body::Push {
        instance: net.replica(C).instance(),
        key: Key::new("k").unwrap(),
        record: Record { stamp: stamp(1, 1), wid: WriteId(1), value: Value::Tombstone, expires_at: None, fp: None },
    };
    let out = fresh.handle(net.now, Input::Message(Message::new(generation, C, P1, push))).unwrap();
    assert!(out.is_empty() && fresh == before);
}
