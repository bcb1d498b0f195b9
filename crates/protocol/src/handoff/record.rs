//! Records and THE merge rule. Every place that decides between two
//! records -- push delivery, commit, snapshots, gossip -- goes through
//! [`Stamp::wins`] (via [`replaces`] and [`dominates`]); nothing else
//! compares records.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ids::{Epoch, Version, WriteId};

/// A record's position in the merge order: the spec's `(ep, ver)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stamp {
    pub ep: Epoch,
    pub ver: Version,
}

impl Stamp {
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
#[serde(rename_all = "snake_case")]
pub enum Value {
    Bytes(#[serde(serialize_with = "hex_out", deserialize_with = "hex_in")] Vec<u8>),
    Tombstone,
}

/// A stored write: the spec's record `[ep, ver, wid]` plus the value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Record {
    pub stamp: Stamp,
    pub wid: WriteId,
    pub value: Value,
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

/// Bytes travel as lowercase hex: JSON has no byte strings.
fn hex_out<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&hex::encode(bytes))
}

fn hex_in<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = String::deserialize(d)?;
    hex::decode(s).map_err(|_| serde::de::Error::custom("value bytes must be an even number of hex digits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ep: u64, ver: u64, wid: u128) -> Record {
        Record {
            stamp: Stamp { ep: Epoch(ep), ver: Version(ver) },
            wid: WriteId(wid),
            value: Value::Bytes(vec![wid as u8]),
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
    fn values_travel_as_hex() {
        let v = Value::Bytes(vec![0, 1, 0xab, 0xff]);
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(json, r#"{"bytes":"0001abff"}"#);
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), v);
        assert_eq!(serde_json::to_string(&Value::Tombstone).unwrap(), r#""tombstone""#);
        for bad in [r#"{"bytes":"0"}"#, r#"{"bytes":"zz"}"#, r#"{"bytes":"é1"}"#, r#"{"bytes":7}"#] {
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
        }
    }
}
