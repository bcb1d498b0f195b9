//! Request routing as a pure function of method, path, query and whether
//! the test hooks are on, so the decisions (which status for which request)
//! are unit-tested on the host without a Workers runtime.
//!
//! The public surface is exactly what [`route`] returns. The replicas'
//! internal endpoints (`crate::wire`) are not routes of the public Worker:
//! nothing here ever produces a request to them from a client's path.

use protocol::claim::ClaimId;

use crate::claims::request::claim_from_path;
use crate::names::{self, OPENAPI_SEGMENT, ReplicaName};
use crate::tokens::Right;

/// Which store serves a KV route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The replicated store: `{ns}:r0`, `{ns}:r1`, `{ns}:r2`.
    Replicated,
    /// Benchmark baseline: one Durable Object holding a map in memory.
    Mem,
    /// Benchmark baseline: one Durable Object writing to SQLite storage.
    Sql,
    /// Benchmark floor of one hop (PUT only): one Durable Object sending a
    /// replica-sized message to a second, which just answers.
    Echo,
}

/// A KV operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvOp {
    Get,
    Put,
    Delete,
}

/// An operation on a namespace itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NsOp {
    Put,
    Get,
    Delete,
}

/// What the worker should do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET /health`; `deep` also pings a `Replica` Durable Object.
    Health { deep: bool },
    /// `GET /v1/openapi.json`: the API's OpenAPI document.
    OpenApi,
    /// `GET /v1`: every namespace.
    NamespaceList,
    /// `PUT|GET|DELETE /v1/{ns}`.
    Namespace { ns: String, op: NsOp },
    /// `POST /v1/_tokens`: mint a scoped token.
    TokenMint,
    /// `GET|PUT|DELETE /v1/{ns}/kv/{key}` (and the benchmark baselines'
    /// `/_bench/{mem|sql|echo}/{ns}/kv/{key}`, test hooks only; the echo
    /// serves PUT only).
    Kv { backend: Backend, ns: String, key: String, op: KvOp },
    /// `GET /v1/{ns}/status`.
    Status { ns: String },
    /// `POST /v1/{ns}/_test/evict/{replica}` (test hooks only).
    Evict { ns: String, replica: ReplicaName },
    /// `POST /v1/{ns}/_test/evict/all` (test hooks only): all three at once,
    /// so that nothing of the namespace's memory survives.
    EvictAll { ns: String },
    /// `POST /v1/{ns}/_test/migrations` (test hooks only).
    Migrations { ns: String },
    /// `POST /v1/{ns}/_test/pause/{replica}?ms=N` (test hooks only): the
    /// replica drops every peer message, in and out, for N ms.
    Pause { ns: String, replica: ReplicaName, ms: u64 },
    /// `GET /v1/{ns}/_test/trace/{replica}?after=N` (test hooks only): the
    /// replica object's recorded trace rows after row id N (0: from the
    /// first), one page; `handoff-trace-next` names the next N.
    Trace { ns: String, replica: ReplicaName, after: u64 },
    /// `POST /v1/{ns}/_test/raw/{replica}?auth=0|1` (test hooks only): the
    /// body is delivered to the replica's peer-message endpoint as is, with
    /// or without the internal credential, and its answer returned.
    Raw { ns: String, replica: ReplicaName, auth: bool },
    /// `POST /v1/{ns}/_test/link/{replica}?auth=0|1` (test hooks only): the
    /// Worker asks the replica for a socket (`GET /link`, as another replica
    /// does), with or without the internal credential, and answers the
    /// status it got (a socket that opened is closed at once).
    Link { ns: String, replica: ReplicaName, auth: bool },
    /// `POST /v1/{ns}/claims`: authorize an attempt.
    ClaimCreate { ns: String },
    /// `GET /v1/{ns}/claims/{claim}`.
    ClaimGet { ns: String, claim: ClaimId },
    /// `POST /v1/{ns}/claims/{claim}/activate`; `baseline` for the benchmark
    /// baseline's `/_bench/claims/{ns}/claims/{claim}/activate` (test hooks only).
    ClaimActivate { ns: String, claim: ClaimId, baseline: bool },
    /// `POST /v1/{ns}/claims/{claim}/heartbeat`.
    ClaimHeartbeat { ns: String, claim: ClaimId },
    /// `POST /v1/{ns}/_test/reap` (test hooks only): run the reaper now.
    ClaimReap { ns: String },
    /// `POST /v1/{ns}/_test/claims?count=N&reservation_ttl_ms=M` (test
    /// hooks only): authorize N claims at once.
    ClaimBulk { ns: String, count: u64, reservation_ttl_ms: u64 },
    /// `GET /v1/{ns}/_test/claims` (test hooks only): claims by state.
    ClaimCount { ns: String },
    /// `GET /v1/{ns}/_test/replicas` (test hooks only): whether each replica
    /// object is running, asked without starting it.
    Replicas { ns: String },
    /// A write to a key the service reserves for itself (403).
    Forbidden { code: &'static str, message: String },
    /// A known path with a method it does not serve.
    MethodNotAllowed { allow: &'static str },
    /// A known path with a bad name or a malformed query.
    BadRequest { code: &'static str, message: String },
    /// Anything else.
    NotFound,
}

/// Largest value a PUT may carry: 1 MiB (larger bodies get 413).
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;

/// Keys under this prefix belong to the services built on the store (the
/// claims service keeps its leases there): clients may read them, never
/// write them (403 `reserved_key`).
pub const RESERVED_PREFIX: &str = "_remora/";

/// Longest pause the test hook accepts.
pub const MAX_PAUSE_MS: u64 = 30_000;

/// Most claims the bulk test hook authorizes at once.
pub const MAX_BULK_CLAIMS: u64 = 20_000;

/// What a request must show to be served ([`Route::access`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Nothing: `GET /health` (the shallow liveness check) only.
    Public,
    /// Any valid token (the handler may ask more, as minting does).
    Token,
    /// One of `any_of` on namespace `ns` (`None`: on every namespace).
    Rights { ns: Option<String>, any_of: &'static [Right] },
}

impl Route {
    /// What the request must show. Requests the router refuses (404, 405,
    /// 400, 403 for a reserved key) still need a valid token: an
    /// unauthenticated client learns nothing but 401.
    pub fn access(&self) -> Access {
        use Right::*;
        let on = |ns: &String, any_of: &'static [Right]| Access::Rights { ns: Some(ns.clone()), any_of };
        match self {
            Route::Health { deep: false } => Access::Public,
            Route::Health { deep: true } | Route::OpenApi | Route::TokenMint => Access::Token,
            Route::NamespaceList => Access::Rights { ns: None, any_of: &[Admin] },
            Route::Namespace { ns, op: NsOp::Get } => on(ns, &[Read]),
            Route::Namespace { ns, op: NsOp::Put | NsOp::Delete } => on(ns, &[Admin]),
            Route::Kv { backend: Backend::Replicated, ns, op: KvOp::Get, .. } => on(ns, &[Read]),
            Route::Kv { backend: Backend::Replicated, ns, op: KvOp::Put | KvOp::Delete, .. } => on(ns, &[Write]),
            Route::Status { ns } => on(ns, &[Read]),
            Route::ClaimGet { ns, .. } => on(ns, &[Read, Claims]),
            Route::ClaimCreate { ns }
            | Route::ClaimActivate { ns, baseline: false, .. }
            | Route::ClaimHeartbeat { ns, .. } => on(ns, &[Claims]),
            // Test hooks and benchmark baselines (only with the hooks on).
            Route::Kv { ns, .. }
            | Route::ClaimActivate { ns, baseline: true, .. }
            | Route::Evict { ns, .. }
            | Route::EvictAll { ns }
            | Route::Migrations { ns }
            | Route::Pause { ns, .. }
            | Route::Raw { ns, .. }
            | Route::Link { ns, .. }
            | Route::Trace { ns, .. }
            | Route::ClaimReap { ns }
            | Route::ClaimBulk { ns, .. }
            | Route::ClaimCount { ns }
            | Route::Replicas { ns } => on(ns, &[Admin]),
            Route::Forbidden { .. } | Route::MethodNotAllowed { .. } | Route::BadRequest { .. } | Route::NotFound => {
                Access::Token
            }
        }
    }
}

/// Decides the route. `query` is the raw query string without `?`; `hooks`
/// is whether `HANDOFF_TEST_HOOKS` is "1" (otherwise every test-only path
/// is a plain 404, whatever the method).
pub fn route(method: &str, path: &str, query: Option<&str>, hooks: bool) -> Route {
    if path == "/health" {
        if method != "GET" {
            return Route::MethodNotAllowed { allow: "GET" };
        }
        return match deep_flag(query) {
            Ok(deep) => Route::Health { deep },
            Err(bad_request) => bad_request,
        };
    }
    if path == "/v1" {
        return match method {
            "GET" => Route::NamespaceList,
            _ => Route::MethodNotAllowed { allow: "GET" },
        };
    }
    if let Some(rest) = path.strip_prefix("/v1/") {
        return v1(method, rest, query, hooks);
    }
    if let Some(rest) = path.strip_prefix("/_bench/")
        && hooks
    {
        let (backend, rest) = match rest.split_once('/') {
            Some(("claims", rest)) => {
                let Some((ns, tail)) = rest.split_once('/') else { return Route::NotFound };
                return match tail.strip_prefix("claims/").and_then(|t| t.strip_suffix("/activate")) {
                    Some(claim) if !claim.contains('/') => claim_action(method, ns, claim, "activate", true),
                    _ => Route::NotFound,
                };
            }
            Some(("mem", rest)) => (Backend::Mem, rest),
            Some(("sql", rest)) => (Backend::Sql, rest),
            Some(("echo", rest)) => (Backend::Echo, rest),
            _ => return Route::NotFound,
        };
        let Some((ns, tail)) = rest.split_once('/') else { return Route::NotFound };
        return match tail.strip_prefix("kv/") {
            Some(key) => kv(method, backend, ns, key),
            None => Route::NotFound,
        };
    }
    Route::NotFound
}

/// `/v1/{ns}/...` with the `/v1/` stripped.
fn v1(method: &str, rest: &str, query: Option<&str>, hooks: bool) -> Route {
    let Some((ns_raw, tail)) = rest.split_once('/') else { return v1_segment(method, rest) };
    if let Some(key_raw) = tail.strip_prefix("kv/") {
        return kv(method, Backend::Replicated, ns_raw, key_raw);
    }
    if tail == "status" {
        if method != "GET" {
            return Route::MethodNotAllowed { allow: "GET" };
        }
        return with_ns(ns_raw, |ns| Route::Status { ns });
    }
    if tail == "claims" {
        if method != "POST" {
            return Route::MethodNotAllowed { allow: "POST" };
        }
        return with_ns(ns_raw, |ns| Route::ClaimCreate { ns });
    }
    if let Some(rest) = tail.strip_prefix("claims/") {
        return match rest.split_once('/') {
            None => claim_action(method, ns_raw, rest, "", false),
            Some((claim, action @ ("activate" | "heartbeat"))) => claim_action(method, ns_raw, claim, action, false),
            Some(_) => Route::NotFound,
        };
    }
    if let Some(hook) = tail.strip_prefix("_test/") {
        if !hooks {
            return Route::NotFound;
        }
        return match hook {
            "reap" if method == "POST" => with_ns(ns_raw, |ns| Route::ClaimReap { ns }),
            "reap" => Route::MethodNotAllowed { allow: "POST" },
            "replicas" if method == "GET" => with_ns(ns_raw, |ns| Route::Replicas { ns }),
            "replicas" => Route::MethodNotAllowed { allow: "GET" },
            "migrations" if method == "POST" => with_ns(ns_raw, |ns| Route::Migrations { ns }),
            "migrations" => Route::MethodNotAllowed { allow: "POST" },
            "evict/all" if method == "POST" => with_ns(ns_raw, |ns| Route::EvictAll { ns }),
            "claims" => claims_hook(method, ns_raw, query),
            _ => test_hook(method, ns_raw, hook, query),
        };
    }
    Route::NotFound
}

/// `/v1/{segment}`: the API document, minting tokens, or a namespace.
fn v1_segment(method: &str, segment: &str) -> Route {
    match segment {
        OPENAPI_SEGMENT if method == "GET" => Route::OpenApi,
        OPENAPI_SEGMENT => Route::MethodNotAllowed { allow: "GET" },
        "_tokens" if method == "POST" => Route::TokenMint,
        "_tokens" => Route::MethodNotAllowed { allow: "POST" },
        "" => Route::NotFound,
        _ => {
            let op = match method {
                "PUT" => NsOp::Put,
                "GET" => NsOp::Get,
                "DELETE" => NsOp::Delete,
                _ => return Route::MethodNotAllowed { allow: "GET, PUT, DELETE" },
            };
            with_ns(segment, |ns| Route::Namespace { ns, op })
        }
    }
}

/// `/v1/{ns}/_test/claims`: bulk-authorize (POST) or count (GET).
fn claims_hook(method: &str, ns_raw: &str, query: Option<&str>) -> Route {
    match method {
        "GET" => with_ns(ns_raw, |ns| Route::ClaimCount { ns }),
        "POST" => {
            let number = |name| param(query, name).and_then(|v| v.parse::<u64>().ok());
            match (number("count"), number("reservation_ttl_ms")) {
                (Some(count), Some(ttl)) if (1..=MAX_BULK_CLAIMS).contains(&count) && ttl >= 1 => {
                    with_ns(ns_raw, |ns| Route::ClaimBulk { ns, count, reservation_ttl_ms: ttl })
                }
                _ => bad(
                    "bad_request",
                    format!("query parameters `count` (1 to {MAX_BULK_CLAIMS}) and `reservation_ttl_ms` are required"),
                ),
            }
        }
        _ => Route::MethodNotAllowed { allow: "GET, POST" },
    }
}

/// `/claims/{claim}` (`action` empty: GET) or `/claims/{claim}/{action}` (POST).
fn claim_action(method: &str, ns_raw: &str, claim_raw: &str, action: &str, baseline: bool) -> Route {
    let allow = if action.is_empty() { "GET" } else { "POST" };
    if method != allow {
        return Route::MethodNotAllowed { allow };
    }
    with_ns(ns_raw, |ns| match claim_from_path(claim_raw) {
        Ok(claim) => match action {
            "" => Route::ClaimGet { ns, claim },
            "activate" => Route::ClaimActivate { ns, claim, baseline },
            _ => Route::ClaimHeartbeat { ns, claim },
        },
        Err(e) => bad(e.code(), e.to_string()),
    })
}

fn kv(method: &str, backend: Backend, ns_raw: &str, key_raw: &str) -> Route {
    if backend == Backend::Echo && method != "PUT" {
        return Route::MethodNotAllowed { allow: "PUT" };
    }
    let op = match method {
        "GET" => KvOp::Get,
        "PUT" => KvOp::Put,
        "DELETE" => KvOp::Delete,
        _ => return Route::MethodNotAllowed { allow: "GET, PUT, DELETE" },
    };
    with_ns(ns_raw, |ns| match names::key(key_raw) {
        Ok(key) if op != KvOp::Get && key.starts_with(RESERVED_PREFIX) => Route::Forbidden {
            code: "reserved_key",
            message: format!(
                "keys under {RESERVED_PREFIX:?} are reserved for the claims service and cannot be written"
            ),
        },
        Ok(key) => Route::Kv { backend, ns, key, op },
        Err(e) => bad("invalid_key", format!("the key {e}")),
    })
}

fn test_hook(method: &str, ns_raw: &str, hook: &str, query: Option<&str>) -> Route {
    let Some((name, replica_raw)) = hook.split_once('/') else { return Route::NotFound };
    if !matches!(name, "evict" | "pause" | "raw" | "link" | "trace") {
        return Route::NotFound;
    }
    let allow = if name == "trace" { "GET" } else { "POST" };
    if method != allow {
        return Route::MethodNotAllowed { allow };
    }
    let Some(replica) = ReplicaName::parse(replica_raw) else {
        return bad("invalid_replica", format!("replica must be r0, r1 or r2, not {replica_raw:?}"));
    };
    with_ns(ns_raw, |ns| match name {
        "evict" => Route::Evict { ns, replica },
        "trace" => match param(query, "after").map(str::parse::<u64>) {
            None => Route::Trace { ns, replica, after: 0 },
            Some(Ok(after)) => Route::Trace { ns, replica, after },
            Some(Err(_)) => bad("bad_request", "query parameter `after` must be a row id (0 or more)".into()),
        },
        "pause" => match param(query, "ms").map(str::parse::<u64>) {
            Some(Ok(ms)) if (1..=MAX_PAUSE_MS).contains(&ms) => Route::Pause { ns, replica, ms },
            _ => bad("bad_request", format!("query parameter `ms` must be 1 to {MAX_PAUSE_MS}")),
        },
        _ => {
            let auth = match param(query, "auth") {
                None | Some("1") => true,
                Some("0") => false,
                Some(other) => {
                    return bad("bad_request", format!("query parameter `auth` must be 0 or 1, not {other:?}"));
                }
            };
            if name == "raw" { Route::Raw { ns, replica, auth } } else { Route::Link { ns, replica, auth } }
        }
    })
}

fn with_ns(ns_raw: &str, then: impl FnOnce(String) -> Route) -> Route {
    match names::namespace(ns_raw) {
        Ok(ns) => then(ns),
        Err(e) => bad("invalid_namespace", format!("the namespace {e}")),
    }
}

fn bad(code: &'static str, message: String) -> Route {
    Route::BadRequest { code, message }
}

/// The raw value of the last `name=` parameter.
fn param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .rfind(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Reads `deep` from the query. Strict on purpose: a typo such as `deep=yes`
/// gets a 400 rather than silently running the shallow check.
fn deep_flag(query: Option<&str>) -> Result<bool, Route> {
    let mut deep = false;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "deep" {
            continue;
        }
        deep = match value {
            "1" | "true" => true,
            "0" | "false" => false,
            other => {
                return Err(bad(
                    "bad_request",
                    format!("query parameter `deep` must be 0, 1, true or false, not {other:?}"),
                ));
            }
        };
    }
    Ok(deep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(method: &str, path: &str) -> Route {
        route(method, path, None, true)
    }

    fn kv_route(ns: &str, key: &str, op: KvOp) -> Route {
        Route::Kv { backend: Backend::Replicated, ns: ns.into(), key: key.into(), op }
    }

    fn code(route: Route) -> &'static str {
        match route {
            Route::BadRequest { code, .. } => code,
            other => panic!("expected a 400, got {other:?}"),
        }
    }

    #[test]
    fn health_get_is_shallow_by_default() {
        assert_eq!(route("GET", "/health", None, false), Route::Health { deep: false });
        assert_eq!(route("GET", "/health", Some(""), false), Route::Health { deep: false });
        assert_eq!(route("GET", "/health", Some("x=1"), false), Route::Health { deep: false });
    }

    #[test]
    fn health_deep_flag() {
        assert_eq!(route("GET", "/health", Some("deep=1"), false), Route::Health { deep: true });
        assert_eq!(route("GET", "/health", Some("a=b&deep=true"), false), Route::Health { deep: true });
        assert_eq!(route("GET", "/health", Some("deep=0"), false), Route::Health { deep: false });
        assert!(matches!(route("GET", "/health", Some("deep=yes"), false), Route::BadRequest { .. }));
        assert!(matches!(route("GET", "/health", Some("deep"), false), Route::BadRequest { .. }));
    }

    #[test]
    fn health_wrong_method() {
        for m in ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
            assert_eq!(route(m, "/health", None, false), Route::MethodNotAllowed { allow: "GET" }, "{m}");
        }
    }

    #[test]
    fn kv_routes() {
        assert_eq!(r("GET", "/v1/shop/kv/cart"), kv_route("shop", "cart", KvOp::Get));
        assert_eq!(r("PUT", "/v1/shop/kv/a/b"), kv_route("shop", "a/b", KvOp::Put));
        assert_eq!(r("DELETE", "/v1/shop/kv/a%2Fb"), kv_route("shop", "a/b", KvOp::Delete));
        assert_eq!(r("GET", "/v1/caf%C3%A9/kv/%F0%9F%94%91"), kv_route("café", "🔑", KvOp::Get));
        // A namespace may be called like a path word.
        assert_eq!(r("GET", "/v1/kv/kv/kv"), kv_route("kv", "kv", KvOp::Get));
    }

    #[test]
    fn kv_errors() {
        for m in ["POST", "PATCH", "HEAD", "OPTIONS"] {
            assert_eq!(r(m, "/v1/shop/kv/k"), Route::MethodNotAllowed { allow: "GET, PUT, DELETE" }, "{m}");
        }
        assert_eq!(code(r("GET", "/v1/shop/kv/")), "invalid_key");
        assert_eq!(code(r("GET", "/v1//kv/k")), "invalid_namespace");
        assert_eq!(code(r("GET", "/v1/a%2Fb/kv/k")), "invalid_namespace");
        assert_eq!(code(r("PUT", "/v1/shop/kv/a%00")), "invalid_key");
        assert_eq!(code(r("PUT", "/v1/shop/kv/%FF")), "invalid_key");
        let long = "k".repeat(crate::names::MAX_KEY_BYTES + 1);
        assert_eq!(code(r("PUT", &format!("/v1/shop/kv/{long}"))), "invalid_key");
        let long = "n".repeat(crate::names::MAX_NAMESPACE_BYTES + 1);
        assert_eq!(code(r("PUT", &format!("/v1/{long}/kv/k"))), "invalid_namespace");
    }

    #[test]
    fn status_route() {
        assert_eq!(r("GET", "/v1/shop/status"), Route::Status { ns: "shop".into() });
        assert_eq!(r("POST", "/v1/shop/status"), Route::MethodNotAllowed { allow: "GET" });
        assert_eq!(code(r("GET", "/v1/%01/status")), "invalid_namespace");
    }

    #[test]
    fn test_hooks_exist_only_when_enabled() {
        assert_eq!(r("POST", "/v1/s/_test/evict/r1"), Route::Evict { ns: "s".into(), replica: ReplicaName::R1 });
        assert_eq!(
            route("POST", "/v1/s/_test/pause/r2", Some("ms=1500"), true),
            Route::Pause { ns: "s".into(), replica: ReplicaName::R2, ms: 1500 }
        );
        assert_eq!(
            r("POST", "/v1/s/_test/raw/r0"),
            Route::Raw { ns: "s".into(), replica: ReplicaName::R0, auth: true }
        );
        assert_eq!(
            route("POST", "/v1/s/_test/raw/r0", Some("auth=0"), true),
            Route::Raw { ns: "s".into(), replica: ReplicaName::R0, auth: false }
        );
        assert_eq!(r("GET", "/v1/s/_test/evict/r1"), Route::MethodNotAllowed { allow: "POST" });
        assert_eq!(code(r("POST", "/v1/s/_test/evict/r3")), "invalid_replica");
        assert_eq!(code(route("POST", "/v1/s/_test/pause/r1", None, true)), "bad_request");
        assert_eq!(code(route("POST", "/v1/s/_test/pause/r1", Some("ms=0"), true)), "bad_request");
        assert_eq!(code(route("POST", "/v1/s/_test/pause/r1", Some("ms=30001"), true)), "bad_request");
        assert_eq!(code(route("POST", "/v1/s/_test/raw/r1", Some("auth=2"), true)), "bad_request");
        assert_eq!(
            route("POST", "/v1/s/_test/link/r2", Some("auth=0"), true),
            Route::Link { ns: "s".into(), replica: ReplicaName::R2, auth: false }
        );
        assert_eq!(code(route("POST", "/v1/s/_test/link/r1", Some("auth=x"), true)), "bad_request");
        assert_eq!(r("POST", "/v1/s/_test/nope/r1"), Route::NotFound);
        for (m, p) in [
            ("POST", "/v1/s/_test/evict/r1"),
            ("GET", "/v1/s/_test/evict/r1"),
            ("POST", "/v1/s/_test/evict/r9"),
            ("POST", "/v1/%00/_test/evict/r1"),
            ("POST", "/v1/s/_test/pause/r1"),
            ("POST", "/v1/s/_test/raw/r0"),
            ("POST", "/v1/s/_test/link/r0"),
            ("GET", "/v1/s/_test/trace/r0"),
            ("GET", "/_bench/mem/s/kv/k"),
            ("PUT", "/_bench/sql/s/kv/k"),
        ] {
            assert_eq!(route(m, p, Some("ms=10"), false), Route::NotFound, "{m} {p}");
        }
    }

    #[test]
    fn bench_baselines() {
        assert_eq!(
            r("PUT", "/_bench/mem/b/kv/k1"),
            Route::Kv { backend: Backend::Mem, ns: "b".into(), key: "k1".into(), op: KvOp::Put }
        );
        assert_eq!(
            r("GET", "/_bench/sql/b/kv/k1"),
            Route::Kv { backend: Backend::Sql, ns: "b".into(), key: "k1".into(), op: KvOp::Get }
        );
        assert_eq!(
            r("PUT", "/_bench/echo/b/kv/k1"),
            Route::Kv { backend: Backend::Echo, ns: "b".into(), key: "k1".into(), op: KvOp::Put }
        );
        assert_eq!(r("GET", "/_bench/echo/b/kv/k1"), Route::MethodNotAllowed { allow: "PUT" });
        assert_eq!(r("DELETE", "/_bench/echo/b/kv/k1"), Route::MethodNotAllowed { allow: "PUT" });
        assert_eq!(route("PUT", "/_bench/echo/b/kv/k1", None, false), Route::NotFound);
        assert_eq!(r("GET", "/_bench/disk/b/kv/k1"), Route::NotFound);
        assert_eq!(r("GET", "/_bench/mem/b/status"), Route::NotFound);
    }

    #[test]
    fn claims_routes() {
        let c = |s: &str| ClaimId::from(s);
        assert_eq!(r("POST", "/v1/s/claims"), Route::ClaimCreate { ns: "s".into() });
        assert_eq!(r("GET", "/v1/s/claims"), Route::MethodNotAllowed { allow: "POST" });
        assert_eq!(r("GET", "/v1/s/claims/job%201"), Route::ClaimGet { ns: "s".into(), claim: c("job 1") });
        assert_eq!(r("POST", "/v1/s/claims/j"), Route::MethodNotAllowed { allow: "GET" });
        assert_eq!(
            r("POST", "/v1/s/claims/j/activate"),
            Route::ClaimActivate { ns: "s".into(), claim: c("j"), baseline: false }
        );
        assert_eq!(r("POST", "/v1/s/claims/j/heartbeat"), Route::ClaimHeartbeat { ns: "s".into(), claim: c("j") });
        assert_eq!(r("GET", "/v1/s/claims/j/activate"), Route::MethodNotAllowed { allow: "POST" });
        assert_eq!(r("POST", "/v1/s/claims/j/other"), Route::NotFound);
        assert_eq!(code(r("GET", "/v1/s/claims/a%2Fb")), "invalid_claim");
        assert_eq!(code(r("GET", &format!("/v1/s/claims/{}", "c".repeat(257)))), "invalid_claim");
        assert_eq!(code(r("POST", "/v1/s%2F/claims")), "invalid_namespace");
        assert_eq!(r("POST", "/v1/s/_test/reap"), Route::ClaimReap { ns: "s".into() });
        assert_eq!(route("POST", "/v1/s/_test/reap", None, false), Route::NotFound);
        assert_eq!(
            r("POST", "/_bench/claims/s/claims/j/activate"),
            Route::ClaimActivate { ns: "s".into(), claim: c("j"), baseline: true }
        );
        assert_eq!(route("POST", "/_bench/claims/s/claims/j/activate", None, false), Route::NotFound);
    }

    #[test]
    fn the_reserved_prefix_is_read_only() {
        for m in ["PUT", "DELETE"] {
            assert!(matches!(r(m, "/v1/s/kv/_remora/lease/c"), Route::Forbidden { code: "reserved_key", .. }), "{m}");
            assert!(matches!(r(m, "/v1/s/kv/_remora%2Fx"), Route::Forbidden { .. }), "{m} encoded");
        }
        assert_eq!(r("GET", "/v1/s/kv/_remora/lease/c"), kv_route("s", "_remora/lease/c", KvOp::Get));
        assert_eq!(r("PUT", "/v1/s/kv/_remorax"), kv_route("s", "_remorax", KvOp::Put));
    }

    #[test]
    fn internal_paths_are_not_public_routes() {
        for p in [
            "/internal/ping",
            "/msg",
            "/put",
            "/get",
            "/evict",
            "/status",
            "/v1/s/msg",
            "/v1/s/_internal/msg",
            "/v1/s/r0/msg",
            "/v1/s:r0/kv",
            "/v1/s/kv",
            "/v1/",
            "/claims/create",
            "/claims/activate",
            "/v1/s/claims/activate-baseline/x",
        ] {
            for m in ["GET", "POST", "PUT"] {
                assert_eq!(r(m, p), Route::NotFound, "{m} {p}");
            }
        }
    }

    #[test]
    fn namespace_routes_and_the_api_document() {
        let ns = |op| Route::Namespace { ns: "shop".into(), op };
        assert_eq!(r("PUT", "/v1/shop"), ns(NsOp::Put));
        assert_eq!(r("GET", "/v1/shop"), ns(NsOp::Get));
        assert_eq!(r("DELETE", "/v1/shop"), ns(NsOp::Delete));
        assert_eq!(r("POST", "/v1/shop"), Route::MethodNotAllowed { allow: "GET, PUT, DELETE" });
        assert_eq!(r("GET", "/v1"), Route::NamespaceList);
        assert_eq!(r("PUT", "/v1"), Route::MethodNotAllowed { allow: "GET" });
        assert_eq!(r("GET", "/v1/openapi.json"), Route::OpenApi);
        assert_eq!(r("PUT", "/v1/openapi.json"), Route::MethodNotAllowed { allow: "GET" });
        assert_eq!(r("POST", "/v1/_tokens"), Route::TokenMint);
        assert_eq!(r("GET", "/v1/_tokens"), Route::MethodNotAllowed { allow: "POST" });
        assert_eq!(code(r("PUT", "/v1/_other")), "invalid_namespace");
        assert_eq!(code(r("PUT", "/v1/_x/kv/k")), "invalid_namespace");
        assert_eq!(code(r("PUT", "/v1/openapi.json/kv/k")), "invalid_namespace");
        assert_eq!(code(r("PUT", "/v1/a%2Fb")), "invalid_namespace");
    }

    #[test]
    fn every_route_says_what_it_needs() {
        use Right::*;
        let rights = |ns: &str, any_of: &'static [Right]| Access::Rights { ns: Some(ns.into()), any_of };
        assert_eq!(r("GET", "/health").access(), Access::Public);
        assert_eq!(route("GET", "/health", Some("deep=1"), true).access(), Access::Token);
        assert_eq!(r("GET", "/v1/openapi.json").access(), Access::Token);
        assert_eq!(r("POST", "/v1/_tokens").access(), Access::Token);
        assert_eq!(r("GET", "/v1").access(), Access::Rights { ns: None, any_of: &[Admin] });
        assert_eq!(r("PUT", "/v1/s").access(), rights("s", &[Admin]));
        assert_eq!(r("DELETE", "/v1/s").access(), rights("s", &[Admin]));
        assert_eq!(r("GET", "/v1/s").access(), rights("s", &[Read]));
        assert_eq!(r("GET", "/v1/s/kv/k").access(), rights("s", &[Read]));
        assert_eq!(r("PUT", "/v1/s/kv/k").access(), rights("s", &[Write]));
        assert_eq!(r("DELETE", "/v1/s/kv/k").access(), rights("s", &[Write]));
        assert_eq!(r("GET", "/v1/s/status").access(), rights("s", &[Read]));
        assert_eq!(r("POST", "/v1/s/claims").access(), rights("s", &[Claims]));
        assert_eq!(r("GET", "/v1/s/claims/c").access(), rights("s", &[Read, Claims]));
        assert_eq!(r("POST", "/v1/s/claims/c/activate").access(), rights("s", &[Claims]));
        assert_eq!(r("POST", "/v1/s/claims/c/heartbeat").access(), rights("s", &[Claims]));
        for (m, p) in [
            ("POST", "/v1/s/_test/evict/r0"),
            ("POST", "/v1/s/_test/reap"),
            ("GET", "/v1/s/_test/replicas"),
            ("GET", "/v1/s/_test/claims"),
            ("PUT", "/_bench/mem/s/kv/k"),
            ("PUT", "/_bench/echo/s/kv/k"),
            ("POST", "/_bench/claims/s/claims/c/activate"),
        ] {
            assert_eq!(route(m, p, Some("ms=5"), true).access(), rights("s", &[Admin]), "{m} {p}");
        }
        for (m, p) in [("GET", "/nope"), ("POST", "/v1/s/status"), ("PUT", "/v1/s/kv/_remora/x"), ("GET", "/v1//kv/k")]
        {
            assert_eq!(r(m, p).access(), Access::Token, "{m} {p}");
        }
    }

    #[test]
    fn the_claims_and_replicas_test_hooks() {
        assert_eq!(
            route("POST", "/v1/s/_test/claims", Some("count=3&reservation_ttl_ms=50"), true),
            Route::ClaimBulk { ns: "s".into(), count: 3, reservation_ttl_ms: 50 }
        );
        assert_eq!(
            code(route("POST", "/v1/s/_test/claims", Some("count=0&reservation_ttl_ms=50"), true)),
            "bad_request"
        );
        assert_eq!(code(route("POST", "/v1/s/_test/claims", Some("count=3"), true)), "bad_request");
        assert_eq!(r("GET", "/v1/s/_test/claims"), Route::ClaimCount { ns: "s".into() });
        assert_eq!(r("GET", "/v1/s/_test/replicas"), Route::Replicas { ns: "s".into() });
        assert_eq!(r("POST", "/v1/s/_test/evict/all"), Route::EvictAll { ns: "s".into() });
        assert_eq!(
            route("GET", "/v1/s/_test/trace/r1", Some("after=42"), true),
            Route::Trace { ns: "s".into(), replica: ReplicaName::R1, after: 42 }
        );
        assert_eq!(
            r("GET", "/v1/s/_test/trace/r2"),
            Route::Trace { ns: "s".into(), replica: ReplicaName::R2, after: 0 }
        );
        assert_eq!(r("POST", "/v1/s/_test/trace/r2"), Route::MethodNotAllowed { allow: "GET" });
        assert_eq!(code(route("GET", "/v1/s/_test/trace/r1", Some("after=x"), true)), "bad_request");
        assert_eq!(r("POST", "/v1/s/_test/migrations"), Route::Migrations { ns: "s".into() });
        for (m, p) in [("GET", "/v1/s/_test/claims"), ("GET", "/v1/s/_test/replicas")] {
            assert_eq!(route(m, p, None, false), Route::NotFound);
        }
    }

    #[test]
    fn everything_else_is_not_found() {
        for p in ["/", "/health/", "/healthz", "/HEALTH", "/nope/../health", "", "/v2/s/kv/k", "/V1/s/kv/k"] {
            assert_eq!(r("GET", p), Route::NotFound, "{p}");
        }
    }
}
