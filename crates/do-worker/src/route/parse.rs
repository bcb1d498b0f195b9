//! The parsers the public routes and the hooks share: names, claims, KV
//! operations, query parameters.

use protocol::claim::ClaimId;

use super::routes::Route;
use crate::error::Code;
use crate::names;
use crate::vocab::{KvOp, RESERVED_PREFIX};

/// A route about claim `claim_raw` (a path segment), served with `allow`.
pub(super) fn claim(
    method: &str,
    ns_raw: &str,
    claim_raw: &str,
    allow: &'static str,
    then: impl FnOnce(String, ClaimId) -> Route,
) -> Route {
    if method != allow {
        return Route::MethodNotAllowed { allow };
    }
    with_ns(ns_raw, |ns| match names::claim(claim_raw) {
        Ok(claim) => then(ns, claim),
        Err(e) => bad(Code::InvalidClaim, format!("the claim {e}")),
    })
}

/// A KV route of key `key_raw`: GET, PUT or DELETE; writes under the
/// reserved prefix are refused.
pub(super) fn kv(method: &str, ns_raw: &str, key_raw: &str, then: impl FnOnce(String, String, KvOp) -> Route) -> Route {
    let op = match method {
        "GET" | "HEAD" => KvOp::Get,
        "PUT" => KvOp::Put,
        "DELETE" => KvOp::Delete,
        _ => return Route::MethodNotAllowed { allow: "GET, HEAD, PUT, DELETE" },
    };
    with_ns(ns_raw, |ns| match names::key(key_raw) {
        Ok(key) if op != KvOp::Get && key.starts_with(RESERVED_PREFIX) => Route::Forbidden {
            code: Code::ReservedKey,
            message: format!(
                "keys under {RESERVED_PREFIX:?} are reserved for the claims service and cannot be written"
            ),
        },
        Ok(key) => then(ns, key, op),
        Err(e) => bad(Code::InvalidKey, format!("the key {e}")),
    })
}

pub(super) fn with_ns(ns_raw: &str, then: impl FnOnce(String) -> Route) -> Route {
    match names::namespace(ns_raw) {
        Ok(ns) => then(ns),
        Err(e) => bad(Code::InvalidNamespace, format!("the namespace {e}")),
    }
}

pub(super) fn bad(code: Code, message: String) -> Route {
    Route::BadRequest { code, message }
}

/// The raw value of the last `name=` parameter.
pub(super) fn param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .rfind(|(k, _)| *k == name)
        .map(|(_, v)| v)
}
