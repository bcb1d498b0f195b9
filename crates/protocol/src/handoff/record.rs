//! Records and THE merge rule. Every place that decides between two
//! records -- push delivery, commit, snapshots, gossip -- goes through
//! [`Stamp::wins`] (via [`replaces`] and [`dominates`]); nothing else
//! compares records.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ids::{Epoch, Fingerprint, Millis, Version, WriteId};

/// Largest value a record carries, in bytes: the public API's limit, and
/// the limit a decoder checks before it copies a value.
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;

/// A record's position in the merge order: the spec's `(ep, ver)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stamp {
    pub ep: Epoch,
    pub ver: Version,
}

impl Stamp {
    /// No stamp: below every record (the floor of a replica that has none).
    pub const ZERO: Stamp = Stamp { ep: Epoch(0), ver: Version(0) };

    /// `Wins(a, b)`: lexicographic `(ep, ver)`. A new coordinator
    /// incarnation never recovers the old version counter, so any
    /// `(ep + 1, 1)` beats any `(ep, n)`, like Raft terms.
    pub fn wins(self, other: Stamp) -> bool {
        self.ep > other.ep || (self.ep == other.ep && self.ver > other.ver)
    }
}

/// What a write stores: bytes, or a tombstone (a delete is a write, so that
/// it replicates, merges and wins exactly like a put).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Value {
    /// Raw bytes on the wire, at most [`MAX_VALUE_BYTES`].
    Bytes(#[serde(serialize_with = "bytes_out", deserialize_with = "bytes_in")] Vec<u8>),
    Tombstone,
}

impl Value {
    /// Bytes of the value (0 for a tombstone).
    pub fn len(&self) -> usize {
        match self {
            Value::Bytes(b) => b.len(),
            Value::Tombstone => 0,
        }
    }

    /// A value of no bytes, or a tombstone.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A stored write: the spec's record `[ep, ver, wid]` plus the value, and
/// what HandoffCond gives a write: when it expires (`expAt[wid]`, fixed when
/// the coordinator issued it, so every replica agrees and a recovery keeps
/// it) and the fingerprint of the request that made it (`None` for a
/// record a version-3 replica wrote, or an expiry's tombstone).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Record {
    pub stamp: Stamp,
    pub wid: WriteId,
    pub value: Value,
    /// Host time (ms since the Unix epoch) from which the record reads as
    /// absent; `None`: never.
    pub expires_at: Option<Millis>,
    pub fp: Option<Fingerprint>,
}

/// A record's identity, its strong entity tag: `(ep, ver)` names one write
/// within a generation (`EpochVerUnique`) and the caller's 128-bit random
/// write id tells generations apart, so every committed write, even of the
/// same bytes, has a tag of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tag {
    pub stamp: Stamp,
    pub wid: WriteId,
}

/// `MergeVal`: whether `incoming` replaces the `held` record (keep the
/// winner; no record loses to any record). Equal stamps keep the held
/// record: a stamp names one write (`EpochVerUnique`), so they are equal.
pub fn replaces(held: Option<&Record>, incoming: &Record) -> bool {
    held.is_none_or(|h| incoming.stamp.wins(h.stamp))
}

/// `Holds`: a held record dominates `stamp` (it is that write or a newer).
pub fn dominates(held: Option<&Record>, stamp: Stamp) -> bool {
    held.is_some_and(|r| !stamp.wins(r.stamp))
}

impl Record {
    /// Whether this record is a delete.
    pub fn is_tombstone(&self) -> bool {
        self.value == Value::Tombstone
    }

    /// This record's tag.
    pub fn tag(&self) -> Tag {
        Tag { stamp: self.stamp, wid: self.wid }
    }

    /// HandoffCond's `Expired`: its expiry has passed at `now`.
    pub fn expired(&self, now: Millis) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// HandoffCond's `Visible`: what a read, a condition or a listing sees
    /// at `now`: a value that has not expired (a tombstone, no record and
    /// an expired record all read as absent).
    pub fn visible(held: Option<&Record>, now: Millis) -> Option<&Record> {
        held.filter(|r| !r.is_tombstone() && !r.expired(now))
    }
}

/// Bytes travel as a byte string (a length, then the bytes).
fn bytes_out<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(bytes)
}

fn bytes_in<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    d.deserialize_bytes(ValueBytes)
}

/// Checks a value's length on the borrowed bytes, then copies them.
struct ValueBytes;

impl serde::de::Visitor<'_> for ValueBytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at most {MAX_VALUE_BYTES} bytes")
    }

    fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Vec<u8>, E> {
        if b.len() > MAX_VALUE_BYTES {
            return Err(E::invalid_length(b.len(), &self));
        }
        Ok(b.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ep: u64, ver: u64, wid: u128) -> Record {
        Record {
            stamp: Stamp { ep: Epoch(ep), ver: Version(ver) },
            wid: WriteId(wid),
            value: Value::Bytes(vec![wid as u8]),
            expires_at: None,
            fp: None,
        }
    }

    #[test]
    fn wins_is_lexicographic_epoch_then_version() {
        let s = |ep, ver| Stamp { ep: Epoch(ep), ver: Version(ver) };
        assert!(s(2, 1).wins(s(1, 9)));
        assert!(s(1, 2).wins(s(1, 1)));
        assert!(!s(1, 1).wins(s(1, 1)));
        assert!(!s(1, 9).wins(s(2, 1)));
    }

    #[test]
    fn the_winner_replaces_in_any_order() {
        let (a, b, c) = (rec(1, 1, 1), rec(1, 2, 2), rec(2, 1, 3));
        for order in [[&a, &b, &c], [&c, &b, &a], [&b, &c, &a], [&a, &c, &b]] {
            let mut slot: Option<Record> = None;
            for r in order {
                if replaces(slot.as_ref(), r) {
                    slot = Some(r.clone());
                }
            }
            assert_eq!(slot.as_ref(), Some(&c));
        }
        assert!(replaces(None, &a), "any record beats no record");
        assert!(!replaces(Some(&b), &a), "a loser does not replace");
        assert!(!replaces(Some(&b), &b), "the held write does not replace itself");
        assert!(replaces(Some(&b), &c));
    }

    #[test]
    fn dominates_is_holds() {
        let b = rec(1, 2, 2);
        assert!(dominates(Some(&b), b.stamp));
        assert!(dominates(Some(&b), rec(1, 1, 1).stamp));
        assert!(!dominates(Some(&b), rec(2, 1, 3).stamp));
        assert!(!dominates(None, b.stamp));
    }

    #[test]
    fn expired_and_deleted_records_are_not_visible() {
        let mut r = rec(1, 1, 1);
        assert_eq!(Record::visible(Some(&r), Millis(5)), Some(&r));
        r.expires_at = Some(Millis(5));
        assert!(!r.expired(Millis(4)) && r.expired(Millis(5)));
        assert_eq!(Record::visible(Some(&r), Millis(4)), Some(&r));
        assert_eq!(Record::visible(Some(&r), Millis(5)), None, "absent from its expiry on");
        r.value = Value::Tombstone;
        assert_eq!(Record::visible(Some(&r), Millis(0)), None);
        assert_eq!(Record::visible(None, Millis(0)), None);
        assert_eq!(r.tag(), Tag { stamp: r.stamp, wid: r.wid });
    }

    #[test]
    fn values_travel_as_raw_bytes_within_their_limit() {
        let v = Value::Bytes(vec![0, 1, 0xab, 0xff]);
        let bytes = postcard::to_allocvec(&v).unwrap();
        // variant 0, length 4, the bytes themselves
        assert_eq!(bytes, [0, 4, 0, 1, 0xab, 0xff]);
        assert_eq!(postcard::from_bytes::<Value>(&bytes).unwrap(), v);
        assert_eq!(postcard::to_allocvec(&Value::Tombstone).unwrap(), [1]);
        let big = Value::Bytes(vec![7; MAX_VALUE_BYTES + 1]);
        assert!(postcard::from_bytes::<Value>(&postcard::to_allocvec(&big).unwrap()).is_err());
        // A length prefix far beyond the input is refused, not allocated.
        assert!(postcard::from_bytes::<Value>(&[0, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }
}
