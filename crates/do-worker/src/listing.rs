//! A listing's page request, `GET /v1/{ns}/kv?prefix=P&after=K&limit=N`,
//! as the router reads it from the public query and the coordinator reads
//! it again from the internal one. Pure, tested on the host.
//!
//! `limit` is 1 to [`MAX_LIST_LIMIT`] (default [`DEFAULT_LIMIT`]); `after`
//! is a key (the previous page's `next`); `prefix` is optional. Following
//! `next` lists every key present throughout exactly once.

use percent_encoding::percent_decode_str;
use protocol::handoff::{Key, MAX_LIST_LIMIT};

use crate::error::{Code, HttpError};
use crate::names;
use crate::wire::{ReplicaOp, Target};

/// Keys a page holds when the request does not say.
pub const DEFAULT_LIMIT: usize = 100;

/// One page's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub prefix: String,
    pub after: Option<Key>,
    pub limit: usize,
}

impl Page {
    /// From the public query string (without `?`); unknown parameters are
    /// refused, as a misspelt `limit` would otherwise go unnoticed.
    pub fn from_query(query: Option<&str>) -> Result<Page, (Code, String)> {
        let (mut prefix, mut after, mut limit) = (None, None, None);
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, raw) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode_str(&raw.replace('+', " "))
                .decode_utf8()
                .map_err(|_| (Code::BadRequest, format!("query parameter `{name}` is not UTF-8 once decoded")))?
                .into_owned();
            match name {
                "prefix" => prefix = Some(value),
                "after" => after = Some(value),
                "limit" => limit = Some(value),
                other => {
                    return Err((
                        Code::BadRequest,
                        format!("unknown query parameter `{other}` (prefix, after, limit)"),
                    ));
                }
            }
        }
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(text) => text
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIST_LIMIT).contains(n))
                .ok_or_else(|| (Code::InvalidLimit, format!("limit must be 1 to {MAX_LIST_LIMIT}, not {text:?}")))?,
        };
        Page::checked(prefix.unwrap_or_default(), after, limit)
    }

    fn checked(prefix: String, after: Option<String>, limit: usize) -> Result<Page, (Code, String)> {
        if prefix.len() > names::MAX_KEY_BYTES || prefix.chars().any(char::is_control) {
            return Err((
                Code::InvalidKey,
                format!("prefix must be at most {} bytes without control characters", names::MAX_KEY_BYTES),
            ));
        }
        let after = after
            .map(|k| names::valid_key(&k))
            .transpose()
            .map_err(|e| (Code::InvalidCursor, format!("after must be a key, as a page's `next` gives it: it {e}")))?;
        Ok(Page { prefix, after, limit })
    }

    /// The internal request to the coordinator.
    pub fn target(&self, ns: &str) -> Target<ReplicaOp> {
        let target = Target::new(ReplicaOp::List, ns, Some(crate::names::ReplicaName::R0))
            .with_prefix(&self.prefix)
            .with_ms(self.limit as u64);
        match &self.after {
            Some(after) => target.with_key(after.as_str()),
            None => target,
        }
    }

    /// Read again by the coordinator from the internal request.
    pub fn from_target(target: &Target<ReplicaOp>) -> Result<Page, HttpError> {
        let limit = target.ms.and_then(|n| usize::try_from(n).ok()).unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(HttpError::new(Code::InvalidLimit, format!("limit must be 1 to {MAX_LIST_LIMIT}")));
        }
        Page::checked(target.prefix.clone().unwrap_or_default(), target.key.clone(), limit)
            .map_err(|(code, message)| HttpError::new(code, message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(query: &str) -> Result<Page, &'static str> {
        Page::from_query(Some(query)).map_err(|(code, _)| code.as_str())
    }

    #[test]
    fn a_page_as_the_query_says_and_the_defaults() {
        assert_eq!(Page::from_query(None), Ok(Page { prefix: String::new(), after: None, limit: DEFAULT_LIMIT }));
        let p = page("prefix=a%2Fb&after=a%2Fb7&limit=1000").expect("page");
        assert_eq!((p.prefix.as_str(), p.after.as_ref().map(|k| k.as_str()), p.limit), ("a/b", Some("a/b7"), 1000));
        assert_eq!(page("limit=1").map(|p| p.limit), Ok(1));
    }

    #[test]
    fn bad_pages_are_refused_with_their_codes() {
        assert_eq!(page("limit=0"), Err("invalid_limit"));
        assert_eq!(page("limit=1001"), Err("invalid_limit"));
        assert_eq!(page("limit=ten"), Err("invalid_limit"));
        assert_eq!(page("after="), Err("invalid_cursor"));
        assert_eq!(page(&format!("after={}", "k".repeat(names::MAX_KEY_BYTES + 1))), Err("invalid_cursor"));
        assert_eq!(page("after=%FF"), Err("bad_request"));
        assert_eq!(page("prefix=%00"), Err("invalid_key"));
        assert_eq!(page("limt=5"), Err("bad_request"));
    }

    #[test]
    fn the_coordinator_reads_the_same_page() {
        let p = page("prefix=x&after=x9&limit=7").expect("page");
        assert_eq!(Page::from_target(&p.target("ns")).ok(), Some(p));
    }
}
