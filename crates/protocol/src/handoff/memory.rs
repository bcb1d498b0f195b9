//! A replica's memory (the spec's `mem[r]`, less the tombstones its floor
//! collected): one record per key, merged only through
//! [`record::replaces`](super::record::replaces). Eviction is the
//! construction of an empty one.
//!
//! Besides the records it keeps what the scale of a real namespace needs,
//! each updated in O(1) or O(log n) per merge: the bytes held (the budget
//! counts them), the tombstones by stamp (collection pops them), the live
//! records that expire, by expiry (the coordinator's expiry timer reads the
//! earliest; HandoffCond), and a digest -- per key bucket, the XOR of a hash of every record's `(key,
//! ep, ver, wid)` -- so that two replicas compare memories by exchanging
//! 256 numbers, whatever they hold.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::Arc;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use super::ids::{Epoch, Key, Millis, Version};
use super::record::{self, Record, Stamp};

/// What a record's entry costs in the map that holds it, besides its key's
/// and value's heap blocks: its share of a B-tree node (a node holds 11
/// keys and 11 records; on wasm32 a key is 12 bytes and a record, with its
/// 128-bit write id, expiry and fingerprint, several times that; nodes run
/// from half to fully used). Measured where it counts, on workerd: filling
/// replicas with 41,391 records of 8-byte keys and 1-byte values grew each
/// isolate's wasm memory by 146 to 158 bytes per record beyond the two heap
/// blocks (`cargo xtask bench scale`, docs/BENCHMARKS.md). The larger, and
/// a little more: the budget must not under-count.
pub const ENTRY_BYTES: usize = 160;
/// The least a record costs (an empty key and value cost nothing more).
pub const RECORD_OVERHEAD: usize = ENTRY_BYTES;
/// Key buckets of a digest.
pub const BUCKETS: usize = 256;
/// Bytes of records in one snapshot chunk or gossip message, at most (one
/// record always fits, whatever its size).
pub const MAX_CHUNK_BYTES: usize = 1024 * 1024;
/// Records one message carries, at most: [`MAX_CHUNK_BYTES`] of the
/// smallest records, plus the one that always fits.
pub const MAX_RECORDS: usize = MAX_CHUNK_BYTES / RECORD_OVERHEAD + 1;

/// What the allocator takes for a heap block of `n` bytes: dlmalloc, the
/// allocator of Rust's wasm32 target (the Worker's), adds a 4-byte header,
/// rounds up to 8 bytes and takes at least 16; nothing for 0 (no block).
pub const fn heap_block(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let block = n.saturating_add(4 + 7) & !7;
    if block < 16 { 16 } else { block }
}

/// The bytes a record for `key` holds in the isolate, as its allocations
/// cost them: the map's entry and the key's and the value's heap blocks.
/// Counted in [`Memory::bytes`], which the budget compares; the Worker's
/// isolate gauge sums it over a replica's namespaces (`cargo xtask bench
/// scale` compares it with the wasm memory's growth). A tombstone also has
/// an entry in the tombstone index (about 70 bytes with its key's copy)
/// until the floor collects it, which is not counted: a tombstone then
/// costs what an empty value does, so that every record of an empty value
/// costs the same, as the spec counts them (HandoffScale's `Budget`).
pub fn cost(key: &Key, rec: &Record) -> usize {
    ENTRY_BYTES + heap_block(key.as_str().len()) + heap_block(rec.value.len())
}

/// The records a replica holds. Equal and hashed by its records only: the
/// rest is a function of them.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    records: BTreeMap<Key, Record>,
    bytes: usize,
    /// Tombstones by `(ep, ver)`, the order `Stamp::wins` gives.
    tombstones: BTreeSet<(Epoch, Version, Key)>,
    /// Live records with an expiry, by expiry. Like the tombstone index it
    /// is not counted in `bytes` (a key's copy per expiring record).
    expiring: BTreeSet<(Millis, Key)>,
    digest: Digest,
}

impl PartialEq for Memory {
    fn eq(&self, other: &Self) -> bool {
        self.records == other.records
    }
}
impl Eq for Memory {}
impl Hash for Memory {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.records.hash(h);
    }
}

impl Memory {
    /// The record for `key`, tombstones included.
    pub fn get(&self, key: &Key) -> Option<&Record> {
        self.records.get(key)
    }

    /// Merges one record (`mem[r][k] := MergeVal(mem[r][k], rec)`); returns
    /// whether the memory changed.
    pub fn merge(&mut self, key: &Key, rec: &Record) -> bool {
        if !record::replaces(self.records.get(key), rec) {
            return false;
        }
        if let Some(old) = self.records.insert(key.clone(), rec.clone()) {
            self.forget(key, &old);
        }
        self.bytes += cost(key, rec);
        self.digest.toggle(key, rec);
        if rec.is_tombstone() {
            self.tombstones.insert((rec.stamp.ep, rec.stamp.ver, key.clone()));
        } else if let Some(at) = rec.expires_at {
            self.expiring.insert((at, key.clone()));
        }
        true
    }

    /// HandoffScale's `RefusedAt`: a record at or below `floor` for a key
    /// this memory stores nothing for (nothing, or a tombstone the floor
    /// collects) is refused.
    pub fn refuses(&self, key: &Key, stamp: Stamp, floor: Stamp) -> bool {
        let stores = self.records.get(key).is_some_and(|held| !held.is_tombstone() || held.stamp.wins(floor));
        !stores && !stamp.wins(floor)
    }

    /// HandoffScale's `MergeValAt`: [`Memory::merge`] unless the floor
    /// refuses the record; returns whether the memory changed.
    pub fn merge_above(&mut self, key: &Key, rec: &Record, floor: Stamp) -> bool {
        !self.refuses(key, rec.stamp, floor) && self.merge(key, rec)
    }

    /// Drops the tombstones at or below `floor` (they are collected: the
    /// floor stands for them); returns how many.
    pub fn collect(&mut self, floor: Stamp) -> usize {
        let mut dropped = 0;
        while let Some((ep, ver, key)) = self.tombstones.first().cloned() {
            if (Stamp { ep, ver }).wins(floor) {
                break;
            }
            self.tombstones.pop_first();
            if let Some(old) = self.records.remove(&key) {
                self.bytes = self.bytes.saturating_sub(cost(&key, &old));
                self.digest.toggle(&key, &old);
                dropped += 1;
            }
        }
        dropped
    }

    /// `Holds`: the record for `key` dominates `stamp`.
    pub fn holds(&self, key: &Key, stamp: Stamp) -> bool {
        record::dominates(self.records.get(key), stamp)
    }

    /// Keys with a live value (tombstones are not counted).
    pub fn live_keys(&self) -> usize {
        self.records.len() - self.tombstones.len()
    }

    /// Tombstones held.
    pub fn tombstones(&self) -> usize {
        self.tombstones.len()
    }

    /// Bytes held: every record's [`cost`].
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Every `(key, record)`, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Record)> {
        self.records.iter()
    }

    /// The earliest expiry of a live record, if any record expires.
    pub fn next_expiry(&self) -> Option<Millis> {
        self.expiring.first().map(|(at, _)| *at)
    }

    /// The keys whose live record has expired at `now`, earliest first.
    pub fn expired(&self, now: Millis) -> impl Iterator<Item = &Key> {
        self.expiring.iter().take_while(move |(at, _)| *at <= now).map(|(_, k)| k)
    }

    /// The records visible at `now` ([`Record::visible`]) whose keys start
    /// with `prefix` and come after `after`, in key order.
    pub fn visible_from<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a Key>,
        now: Millis,
    ) -> impl Iterator<Item = (&'a Key, &'a Record)> {
        let from = match after {
            Some(a) if a.as_str() >= prefix => Bound::Excluded(a.as_str()),
            _ => Bound::Included(prefix),
        };
        self.records
            .range::<str, _>((from, Bound::Unbounded))
            .take_while(move |(k, _)| k.as_str().starts_with(prefix))
            .filter(move |(_, r)| Record::visible(Some(r), now).is_some())
    }

    /// No record at all.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// This memory's digest.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The next chunk of a snapshot paged in key order: the records after
    /// `after`, up to `max_bytes` of them (at least one), and whether they
    /// are the last.
    pub fn chunk(&self, after: Option<&Key>, max_bytes: usize) -> Chunk {
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut records = Vec::new();
        let mut bytes = 0;
        let mut rest = self.records.range::<Key, _>((from, Bound::Unbounded)).peekable();
        while let Some((k, r)) = rest.peek() {
            let more = cost(k, r);
            if !records.is_empty() && bytes + more > max_bytes {
                break;
            }
            bytes += more;
            records.push(((*k).clone(), (*r).clone()));
            rest.next();
        }
        Chunk { after: after.cloned(), records: Records(records), last: rest.peek().is_none() }
    }

    /// This memory's records in the buckets where `theirs` differs, up to
    /// `max_bytes` of them (at least one, if there is any), in key order
    /// from the first key after `after` round to `after` again; and, if
    /// they did not all fit, the last key taken: where the next answer to
    /// the same replica starts. Without it every answer would start at the
    /// same key, and records the other side already holds that fill a
    /// chunk (one large record does) would travel every round and the rest
    /// never.
    pub fn differing(&self, theirs: &Digest, max_bytes: usize, after: Option<&Key>) -> (Records, Option<Key>) {
        let differ: BTreeSet<usize> = (0..BUCKETS).filter(|&b| self.digest.0.get(b) != theirs.0.get(b)).collect();
        let mut records = Vec::new();
        if differ.is_empty() {
            return (Records(records), None);
        }
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let tail = self.records.range::<Key, _>((from, Bound::Unbounded));
        let head = after.map(|after| self.records.range::<Key, _>((Bound::Unbounded, Bound::Included(after))));
        let mut bytes = 0;
        let mut cut = false;
        for (k, r) in tail.chain(head.into_iter().flatten()).filter(|(k, _)| differ.contains(&bucket(k))) {
            let more = cost(k, r);
            if !records.is_empty() && bytes + more > max_bytes {
                cut = true;
                break;
            }
            bytes += more;
            records.push((k.clone(), r.clone()));
        }
        let next = if cut { records.last().map(|(k, _)| k.clone()) } else { None };
        (Records(records), next)
    }

    fn forget(&mut self, key: &Key, old: &Record) {
        self.bytes = self.bytes.saturating_sub(cost(key, old));
        self.digest.toggle(key, old);
        if old.is_tombstone() {
            self.tombstones.remove(&(old.stamp.ep, old.stamp.ver, key.clone()));
        } else if let Some(at) = old.expires_at {
            self.expiring.remove(&(at, key.clone()));
        }
    }
}

/// The bucket of a key.
pub(super) fn bucket(key: &Key) -> usize {
    (xxh3_64(key.as_str().as_bytes()) >> 56) as usize
}

/// A memory's digest: per key bucket, the XOR of a 64-bit hash of each
/// record's `(key, ep, ver, wid)`. Equal memories have equal digests; a
/// record in one and not the other changes its bucket (up to a 2^-64
/// chance). The hash is xxh3, a specified hash, so every build of the
/// protocol agrees.
///
/// Shared on clone (a replica's memory is cloned only by tests and the
/// model checker), copied on the first change after.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Digest(Arc<[u64; BUCKETS]>);

impl Default for Digest {
    fn default() -> Self {
        Digest(Arc::new([0; BUCKETS]))
    }
}

impl Digest {
    fn toggle(&mut self, key: &Key, rec: &Record) {
        let mut h = Xxh3::new();
        h.update(&(key.as_str().len() as u64).to_le_bytes());
        h.update(key.as_str().as_bytes());
        h.update(&rec.stamp.ep.0.to_le_bytes());
        h.update(&rec.stamp.ver.0.to_le_bytes());
        h.update(&rec.wid.0.to_le_bytes());
        if let Some(slot) = Arc::make_mut(&mut self.0).get_mut(bucket(key)) {
            *slot ^= h.digest();
        }
    }

    /// The buckets, for tests and status pages.
    pub fn buckets(&self) -> &[u64; BUCKETS] {
        &self.0
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = self.0.iter().fold(0u64, |acc, b| acc.rotate_left(1) ^ b);
        write!(f, "Digest({all:016x})")
    }
}

/// A digest travels as its buckets' bytes, little-endian: a fixed size
/// (2 KiB), whatever the memory holds.
impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = self.0.iter().flat_map(|b| b.to_le_bytes()).collect();
        s.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        struct Buckets;
        impl Visitor<'_> for Buckets {
            type Value = Digest;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} bytes", BUCKETS * 8)
            }
            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Digest, E> {
                if bytes.len() != BUCKETS * 8 {
                    return Err(E::invalid_length(bytes.len(), &self));
                }
                let mut buckets = [0u64; BUCKETS];
                for (slot, b) in buckets.iter_mut().zip(bytes.chunks_exact(8)) {
                    let mut le = [0u8; 8];
                    le.copy_from_slice(b);
                    *slot = u64::from_le_bytes(le);
                }
                Ok(Digest(Arc::new(buckets)))
            }
        }
        d.deserialize_bytes(Buckets)
    }
}

/// Records in transit, in key order, at most [`MAX_RECORDS`] of them: the
/// decoder checks the count before it allocates. `R` is the record's wire
/// form: [`Record`], or an older protocol version's
/// ([`message`](super::message)).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Records<R = Record>(pub Vec<(Key, R)>);

impl<R> Default for Records<R> {
    fn default() -> Self {
        Records(Vec::new())
    }
}

impl<R> Records<R> {
    /// Keys strictly increasing (each key once, in order).
    pub fn in_key_order(&self) -> bool {
        self.0.windows(2).all(|w| matches!(w, [(a, _), (b, _)] if a < b))
    }

    /// The same records in another wire form (`f` may refuse one).
    pub fn try_map<S, E>(self, mut f: impl FnMut(R) -> Result<S, E>) -> Result<Records<S>, E> {
        self.0.into_iter().map(|(k, r)| Ok((k, f(r)?))).collect::<Result<_, _>>().map(Records)
    }
}

impl Records {
    /// The highest epoch tag carried (`MemEpMax` of the chunk).
    pub fn max_epoch(&self) -> Epoch {
        self.0.iter().map(|(_, r)| r.stamp.ep).max().unwrap_or(Epoch::NONE)
    }

    /// Bytes of the records, as [`Memory::bytes`] counts them.
    pub fn bytes(&self) -> usize {
        self.0.iter().map(|(k, r)| cost(k, r)).sum()
    }
}

impl<'de, R: Deserialize<'de>> Deserialize<'de> for Records<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Records<R>, D::Error> {
        struct Bounded<R>(std::marker::PhantomData<R>);
        impl<'de, R: Deserialize<'de>> Visitor<'de> for Bounded<R> {
            type Value = Records<R>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "at most {MAX_RECORDS} records")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Records<R>, A::Error> {
                let n = seq.size_hint().unwrap_or(0);
                if n > MAX_RECORDS {
                    return Err(de::Error::invalid_length(n, &self));
                }
                // Room grows with what is actually decoded, not with the
                // count the input claims.
                let mut out = Vec::with_capacity(n.min(64));
                while let Some(item) = seq.next_element()? {
                    if out.len() == MAX_RECORDS {
                        return Err(de::Error::invalid_length(out.len() + 1, &self));
                    }
                    out.push(item);
                }
                Ok(Records(out))
            }
        }
        d.deserialize_seq(Bounded(std::marker::PhantomData))
    }
}

/// One chunk of a snapshot paged in key order: the records after `after`
/// (exclusive), and whether no record follows them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Chunk<R = Record> {
    pub after: Option<Key>,
    pub records: Records<R>,
    pub last: bool,
}

impl<R> Chunk<R> {
    /// The same chunk in another wire form (`f` may refuse a record).
    pub fn try_map<S, E>(self, f: impl FnMut(R) -> Result<S, E>) -> Result<Chunk<S>, E> {
        Ok(Chunk { after: self.after, records: self.records.try_map(f)?, last: self.last })
    }

    /// Well-formed: records in key order, all after `after`, and at least
    /// one unless it is the last chunk.
    pub fn well_formed(&self) -> bool {
        let after_cursor = match (&self.after, self.records.0.first()) {
            (Some(a), Some((k, _))) => k > a,
            _ => true,
        };
        self.records.in_key_order() && after_cursor && (self.last || !self.records.0.is_empty())
    }

    /// The cursor after this chunk: its last key, or the one it started
    /// after.
    pub fn next_after(&self) -> Option<Key> {
        self.records.0.last().map(|(k, _)| k.clone()).or_else(|| self.after.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::ids::WriteId;
    use crate::handoff::record::Value;

    fn rec(ep: u64, ver: u64, value: Value) -> Record {
        let (expires_at, fp) = (None, None);
        Record {
            stamp: Stamp { ep: Epoch(ep), ver: Version(ver) },
            wid: WriteId(u128::from(ep * 10 + ver)),
            value,
            expires_at,
            fp,
        }
    }

    fn key(s: &str) -> Key {
        Key::new(s).unwrap()
    }

    #[test]
    fn heap_blocks_follow_dlmalloc_on_wasm32() {
        let blocks: Vec<usize> = [0, 1, 12, 13, 20, 21, 100, 102_400].into_iter().map(heap_block).collect();
        assert_eq!(blocks, [0, 16, 16, 24, 24, 32, 104, 102_408]);
    }

    #[test]
    fn merge_is_a_commutative_max_and_keeps_bytes_and_digest_in_step() {
        let (a, b) = (key("a"), key("b"));
        let mut m = Memory::default();
        m.merge(&a, &rec(1, 2, Value::Bytes(b"x".to_vec())));
        m.merge(&b, &rec(1, 1, Value::Tombstone));
        let mut n = Memory::default();
        n.merge(&a, &rec(1, 1, Value::Bytes(b"old".to_vec())));
        n.merge(&b, &rec(2, 1, Value::Bytes(b"y".to_vec())));

        let mut mn = m.clone();
        let mut nm = n.clone();
        for (k, r) in n.iter() {
            mn.merge(k, r);
        }
        for (k, r) in m.iter() {
            nm.merge(k, r);
        }
        assert_eq!(mn, nm, "same records, same bytes, same digest, same tombstone index");
        assert_eq!(mn.get(&a).map(|r| r.stamp.ver), Some(Version(2)));
        assert_eq!(mn.live_keys(), 2);
        assert_eq!(mn.tombstones(), 0);
        assert_eq!(mn.bytes(), 2 * (ENTRY_BYTES + heap_block(1) + heap_block(1)));
        assert!(mn.holds(&a, rec(1, 1, Value::Tombstone).stamp));
        assert!(!mn.holds(&a, rec(1, 3, Value::Tombstone).stamp));
        assert_ne!(mn.digest(), m.digest());
    }

    #[test]
    fn the_floor_collects_tombstones_and_refuses_what_it_stands_for() {
        let k = key("k");
        let mut m = Memory::default();
        m.merge(&k, &rec(1, 1, Value::Bytes(b"v".to_vec())));
        m.merge(&k, &rec(1, 2, Value::Tombstone));
        assert_eq!((m.live_keys(), m.tombstones()), (0, 1));
        let floor = Stamp { ep: Epoch(1), ver: Version(2) };
        assert_eq!(m.collect(floor), 1);
        assert!(m.is_empty());
        assert_eq!((m.bytes(), m.digest()), (0, Memory::default().digest()));
        // A ghost of the deleted key, at or below the floor: refused.
        assert!(!m.merge_above(&k, &rec(1, 1, Value::Bytes(b"v".to_vec())), floor));
        assert!(m.is_empty());
        // A newer write: taken.
        assert!(m.merge_above(&k, &rec(1, 3, Value::Bytes(b"w".to_vec())), floor));
        // A stored key merges as usual, floor or not.
        assert!(!m.merge_above(&k, &rec(1, 1, Value::Bytes(b"v".to_vec())), floor));
    }

    #[test]
    fn the_expiry_index_follows_every_merge() {
        let (a, b) = (key("a"), key("b"));
        let expiring =
            |ep, ver, at: u64| Record { expires_at: Some(Millis(at)), ..rec(ep, ver, Value::Bytes(vec![1])) };
        let mut m = Memory::default();
        m.merge(&a, &expiring(1, 1, 50));
        m.merge(&b, &expiring(1, 2, 20));
        assert_eq!(m.next_expiry(), Some(Millis(20)));
        assert_eq!(m.expired(Millis(49)).collect::<Vec<_>>(), [&b]);
        // A newer write without a time to live clears b's expiry; a delete
        // clears a's.
        m.merge(&b, &rec(1, 3, Value::Bytes(vec![2])));
        assert_eq!(m.next_expiry(), Some(Millis(50)));
        m.merge(&a, &rec(1, 4, Value::Tombstone));
        assert_eq!(m.next_expiry(), None);
        assert_eq!(m.expired(Millis(1_000)).count(), 0);
    }

    #[test]
    fn visible_records_range_by_prefix_after_a_key() {
        let mut m = Memory::default();
        for (i, name) in ["a", "a/1", "a/2", "a/3", "ab", "b"].iter().enumerate() {
            m.merge(&key(name), &rec(1, i as u64 + 1, Value::Bytes(vec![1])));
        }
        m.merge(&key("a/2"), &rec(2, 1, Value::Tombstone));
        m.merge(&key("a/3"), &Record { expires_at: Some(Millis(10)), ..rec(2, 2, Value::Bytes(vec![3])) });
        let keys = |prefix, after: Option<&str>, now| {
            let after = after.map(key);
            m.visible_from(prefix, after.as_ref(), Millis(now)).map(|(k, _)| k.as_str().to_string()).collect::<Vec<_>>()
        };
        assert_eq!(keys("a/", None, 9), ["a/1", "a/3"]);
        assert_eq!(keys("a/", None, 10), ["a/1"], "expired at 10");
        assert_eq!(keys("a", Some("a/1"), 0), ["a/3", "ab"]);
        assert_eq!(keys("", Some("a/3"), 0), ["ab", "b"]);
        assert_eq!(keys("a/", Some("0"), 0), ["a/1", "a/3"], "a cursor before the prefix starts at the prefix");
        assert!(keys("a/", Some("b"), 0).is_empty(), "a cursor past the prefix ends it");
    }

    #[test]
    fn chunks_page_in_key_order_and_resume() {
        let mut m = Memory::default();
        for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
            m.merge(&key(name), &rec(1, i as u64 + 1, Value::Bytes(vec![0; 100])));
        }
        let per = cost(&key("a"), &rec(1, 1, Value::Bytes(vec![0; 100])));
        let first = m.chunk(None, 2 * per);
        assert_eq!(first.records.0.len(), 2);
        assert!(!first.last && first.well_formed());
        let second = m.chunk(first.next_after().as_ref(), 2 * per);
        assert_eq!(second.records.0.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["c", "d"]);
        assert!(second.last && second.well_formed());
        // One record always fits; an empty memory is one empty last chunk.
        assert_eq!(m.chunk(None, 0).records.0.len(), 1);
        let empty = Memory::default().chunk(None, 1);
        assert!(empty.last && empty.records.0.is_empty() && empty.well_formed());
    }

    #[test]
    fn digests_find_the_differing_records() {
        let mut m = Memory::default();
        let mut n = Memory::default();
        for i in 0..100u64 {
            let k = key(&format!("key-{i}"));
            m.merge(&k, &rec(1, i + 1, Value::Bytes(vec![1])));
            n.merge(&k, &rec(1, i + 1, Value::Bytes(vec![1])));
        }
        assert_eq!(m.digest(), n.digest());
        assert!(m.differing(n.digest(), MAX_CHUNK_BYTES, None).0.0.is_empty());
        let k = key("key-7");
        m.merge(&k, &rec(2, 1, Value::Bytes(vec![2])));
        let (diff, next) = m.differing(n.digest(), MAX_CHUNK_BYTES, None);
        assert_eq!(next, None, "it all fits");
        assert!(diff.0.iter().any(|(dk, r)| *dk == k && r.stamp.ep == Epoch(2)));
        assert!(diff.0.len() < 10, "only the differing bucket travels: {}", diff.0.len());
        for (dk, r) in &diff.0 {
            n.merge(dk, r);
        }
        assert_eq!(m.digest(), n.digest());
    }

    #[test]
    fn answers_to_one_digest_go_round_the_differing_records() {
        let mut m = Memory::default();
        let n = Memory::default();
        let keys: Vec<Key> = (0..5).map(|i| key(&format!("key-{i}"))).collect();
        for (i, k) in (1..).zip(&keys) {
            m.merge(k, &rec(1, i, Value::Bytes(vec![0; 100])));
        }
        // Room for two records a chunk: five differ, so the answers go
        // round them, each key within three answers, however the first ones
        // fill the chunk.
        let two = 2 * cost(&keys[0], m.get(&keys[0]).unwrap());
        let mut after = None;
        let mut seen = BTreeSet::new();
        for _ in 0..3 {
            let (records, next) = m.differing(n.digest(), two, after.as_ref());
            assert_eq!(records.0.len(), 2);
            assert_eq!(next.as_ref(), records.0.last().map(|(k, _)| k), "cut short: the next answer starts after it");
            seen.extend(records.0.into_iter().map(|(k, _)| k));
            after = next;
        }
        assert_eq!(seen.len(), keys.len(), "every differing record travelled");
        // All of it fits: no position is kept.
        assert_eq!(m.differing(n.digest(), MAX_CHUNK_BYTES, Some(&keys[2])).1, None);
    }

    #[test]
    fn record_lists_are_bounded_before_allocation() {
        let too_many = postcard::to_allocvec(&(MAX_RECORDS as u64 + 1)).unwrap();
        assert!(postcard::from_bytes::<Records>(&too_many).is_err());
        let huge = postcard::to_allocvec(&u64::MAX).unwrap();
        assert!(postcard::from_bytes::<Records>(&huge).is_err());
    }
}
