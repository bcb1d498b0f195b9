//! When to send a request again, and how long to wait first (pure: the
//! caller passes the time elapsed; [`crate::Client`] does the waiting).
//!
//! Only two outcomes are retried: a `503` (the store is recovering, a
//! write is `not_committed` yet, a read was `not_confirmed`, the coordinator
//! is `overloaded`: "not now"), after its `Retry-After`; and a failure of
//! the transport (no connection, a connection dropped, no answer in time),
//! after an exponential backoff. A `4xx` is never retried: the same request
//! would get the same answer.
//!
//! # Why sending a write again is safe
//!
//! Every write carries a `handoff-write-id`, picked once per logical write
//! and sent unchanged on each attempt. The server applies a write id at most
//! once and answers any later request with that id (and the same request)
//! with the first answer while its record is still the key's current
//! one. So a write whose answer was lost on the way back is answered
//! again, not applied twice; and a failure the server answered never takes
//! effect later, except `503 not_committed`, which may still commit.
//!
//! This matters most for conditional writes. Without the id, a retried
//! `If-Match: "v1"` PUT whose first attempt committed (and made the tag
//! `"v2"`) would come back `412`: the caller would believe it lost a race it
//! won. With the id, the retry gets the first attempt's `200` and its new
//! `ETag`. Likewise a retried `If-None-Match: *` create is not refused by its
//! own first attempt. One case stays open: if the first attempt committed
//! and someone else wrote the key before the retry arrived, the retry's
//! condition fails against their write, and the first attempt is no longer
//! the key's record to answer from. A `412` after an attempt of unknown
//! outcome is therefore [`crate::Error::OutcomeUnknown`], never
//! [`crate::Error::PreconditionFailed`] (which always means this write did
//! not happen).

use std::time::Duration;

/// How long to keep trying one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// No retry starts this long or longer after the first attempt (the
    /// last attempt may run `attempt_timeout` past it). `Duration::ZERO`:
    /// one attempt, no retries.
    pub deadline: Duration,
    /// The longest wait between two attempts, whatever `Retry-After` asks.
    pub max_wait: Duration,
    /// The first wait after a transport failure (no `Retry-After` to go
    /// by); doubled at each retry, up to `max_wait`.
    pub backoff: Duration,
    /// One attempt's limit: a request with no answer by then is abandoned
    /// and, within the deadline, sent again.
    pub attempt_timeout: Duration,
}

impl Default for RetryPolicy {
    /// 30 s in all, waits of 100 ms doubling up to 5 s, 15 s per attempt
    /// (the server answers a read it cannot confirm after 5 s).
    fn default() -> RetryPolicy {
        RetryPolicy {
            deadline: Duration::from_secs(30),
            max_wait: Duration::from_secs(5),
            backoff: Duration::from_millis(100),
            attempt_timeout: Duration::from_secs(15),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retries + 1`, or `None` to give up
    /// (the next attempt would start past the deadline). `retry_after` is
    /// the server's `Retry-After`, if it sent one.
    pub(crate) fn wait(&self, retries: u32, retry_after: Option<Duration>, elapsed: Duration) -> Option<Duration> {
        let backoff = || self.backoff.saturating_mul(2u32.saturating_pow(retries));
        let wait = retry_after.unwrap_or_else(backoff).min(self.max_wait);
        (elapsed.saturating_add(wait) < self.deadline).then_some(wait)
    }
}

/// A `Retry-After` value in delay-seconds, the form the server sends. The
/// HTTP-date form is not understood (`None`: the backoff applies).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // More digits than a u64 holds: wait as long as the policy allows.
    Some(value.parse().map_or(Duration::MAX, Duration::from_secs))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{RetryPolicy, parse_retry_after};

    const MS: Duration = Duration::from_millis(1);
    const S: Duration = Duration::from_secs(1);

    #[test]
    fn retry_after_is_whole_seconds() {
        assert_eq!(parse_retry_after("1"), Some(S));
        assert_eq!(parse_retry_after(" 7 "), Some(7 * S));
        assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("99999999999999999999999"), Some(Duration::MAX));
        for other in ["", "-1", "1.5", "+1", "Wed, 21 Oct 2015 07:28:00 GMT"] {
            assert_eq!(parse_retry_after(other), None, "{other:?}");
        }
    }

    #[test]
    fn the_servers_retry_after_is_honoured_up_to_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.wait(0, Some(S), Duration::ZERO), Some(S));
        assert_eq!(p.wait(9, Some(2 * S), Duration::ZERO), Some(2 * S), "no backoff on top of Retry-After");
        assert_eq!(p.wait(0, Some(3600 * S), Duration::ZERO), Some(p.max_wait));
        assert_eq!(p.wait(0, Some(Duration::MAX), Duration::ZERO), Some(p.max_wait));
    }

    #[test]
    fn without_retry_after_the_backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy::default();
        let waits: Vec<_> = (0..8).map(|r| p.wait(r, None, Duration::ZERO).unwrap()).collect();
        assert_eq!(waits, [100 * MS, 200 * MS, 400 * MS, 800 * MS, 1600 * MS, 3200 * MS, 5 * S, 5 * S]);
        assert_eq!(p.wait(u32::MAX, None, Duration::ZERO), Some(p.max_wait), "no overflow");
    }

    #[test]
    fn no_attempt_starts_past_the_deadline() {
        let p = RetryPolicy::default();
        assert_eq!(p.wait(0, Some(S), 29 * S - MS), Some(S));
        assert_eq!(p.wait(0, Some(S), 29 * S), None, "it would start at the deadline");
        assert_eq!(p.wait(0, None, 31 * S), None);
        let once = RetryPolicy { deadline: Duration::ZERO, ..RetryPolicy::default() };
        assert_eq!(once.wait(0, Some(Duration::ZERO), Duration::ZERO), None);
    }
}
