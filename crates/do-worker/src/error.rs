//! The one error type of every HTTP answer the Worker and its objects give:
//! [`HttpError`] -- a status, a code, a message (and the header a 503 or a
//! 405 needs) -- rendered by one [`HttpError::respond`] as the envelope
//! `{"error":{"code":"...","message":"..."}}`. Handlers return
//! [`HttpResult`] and use `?`.

use serde::Serialize;
use worker::{Headers, Response};

/// What a handler returns.
pub type HttpResult<T = Response> = std::result::Result<T, HttpError>;

#[derive(Debug)]
pub enum HttpError {
    /// An answer with an error status.
    Answer {
        status: u16,
        /// Stable, snake_case code clients may match on.
        code: &'static str,
        /// Free text for humans; not part of the contract.
        message: String,
        /// `Retry-After` on a 503, `Allow` on a 405, `WWW-Authenticate` on a 401.
        header: Option<(&'static str, String)>,
    },
    /// The runtime failed (a body that cannot be read, a stub that cannot
    /// be made): no answer of ours. `respond` hands it back to the runtime:
    /// the Worker's entry point answers 500 `internal`, an object's caller
    /// sees its fetch fail.
    Runtime(worker::Error),
}

impl HttpError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> HttpError {
        HttpError::Answer { status, code, message: message.into(), header: None }
    }

    /// 500 `internal`.
    pub fn internal(message: impl Into<String>) -> HttpError {
        HttpError::new(500, "internal", message)
    }

    /// A 503 with `Retry-After` (whole seconds, at least 1).
    pub fn unavailable(code: &'static str, message: impl Into<String>, retry_after_ms: u64) -> HttpError {
        let secs = retry_after_ms.div_ceil(1000).max(1);
        HttpError::Answer {
            status: 503,
            code,
            message: message.into(),
            header: Some(("retry-after", secs.to_string())),
        }
    }

    /// The status of an answer (`None` for a runtime error).
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Answer { status, .. } => Some(*status),
            HttpError::Runtime(_) => None,
        }
    }

    /// The same answer with `header` (a 401's `WWW-Authenticate`).
    pub fn with_header(self, name: &'static str, value: &str) -> HttpError {
        match self {
            HttpError::Answer { status, code, message, .. } => {
                HttpError::Answer { status, code, message, header: Some((name, value.to_string())) }
            }
            runtime => runtime,
        }
    }

    /// A 405 naming the allowed methods.
    pub fn method_not_allowed(method: &str, path: &str, allow: &'static str) -> HttpError {
        HttpError::Answer {
            status: 405,
            code: "method_not_allowed",
            message: format!("{method} is not allowed on {path}; use {allow}"),
            header: Some(("allow", allow.to_string())),
        }
    }

    /// The response (or, for [`HttpError::Runtime`], the runtime's error).
    pub fn respond(self) -> worker::Result<Response> {
        let (status, code, message, header) = match self {
            HttpError::Answer { status, code, message, header } => (status, code, message, header),
            HttpError::Runtime(e) => return Err(e),
        };
        let headers = Headers::new();
        headers.set("content-type", "application/json")?;
        if let Some((name, value)) = header {
            headers.set(name, &value)?;
        }
        Ok(Response::from_json(&ErrorBody::new(code, &message))?.with_status(status).with_headers(headers))
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Answer { status, code, message, .. } => write!(f, "{status} {code}: {message}"),
            HttpError::Runtime(e) => write!(f, "{e}"),
        }
    }
}

impl From<worker::Error> for HttpError {
    fn from(e: worker::Error) -> Self {
        HttpError::Runtime(e)
    }
}

impl From<serde_json::Error> for HttpError {
    fn from(e: serde_json::Error) -> Self {
        HttpError::Runtime(e.into())
    }
}

/// The error body every non-2xx response carries:
/// `{"error":{"code":"not_found","message":"..."}}`.
#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    /// The error object.
    pub error: ErrorDetail<'a>,
}

/// Machine-readable code plus a human-readable message.
#[derive(Debug, Serialize)]
pub struct ErrorDetail<'a> {
    pub code: &'a str,
    pub message: &'a str,
}

impl<'a> ErrorBody<'a> {
    /// Builds the body for `code` and `message`.
    pub fn new(code: &'a str, message: &'a str) -> Self {
        Self { error: ErrorDetail { code, message } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_shape() {
        let json = serde_json::to_string(&ErrorBody::new("not_found", "no route")).unwrap_or_default();
        assert_eq!(json, r#"{"error":{"code":"not_found","message":"no route"}}"#);
    }

    #[test]
    fn a_503_suggests_whole_seconds_and_a_405_names_the_methods() {
        let header = |e: HttpError| match e {
            HttpError::Answer { status, header, .. } => (status, header),
            HttpError::Runtime(_) => (0, None),
        };
        assert_eq!(header(HttpError::unavailable("x", "m", 1)), (503, Some(("retry-after", "1".into()))));
        assert_eq!(header(HttpError::unavailable("x", "m", 0)), (503, Some(("retry-after", "1".into()))));
        assert_eq!(header(HttpError::unavailable("x", "m", 1_001)), (503, Some(("retry-after", "2".into()))));
        assert_eq!(header(HttpError::method_not_allowed("PUT", "/p", "GET")), (405, Some(("allow", "GET".into()))));
        assert_eq!(header(HttpError::new(404, "not_found", "m")), (404, None));
    }
}
