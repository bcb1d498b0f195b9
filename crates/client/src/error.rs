//! The client's one error type (how an error answer becomes one:
//! `reply.rs`).

use std::time::Duration;

use crate::etag::ETag;

/// Everything a request can end in but success.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `412`: the condition did not hold (`If-Match` named another version,
    /// or `If-None-Match: *` found the key present). Nothing changed.
    /// `current` is the key's ETag when it exists.
    #[error("precondition failed (current ETag: {})", current.as_ref().map_or("none, the key is absent".to_owned(), ETag::to_string))]
    PreconditionFailed {
        /// The key's ETag now, `None` if it is absent.
        current: Option<ETag>,
    },
    /// `412` on a retry after an earlier attempt of the same write went
    /// unanswered (or was answered `503 not_committed`): that attempt may
    /// have committed and been overwritten since, so the condition failing
    /// now does not say whether this write took effect. Nothing changed on
    /// this attempt.
    #[error("outcome unknown: an earlier attempt may have taken effect; the condition fails now (current ETag: {})", current.as_ref().map_or("none, the key is absent".to_owned(), ETag::to_string))]
    OutcomeUnknown {
        /// The key's ETag now, `None` if it is absent.
        current: Option<ETag>,
    },
    /// `404`: no such namespace (`namespace_not_found`), or no such route.
    /// (A read of an absent key is not an error: `get` answers `None`.)
    #[error("not found ({code}): {message}")]
    NotFound {
        /// The server's error code.
        code: String,
        /// The server's message.
        message: String,
    },
    /// `409 write_id_reused`: this write id was used for a different value,
    /// condition or TTL. Nothing changed.
    #[error("write id reused for a different request: {message}")]
    WriteIdReused {
        /// The server's message.
        message: String,
    },
    /// `507`: the namespace's budget or the isolate has no room
    /// (`namespace_full`, `isolate_full`). Nothing changed.
    #[error("no room ({code}): {message}")]
    Full {
        /// `namespace_full` or `isolate_full`.
        code: String,
        /// The server's message.
        message: String,
    },
    /// `503` on the last attempt the retry policy allowed. For a write,
    /// `not_committed` means it may still commit: send it again with the same
    /// write id ([`crate::PutOptions::write_id`]) to learn its outcome; any
    /// other code means it never takes effect.
    #[error("unavailable ({code}) after retrying: {message}")]
    Unavailable {
        /// The last `Retry-After`, if any.
        retry_after: Option<Duration>,
        /// `recovering`, `not_committed`, `not_confirmed`, `overloaded`, ...
        code: String,
        /// The server's message.
        message: String,
    },
    /// Any other error answer.
    #[error("HTTP {status} ({code}): {message}")]
    Http {
        /// The status code.
        status: u16,
        /// The server's error code; empty when the body is not its envelope.
        code: String,
        /// The server's message, or the start of a body that is not JSON.
        message: String,
    },
    /// No answer on the last attempt allowed (connection refused or cut,
    /// timeout). A write's outcome is then unknown, as for `not_committed`.
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// A success answer without what the API promises (an `ETag` header, a
    /// JSON body, ...).
    #[error("unexpected answer (HTTP {status}): {reason}")]
    InvalidResponse {
        /// The status code of the answer.
        status: u16,
        /// What is missing or malformed.
        reason: String,
    },
    /// A base URL or token that cannot make a request.
    #[error("invalid client configuration: {0}")]
    Config(String),
    /// The operating system gave no randomness for a write id.
    #[error("no randomness for a write id: {0}")]
    Randomness(getrandom::Error),
}

impl Error {
    /// Whether the request this answers may have taken effect anyway: no
    /// answer once sent, or a write answered `503 not_committed`.
    pub fn may_have_taken_effect(&self) -> bool {
        match self {
            Error::Unavailable { code, .. } => code == "not_committed",
            Error::Transport(e) => !e.is_connect() && !e.is_builder(),
            Error::OutcomeUnknown { .. } => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Error;
    use crate::reply::tests::reply;

    fn envelope(code: &str) -> String {
        format!(r#"{{"error":{{"code":"{code}","message":"why"}}}}"#)
    }

    #[test]
    fn a_412_carries_the_current_etag_when_the_key_exists() {
        let with = reply(412, &[("etag", "\"e2\"")], &envelope("precondition_failed"));
        assert!(
            matches!(Error::from_reply(&with), Error::PreconditionFailed { current: Some(t) } if t.to_string() == "\"e2\"")
        );
        let without = reply(412, &[], &envelope("precondition_failed"));
        assert!(matches!(Error::from_reply(&without), Error::PreconditionFailed { current: None }));
        let weak = reply(412, &[("etag", "W/\"e2\"")], &envelope("precondition_failed"));
        assert!(matches!(Error::from_reply(&weak), Error::InvalidResponse { status: 412, .. }));
    }

    #[test]
    fn a_412_after_an_attempt_of_unknown_outcome_is_an_unknown_outcome() {
        let mut after = reply(412, &[("etag", "\"e3\"")], &envelope("precondition_failed"));
        after.after_unknown = true;
        let e = Error::from_reply(&after);
        assert!(matches!(&e, Error::OutcomeUnknown { current: Some(t) } if t.to_string() == "\"e3\""));
        assert!(e.may_have_taken_effect());
        let first = Error::from_reply(&reply(412, &[], &envelope("precondition_failed")));
        assert!(!first.may_have_taken_effect(), "a first attempt's 412 is definite");
        let not_committed = Error::from_reply(&reply(503, &[], &envelope("not_committed")));
        assert!(not_committed.may_have_taken_effect());
        let recovering = Error::from_reply(&reply(503, &[], &envelope("recovering")));
        assert!(!recovering.may_have_taken_effect(), "a write refused while recovering never takes effect");
    }

    #[test]
    fn statuses_and_codes_map_to_their_variants() {
        let e = Error::from_reply(&reply(404, &[], &envelope("namespace_not_found")));
        assert!(matches!(e, Error::NotFound { code, message } if code == "namespace_not_found" && message == "why"));
        let e = Error::from_reply(&reply(409, &[], &envelope("write_id_reused")));
        assert!(matches!(e, Error::WriteIdReused { .. }));
        let e = Error::from_reply(&reply(409, &[], &envelope("namespace_exists")));
        assert!(matches!(e, Error::Http { status: 409, code, .. } if code == "namespace_exists"));
        let e = Error::from_reply(&reply(507, &[], &envelope("isolate_full")));
        assert!(matches!(e, Error::Full { code, .. } if code == "isolate_full"));
        let e = Error::from_reply(&reply(503, &[("retry-after", "2")], &envelope("not_committed")));
        let two = Some(Duration::from_secs(2));
        assert!(
            matches!(e, Error::Unavailable { retry_after, code, .. } if retry_after == two && code == "not_committed")
        );
        let e = Error::from_reply(&reply(400, &[], &envelope("invalid_precondition")));
        assert!(matches!(e, Error::Http { status: 400, code, .. } if code == "invalid_precondition"));
    }

    #[test]
    fn a_body_that_is_not_the_envelope_is_kept_as_the_message() {
        let html = format!("<html>{}</html>", "x".repeat(500));
        let e = Error::from_reply(&reply(502, &[], &html));
        let Error::Http { status, code, message } = e else { panic!("{e:?}") };
        assert_eq!((status, code.as_str()), (502, ""));
        assert!(message.starts_with("<html>xxx") && message.chars().count() == 200, "{message}");
    }
}
