//! Request paths: names and query values percent-encoded, so any key
//! (`/`, `%`, spaces, non-ASCII) reaches the Worker byte for byte.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::listing::ListQuery;

/// Everything but RFC 3986's unreserved characters is encoded: a `/` in a
/// key becomes `%2F`, so the key stays one path segment.
const ENCODED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn enc(s: &str) -> String {
    utf8_percent_encode(s, ENCODED).to_string()
}

/// `/v1/{ns}`.
pub(crate) fn namespace(ns: &str) -> String {
    format!("/v1/{}", enc(ns))
}

/// `/v1/{ns}/kv/{key}`.
pub(crate) fn key(ns: &str, key: &str) -> String {
    format!("/v1/{}/kv/{}", enc(ns), enc(key))
}

/// `/v1/{ns}/kv?prefix=..&after=..&limit=..`, each part only when set.
pub(crate) fn list(ns: &str, query: &ListQuery) -> String {
    let mut params = Vec::new();
    if !query.prefix.is_empty() {
        params.push(format!("prefix={}", enc(&query.prefix)));
    }
    if let Some(after) = &query.after {
        params.push(format!("after={}", enc(after)));
    }
    if let Some(limit) = query.limit {
        params.push(format!("limit={limit}"));
    }
    let base = format!("/v1/{}/kv", enc(ns));
    if params.is_empty() { base } else { format!("{base}?{}", params.join("&")) }
}

#[cfg(test)]
mod tests {
    use crate::listing::ListQuery;

    #[test]
    fn names_are_single_encoded_segments() {
        assert_eq!(super::namespace("demo"), "/v1/demo");
        assert_eq!(super::key("my ns", "a/b%c"), "/v1/my%20ns/kv/a%2Fb%25c");
        assert_eq!(super::key("n", "k-._~Z9"), "/v1/n/kv/k-._~Z9");
        assert_eq!(super::key("n", "é?#&="), "/v1/n/kv/%C3%A9%3F%23%26%3D");
    }

    #[test]
    fn a_listing_sends_only_what_is_set() {
        let all = ListQuery { prefix: String::new(), after: None, limit: None };
        assert_eq!(super::list("n", &all), "/v1/n/kv");
        let page = ListQuery { prefix: "jobs/".into(), after: Some("jobs/a&b".into()), limit: Some(1000) };
        assert_eq!(super::list("n", &page), "/v1/n/kv?prefix=jobs%2F&after=jobs%2Fa%26b&limit=1000");
    }
}
