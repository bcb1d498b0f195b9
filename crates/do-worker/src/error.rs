//! The one error type of every HTTP answer the Worker and its objects give:
//! [`HttpError`] -- a [`Code`] (which fixes the status), a message, and the
//! header a 503, 405 or 401 needs -- rendered by one [`HttpError::respond`]
//! as the envelope `{"error":{"code":"...","message":"..."}}`. Handlers
//! return [`HttpResult`] and use `?`.
//!
//! Every error code the API can answer is one [`Code`] variant, declared
//! once below with its status: call sites name the variant, never a string,
//! and docs/openapi.json is checked against this table (`every_code_is_documented`).

use serde::Serialize;
use worker::{Headers, Response};

/// What a handler returns.
pub type HttpResult<T = Response> = std::result::Result<T, HttpError>;

/// Declares the error codes: `Variant = status "wire_code",`.
macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $status:literal $code:literal,)*) => {
        /// A stable, snake_case error code clients may match on, and its status.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Code {
            $($(#[$doc])* $variant,)*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The HTTP status this code is answered with.
            pub fn status(self) -> u16 {
                match self {
                    $(Code::$variant => $status,)*
                }
            }

            /// The code on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)*
                }
            }
        }
    };
}

codes! {
    // 400: the request is malformed.
    BadRequest = 400 "bad_request",
    InvalidBody = 400 "invalid_body",
    InvalidNamespace = 400 "invalid_namespace",
    InvalidKey = 400 "invalid_key",
    InvalidReplica = 400 "invalid_replica",
    InvalidWriteId = 400 "invalid_write_id",
    InvalidClaim = 400 "invalid_claim",
    InvalidWorker = 400 "invalid_worker",
    InvalidIdempotencyKey = 400 "invalid_idempotency_key",
    MissingIdempotencyKey = 400 "missing_idempotency_key",
    InvalidTtl = 400 "invalid_ttl",
    InvalidMaxAttempts = 400 "invalid_max_attempts",
    InvalidState = 400 "invalid_state",
    InvalidSetting = 400 "invalid_setting",
    InvalidRights = 400 "invalid_rights",
    InvalidPrecondition = 400 "invalid_precondition",
    InvalidLimit = 400 "invalid_limit",
    InvalidCursor = 400 "invalid_cursor",
    /// Internal: a replica was sent a batch it cannot decode.
    BadMessage = 400 "bad_message",
    /// Internal: the request reached another object than the one it names.
    WrongObject = 400 "wrong_object",
    /// Internal: a client request reached a peer, not the coordinator.
    NotCoordinator = 400 "not_coordinator",
    // 401, 403, 404, 405.
    Unauthorized = 401 "unauthorized",
    Forbidden = 403 "forbidden",
    ReservedKey = 403 "reserved_key",
    NotFound = 404 "not_found",
    NamespaceNotFound = 404 "namespace_not_found",
    KeyNotFound = 404 "key_not_found",
    ClaimNotFound = 404 "claim_not_found",
    MethodNotAllowed = 405 "method_not_allowed",
    // 409, 410, 412, 413: the request conflicts with the state, or is too big.
    /// Internal: the protocol refused a client input.
    Refused = 409 "refused",
    NamespaceExists = 409 "namespace_exists",
    NamespaceDeleting = 409 "namespace_deleting",
    NamespaceLimit = 409 "namespace_limit",
    ClaimExists = 409 "claim_exists",
    StaleFence = 409 "stale_fence",
    ClaimDead = 409 "claim_dead",
    IdempotencyKeyReused = 409 "idempotency_key_reused",
    WriteIdReused = 409 "write_id_reused",
    /// Internal: the namespace's replicas are not running.
    NamespaceNotRunning = 410 "namespace_not_running",
    PreconditionFailed = 412 "precondition_failed",
    ValueTooLarge = 413 "value_too_large",
    BodyTooLarge = 413 "body_too_large",
    ResultTooLarge = 413 "result_too_large",
    // 500: the deployment or the object failed.
    Internal = 500 "internal",
    InternalKeyMissing = 500 "internal_key_missing",
    AdminTokenMissing = 500 "admin_token_missing",
    Storage = 500 "storage",
    LeaseStore = 500 "lease_store",
    /// Test hook: the object survived its reset.
    EvictFailed = 500 "evict_failed",
    /// Internal: the object survived its stop.
    StopFailed = 500 "stop_failed",
    // 503 (with Retry-After): retry later.
    Recovering = 503 "recovering",
    Superseded = 503 "superseded",
    Overloaded = 503 "overloaded",
    NotCommitted = 503 "not_committed",
    NotConfirmed = 503 "not_confirmed",
    Paused = 503 "paused",
    ReplicaUnavailable = 503 "replica_unavailable",
    ReplicaUnreachable = 503 "replica_unreachable",
    NamespaceStopping = 503 "namespace_stopping",
    RegistryUnavailable = 503 "registry_unavailable",
    DeleteIncomplete = 503 "delete_incomplete",
    ClaimStoreUnavailable = 503 "claim_store_unavailable",
    LeaseStoreUnavailable = 503 "lease_store_unavailable",
    ActivationPending = 503 "activation_pending",
    // 507: no room.
    NamespaceFull = 507 "namespace_full",
    IsolateFull = 507 "isolate_full",
    /// The namespace's KV has no room for the claim's lease.
    LeaseStoreFull = 507 "lease_store_full",
    ClaimsFull = 507 "claims_full",
    /// The claim has bound as many Idempotency-Keys as one claim may.
    OperationsFull = 507 "operations_full",
}

#[derive(Debug)]
pub enum HttpError {
    /// An answer with an error status.
    Answer {
        code: Code,
        /// Free text for humans; not part of the contract.
        message: String,
        /// `Retry-After` on a 503, `Allow` on a 405, `WWW-Authenticate` on
        /// a 401, a deleted key's stamp on a 404.
        headers: Vec<(&'static str, String)>,
    },
    /// The runtime failed (a body that cannot be read, a stub that cannot
    /// be made): no answer of ours. `respond` hands it back to the runtime:
    /// the Worker's entry point answers 500 `internal`, an object's caller
    /// sees its fetch fail.
    Runtime(worker::Error),
}

impl HttpError {
    pub fn new(code: Code, message: impl Into<String>) -> HttpError {
        HttpError::Answer { code, message: message.into(), headers: Vec::new() }
    }

    /// 500 `internal`.
    pub fn internal(message: impl Into<String>) -> HttpError {
        HttpError::new(Code::Internal, message)
    }

    /// A 503 `code` with `Retry-After` (whole seconds, at least 1).
    pub fn unavailable(code: Code, message: impl Into<String>, retry_after_ms: u64) -> HttpError {
        let secs = retry_after_ms.div_ceil(1000).max(1);
        HttpError::new(code, message).with_header("retry-after", &secs.to_string())
    }

    /// The status of an answer (`None` for a runtime error).
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Answer { code, .. } => Some(code.status()),
            HttpError::Runtime(_) => None,
        }
    }

    /// The code of an answer (`None` for a runtime error).
    pub fn code(&self) -> Option<Code> {
        match self {
            HttpError::Answer { code, .. } => Some(*code),
            HttpError::Runtime(_) => None,
        }
    }

    /// The same answer with header `name` added (a 401's
    /// `WWW-Authenticate`).
    pub fn with_header(self, name: &'static str, value: &str) -> HttpError {
        match self {
            HttpError::Answer { code, message, mut headers } => {
                headers.push((name, value.to_string()));
                HttpError::Answer { code, message, headers }
            }
            runtime => runtime,
        }
    }

    /// A 405 naming the allowed methods.
    pub fn method_not_allowed(method: &str, path: &str, allow: &'static str) -> HttpError {
        HttpError::new(Code::MethodNotAllowed, format!("{method} is not allowed on {path}; use {allow}"))
            .with_header("allow", allow)
    }

    /// The response (or, for [`HttpError::Runtime`], the runtime's error).
    pub fn respond(self) -> worker::Result<Response> {
        let (code, message, extra) = match self {
            HttpError::Answer { code, message, headers } => (code, message, headers),
            HttpError::Runtime(e) => return Err(e),
        };
        let headers = Headers::new();
        headers.set("content-type", "application/json")?;
        for (name, value) in extra {
            headers.set(name, &value)?;
        }
        Ok(Response::from_json(&ErrorBody::new(code.as_str(), &message))?
            .with_status(code.status())
            .with_headers(headers))
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Answer { code, message, .. } => write!(f, "{} {}: {message}", code.status(), code.as_str()),
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
            HttpError::Answer { code, headers, .. } => (code.status(), headers),
            HttpError::Runtime(_) => (0, Vec::new()),
        };
        let busy = |ms| HttpError::unavailable(Code::Overloaded, "m", ms);
        assert_eq!(header(busy(1)), (503, vec![("retry-after", "1".into())]));
        assert_eq!(header(busy(0)), (503, vec![("retry-after", "1".into())]));
        assert_eq!(header(busy(1_001)), (503, vec![("retry-after", "2".into())]));
        assert_eq!(header(HttpError::method_not_allowed("PUT", "/p", "GET")), (405, vec![("allow", "GET".into())]));
        assert_eq!(header(HttpError::new(Code::NotFound, "m")), (404, Vec::new()));
    }

    #[test]
    fn codes_are_unique_snake_case_with_an_error_status() {
        let mut seen = std::collections::BTreeSet::new();
        for code in Code::ALL {
            assert!(seen.insert(code.as_str()), "{code:?} twice");
            assert!(code.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{code:?}");
            assert!((400..600).contains(&code.status()), "{code:?}");
        }
    }

    /// The API document names every code a client can get (the internal
    /// ones and the test hooks' excepted: no public route answers them).
    #[test]
    fn every_code_is_documented() {
        let internal = [
            Code::BadMessage,
            Code::WrongObject,
            Code::NotCoordinator,
            Code::Refused,
            Code::NamespaceNotRunning,
            Code::StopFailed,
            Code::InvalidReplica,
            Code::EvictFailed,
            Code::Paused,
        ];
        let doc = include_str!("../../../docs/openapi.json");
        for code in Code::ALL.iter().filter(|c| !internal.contains(c)) {
            let named = format!("`{}`", code.as_str());
            assert!(doc.contains(&named), "docs/openapi.json does not name {named}");
        }
    }
}
