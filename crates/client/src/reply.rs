//! An answer read whole, the headers the API gives meaning to, and the
//! error an error answer stands for (the server's envelope:
//! `{"error":{"code","message"}}`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use reqwest::header::{ETAG, HeaderMap, RETRY_AFTER};
use serde::Deserialize;

use crate::error::Error;
use crate::etag::ETag;
use crate::retry::parse_retry_after;

/// Milliseconds since the Unix epoch when the key expires (GET).
pub(crate) const EXPIRES_AT: &str = "handoff-expires-at";

/// An HTTP answer: status, headers and the whole body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
    /// Whether an earlier attempt of the same request may have taken
    /// effect unseen (no answer after it was sent, or `503 not_committed`):
    /// a `412` then does not say that the write did not happen.
    pub(crate) after_unknown: bool,
}

impl Reply {
    /// Whether to send the request again: a `503` is "not now".
    pub(crate) fn is_retryable(&self) -> bool {
        self.status == StatusCode::SERVICE_UNAVAILABLE
    }

    /// `Retry-After`, when present and in delay-seconds.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        self.header(RETRY_AFTER.as_str()).and_then(parse_retry_after)
    }

    /// The `ETag` header, if any; a malformed one is an invalid answer.
    pub(crate) fn etag(&self) -> Result<Option<ETag>, Error> {
        self.header(ETAG.as_str())
            .map(|value| ETag::parse(value).map_err(|e| self.invalid(format!("ETag {value:?}: {e}"))))
            .transpose()
    }

    /// The `ETag` header, which a success must carry.
    pub(crate) fn required_etag(&self) -> Result<ETag, Error> {
        self.etag()?.ok_or_else(|| self.invalid("no ETag header".to_owned()))
    }

    /// `Handoff-Expires-At`, if any.
    pub(crate) fn expires_at(&self) -> Result<Option<SystemTime>, Error> {
        self.header(EXPIRES_AT)
            .map(|value| {
                let ms = value.trim().parse().map_err(|_| self.invalid(format!("{EXPIRES_AT} {value:?}")))?;
                self.unix_ms(ms)
            })
            .transpose()
    }

    /// The time `ms` milliseconds after the Unix epoch.
    pub(crate) fn unix_ms(&self, ms: u64) -> Result<SystemTime, Error> {
        UNIX_EPOCH
            .checked_add(Duration::from_millis(ms))
            .ok_or_else(|| self.invalid(format!("expiry {ms} ms is past this platform's clock")))
    }

    /// The answer's body as JSON of type `T`.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| self.invalid(format!("body: {e}")))
    }

    /// An [`Error::InvalidResponse`] about this answer.
    pub(crate) fn invalid(&self, reason: String) -> Error {
        Error::InvalidResponse { status: self.status.as_u16(), reason }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The server's error envelope.
#[derive(Deserialize)]
struct Envelope {
    error: Body,
}

#[derive(Deserialize)]
struct Body {
    code: String,
    message: String,
}

/// How much of a body that is not the envelope goes into a message.
const BODY_EXCERPT_CHARS: usize = 200;

impl Error {
    /// The error an answer that is not a success stands for.
    pub(crate) fn from_reply(reply: &Reply) -> Error {
        let (code, message) = match serde_json::from_slice::<Envelope>(&reply.body) {
            Ok(Envelope { error }) => (error.code, error.message),
            Err(_) => (String::new(), String::from_utf8_lossy(&reply.body).chars().take(BODY_EXCERPT_CHARS).collect()),
        };
        match reply.status {
            StatusCode::PRECONDITION_FAILED => match reply.etag() {
                Ok(current) if reply.after_unknown => Error::OutcomeUnknown { current },
                Ok(current) => Error::PreconditionFailed { current },
                Err(invalid) => invalid,
            },
            StatusCode::NOT_FOUND => Error::NotFound { code, message },
            StatusCode::CONFLICT if code == "write_id_reused" => Error::WriteIdReused { message },
            StatusCode::INSUFFICIENT_STORAGE => Error::Full { code, message },
            StatusCode::SERVICE_UNAVAILABLE => Error::Unavailable { retry_after: reply.retry_after(), code, message },
            status => Error::Http { status: status.as_u16(), code, message },
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use reqwest::StatusCode;
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

    use super::Reply;
    use crate::error::Error;

    /// A reply with this status, these headers and this body.
    pub(crate) fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap());
        }
        Reply {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body: body.as_bytes().to_vec(),
            after_unknown: false,
        }
    }

    #[test]
    fn only_a_503_is_retried() {
        assert!(reply(503, &[], "").is_retryable());
        for status in [200, 400, 404, 409, 412, 429, 500, 502, 507] {
            assert!(!reply(status, &[], "").is_retryable(), "{status}");
        }
    }

    #[test]
    fn reads_retry_after_etag_and_expiry() {
        let r = reply(200, &[("retry-after", "3"), ("etag", "\"t\""), ("handoff-expires-at", "1500")], "");
        assert_eq!(r.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(r.required_etag().unwrap().to_string(), "\"t\"");
        assert_eq!(r.expires_at().unwrap(), Some(UNIX_EPOCH + Duration::from_millis(1500)));
        let bare = reply(200, &[], "");
        assert_eq!((bare.retry_after(), bare.etag().unwrap(), bare.expires_at().unwrap()), (None, None, None));
    }

    #[test]
    fn a_success_without_a_valid_etag_or_expiry_is_invalid() {
        assert!(matches!(reply(200, &[], "").required_etag(), Err(Error::InvalidResponse { status: 200, .. })));
        assert!(matches!(reply(200, &[("etag", "abc")], "").etag(), Err(Error::InvalidResponse { .. })));
        let bad_expiry = reply(200, &[("handoff-expires-at", "soon")], "");
        assert!(matches!(bad_expiry.expires_at(), Err(Error::InvalidResponse { .. })));
    }
}
