//! Property tests: the merge rule is a semilattice join, and no input, however
//! malformed or adversarial, makes a replica panic -- a refused input is a
//! typed error and leaves the replica unchanged.

use proptest::prelude::*;

use super::net::{ALL, C, Net, P1, Weather};
use crate::handoff::{
    Batch, Body, Chunk, ClientRequestId, Epoch, Generation, Input, Instance, Key, Memory, Message, Millis, Record,
    Records, Replica, ReplicaId, Stamp, Timer, Value, Version, WriteId,
};

fn key() -> impl Strategy<Value = Key> + Clone {
    prop::sample::select(vec!["a", "b", "c"]).prop_map(|k| Key::new(k).unwrap())
}

/// A record whose write id and value are functions of its stamp: the
/// records of a reachable state satisfy `EpochVerUnique` (one write per
/// `(ep, ver)`), and the merge rule relies on it.
fn record() -> impl Strategy<Value = Record> {
    (0u64..4, 0u64..4).prop_map(|(ep, ver)| {
        let code = ep * 16 + ver;
        let value = if code % 3 == 0 { Value::Tombstone } else { Value::Bytes(code.to_be_bytes().to_vec()) };
        Record {
            stamp: Stamp { ep: Epoch(ep), ver: Version(ver) },
            wid: WriteId(u128::from(code)),
            value,
            expires_at: None,
            fp: None,
        }
    })
}

fn memory() -> impl Strategy<Value = Memory> {
    prop::collection::vec((key(), record()), 0..6).prop_map(|recs| {
        let mut m = Memory::default();
        for (k, r) in &recs {
            m.merge(k, r);
        }
        m
    })
}

fn joined(a: &Memory, b: &Memory) -> Memory {
    let mut m = a.clone();
    for (k, r) in b.iter() {
        m.merge(k, r);
    }
    m
}

proptest! {
    #[test]
    fn merge_is_commutative(a in memory(), b in memory()) {
        prop_assert_eq!(joined(&a, &b), joined(&b, &a));
    }

    #[test]
    fn merge_is_associative(a in memory(), b in memory(), c in memory()) {
        prop_assert_eq!(joined(&joined(&a, &b), &c), joined(&a, &joined(&b, &c)));
    }

    #[test]
    fn merge_is_idempotent(a in memory(), b in memory()) {
        prop_assert_eq!(joined(&a, &a), a.clone());
        let ab = joined(&a, &b);
        prop_assert_eq!(joined(&ab, &b), ab);
    }

    /// The join keeps, per key, the record with the lexicographically
    /// greatest `(ep, ver)` (the spec's `MergeVal`).
    #[test]
    fn merge_keeps_the_greatest_stamp(a in memory(), b in memory()) {
        let ab = joined(&a, &b);
        for (k, r) in a.iter().chain(b.iter()) {
            let kept = ab.get(k).unwrap();
            prop_assert!((kept.stamp.ep, kept.stamp.ver) >= (r.stamp.ep, r.stamp.ver));
        }
        for (k, r) in ab.iter() {
            prop_assert!(a.get(k) == Some(r) || b.get(k) == Some(r));
        }
    }
}

/// Instances an adversary might name: the real ones of the cluster (so
/// that messages reach the handlers' interesting branches) and others.
fn instance(real: Vec<Instance>) -> impl Strategy<Value = Instance> + Clone {
    prop_oneof![prop::sample::select(real), any::<(u64, u64)>().prop_map(|(born, nonce)| Instance { born, nonce })]
}

fn epoch() -> impl Strategy<Value = Epoch> + Clone {
    prop_oneof![(0u64..5).prop_map(Epoch), Just(Epoch(u64::MAX))]
}

fn stamp() -> impl Strategy<Value = Stamp> + Clone {
    (epoch(), prop_oneof![(0u64..5).prop_map(Version), Just(Version(u64::MAX))]).prop_map(|(ep, ver)| Stamp { ep, ver })
}

/// A chunk of a memory from a cursor (well-formed, as every decoded chunk
/// is), or one whose cursor does not match anything.
fn chunk() -> impl Strategy<Value = Chunk> {
    (memory(), prop::option::of(key()), 1usize..200).prop_map(|(m, after, max)| m.chunk(after.as_ref(), max))
}

fn body(real: Vec<Instance>) -> impl Strategy<Value = Body> {
    let i = instance(real);
    let stamp = stamp();
    let round = prop_oneof![0u64..4, Just(u64::MAX)];
    prop_oneof![
        (i.clone(), key(), record()).prop_map(|(instance, key, record)| Body::Push { instance, key, record }),
        (i.clone(), key(), stamp.clone(), 0u128..64).prop_map(|(instance, key, stamp, w)| Body::PushAck {
            instance,
            key,
            stamp,
            wid: WriteId(w)
        }),
        (i.clone(), i.clone(), key(), stamp.clone(), 0u128..64).prop_map(|(instance, peer, key, stamp, w)| {
            Body::PushAckBy { instance, peer, key, stamp, wid: WriteId(w) }
        }),
        (i.clone(), key(), stamp.clone(), epoch()).prop_map(|(instance, key, stamp, known)| Body::PushRefused {
            instance,
            key,
            stamp,
            known
        }),
        (i.clone(), round.clone(), prop::option::of(key())).prop_map(|(instance, round, after)| Body::Collect {
            instance,
            round,
            after
        }),
        (i.clone(), i.clone(), epoch(), stamp.clone(), chunk()).prop_map(|(instance, peer, known, floor, chunk)| {
            Body::CollectReply { instance, peer, known, floor, chunk }
        }),
        (i.clone(), round.clone(), i.clone()).prop_map(|(instance, round, peer)| Body::CollectDecline {
            instance,
            round,
            peer
        }),
        (i.clone(), epoch(), round.clone()).prop_map(|(instance, epoch, round)| Body::Announce {
            instance,
            epoch,
            round
        }),
        (i.clone(), epoch(), round.clone(), i.clone()).prop_map(|(instance, epoch, round, peer)| Body::AnnounceAck {
            instance,
            epoch,
            round,
            peer
        }),
        (i.clone(), epoch(), epoch()).prop_map(|(instance, epoch, known)| Body::AnnounceRefused {
            instance,
            epoch,
            known
        }),
        (i.clone(), prop::option::of(key())).prop_map(|(instance, after)| Body::Reseed { instance, after }),
        (i.clone(), i.clone(), epoch(), stamp.clone(), chunk()).prop_map(|(instance, source, known, floor, chunk)| {
            Body::ReseedReply { instance, source, known, floor, chunk }
        }),
        (i.clone(), i.clone()).prop_map(|(instance, source)| Body::ReseedDecline { instance, source }),
        (i.clone(), epoch(), round.clone()).prop_map(|(instance, epoch, round)| Body::Confirm {
            instance,
            epoch,
            round
        }),
        (i.clone(), epoch(), round.clone()).prop_map(|(instance, epoch, round)| Body::Confirmed {
            instance,
            epoch,
            round
        }),
        (i.clone(), epoch()).prop_map(|(instance, known)| Body::ConfirmRefused { instance, known }),
        (i, epoch(), stamp.clone(), memory()).prop_map(|(instance, known, floor, m)| Body::Digest {
            instance,
            known,
            floor,
            digest: m.digest().clone()
        }),
        (stamp, memory()).prop_map(|(floor, m)| Body::Records { floor, records: m.chunk(None, usize::MAX).records }),
        Just(Body::Heartbeat),
    ]
}

/// Any input: messages from anyone (also unknown replicas, other
/// generations, wrong addressees), client writes, timers.
fn input(real: Vec<Instance>, generation: Generation) -> impl Strategy<Value = Input> {
    let generations = prop_oneof![
        Just(None),
        Just(Some(generation)),
        Just(Some(Generation { minted_at: generation.minted_at.saturating_sub(1), nonce: 0 })),
        Just(Some(Generation { minted_at: generation.minted_at.saturating_add(1), nonce: 0 })),
    ];
    let message = (generations, 0u8..4, 0u8..4, body(real))
        .prop_map(|(g, from, to, body)| Input::Message(Message::new(g, ReplicaId(from), ReplicaId(to), body)));
    prop_oneof![
        4 => message,
        1 => (any::<u64>(), key(), prop::collection::vec(any::<u8>(), 0..4), 0u128..8)
            .prop_map(|(r, key, value, w)| Input::Put { req: ClientRequestId(r), key, value, wid: WriteId(w), cond: None, ttl_ms: None }),
        1 => (any::<u64>(), key(), 0u128..8).prop_map(|(r, key, w)| Input::Delete { req: ClientRequestId(r), key, wid: WriteId(w), if_match: None }),
        1 => (any::<u64>(), key()).prop_map(|(r, key)| Input::Read { req: ClientRequestId(r), key }),
        1 => prop::sample::select(vec![Timer::Retry, Timer::Heartbeat, Timer::Gossip]).prop_map(Input::Timer),
    ]
}

/// Replicas in every role and phase: the three of a ready cluster, and a
/// freshly booted coordinator (collecting) and peer (recovering).
fn subjects() -> (Vec<Replica>, Vec<Instance>, Generation) {
    let mut net = Net::new(11, Weather::CALM);
    assert!(net.run_until(60_000, Net::all_ready), "the cluster never became ready");
    let mut replicas: Vec<Replica> = ALL.iter().map(|&r| net.replica(r).clone()).collect();
    let config = net.config.clone();
    replicas.push(Replica::boot(config.clone(), C, net.now, 99).unwrap().0);
    replicas.push(Replica::boot(config, P1, net.now, 98).unwrap().0);
    let instances = replicas.iter().map(Replica::instance).collect();
    let generation = net.replica(C).generation().unwrap();
    (replicas, instances, generation)
}

/// Arbitrary input sequences to replicas in every role and phase.
#[test]
fn no_input_panics_and_a_refused_input_changes_nothing() {
    let (subjects, instances, generation) = subjects();
    let steps = prop::collection::vec((0..subjects.len(), any::<u64>(), input(instances, generation)), 1..24);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(256));
    let result = runner.run(&steps, |steps| {
        let mut replicas = subjects.clone();
        for (who, now, input) in steps {
            let replica = &mut replicas[who];
            let before = replica.clone();
            if let Err(e) = replica.handle(Millis(now), input.clone()) {
                prop_assert_eq!(&*replica, &before, "{:?} was refused ({}) but changed the replica", input, e);
            }
            // Status never panics either.
            let _ = replica.status();
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

proptest! {
    /// Arbitrary bytes never panic the decoder.
    #[test]
    fn arbitrary_bytes_decode_to_a_message_or_a_typed_error(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = Message::decode(&bytes);
    }

    /// Valid encodings with one byte changed: a message or a typed error.
    #[test]
    fn corrupted_encodings_decode_to_a_message_or_a_typed_error(at in any::<prop::sample::Index>(), byte in any::<u8>(), heartbeat in any::<bool>()) {
        let body = if heartbeat {
            Body::Heartbeat
        } else {
            Body::Collect { instance: Instance { born: 3, nonce: 4 }, round: 1, after: Key::new("k").ok() }
        };
        let mut bytes = Message::new(None, ReplicaId(0), ReplicaId(1), body).encode().unwrap();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        let _ = Message::decode(&bytes);
    }
}

proptest! {
    /// Messages of every kind, encoded, then corrupted anywhere, truncated
    /// or extended: a message or a typed error, and never an allocation
    /// larger than the input allows (lengths are checked first).
    #[test]
    fn corrupted_messages_of_every_kind_decode_or_fail_typed(
        body in body(vec![Instance { born: 1, nonce: 2 }]),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = Message::new(Some(Generation { minted_at: 1, nonce: 2 }), ReplicaId(0), ReplicaId(1), body).encode().unwrap();
        let decoded = Message::decode(&bytes);
        prop_assert!(decoded.is_ok(), "a valid message must decode: {:?}", decoded);
        let mut changed = bytes.clone();
        let i = at.index(changed.len());
        changed[i] = byte;
        let _ = Message::decode(&changed);
        let _ = Message::decode(&bytes[..cut.index(bytes.len())]);
        let mut longer = bytes;
        longer.push(byte);
        prop_assert!(Message::decode(&longer).is_err(), "trailing bytes must be refused");
    }

    /// Arbitrary bytes never panic the batch decoder, and every item it
    /// returns lies inside the body.
    #[test]
    fn arbitrary_batches_decode_or_fail_typed(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(items) = Batch::decode(&bytes) {
            prop_assert!(items.iter().map(|m| m.len()).sum::<usize>() <= bytes.len());
        }
    }

    /// Record lists are the memory's records, whatever order they came in:
    /// a corrupted count is refused before allocation.
    #[test]
    fn record_lists_round_trip(m in memory()) {
        let records: Records = m.chunk(None, usize::MAX).records;
        let bytes = postcard::to_allocvec(&records).unwrap();
        prop_assert_eq!(postcard::from_bytes::<Records>(&bytes).unwrap(), records);
    }
}
