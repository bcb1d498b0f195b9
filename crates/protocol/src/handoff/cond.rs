//! What a client write may ask beyond its value (HandoffCond,
//! docs/handoff.md 5.18): a condition on the key's current record, a time
//! to live, and the fingerprint that tells a retry of a request from
//! another request under the same write id.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use super::error::HandleError;
use super::ids::Fingerprint;
use super::record::{Record, Tag, Value};

/// The longest time to live a write may carry: 30 days, in ms. The host
/// refuses a longer one before the replica sees it; the replica refuses it
/// too (`HandleError::TtlOutOfRange`).
pub const MAX_TTL_MS: u64 = 30 * 24 * 60 * 60 * 1000;

/// A time to live the protocol takes: none, or 1 ms to [`MAX_TTL_MS`].
pub fn check_ttl(ttl_ms: Option<u64>) -> Result<(), HandleError> {
    match ttl_ms {
        Some(ttl_ms) if ttl_ms == 0 || ttl_ms > MAX_TTL_MS => {
            Err(HandleError::TtlOutOfRange { ttl_ms, max: MAX_TTL_MS })
        }
        _ => Ok(()),
    }
}

/// A write's condition on its key's current record, evaluated by the
/// coordinator against its committed memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cond {
    /// `If-Match`: the key's current record is the write with this tag,
    /// and visible (not deleted, not expired).
    IfMatch(Tag),
    /// `If-None-Match: *`: the key is absent (never written, deleted, or
    /// expired).
    IfAbsent,
}

impl Cond {
    /// HandoffCond's `Matches(c, v)`, on what is visible of the key's record
    /// ([`Record::visible`]).
    pub fn holds(self, visible: Option<&Record>) -> bool {
        match self {
            Cond::IfMatch(tag) => visible.is_some_and(|r| r.tag() == tag),
            Cond::IfAbsent => visible.is_none(),
        }
    }
}

/// The fingerprint of a client write: what it writes (the bytes, or a
/// delete), its condition and its time to live. Two requests under one
/// write id with equal fingerprints are one request sent twice.
pub fn fingerprint(value: &Value, cond: Option<Cond>, ttl_ms: Option<u64>) -> Fingerprint {
    let mut h = Xxh3::new();
    match value {
        Value::Bytes(b) => {
            h.update(&[0]);
            h.update(&(b.len() as u64).to_le_bytes());
            h.update(b);
        }
        Value::Tombstone => h.update(&[1]),
    }
    match cond {
        None => h.update(&[0]),
        Some(Cond::IfAbsent) => h.update(&[1]),
        Some(Cond::IfMatch(tag)) => {
            h.update(&[2]);
            h.update(&tag.stamp.ep.0.to_le_bytes());
            h.update(&tag.stamp.ver.0.to_le_bytes());
            h.update(&tag.wid.0.to_le_bytes());
        }
    }
    match ttl_ms {
        None => h.update(&[0]),
        Some(ms) => {
            h.update(&[1]);
            h.update(&ms.to_le_bytes());
        }
    }
    Fingerprint(h.digest())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::ids::{Epoch, Millis, Version, WriteId};
    use crate::handoff::record::Stamp;

    fn rec(ver: u64) -> Record {
        Record {
            stamp: Stamp { ep: Epoch(1), ver: Version(ver) },
            wid: WriteId(u128::from(ver)),
            value: Value::Bytes(vec![1]),
            expires_at: Some(Millis(10)),
            fp: None,
        }
    }

    #[test]
    fn conditions_hold_on_what_is_visible() {
        let r = rec(1);
        let seen = Record::visible(Some(&r), Millis(9));
        assert!(Cond::IfMatch(r.tag()).holds(seen));
        assert!(!Cond::IfMatch(rec(2).tag()).holds(seen));
        assert!(!Cond::IfAbsent.holds(seen));
        // Expired: absent, so If-Match fails and If-None-Match holds.
        let gone = Record::visible(Some(&r), Millis(10));
        assert!(!Cond::IfMatch(r.tag()).holds(gone));
        assert!(Cond::IfAbsent.holds(gone));
    }

    #[test]
    fn fingerprints_tell_requests_apart() {
        let v = Value::Bytes(b"x".to_vec());
        let tag = rec(1).tag();
        let all = [
            fingerprint(&v, None, None),
            fingerprint(&Value::Bytes(b"y".to_vec()), None, None),
            fingerprint(&Value::Bytes(Vec::new()), None, None),
            fingerprint(&Value::Tombstone, None, None),
            fingerprint(&v, Some(Cond::IfAbsent), None),
            fingerprint(&v, Some(Cond::IfMatch(tag)), None),
            fingerprint(&v, Some(Cond::IfMatch(rec(2).tag())), None),
            fingerprint(&v, None, Some(1000)),
            fingerprint(&v, None, Some(1001)),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(all[5], fingerprint(&v, Some(Cond::IfMatch(tag)), None), "the same request, the same print");
    }
}
