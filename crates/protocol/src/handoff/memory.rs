//! A replica's memory (the spec's `mem[r]`): one record per key, merged
//! only through [`record::replaces`](super::record::replaces). Memory only grows
//! while a replica lives; eviction is the construction of an empty one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ids::{Epoch, Key};
use super::record::{self, Record, Stamp, Value};

/// The records a replica holds. Also the payload of snapshots (collect,
/// reseed and gossip messages): a snapshot is a memory in transit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Memory(BTreeMap<Key, Record>);

impl Memory {
    /// The record for `key`, tombstones included.
    pub fn get(&self, key: &Key) -> Option<&Record> {
        self.0.get(key)
    }

    /// Merges one record (`mem[r][k] := MergeVal(mem[r][k], rec)`); returns
    /// whether the memory changed.
    pub fn merge(&mut self, key: &Key, rec: &Record) -> bool {
        let changed = record::replaces(self.0.get(key), rec);
        if changed {
            self.0.insert(key.clone(), rec.clone());
        }
        changed
    }

    /// `MergeMem(mem, other)`; returns whether the memory changed.
    pub fn merge_all(&mut self, other: &Memory) -> bool {
        other.0.iter().fold(false, |changed, (k, r)| self.merge(k, r) | changed)
    }

    /// `Holds`: the record for `key` dominates `stamp`.
    pub fn holds(&self, key: &Key, stamp: Stamp) -> bool {
        record::dominates(self.0.get(key), stamp)
    }

    /// `MemEpMax`: the highest epoch tag held, `Epoch::NONE` when empty.
    pub fn max_epoch(&self) -> Epoch {
        self.0.values().map(|r| r.stamp.ep).max().unwrap_or(Epoch::NONE)
    }

    /// Keys with a live value (tombstones are not counted).
    pub fn live_keys(&self) -> usize {
        self.0.values().filter(|r| matches!(r.value, Value::Bytes(_))).count()
    }

    /// Every `(key, record)`, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Record)> {
        self.0.iter()
    }

    /// No record at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::ids::{Version, WriteId};

    fn rec(ep: u64, ver: u64, value: Value) -> Record {
        Record { stamp: Stamp { ep: Epoch(ep), ver: Version(ver) }, wid: WriteId(u128::from(ep * 10 + ver)), value }
    }

    #[test]
    fn merge_all_is_a_commutative_max() {
        let (a, b) = (Key::new("a").unwrap(), Key::new("b").unwrap());
        let mut m = Memory::default();
        m.merge(&a, &rec(1, 2, Value::Bytes(b"x".to_vec())));
        m.merge(&b, &rec(1, 1, Value::Tombstone));
        let mut n = Memory::default();
        n.merge(&a, &rec(1, 1, Value::Bytes(b"old".to_vec())));
        n.merge(&b, &rec(2, 1, Value::Bytes(b"y".to_vec())));

        let mut mn = m.clone();
        let mut nm = n.clone();
        assert!(mn.merge_all(&n));
        assert!(nm.merge_all(&m));
        assert_eq!(mn, nm);
        assert_eq!(mn.get(&a).map(|r| r.stamp.ver), Some(Version(2)));
        assert_eq!(mn.max_epoch(), Epoch(2));
        assert_eq!(mn.live_keys(), 2);
        assert!(!mn.merge_all(&n), "merging again changes nothing");
        assert!(mn.holds(&a, rec(1, 1, Value::Tombstone).stamp));
        assert!(!mn.holds(&a, rec(1, 3, Value::Tombstone).stamp));
    }

    #[test]
    fn tombstones_are_records_but_not_live_keys() {
        let k = Key::new("k").unwrap();
        let mut m = Memory::default();
        m.merge(&k, &rec(1, 1, Value::Bytes(b"v".to_vec())));
        assert_eq!(m.live_keys(), 1);
        m.merge(&k, &rec(1, 2, Value::Tombstone));
        assert_eq!(m.live_keys(), 0);
        assert!(!m.is_empty());
        assert_eq!(Memory::default().max_epoch(), Epoch::NONE);
    }
}
