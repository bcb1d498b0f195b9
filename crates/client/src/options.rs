//! What a write may ask for beyond its value (a condition, a TTL, its
//! write id), and the request headers that say it.

use std::time::Duration;

use reqwest::header::{HeaderName, IF_MATCH, IF_NONE_MATCH};

use crate::error::Error;
use crate::etag::ETag;
use crate::write_id::WriteId;

/// The write id of a write (32 hex digits).
const WRITE_ID: HeaderName = HeaderName::from_static("handoff-write-id");
/// A PUT's time to live in milliseconds (1 ms to 30 days).
const TTL_MS: HeaderName = HeaderName::from_static("handoff-ttl-ms");

/// A condition on the key's current state; a write whose condition does
/// not hold changes nothing and fails with
/// [`Error::PreconditionFailed`](crate::Error::PreconditionFailed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    /// `If-Match`: the key's current version has this ETag.
    IfMatch(ETag),
    /// `If-None-Match: *`: the key is absent (never written, deleted or
    /// expired).
    IfNoneMatch,
}

/// Options of a PUT: by default unconditional, without TTL (a PUT
/// without TTL clears the key's TTL), with a fresh write id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PutOptions {
    condition: Option<Condition>,
    ttl: Option<Duration>,
    write_id: Option<WriteId>,
}

impl PutOptions {
    /// An unconditional PUT without TTL.
    pub fn new() -> PutOptions {
        PutOptions::default()
    }

    /// Write only if the key's current ETag is `etag`.
    pub fn if_match(self, etag: ETag) -> PutOptions {
        self.condition(Condition::IfMatch(etag))
    }

    /// Write only if the key is absent.
    pub fn if_absent(self) -> PutOptions {
        self.condition(Condition::IfNoneMatch)
    }

    /// Write only if `condition` holds.
    pub fn condition(self, condition: Condition) -> PutOptions {
        PutOptions { condition: Some(condition), ..self }
    }

    /// The key reads as absent `ttl` after the write commits (whole
    /// milliseconds, 1 ms to 30 days; the server refuses others with 400).
    pub fn ttl(self, ttl: Duration) -> PutOptions {
        PutOptions { ttl: Some(ttl), ..self }
    }

    /// Send this write id instead of a fresh one: to resume a write whose
    /// outcome is unknown (it is answered as it was the first time).
    pub fn write_id(self, id: WriteId) -> PutOptions {
        PutOptions { write_id: Some(id), ..self }
    }

    /// The write id this PUT goes with, kept for every retry.
    pub(crate) fn resolve_write_id(&self) -> Result<WriteId, Error> {
        write_id_or_fresh(self.write_id)
    }

    /// The headers of this PUT, sent with write id `id`.
    pub(crate) fn headers(&self, id: WriteId) -> Vec<(HeaderName, String)> {
        let mut headers = vec![(WRITE_ID, id.to_string())];
        headers.extend(self.condition.as_ref().map(|condition| match condition {
            Condition::IfMatch(etag) => (IF_MATCH, etag.to_string()),
            Condition::IfNoneMatch => (IF_NONE_MATCH, "*".to_owned()),
        }));
        headers.extend(self.ttl.map(|ttl| (TTL_MS, ttl.as_millis().to_string())));
        headers
    }
}

/// Options of a DELETE: by default unconditional, with a fresh write id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    if_match: Option<ETag>,
    write_id: Option<WriteId>,
}

impl DeleteOptions {
    /// An unconditional DELETE.
    pub fn new() -> DeleteOptions {
        DeleteOptions::default()
    }

    /// Delete only if the key's current ETag is `etag`.
    pub fn if_match(self, etag: ETag) -> DeleteOptions {
        DeleteOptions { if_match: Some(etag), ..self }
    }

    /// Send this write id instead of a fresh one (see [`PutOptions::write_id`]).
    pub fn write_id(self, id: WriteId) -> DeleteOptions {
        DeleteOptions { write_id: Some(id), ..self }
    }

    /// The write id this DELETE goes with, kept for every retry.
    pub(crate) fn resolve_write_id(&self) -> Result<WriteId, Error> {
        write_id_or_fresh(self.write_id)
    }

    /// The headers of this DELETE, sent with write id `id`.
    pub(crate) fn headers(&self, id: WriteId) -> Vec<(HeaderName, String)> {
        let mut headers = vec![(WRITE_ID, id.to_string())];
        headers.extend(self.if_match.as_ref().map(|etag| (IF_MATCH, etag.to_string())));
        headers
    }
}

/// The write id to send: the caller's, else a fresh one.
fn write_id_or_fresh(chosen: Option<WriteId>) -> Result<WriteId, Error> {
    chosen.map_or_else(|| WriteId::random().map_err(Error::Randomness), Ok)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{DeleteOptions, PutOptions};
    use crate::etag::ETag;
    use crate::write_id::WriteId;

    fn id() -> WriteId {
        "0123456789abcdef0123456789abcdef".parse().unwrap()
    }

    fn names_and_values(headers: Vec<(reqwest::header::HeaderName, String)>) -> Vec<(String, String)> {
        headers.into_iter().map(|(n, v)| (n.as_str().to_owned(), v)).collect()
    }

    fn expect(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_plain_write_sends_only_its_write_id() {
        let wid = ("handoff-write-id", "0123456789abcdef0123456789abcdef");
        assert_eq!(names_and_values(PutOptions::new().headers(id())), expect(&[wid]));
        assert_eq!(names_and_values(DeleteOptions::new().headers(id())), expect(&[wid]));
    }

    #[test]
    fn conditions_and_ttl_become_their_headers() {
        let wid = ("handoff-write-id", "0123456789abcdef0123456789abcdef");
        let tag = ETag::parse("\"v1\"").unwrap();
        let put = PutOptions::new().if_match(tag.clone()).ttl(Duration::from_millis(1500));
        assert_eq!(
            names_and_values(put.headers(id())),
            expect(&[wid, ("if-match", "\"v1\""), ("handoff-ttl-ms", "1500")])
        );
        let create = PutOptions::new().ttl(Duration::from_secs(30 * 86_400)).if_absent();
        assert_eq!(
            names_and_values(create.headers(id())),
            expect(&[wid, ("if-none-match", "*"), ("handoff-ttl-ms", "2592000000")])
        );
        let delete = DeleteOptions::new().if_match(tag);
        assert_eq!(names_and_values(delete.headers(id())), expect(&[wid, ("if-match", "\"v1\"")]));
    }

    #[test]
    fn the_last_condition_set_wins_and_an_explicit_write_id_is_kept() {
        let tag = ETag::parse("\"v1\"").unwrap();
        let put = PutOptions::new().if_match(tag).if_absent().write_id(id());
        assert_eq!(put.resolve_write_id().unwrap(), id());
        assert!(names_and_values(put.headers(id())).contains(&("if-none-match".to_owned(), "*".to_owned())));
        assert_eq!(DeleteOptions::new().write_id(id()).resolve_write_id().unwrap(), id());
        assert_ne!(PutOptions::new().resolve_write_id().unwrap(), id(), "fresh when none is chosen");
    }
}
