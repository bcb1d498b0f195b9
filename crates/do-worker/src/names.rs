//! Namespace, key and replica names as they arrive in URL paths: decoding
//! and validation, pure so that every rule is unit-tested on the host.
//!
//! A namespace is 1 to [`MAX_NAMESPACE_BYTES`] bytes of UTF-8 after
//! percent-decoding, a key 1 to [`MAX_KEY_BYTES`] (the protocol's
//! [`Key::MAX_LEN`]: one limit), both without control characters (C0, DEL,
//! C1); a namespace also has no `/` (it is one path segment; `%2F` does not
//! smuggle one in), does not start with `_` and is not `openapi.json`
//! (those are the API's own paths under `/v1/`). A key may contain `/`: it
//! is the rest of the path.

use std::fmt;

use percent_encoding::percent_decode_str;
use protocol::claim::ClaimId;
use protocol::handoff::Key;

/// The path segment of the API document, `GET /v1/openapi.json`.
pub const OPENAPI_SEGMENT: &str = "openapi.json";

/// Longest namespace, in bytes of UTF-8.
pub const MAX_NAMESPACE_BYTES: usize = 512;
/// Longest key, in bytes of UTF-8: the protocol's own limit.
pub const MAX_KEY_BYTES: usize = Key::MAX_LEN;

/// Why a name was refused; the message is shown to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    Empty { max: usize },
    TooLong { len: usize, max: usize },
    NotUtf8,
    Control { at: usize },
    Slash,
    Reserved,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty { max } => write!(f, "must not be empty (1 to {max} bytes of UTF-8)"),
            NameError::TooLong { len, max } => write!(f, "is {len} bytes; at most {max} bytes of UTF-8 are allowed"),
            NameError::NotUtf8 => f.write_str("is not valid UTF-8 once percent-decoded"),
            NameError::Control { at } => write!(f, "contains a control character at byte {at}"),
            NameError::Slash => f.write_str("must not contain '/' (nor %2F)"),
            NameError::Reserved => {
                write!(f, "must not start with '_' nor be {OPENAPI_SEGMENT:?}: those paths are the API's own")
            }
        }
    }
}

/// Decodes and validates a namespace path segment.
pub fn namespace(raw: &str) -> Result<String, NameError> {
    let ns = decode(raw)?;
    valid_namespace(&ns)?;
    Ok(ns)
}

/// Decodes and validates a key (the rest of the path after `/kv/`).
pub fn key(raw: &str) -> Result<String, NameError> {
    let key = decode(raw)?;
    valid_key(&key)?;
    Ok(key)
}

/// Validates decoded namespace text (also done by the Durable Objects on
/// names that reach them over the internal wire).
pub fn valid_namespace(ns: &str) -> Result<(), NameError> {
    check(ns, MAX_NAMESPACE_BYTES)?;
    if ns.contains('/') {
        return Err(NameError::Slash);
    }
    if ns.starts_with('_') || ns == OPENAPI_SEGMENT {
        return Err(NameError::Reserved);
    }
    Ok(())
}

/// Validates decoded key text into the protocol's [`Key`] (also done by the
/// Durable Objects on keys that reach them over the internal wire).
pub fn valid_key(key: &str) -> Result<Key, NameError> {
    check(key, MAX_KEY_BYTES)?;
    Key::new(key).map_err(|_| NameError::TooLong { len: key.len(), max: MAX_KEY_BYTES })
}

/// The checks shared by namespaces and keys, on decoded text.
fn check(name: &str, max: usize) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty { max });
    }
    if name.len() > max {
        return Err(NameError::TooLong { len: name.len(), max });
    }
    if let Some((at, _)) = name.char_indices().find(|(_, c)| c.is_control()) {
        return Err(NameError::Control { at });
    }
    Ok(())
}

fn decode(raw: &str) -> Result<String, NameError> {
    // The runtime bounds the URL's length, hence the work done here.
    percent_decode_str(raw).decode_utf8().map(|s| s.into_owned()).map_err(|_| NameError::NotUtf8)
}

/// Longest claim id, worker id or idempotency key, in bytes of UTF-8.
pub const MAX_ID_BYTES: usize = 256;

/// What is wrong with an id (a claim id, a worker id, an idempotency key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdProblem {
    #[error("must not be empty (1 to {MAX_ID_BYTES} bytes of UTF-8)")]
    Empty,
    #[error("is {0} bytes; at most {MAX_ID_BYTES} bytes of UTF-8 are allowed")]
    TooLong(usize),
    #[error("contains a control character at byte {0}")]
    Control(usize),
    #[error("must not contain '/' (nor %2F)")]
    Slash,
    #[error("is not valid UTF-8 once percent-decoded")]
    NotUtf8,
}

/// Checks an id: 1 to [`MAX_ID_BYTES`] bytes of UTF-8, no control characters.
pub fn check_id(id: &str) -> Result<(), IdProblem> {
    if id.is_empty() {
        Err(IdProblem::Empty)
    } else if id.len() > MAX_ID_BYTES {
        Err(IdProblem::TooLong(id.len()))
    } else if let Some((at, _)) = id.char_indices().find(|(_, c)| c.is_control()) {
        Err(IdProblem::Control(at))
    } else {
        Ok(())
    }
}

/// Checks a claim id: an id that is also one path segment (no `/`).
pub fn check_claim(id: &str) -> Result<(), IdProblem> {
    check_id(id)?;
    if id.contains('/') { Err(IdProblem::Slash) } else { Ok(()) }
}

/// A claim id as it arrives in a URL path segment (percent-decoded).
pub fn claim(raw: &str) -> Result<ClaimId, IdProblem> {
    let decoded = percent_decode_str(raw).decode_utf8().map_err(|_| IdProblem::NotUtf8)?;
    check_claim(&decoded)?;
    Ok(ClaimId(decoded.into_owned()))
}

/// One of the three replicas of a namespace; `{ns}:r0` is the coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReplicaName {
    R0,
    R1,
    R2,
}

impl ReplicaName {
    pub const ALL: [ReplicaName; 3] = [ReplicaName::R0, ReplicaName::R1, ReplicaName::R2];

    /// `r0`, `r1` or `r2`.
    pub fn parse(s: &str) -> Option<ReplicaName> {
        match s {
            "r0" => Some(ReplicaName::R0),
            "r1" => Some(ReplicaName::R1),
            "r2" => Some(ReplicaName::R2),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaName::R0 => "r0",
            ReplicaName::R1 => "r1",
            ReplicaName::R2 => "r2",
        }
    }

    /// The protocol's replica number (0 is the coordinator).
    pub fn index(self) -> u8 {
        match self {
            ReplicaName::R0 => 0,
            ReplicaName::R1 => 1,
            ReplicaName::R2 => 2,
        }
    }

    pub fn from_index(i: u8) -> Option<ReplicaName> {
        match i {
            0 => Some(ReplicaName::R0),
            1 => Some(ReplicaName::R1),
            2 => Some(ReplicaName::R2),
            _ => None,
        }
    }

    /// The Durable Object name of this replica of `ns`: `{ns}:r0` etc.
    pub fn object_name(self, ns: &str) -> String {
        format!("{ns}:{}", self.as_str())
    }

    /// Splits a Durable Object name back into namespace and replica. The
    /// namespace may itself contain `:`; the suffix never does.
    pub fn split_object_name(name: &str) -> Option<(&str, ReplicaName)> {
        let (ns, r) = name.rsplit_once(':')?;
        Some((ns, ReplicaName::parse(r)?))
    }
}

impl fmt::Display for ReplicaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_encoded_names() {
        assert_eq!(namespace("shop"), Ok("shop".into()));
        assert_eq!(namespace("caf%C3%A9"), Ok("café".into()));
        assert_eq!(namespace("a%3Ab"), Ok("a:b".into()));
        assert_eq!(key("a/b/c"), Ok("a/b/c".into()));
        assert_eq!(key("a%2Fb"), Ok("a/b".into()));
        assert_eq!(key("%F0%9F%94%91"), Ok("🔑".into()));
        assert_eq!(key("with%20space"), Ok("with space".into()));
    }

    #[test]
    fn bad_names() {
        assert_eq!(namespace(""), Err(NameError::Empty { max: MAX_NAMESPACE_BYTES }));
        assert_eq!(key(""), Err(NameError::Empty { max: MAX_KEY_BYTES }));
        assert_eq!(namespace("a%2Fb"), Err(NameError::Slash));
        assert_eq!(namespace("a%2fb"), Err(NameError::Slash));
        assert_eq!(key("a%00b"), Err(NameError::Control { at: 1 }));
        assert_eq!(key("%7F"), Err(NameError::Control { at: 0 }));
        assert_eq!(key("x%C2%85"), Err(NameError::Control { at: 1 }), "C1 control NEL");
        assert_eq!(key("%0A"), Err(NameError::Control { at: 0 }));
        assert_eq!(key("%FF"), Err(NameError::NotUtf8));
        assert_eq!(key("%C3"), Err(NameError::NotUtf8));
        assert_eq!(namespace("_tokens"), Err(NameError::Reserved));
        assert_eq!(namespace("%5Fx"), Err(NameError::Reserved));
        assert_eq!(namespace("openapi.json"), Err(NameError::Reserved));
        assert_eq!(namespace("a_b"), Ok("a_b".into()));
        assert_eq!(key("_remora/lease/c"), Ok("_remora/lease/c".into()), "keys may start with '_'");
    }

    #[test]
    fn length_is_counted_in_decoded_bytes() {
        let max = MAX_KEY_BYTES;
        assert!(key(&"k".repeat(max)).is_ok());
        assert_eq!(key(&"k".repeat(max + 1)), Err(NameError::TooLong { len: max + 1, max }));
        assert!(valid_key(&"k".repeat(max)).is_ok(), "every valid key is a protocol key");
        // 170 × "é" (2 bytes each, 6 encoded characters) = 340 bytes: fine.
        assert!(key(&"%C3%A9".repeat(170)).is_ok());
        // 257 × "é" = 514 bytes: too long although 1542 encoded characters.
        assert_eq!(key(&"%C3%A9".repeat(257)), Err(NameError::TooLong { len: 514, max }));
        assert!(matches!(key(&"%41".repeat(10_000)), Err(NameError::TooLong { .. })));
        let max = MAX_NAMESPACE_BYTES;
        assert!(namespace(&"n".repeat(max)).is_ok());
        assert_eq!(namespace(&"n".repeat(max + 1)), Err(NameError::TooLong { len: max + 1, max }));
    }

    #[test]
    fn the_limits_are_the_public_contract() {
        // crates/e2e (kv/api.rs) stores a 512-byte key and namespace and
        // expects 400 for 513 bytes.
        assert_eq!((MAX_KEY_BYTES, MAX_NAMESPACE_BYTES), (512, 512));
    }

    #[test]
    fn replica_names() {
        for r in ReplicaName::ALL {
            assert_eq!(ReplicaName::parse(r.as_str()), Some(r));
            assert_eq!(ReplicaName::from_index(r.index()), Some(r));
            assert_eq!(ReplicaName::split_object_name(&r.object_name("a:b")), Some(("a:b", r)));
        }
        assert_eq!(ReplicaName::parse("r3"), None);
        assert_eq!(ReplicaName::parse("R0"), None);
        assert_eq!(ReplicaName::from_index(3), None);
        assert_eq!(ReplicaName::split_object_name("nocolon"), None);
        assert_eq!(ReplicaName::split_object_name("ns:r9"), None);
    }
}
