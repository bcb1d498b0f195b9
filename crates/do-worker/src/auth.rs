//! How a Durable Object knows that a request comes from this Worker.
//!
//! Two layers (docs/operating.md 4.5, "Internal endpoints"):
//!
//! 1. Structural: a Durable Object has no public address. Only code holding
//!    the namespace binding (this Worker, and the objects themselves) can
//!    send it a request, and the public router ([`crate::route`]) never
//!    turns a client's request into one: every internal request is built
//!    from scratch (`crate::wire`) from validated names, and no client
//!    header, path or query is copied into it.
//! 2. Verified: every internal request carries [`HEADER`] with the
//!    deployment's secret [`BINDING`]; an object answers 403 to anything
//!    else, before looking at the path. The secret is a Worker secret
//!    (`wrangler secret`, set by `cargo xtask deploy`) or, under `cargo
//!    xtask dev|test|bench`, a fresh random value per run. It never leaves
//!    the Worker: the public API never echoes it, and objects never put it
//!    in a response.
//!
//! Without a usable secret the Worker fails closed: KV routes answer 500
//! `internal_key_missing` instead of talking to the objects unauthenticated.

/// Request header carrying the secret on internal requests.
pub const HEADER: &str = "handoff-internal-key";
/// The Worker secret (or dev variable) holding it.
pub const BINDING: &str = "HANDOFF_INTERNAL_KEY";
/// Shortest secret accepted: 32 characters (xtask generates 64 hex digits).
pub const MIN_KEY_LEN: usize = 32;

/// Why the configured secret cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyProblem {
    Missing,
    TooShort { len: usize },
    NotPrintable,
}

impl std::fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyProblem::Missing => write!(
                f,
                "{BINDING} is not set; `cargo xtask dev` sets a random one, a deployment needs \
                 `wrangler secret put {BINDING}` (done by `cargo xtask deploy`)"
            ),
            KeyProblem::TooShort { len } => {
                write!(f, "{BINDING} has {len} characters; at least {MIN_KEY_LEN} are required")
            }
            KeyProblem::NotPrintable => write!(f, "{BINDING} must be printable ASCII (it travels in a header)"),
        }
    }
}

/// Checks the configured secret.
pub fn usable(key: Option<&str>) -> Result<&str, KeyProblem> {
    let key = key.ok_or(KeyProblem::Missing)?;
    if key.len() < MIN_KEY_LEN {
        return Err(KeyProblem::TooShort { len: key.len() });
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(KeyProblem::NotPrintable);
    }
    Ok(key)
}

/// Whether `presented` (the request's [`HEADER`]) equals `expected`, in time
/// independent of where they differ.
pub fn matches(expected: &str, presented: Option<&str>) -> bool {
    let Some(presented) = presented else { return false };
    let (a, b) = (expected.as_bytes(), presented.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn only_the_exact_key_matches() {
        assert!(matches(KEY, Some(KEY)));
        assert!(!matches(KEY, None));
        assert!(!matches(KEY, Some("")));
        assert!(!matches(KEY, Some("0123456789abcdef0123456789abcdeF")));
        assert!(!matches(KEY, Some("0123456789abcdef0123456789abcdef0")));
        assert!(!matches(KEY, Some(&KEY[1..])));
    }

    #[test]
    fn weak_or_missing_keys_are_unusable() {
        assert_eq!(usable(Some(KEY)), Ok(KEY));
        assert_eq!(usable(None), Err(KeyProblem::Missing));
        assert_eq!(usable(Some("short")), Err(KeyProblem::TooShort { len: 5 }));
        assert_eq!(usable(Some(&format!("{KEY} x"))), Err(KeyProblem::NotPrintable));
        assert_eq!(usable(Some(&format!("{KEY}é"))), Err(KeyProblem::NotPrintable));
    }
}
