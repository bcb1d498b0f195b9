//! Request routing as a pure function of method, path and query, so the
//! decisions (which status for which request) are unit-tested on the host
//! without a Workers runtime.

use serde::Serialize;

/// What the worker should do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET /health`; `deep` also pings a `Replica` Durable Object.
    Health { deep: bool },
    /// A known path with a method it does not serve.
    MethodNotAllowed { allow: &'static str },
    /// A known path with a malformed query.
    BadRequest { message: String },
    /// Anything else.
    NotFound,
}

/// Decides the route. `query` is the raw query string without `?`.
pub fn route(method: &str, path: &str, query: Option<&str>) -> Route {
    match path {
        "/health" if method != "GET" => Route::MethodNotAllowed { allow: "GET" },
        "/health" => match deep_flag(query) {
            Ok(deep) => Route::Health { deep },
            Err(message) => Route::BadRequest { message },
        },
        _ => Route::NotFound,
    }
}

/// Reads `deep` from the query. Strict on purpose: a typo such as `deep=yes`
/// gets a 400 rather than silently running the shallow check.
fn deep_flag(query: Option<&str>) -> Result<bool, String> {
    let mut deep = false;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "deep" {
            continue;
        }
        deep = match value {
            "1" | "true" => true,
            "0" | "false" => false,
            other => return Err(format!("query parameter `deep` must be 0, 1, true or false, not {other:?}")),
        };
    }
    Ok(deep)
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
    /// Stable, snake_case code clients may match on.
    pub code: &'a str,
    /// Free text for humans; not part of the contract.
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
    fn health_get_is_shallow_by_default() {
        assert_eq!(route("GET", "/health", None), Route::Health { deep: false });
        assert_eq!(route("GET", "/health", Some("")), Route::Health { deep: false });
        assert_eq!(route("GET", "/health", Some("x=1")), Route::Health { deep: false });
    }

    #[test]
    fn health_deep_flag() {
        assert_eq!(route("GET", "/health", Some("deep=1")), Route::Health { deep: true });
        assert_eq!(route("GET", "/health", Some("a=b&deep=true")), Route::Health { deep: true });
        assert_eq!(route("GET", "/health", Some("deep=0")), Route::Health { deep: false });
        assert!(matches!(route("GET", "/health", Some("deep=yes")), Route::BadRequest { .. }));
        assert!(matches!(route("GET", "/health", Some("deep")), Route::BadRequest { .. }));
    }

    #[test]
    fn health_wrong_method() {
        for m in ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
            assert_eq!(route(m, "/health", None), Route::MethodNotAllowed { allow: "GET" }, "{m}");
        }
    }

    #[test]
    fn everything_else_is_not_found() {
        for p in ["/", "/health/", "/healthz", "/HEALTH", "/nope/../health", ""] {
            assert_eq!(route("GET", p, None), Route::NotFound, "{p}");
        }
    }

    #[test]
    fn error_body_shape() {
        let json = serde_json::to_string(&ErrorBody::new("not_found", "no route")).unwrap_or_default();
        assert_eq!(json, r#"{"error":{"code":"not_found","message":"no route"}}"#);
    }
}
