//! Listing keys: one page (`GET /v1/{ns}/kv?prefix=&after=&limit=`), and
//! the cursor that follows `next` from page to page (pure: the caller
//! fetches each page it asks for).

use std::time::SystemTime;

use serde::Deserialize;

use crate::error::Error;
use crate::etag::ETag;
use crate::reply::Reply;

/// The largest page the server gives (its default is 100).
pub const MAX_PAGE: u32 = 1000;

/// One page's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListQuery {
    /// Only keys starting with this (empty: all keys).
    pub prefix: String,
    /// Only keys after this one (the previous page's `next`).
    pub after: Option<String>,
    /// At most this many keys, 1 to [`MAX_PAGE`] (`None`: the server's default).
    pub limit: Option<u32>,
}

/// A key present when its page was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The key.
    pub key: String,
    /// Its current version's ETag.
    pub etag: ETag,
    /// The value's size in bytes.
    pub bytes: u64,
    /// When it expires, if it has a TTL.
    pub expires_at: Option<SystemTime>,
}

/// One page of keys, in key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The keys.
    pub keys: Vec<Listed>,
    /// Where the next page starts (its `after`); `None` on the last page.
    pub next: Option<String>,
}

/// The page's body as sent.
#[derive(Deserialize)]
struct RawPage {
    keys: Vec<RawListed>,
    next: Option<String>,
}

#[derive(Deserialize)]
struct RawListed {
    key: String,
    /// In the `ETag` header's form, quotes included.
    etag: String,
    bytes: u64,
    #[serde(default)]
    expires_at: Option<u64>,
}

impl Page {
    /// A `200` listing's body.
    pub(crate) fn parse(reply: &Reply) -> Result<Page, Error> {
        let raw: RawPage = reply.json()?;
        let keys = raw
            .keys
            .into_iter()
            .map(|k| {
                let etag =
                    ETag::parse(&k.etag).map_err(|e| reply.invalid(format!("{}: etag {:?}: {e}", k.key, k.etag)))?;
                let expires_at = k.expires_at.map(|ms| reply.unix_ms(ms)).transpose()?;
                Ok(Listed { key: k.key, etag, bytes: k.bytes, expires_at })
            })
            .collect::<Result<_, Error>>()?;
        Ok(Page { keys, next: raw.next })
    }
}

/// Follows `next` until the last page. Listing this way yields every key
/// present throughout exactly once (the server's promise); keys written or
/// deleted meanwhile may or may not show.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    query: ListQuery,
    done: bool,
}

impl Cursor {
    pub(crate) fn new(prefix: &str, limit: Option<u32>) -> Cursor {
        Cursor { query: ListQuery { prefix: prefix.to_owned(), after: None, limit }, done: false }
    }

    /// The next page's query; `None` once the last page was read.
    pub(crate) fn query(&self) -> Option<&ListQuery> {
        (!self.done).then_some(&self.query)
    }

    /// Moves past a page whose `next` was `next`. A `next` that does not
    /// move forward would loop forever: it is an invalid answer.
    pub(crate) fn advance(&mut self, next: Option<String>) -> Result<(), Error> {
        match next {
            None => self.done = true,
            Some(next) if self.query.after.as_ref().is_some_and(|after| &next <= after) => {
                self.done = true;
                let reason = format!("listing's next {next:?} is not after {:?}", self.query.after);
                return Err(Error::InvalidResponse { status: 200, reason });
            }
            Some(next) => self.query.after = Some(next),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::{Duration, UNIX_EPOCH};

    use super::{Cursor, ListQuery, Page};
    use crate::error::Error;
    use crate::reply::tests::reply;

    /// A fake store's listing: the keys after `after` with the prefix, at
    /// most `limit`, and `next` the last one given when more may follow
    /// (as the server pages; `_remora/` and such are its business).
    fn serve(keys: &BTreeSet<String>, q: &ListQuery) -> (Vec<String>, Option<String>) {
        let limit = q.limit.unwrap_or(100) as usize;
        let mut matching = keys
            .iter()
            .filter(|k| k.starts_with(&q.prefix))
            .filter(|k| q.after.as_ref().is_none_or(|a| *k > a))
            .cloned();
        let page: Vec<String> = matching.by_ref().take(limit).collect();
        let next = matching.next().and(page.last().cloned());
        (page, next)
    }

    fn follow(keys: &BTreeSet<String>, prefix: &str, limit: Option<u32>) -> (Vec<String>, usize) {
        let mut cursor = Cursor::new(prefix, limit);
        let (mut seen, mut pages) = (Vec::new(), 0);
        while let Some(q) = cursor.query() {
            let (page, next) = serve(keys, q);
            seen.extend(page);
            pages += 1;
            cursor.advance(next).unwrap();
        }
        (seen, pages)
    }

    #[test]
    fn following_next_yields_each_key_once_in_order() {
        let keys: BTreeSet<String> = (0..2500).map(|i| format!("k/{i:05}")).chain(["a".into(), "l".into()]).collect();
        let (seen, pages) = follow(&keys, "k/", Some(1000));
        assert_eq!(seen, keys.iter().filter(|k| k.starts_with("k/")).cloned().collect::<Vec<_>>());
        assert_eq!(pages, 3);
        let (all, pages) = follow(&keys, "", None);
        assert_eq!((all.len(), pages), (2502, 26));
        let (none, pages) = follow(&keys, "zzz", Some(5));
        assert_eq!((none.len(), pages), (0, 1));
    }

    #[test]
    fn an_empty_page_with_a_next_goes_on() {
        let mut cursor = Cursor::new("", Some(10));
        cursor.advance(Some("m".into())).unwrap();
        assert_eq!(cursor.query().unwrap().after.as_deref(), Some("m"));
        cursor.advance(None).unwrap();
        assert_eq!(cursor.query(), None);
    }

    #[test]
    fn a_next_that_does_not_move_forward_is_refused() {
        let mut cursor = Cursor::new("", None);
        cursor.advance(Some("b".into())).unwrap();
        for stuck in ["b", "a"] {
            let mut c = cursor.clone();
            assert!(matches!(c.advance(Some(stuck.into())), Err(Error::InvalidResponse { status: 200, .. })));
            assert_eq!(c.query(), None, "no page after an invalid one");
        }
    }

    #[test]
    fn parses_a_page() {
        let body = r#"{"keys":[{"key":"a/1","etag":"\"t1\"","bytes":3,"expires_at":1700000000000},
                                {"key":"a/2","etag":"\"t2\"","bytes":0,"expires_at":null}],"next":"a/2"}"#;
        let page = Page::parse(&reply(200, &[], body)).unwrap();
        assert_eq!(page.next.as_deref(), Some("a/2"));
        assert_eq!(page.keys[0].key, "a/1");
        assert_eq!(page.keys[0].etag.to_string(), "\"t1\"");
        assert_eq!(page.keys[0].bytes, 3);
        assert_eq!(page.keys[0].expires_at, Some(UNIX_EPOCH + Duration::from_millis(1_700_000_000_000)));
        assert_eq!(page.keys[1].expires_at, None);
        let last = Page::parse(&reply(200, &[], r#"{"keys":[],"next":null}"#)).unwrap();
        assert_eq!(last, Page { keys: vec![], next: None });
    }

    #[test]
    fn a_malformed_page_is_an_invalid_answer() {
        for body in ["", "{}", r#"{"keys":[{"key":"a","etag":"W/\"t\"","bytes":1}],"next":null}"#] {
            assert!(matches!(Page::parse(&reply(200, &[], body)), Err(Error::InvalidResponse { .. })), "{body}");
        }
    }
}
