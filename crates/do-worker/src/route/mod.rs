//! Request routing as a pure function of method, path, query and whether
//! the test hooks are on, so the decisions (which status for which request)
//! are unit-tested on the host without a Workers runtime.
//!
//! The public surface is exactly what [`route`] returns; the test hooks and
//! benchmark baselines are [`Hook`]s, parsed in `hooks.rs` and reachable only
//! with the hooks on. The objects' internal endpoints (`crate::wire`) are not
//! routes of the public Worker: nothing here ever produces a request to them
//! from a client's path.

mod hooks;
mod parse;
mod routes;

pub use routes::{Access, Baseline, Hook, NsOp, Route};

use crate::claims::request::ListPage;
use crate::error::Code;
use crate::listing::Page;
use crate::names::OPENAPI_SEGMENT;

use parse::{bad, claim, kv, with_ns};

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
        return hooks::bench(method, rest);
    }
    Route::NotFound
}

/// `/v1/{ns}/...` with the `/v1/` stripped.
fn v1(method: &str, rest: &str, query: Option<&str>, hooks: bool) -> Route {
    let Some((ns_raw, tail)) = rest.split_once('/') else { return v1_segment(method, rest) };
    if let Some(key_raw) = tail.strip_prefix("kv/") {
        if let Some(name) = query_names(query).next() {
            let message = format!(
                "unknown query parameter `{name}`: a key's routes take none (a time to live is the Handoff-TTL-Ms \
                 header, a condition If-Match or If-None-Match)"
            );
            return bad(Code::BadRequest, message);
        }
        return kv(method, ns_raw, key_raw, |ns, key, op| Route::Kv { ns, key, op });
    }
    if tail == "kv" {
        if method != "GET" {
            return Route::MethodNotAllowed { allow: "GET" };
        }
        return with_ns(ns_raw, |ns| match Page::from_query(query) {
            Ok(page) => Route::KvList { ns, page },
            Err((code, message)) => bad(code, message),
        });
    }
    if tail == "status" {
        if method != "GET" {
            return Route::MethodNotAllowed { allow: "GET" };
        }
        return with_ns(ns_raw, |ns| Route::Status { ns });
    }
    if tail == "claims" {
        return match method {
            "POST" => with_ns(ns_raw, |ns| Route::ClaimCreate { ns }),
            "GET" => with_ns(ns_raw, |ns| match ListPage::from_query(query) {
                Ok(page) => Route::ClaimList { ns, page },
                Err(e) => bad(e.code(), e.to_string()),
            }),
            _ => Route::MethodNotAllowed { allow: "GET, POST" },
        };
    }
    if let Some(rest) = tail.strip_prefix("claims/") {
        return match rest.split_once('/') {
            None => claim(method, ns_raw, rest, "GET", |ns, claim| Route::ClaimGet { ns, claim }),
            Some((raw, "activate")) => {
                claim(method, ns_raw, raw, "POST", |ns, claim| Route::ClaimActivate { ns, claim })
            }
            Some((raw, "heartbeat")) => {
                claim(method, ns_raw, raw, "POST", |ns, claim| Route::ClaimHeartbeat { ns, claim })
            }
            Some((raw, "complete")) => {
                claim(method, ns_raw, raw, "POST", |ns, claim| Route::ClaimComplete { ns, claim })
            }
            Some(_) => Route::NotFound,
        };
    }
    if let Some(hook) = tail.strip_prefix("_test/") {
        return if hooks { hooks::test_hook(method, ns_raw, hook, query) } else { Route::NotFound };
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

/// The names of the query's parameters, in order.
fn query_names(query: Option<&str>) -> impl Iterator<Item = &str> {
    query.unwrap_or("").split('&').filter(|p| !p.is_empty()).map(|pair| pair.split_once('=').map_or(pair, |(k, _)| k))
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
                    Code::BadRequest,
                    format!("query parameter `deep` must be 0, 1, true or false, not {other:?}"),
                ));
            }
        };
    }
    Ok(deep)
}

#[cfg(test)]
mod tests {
    use protocol::claim::ClaimId;

    use super::*;
    use crate::names::ReplicaName;
    use crate::tokens::Right;
    use crate::vocab::KvOp;

    fn r(method: &str, path: &str) -> Route {
        route(method, path, None, true)
    }

    fn kv_route(ns: &str, key: &str, op: KvOp) -> Route {
        Route::Kv { ns: ns.into(), key: key.into(), op }
    }

    fn code(route: Route) -> &'static str {
        match route {
            Route::BadRequest { code, .. } => code.as_str(),
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
    fn a_key_takes_no_query_parameters() {
        let kv = |query| route("PUT", "/v1/ns/kv/k", query, false);
        assert!(matches!(kv(None), Route::Kv { .. }));
        assert!(matches!(kv(Some("")), Route::Kv { .. }));
        assert!(
            matches!(kv(Some("ttl=5")), Route::BadRequest { code: Code::BadRequest, message } if message.contains("`ttl`")),
            "a time to live in the query would be ignored"
        );
        assert!(matches!(kv(Some("&x")), Route::BadRequest { .. }));
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
        for m in ["POST", "PATCH", "OPTIONS"] {
            assert_eq!(r(m, "/v1/shop/kv/k"), Route::MethodNotAllowed { allow: "GET, HEAD, PUT, DELETE" }, "{m}");
        }
        assert_eq!(r("HEAD", "/v1/shop/kv/k"), Route::Kv { ns: "shop".into(), key: "k".into(), op: KvOp::Get });
        assert_eq!(r("PUT", "/v1/shop/kv"), Route::MethodNotAllowed { allow: "GET" });
        assert_eq!(
            route("GET", "/v1/shop/kv", Some("prefix=a&limit=5"), true),
            Route::KvList {
                ns: "shop".into(),
                page: crate::listing::Page { prefix: "a".into(), after: None, limit: 5 }
            }
        );
        assert_eq!(code(route("GET", "/v1/shop/kv", Some("limit=0"), true)), "invalid_limit");
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
        assert_eq!(
            r("POST", "/v1/s/_test/evict/r1"),
            Route::Hook(Hook::Evict { ns: "s".into(), replica: ReplicaName::R1 })
        );
        assert_eq!(
            route("POST", "/v1/s/_test/pause/r2", Some("ms=1500"), true),
            Route::Hook(Hook::Pause { ns: "s".into(), replica: ReplicaName::R2, ms: 1500 })
        );
        assert_eq!(
            r("POST", "/v1/s/_test/raw/r0"),
            Route::Hook(Hook::Raw { ns: "s".into(), replica: ReplicaName::R0, auth: true })
        );
        assert_eq!(
            route("POST", "/v1/s/_test/raw/r0", Some("auth=0"), true),
            Route::Hook(Hook::Raw { ns: "s".into(), replica: ReplicaName::R0, auth: false })
        );
        assert_eq!(r("GET", "/v1/s/_test/evict/r1"), Route::MethodNotAllowed { allow: "POST" });
        assert_eq!(code(r("POST", "/v1/s/_test/evict/r3")), "invalid_replica");
        assert_eq!(code(route("POST", "/v1/s/_test/pause/r1", None, true)), "bad_request");
        assert_eq!(code(route("POST", "/v1/s/_test/pause/r1", Some("ms=0"), true)), "bad_request");
        assert_eq!(code(route("POST", "/v1/s/_test/pause/r1", Some("ms=30001"), true)), "bad_request");
        assert_eq!(code(route("POST", "/v1/s/_test/raw/r1", Some("auth=2"), true)), "bad_request");
        assert_eq!(
            route("POST", "/v1/s/_test/link/r2", Some("auth=0"), true),
            Route::Hook(Hook::Link { ns: "s".into(), replica: ReplicaName::R2, auth: false })
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
            Route::Hook(Hook::Bench { baseline: Baseline::Mem, ns: "b".into(), key: "k1".into(), op: KvOp::Put })
        );
        assert_eq!(
            r("GET", "/_bench/sql/b/kv/k1"),
            Route::Hook(Hook::Bench { baseline: Baseline::Sql, ns: "b".into(), key: "k1".into(), op: KvOp::Get })
        );
        assert_eq!(
            r("PUT", "/_bench/echo/b/kv/k1"),
            Route::Hook(Hook::Bench { baseline: Baseline::Echo, ns: "b".into(), key: "k1".into(), op: KvOp::Put })
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
        assert!(matches!(r("GET", "/v1/s/claims"), Route::ClaimList { .. }));
        assert_eq!(r("PUT", "/v1/s/claims"), Route::MethodNotAllowed { allow: "GET, POST" });
        assert_eq!(r("GET", "/v1/s/claims/job%201"), Route::ClaimGet { ns: "s".into(), claim: c("job 1") });
        assert_eq!(r("POST", "/v1/s/claims/j"), Route::MethodNotAllowed { allow: "GET" });
        assert_eq!(r("POST", "/v1/s/claims/j/activate"), Route::ClaimActivate { ns: "s".into(), claim: c("j") });
        assert_eq!(r("POST", "/v1/s/claims/j/heartbeat"), Route::ClaimHeartbeat { ns: "s".into(), claim: c("j") });
        assert_eq!(r("POST", "/v1/s/claims/j/complete"), Route::ClaimComplete { ns: "s".into(), claim: c("j") });
        assert!(matches!(route("GET", "/v1/s/claims", Some("state=dead&limit=5"), true), Route::ClaimList { .. }));
        assert!(matches!(
            route("GET", "/v1/s/claims", Some("limit=0"), true),
            Route::BadRequest { code: Code::InvalidLimit, .. }
        ));
        assert_eq!(r("GET", "/v1/s/claims/j/activate"), Route::MethodNotAllowed { allow: "POST" });
        assert_eq!(r("POST", "/v1/s/claims/j/other"), Route::NotFound);
        assert_eq!(code(r("GET", "/v1/s/claims/a%2Fb")), "invalid_claim");
        assert_eq!(code(r("GET", &format!("/v1/s/claims/{}", "c".repeat(257)))), "invalid_claim");
        assert_eq!(code(r("POST", "/v1/s%2F/claims")), "invalid_namespace");
        assert_eq!(r("POST", "/v1/s/_test/reap"), Route::Hook(Hook::Reap { ns: "s".into() }));
        assert_eq!(route("POST", "/v1/s/_test/reap", None, false), Route::NotFound);
        assert_eq!(
            r("POST", "/_bench/claims/s/claims/j/activate"),
            Route::Hook(Hook::BenchActivate { ns: "s".into(), claim: c("j") })
        );
        assert_eq!(route("POST", "/_bench/claims/s/claims/j/activate", None, false), Route::NotFound);
    }

    #[test]
    fn the_reserved_prefix_is_read_only() {
        for m in ["PUT", "DELETE"] {
            assert!(
                matches!(r(m, "/v1/s/kv/_remora/lease/c"), Route::Forbidden { code: Code::ReservedKey, .. }),
                "{m}"
            );
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
        assert_eq!(r("POST", "/v1/s/claims/c/complete").access(), rights("s", &[Claims]));
        assert_eq!(r("GET", "/v1/s/claims").access(), rights("s", &[Read, Claims]));
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
            Route::Hook(Hook::Bulk { ns: "s".into(), count: 3, reservation_ttl_ms: 50 })
        );
        assert_eq!(
            code(route("POST", "/v1/s/_test/claims", Some("count=0&reservation_ttl_ms=50"), true)),
            "bad_request"
        );
        assert_eq!(code(route("POST", "/v1/s/_test/claims", Some("count=3"), true)), "bad_request");
        assert_eq!(r("GET", "/v1/s/_test/claims"), Route::Hook(Hook::Count { ns: "s".into() }));
        assert_eq!(r("GET", "/v1/s/_test/replicas"), Route::Hook(Hook::Replicas { ns: "s".into() }));
        assert_eq!(r("POST", "/v1/s/_test/evict/all"), Route::Hook(Hook::EvictAll { ns: "s".into() }));
        assert_eq!(
            route("GET", "/v1/s/_test/trace/r1", Some("after=42"), true),
            Route::Hook(Hook::Trace { ns: "s".into(), replica: ReplicaName::R1, after: 42 })
        );
        assert_eq!(
            r("GET", "/v1/s/_test/trace/r2"),
            Route::Hook(Hook::Trace { ns: "s".into(), replica: ReplicaName::R2, after: 0 })
        );
        assert_eq!(r("POST", "/v1/s/_test/trace/r2"), Route::MethodNotAllowed { allow: "GET" });
        assert_eq!(code(route("GET", "/v1/s/_test/trace/r1", Some("after=x"), true)), "bad_request");
        assert_eq!(r("POST", "/v1/s/_test/migrations"), Route::Hook(Hook::Migrations { ns: "s".into() }));
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
