//! Identifiers and scalars, each a newtype so that an epoch is never
//! confused with a version or a write id.
//!
//! Everything that must be unique without a central counter (write ids,
//! generations, instances) is supplied from outside: the caller draws write
//! ids, the host passes a seed from which a replica draws its instance and
//! generation nonces.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One of the three replicas of a namespace (`{ns}:r0`, `{ns}:r1`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReplicaId(pub u8);

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// A coordinator incarnation's epoch (the spec's `ep`). 0 means "none yet":
/// a recovering coordinator before it chooses, a peer that heard nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Epoch(pub u64);

impl Epoch {
    /// "No epoch": the spec's 0.
    pub const NONE: Epoch = Epoch(0);

    /// The epoch after this one, saturating: 2^64 epochs are never reached
    /// (one per coordinator recovery), and saturation keeps the order.
    pub fn next(self) -> Epoch {
        Epoch(self.0.saturating_add(1))
    }
}

/// A per-incarnation version counter value (the spec's `ver`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(pub u64);

/// A globally unique write id (the spec's `wid`), supplied by the caller:
/// 128 random bits, so two writers never need to coordinate. On the replica
/// wire it is a plain `u128`; in HTTP headers and answers, 32 lowercase hex
/// digits (its `Display`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WriteId(pub u128);

impl fmt::Display for WriteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for WriteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WriteId({self})")
    }
}

impl WriteId {
    /// Parses exactly 32 hex digits (either case).
    pub fn parse(s: &str) -> Option<WriteId> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u128::from_str_radix(s, 16).ok().map(WriteId)
    }
}

impl Serialize for WriteId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u128(self.0)
    }
}

impl<'de> Deserialize<'de> for WriteId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        u128::deserialize(d).map(WriteId)
    }
}

/// A 64-bit fingerprint of the client request that made a write: its
/// operation, value, condition and time to live (xxh3, a specified hash, so
/// every build agrees). A record and a pending write carry it, so that a
/// write id given again with a different request is told apart from a
/// retry of the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(pub u64);

/// A namespace generation: minted by a coordinator that finds no replica
/// holding any state (first boot, or after all three died), and carried by
/// every replica-to-replica message. Generations are ordered by mint time,
/// then nonce: a message from an older generation is a ghost of a dead
/// namespace and is refused; one from a newer generation tells a survivor
/// of a dead namespace to reboot into the new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Generation {
    /// Host time (ms) when minted; orders generations across a total death.
    pub minted_at: u64,
    /// Random bits, so two generations minted in the same millisecond differ.
    pub nonce: u64,
}

/// One boot of one replica (a Durable Object instance): its boot time and a
/// nonce drawn from the host-supplied seed. Requests carry the requester's
/// instance and replies echo it, so a reply addressed to a dead instance is
/// recognised as stale. Instances of one replica are ordered by boot time
/// (then nonce): the coordinator keeps the newest instance of each peer it
/// heard from (the spec's `reg`), which assumes that host clocks agree to
/// better than the time between an eviction and the next boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Instance {
    pub born: u64,
    pub nonce: u64,
}

/// The host's id for a client request, echoed in the reply (the Durable
/// Object glue keeps the open HTTP request under this id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientRequestId(pub u64);

/// Host time in milliseconds. Only ever passed in: the protocol never reads
/// a clock (and `std::time::Instant` does not exist on wasm32).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Millis(pub u64);

impl Millis {
    /// `self + ms`, saturating.
    pub fn plus(self, ms: u64) -> Millis {
        Millis(self.0.saturating_add(ms))
    }
}

/// A key that cannot be stored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("a key must not be empty")]
    Empty,
    #[error("a key is at most {max} bytes, this one has {len}")]
    TooLong { len: usize, max: usize },
}

/// A record key: non-empty UTF-8 of at most [`Key::MAX_LEN`] bytes. Checked
/// on construction and on decoding (the length before anything is
/// allocated), so an adversarial key never reaches the state machines.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(String);

impl Key {
    /// Longest key accepted, in bytes: also the public API's limit (the
    /// Worker answers 400 `invalid_key` to a longer one before any replica
    /// sees it).
    pub const MAX_LEN: usize = 512;

    /// Validates `s` as a key.
    pub fn new(s: impl Into<String>) -> Result<Key, KeyError> {
        let s = s.into();
        if s.is_empty() {
            return Err(KeyError::Empty);
        }
        if s.len() > Key::MAX_LEN {
            return Err(KeyError::TooLong { len: s.len(), max: Key::MAX_LEN });
        }
        Ok(Key(s))
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Key {
    type Error = KeyError;
    fn try_from(s: String) -> Result<Key, KeyError> {
        Key::new(s)
    }
}

impl From<Key> for String {
    fn from(k: Key) -> String {
        k.0
    }
}

impl Serialize for Key {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

/// Checks a key's length on the borrowed text, then copies it.
struct KeyVisitor;

impl serde::de::Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a key of 1 to {} bytes", Key::MAX_LEN)
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Key, E> {
        if s.is_empty() || s.len() > Key::MAX_LEN {
            return Err(E::invalid_length(s.len(), &self));
        }
        Ok(Key(s.to_owned()))
    }
}

/// Keys order as their text does, so a map of keys can be ranged by text
/// (a listing's prefix).
impl std::borrow::Borrow<str> for Key {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// SplitMix64: a tiny deterministic generator for the nonces a replica
/// draws (instances after a reboot, generation nonces). Seeded by the host,
/// so tests and the model checker replay exactly; no dependency, no
/// platform entropy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_ids_print_and_parse_as_32_hex_digits() {
        let w = WriteId(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        assert_eq!(w.to_string(), "0123456789abcdef0011223344556677");
        assert_eq!(WriteId::parse("0123456789ABCDEF0011223344556677"), Some(w));
        for bad in ["", "123", "0123456789abcdef001122334455667g", "+123456789abcdef0011223344556677"] {
            assert_eq!(WriteId::parse(bad), None, "{bad:?}");
        }
        let bytes = postcard::to_allocvec(&w).unwrap();
        assert_eq!(postcard::from_bytes::<WriteId>(&bytes).unwrap(), w);
    }

    #[test]
    fn keys_are_validated_everywhere() {
        assert_eq!(Key::new(""), Err(KeyError::Empty));
        assert!(matches!(Key::new("x".repeat(Key::MAX_LEN + 1)), Err(KeyError::TooLong { .. })));
        assert!(Key::new("x".repeat(Key::MAX_LEN)).is_ok());
        let decode = |s: &str| postcard::from_bytes::<Key>(&postcard::to_allocvec(s).unwrap());
        assert!(decode("").is_err());
        assert!(decode(&"x".repeat(Key::MAX_LEN + 1)).is_err());
        assert_eq!(decode("a/b").unwrap().as_str(), "a/b");
    }

    #[test]
    fn generations_order_by_mint_time_then_nonce() {
        let g = |minted_at, nonce| Generation { minted_at, nonce };
        assert!(g(1, 9) < g(2, 0));
        assert!(g(2, 0) < g(2, 1));
    }

    #[test]
    fn splitmix_is_deterministic_and_spreads() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs[0], xs[1]);
        assert_ne!(SplitMix64::new(8).next_u64(), xs[0]);
    }
}
