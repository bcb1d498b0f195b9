//! A counter by compare-and-set: read the value and its ETag, write
//! value + 1 `If-Match` that ETag, and start again if someone wrote first.

use crate::error::Error;
use crate::namespace::Namespace;
use crate::options::{Condition, PutOptions};

/// Why an increment failed.
#[derive(Debug, thiserror::Error)]
pub enum CounterError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] Error),
    /// The key holds something other than a decimal `u64`.
    #[error("key {0:?} does not hold a decimal counter")]
    NotACounter(String),
    /// The counter is at `u64::MAX`.
    #[error("key {0:?}: the counter is at its maximum")]
    Overflow(String),
}

/// Adds one to the counter at `key` (absent counts as 0) and returns the
/// new value. Every `Ok` is one increment that took effect exactly once:
/// the write id makes retries safe, and `If-Match` makes a write over a
/// value someone else changed fail instead of losing their increment. An
/// `Err` from the store once the write was sent (a transport failure,
/// `not_committed`, [`Error::OutcomeUnknown`]) leaves unknown whether that
/// increment took effect ([`Error::may_have_taken_effect`]).
pub async fn increment(ns: &Namespace, key: &str) -> Result<u64, CounterError> {
    loop {
        let (current, condition) = match ns.get(key).await? {
            Some(entry) => (
                parse(&entry.value).ok_or_else(|| CounterError::NotACounter(key.to_owned()))?,
                Condition::IfMatch(entry.etag),
            ),
            None => (0, Condition::IfNoneMatch),
        };
        let next = current.checked_add(1).ok_or_else(|| CounterError::Overflow(key.to_owned()))?;
        match ns.put(key, next.to_string(), PutOptions::new().condition(condition)).await {
            Ok(_) => return Ok(next),
            // Someone else wrote since the read: read again.
            Err(Error::PreconditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

fn parse(value: &[u8]) -> Option<u64> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_counter_is_a_decimal_u64() {
        assert_eq!(super::parse(b"0"), Some(0));
        assert_eq!(super::parse(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b""[..], b"-1", b"1.0", b" 1", b"18446744073709551616", b"\xff"] {
            assert_eq!(super::parse(bad), None, "{bad:?}");
        }
    }
}
