//! What a KV request may ask beyond its key and value, as HTTP says it
//! (RFC 9110): `If-Match: <etag>` (PUT, DELETE), `If-None-Match: *` (PUT),
//! `Handoff-TTL-Ms: N` (PUT); and a record's strong entity tag. Pure, so the
//! Worker (which refuses a malformed request before any object sees it) and
//! the coordinator (which parses what reaches it again) share one reading,
//! unit-tested on the host.
//!
//! The ETag of a record is its protocol tag (`protocol::handoff::Tag`: the
//! `(ep, ver)` that names one committed write, and its 128-bit write id) as
//! `"<ep>.<ver>.<write id>"`: strong, and new for every committed write,
//! even of the same bytes.

use protocol::handoff::{Cond, Epoch, MAX_TTL_MS, Stamp, Tag, Version, WriteId};

use crate::error::{Code, HttpError};

pub const IF_MATCH: &str = "if-match";
pub const IF_NONE_MATCH: &str = "if-none-match";
pub const TTL_HEADER: &str = "handoff-ttl-ms";
pub const ETAG: &str = "etag";
pub const EXPIRES_AT_HEADER: &str = "handoff-expires-at";

/// A record's ETag.
pub fn etag(tag: Tag) -> String {
    format!("\"{}.{}.{}\"", tag.stamp.ep.0, tag.stamp.ver.0, tag.wid)
}

/// The tag an `If-Match` names; weak tags, lists and anything else are
/// refused (only one strong tag says which write the client saw).
pub fn parse_etag(text: &str) -> Result<Tag, HttpError> {
    let bad = |why: &str| {
        HttpError::new(Code::InvalidPrecondition, format!("If-Match must be one strong ETag as GET gives it ({why})"))
    };
    let text = text.trim();
    if text.starts_with("W/") {
        return Err(bad("a weak tag never matches a write"));
    }
    let inner = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).ok_or_else(|| bad("not quoted"))?;
    let mut parts = inner.split('.');
    let (Some(ep), Some(ver), Some(wid), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad("not <epoch>.<version>.<write id>"));
    };
    let number = |s: &str| s.parse::<u64>().map_err(|_| bad("not <epoch>.<version>.<write id>"));
    let wid = WriteId::parse(wid).ok_or_else(|| bad("the write id is not 32 hex digits"))?;
    let tag = Tag { stamp: Stamp { ep: Epoch(number(ep)?), ver: Version(number(ver)?) }, wid };
    // A strong comparison is of the exact text: `+3`, `03` or upper-case
    // hex name the same numbers but are not the tag GET gave.
    if etag(tag) != text {
        return Err(bad("not spelled as GET gives it"));
    }
    Ok(tag)
}

/// What a PUT or DELETE asks: its condition and, for a PUT, its time to
/// live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Conditions {
    pub cond: Option<Cond>,
    pub ttl_ms: Option<u64>,
}

impl Conditions {
    /// Reads the headers of a write (`put`: a PUT, else a DELETE), each
    /// given by `header(name)`.
    pub fn parse<'a>(put: bool, header: impl Fn(&str) -> Option<&'a str>) -> Result<Conditions, HttpError> {
        let if_match = header(IF_MATCH).map(parse_etag).transpose()?;
        let if_none_match = match header(IF_NONE_MATCH).map(str::trim) {
            None => false,
            Some("*") if put => true,
            Some("*") => {
                return Err(HttpError::new(Code::InvalidPrecondition, "If-None-Match: * applies to PUT only"));
            }
            Some(_) => {
                return Err(HttpError::new(
                    Code::InvalidPrecondition,
                    "If-None-Match takes only *: create the key if it is absent",
                ));
            }
        };
        let cond = match (if_match, if_none_match) {
            (Some(_), true) => {
                return Err(HttpError::new(
                    Code::InvalidPrecondition,
                    "If-Match and If-None-Match together can never both hold",
                ));
            }
            (Some(tag), false) => Some(Cond::IfMatch(tag)),
            (None, true) => Some(Cond::IfAbsent),
            (None, false) => None,
        };
        let ttl_ms = match header(TTL_HEADER) {
            None => None,
            Some(_) if !put => {
                return Err(HttpError::new(Code::InvalidTtl, "Handoff-TTL-Ms applies to PUT only"));
            }
            Some(text) => match text.trim().parse::<u64>() {
                Ok(ms) if (1..=MAX_TTL_MS).contains(&ms) => Some(ms),
                _ => {
                    return Err(HttpError::new(
                        Code::InvalidTtl,
                        format!("Handoff-TTL-Ms must be 1 to {MAX_TTL_MS} (30 days) milliseconds, not {text:?}"),
                    ));
                }
            },
        };
        Ok(Conditions { cond, ttl_ms })
    }

    /// The headers that carry these conditions (to the coordinator).
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        match self.cond {
            Some(Cond::IfMatch(tag)) => headers.push((IF_MATCH, etag(tag))),
            Some(Cond::IfAbsent) => headers.push((IF_NONE_MATCH, "*".to_string())),
            None => {}
        }
        if let Some(ms) = self.ttl_ms {
            headers.push((TTL_HEADER, ms.to_string()));
        }
        headers
    }

    /// The `If-Match` of a DELETE.
    pub fn if_match(&self) -> Option<Tag> {
        match self.cond {
            Some(Cond::IfMatch(tag)) => Some(tag),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag() -> Tag {
        Tag { stamp: Stamp { ep: Epoch(3), ver: Version(41) }, wid: WriteId(0xabc) }
    }

    fn parse(put: bool, headers: &[(&str, &str)]) -> Result<Conditions, String> {
        Conditions::parse(put, |name| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
            .map_err(|e| e.code().map(|c| c.as_str().to_string()).unwrap_or_default())
    }

    #[test]
    fn an_etag_round_trips_and_only_a_strong_one_parses() {
        let text = etag(tag());
        assert_eq!(text, "\"3.41.00000000000000000000000000000abc\"");
        assert_eq!(parse_etag(&text).ok(), Some(tag()));
        for bad in [
            "W/\"3.41.00000000000000000000000000000abc\"",
            "3.41.00000000000000000000000000000abc",
            "\"3.41\"",
            "\"3.41.xyz\"",
            "\"a.41.00000000000000000000000000000abc\"",
            "\"3.41.00000000000000000000000000000abc.1\"",
            "\"+3.41.00000000000000000000000000000abc\"",
            "\"03.41.00000000000000000000000000000abc\"",
            "\"3.41.00000000000000000000000000000ABC\"",
            "*",
            "",
        ] {
            assert!(parse_etag(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn conditions_and_ttls_as_the_headers_say() {
        let t = etag(tag());
        assert_eq!(parse(true, &[]), Ok(Conditions::default()));
        assert_eq!(parse(true, &[(IF_MATCH, &t)]).map(|c| c.cond), Ok(Some(Cond::IfMatch(tag()))));
        assert_eq!(parse(true, &[(IF_NONE_MATCH, " * ")]).map(|c| c.cond), Ok(Some(Cond::IfAbsent)));
        assert_eq!(parse(true, &[(TTL_HEADER, "1")]).map(|c| c.ttl_ms), Ok(Some(1)));
        assert_eq!(parse(true, &[(TTL_HEADER, &MAX_TTL_MS.to_string())]).map(|c| c.ttl_ms), Ok(Some(MAX_TTL_MS)));
        assert_eq!(parse(false, &[(IF_MATCH, &t)]).map(|c| c.if_match()), Ok(Some(tag())));
        for (put, headers, code) in [
            (true, vec![(IF_MATCH, "W/\"x\"")], "invalid_precondition"),
            (true, vec![(IF_NONE_MATCH, "\"x\"")], "invalid_precondition"),
            (false, vec![(IF_NONE_MATCH, "*")], "invalid_precondition"),
            (true, vec![(IF_MATCH, t.as_str()), (IF_NONE_MATCH, "*")], "invalid_precondition"),
            (true, vec![(TTL_HEADER, "0")], "invalid_ttl"),
            (true, vec![(TTL_HEADER, "2592000001")], "invalid_ttl"),
            (true, vec![(TTL_HEADER, "soon")], "invalid_ttl"),
            (false, vec![(TTL_HEADER, "5")], "invalid_ttl"),
        ] {
            assert_eq!(parse(put, &headers), Err(code.to_string()), "{headers:?}");
        }
    }

    #[test]
    fn the_headers_carry_the_conditions_to_the_coordinator() {
        let c = Conditions { cond: Some(Cond::IfMatch(tag())), ttl_ms: Some(5) };
        let headers = c.headers();
        let again = Conditions::parse(true, |n| headers.iter().find(|(h, _)| *h == n).map(|(_, v)| v.as_str()));
        assert_eq!(again.ok(), Some(c));
    }
}
