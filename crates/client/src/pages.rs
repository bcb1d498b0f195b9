//! Listing page by page: the pure [`Cursor`] driven against the server.

use crate::error::Error;
use crate::listing::{Cursor, Listed};
use crate::namespace::Namespace;

/// The pages of one listing, fetched one at a time
/// ([`Namespace::pages`]).
#[derive(Debug)]
pub struct Pages<'a> {
    ns: &'a Namespace,
    cursor: Cursor,
}

impl<'a> Pages<'a> {
    fn new(ns: &'a Namespace, prefix: &str, limit: Option<u32>) -> Pages<'a> {
        Pages { ns, cursor: Cursor::new(prefix, limit) }
    }

    /// The next page's keys (possibly none), or `None` after the last page.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Listed>>, Error> {
        let Some(query) = self.cursor.query() else { return Ok(None) };
        let page = self.ns.list(query).await?;
        self.cursor.advance(page.next)?;
        Ok(Some(page.keys))
    }
}

impl Namespace {
    /// The keys with `prefix`, page by page (`limit` keys a page at most;
    /// `None`: the server's default).
    pub fn pages(&self, prefix: &str, limit: Option<u32>) -> Pages<'_> {
        Pages::new(self, prefix, limit)
    }
}
