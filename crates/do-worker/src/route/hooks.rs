//! The test hooks' and benchmark baselines' routes (`/v1/{ns}/_test/...`,
//! `/_bench/...`): reachable only with `HANDOFF_TEST_HOOKS=1`, and each
//! needs the admin right on its namespace.

use super::parse::{bad, claim, kv, param, with_ns};
use super::routes::{Baseline, Hook, Route};
use crate::error::Code;
use crate::names::ReplicaName;
use crate::vocab::{MAX_BULK_CLAIMS, MAX_PAUSE_MS};

/// `/_bench/...` with the prefix stripped.
pub(super) fn bench(method: &str, rest: &str) -> Route {
    let (baseline, rest) = match rest.split_once('/') {
        Some(("claims", rest)) => {
            let Some((ns, tail)) = rest.split_once('/') else { return Route::NotFound };
            return match tail.strip_prefix("claims/").and_then(|t| t.strip_suffix("/activate")) {
                Some(raw) if !raw.contains('/') => {
                    claim(method, ns, raw, "POST", |ns, claim| Route::Hook(Hook::BenchActivate { ns, claim }))
                }
                _ => Route::NotFound,
            };
        }
        Some(("mem", rest)) => (Baseline::Mem, rest),
        Some(("sql", rest)) => (Baseline::Sql, rest),
        Some(("echo", rest)) => (Baseline::Echo, rest),
        _ => return Route::NotFound,
    };
    let Some((ns, tail)) = rest.split_once('/') else { return Route::NotFound };
    let Some(key) = tail.strip_prefix("kv/") else { return Route::NotFound };
    if baseline == Baseline::Echo && method != "PUT" {
        return Route::MethodNotAllowed { allow: "PUT" };
    }
    kv(method, ns, key, |ns, key, op| Route::Hook(Hook::Bench { baseline, ns, key, op }))
}

/// `/v1/{ns}/_test/{hook}`.
pub(super) fn test_hook(method: &str, ns_raw: &str, hook: &str, query: Option<&str>) -> Route {
    let on = |allow: &'static str, then: fn(String) -> Hook| {
        if method == allow { with_ns(ns_raw, |ns| Route::Hook(then(ns))) } else { Route::MethodNotAllowed { allow } }
    };
    match hook {
        "reap" => on("POST", |ns| Hook::Reap { ns }),
        "replicas" => on("GET", |ns| Hook::Replicas { ns }),
        "migrations" => on("POST", |ns| Hook::Migrations { ns }),
        "evict/all" => on("POST", |ns| Hook::EvictAll { ns }),
        "claims" => claims(method, ns_raw, query),
        _ => replica_hook(method, ns_raw, hook, query),
    }
}

/// `/v1/{ns}/_test/claims`: bulk-authorize (POST) or count (GET).
fn claims(method: &str, ns_raw: &str, query: Option<&str>) -> Route {
    match method {
        "GET" => with_ns(ns_raw, |ns| Route::Hook(Hook::Count { ns })),
        "POST" => {
            let number = |name| param(query, name).and_then(|v| v.parse::<u64>().ok());
            match (number("count"), number("reservation_ttl_ms")) {
                (Some(count), Some(ttl)) if (1..=MAX_BULK_CLAIMS).contains(&count) && ttl >= 1 => {
                    with_ns(ns_raw, |ns| Route::Hook(Hook::Bulk { ns, count, reservation_ttl_ms: ttl }))
                }
                _ => bad(
                    Code::BadRequest,
                    format!("query parameters `count` (1 to {MAX_BULK_CLAIMS}) and `reservation_ttl_ms` are required"),
                ),
            }
        }
        _ => Route::MethodNotAllowed { allow: "GET, POST" },
    }
}

/// `/v1/{ns}/_test/{evict|pause|raw|link|trace}/{replica}`.
fn replica_hook(method: &str, ns_raw: &str, hook: &str, query: Option<&str>) -> Route {
    let Some((name, replica_raw)) = hook.split_once('/') else { return Route::NotFound };
    if !matches!(name, "evict" | "pause" | "raw" | "link" | "trace") {
        return Route::NotFound;
    }
    let allow = if name == "trace" { "GET" } else { "POST" };
    if method != allow {
        return Route::MethodNotAllowed { allow };
    }
    let Some(replica) = ReplicaName::parse(replica_raw) else {
        return bad(Code::InvalidReplica, format!("replica must be r0, r1 or r2, not {replica_raw:?}"));
    };
    with_ns(ns_raw, |ns| match name {
        "evict" => Route::Hook(Hook::Evict { ns, replica }),
        "trace" => match param(query, "after").map(str::parse::<u64>) {
            None => Route::Hook(Hook::Trace { ns, replica, after: 0 }),
            Some(Ok(after)) => Route::Hook(Hook::Trace { ns, replica, after }),
            Some(Err(_)) => bad(Code::BadRequest, "query parameter `after` must be a row id (0 or more)".into()),
        },
        "pause" => match param(query, "ms").map(str::parse::<u64>) {
            Some(Ok(ms)) if (1..=MAX_PAUSE_MS).contains(&ms) => Route::Hook(Hook::Pause { ns, replica, ms }),
            _ => bad(Code::BadRequest, format!("query parameter `ms` must be 1 to {MAX_PAUSE_MS}")),
        },
        _ => {
            let auth = match param(query, "auth") {
                None | Some("1") => true,
                Some("0") => false,
                Some(other) => {
                    return bad(Code::BadRequest, format!("query parameter `auth` must be 0 or 1, not {other:?}"));
                }
            };
            if name == "raw" {
                Route::Hook(Hook::Raw { ns, replica, auth })
            } else {
                Route::Hook(Hook::Link { ns, replica, auth })
            }
        }
    })
}
