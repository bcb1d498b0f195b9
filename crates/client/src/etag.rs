//! Strong entity tags (RFC 9110 section 8.8.3): the store names each
//! committed version of a record with one, and `If-Match` compares them byte
//! for byte. Weak tags (`W/"..."`) are refused here, as the server refuses
//! them (400 `invalid_precondition`): a weak match says "equivalent", which
//! is no ground for a compare-and-set.

use std::fmt;
use std::str::FromStr;

/// A strong entity tag, as the `ETag` header carries it: `"` opaque `"`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ETag {
    /// The characters between the quotes.
    opaque: String,
}

/// Why a string is not a strong entity tag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ETagError {
    /// `W/"..."`.
    #[error("a weak entity tag: only strong tags name one exact version")]
    Weak,
    /// Not enclosed in double quotes.
    #[error("an entity tag is a quoted string (\"...\")")]
    Unquoted,
    /// A character RFC 9110 does not allow inside the quotes.
    #[error("{0:?} is not allowed in an entity tag (visible ASCII other than '\"')")]
    InvalidChar(char),
}

impl ETag {
    /// Parses a header value (`"abc"`); surrounding spaces are ignored.
    pub fn parse(value: &str) -> Result<ETag, ETagError> {
        let value = value.trim_matches([' ', '\t']);
        if value.starts_with("W/") {
            return Err(ETagError::Weak);
        }
        let opaque = value.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')).ok_or(ETagError::Unquoted)?;
        match opaque.chars().find(|&c| !is_etagc(c)) {
            Some(c) => Err(ETagError::InvalidChar(c)),
            None => Ok(ETag { opaque: opaque.to_owned() }),
        }
    }
}

/// `etagc = %x21 / %x23-7E / obs-text`; obs-text (bytes above 0x7F) is
/// refused too: the server's tags are ASCII, and a header holding them would
/// not be text.
fn is_etagc(c: char) -> bool {
    c == '!' || ('#'..='~').contains(&c)
}

impl fmt::Display for ETag {
    /// The header form, quotes included.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.opaque)
    }
}

impl FromStr for ETag {
    type Err = ETagError;

    fn from_str(s: &str) -> Result<ETag, ETagError> {
        ETag::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::{ETag, ETagError};

    #[test]
    fn a_strong_tag_round_trips_with_its_quotes() {
        let tag = ETag::parse("\"1-7-0f3a\"").unwrap();
        assert_eq!(tag.to_string(), "\"1-7-0f3a\"");
        assert_eq!(" \"x\"\t".parse::<ETag>().unwrap().to_string(), "\"x\"");
        // The empty tag is legal (etagc*).
        assert_eq!(ETag::parse("\"\"").unwrap().to_string(), "\"\"");
    }

    #[test]
    fn tags_compare_byte_for_byte() {
        assert_eq!(ETag::parse("\"a\"").unwrap(), ETag::parse("\"a\"").unwrap());
        assert_ne!(ETag::parse("\"a\"").unwrap(), ETag::parse("\"A\"").unwrap());
    }

    #[test]
    fn weak_tags_are_refused() {
        assert_eq!(ETag::parse("W/\"a\""), Err(ETagError::Weak));
    }

    #[test]
    fn anything_but_one_quoted_string_is_refused() {
        for bad in ["a", "\"a", "a\"", "\"", "", "*", "'a'"] {
            assert_eq!(ETag::parse(bad), Err(ETagError::Unquoted), "{bad:?}");
        }
        assert_eq!(ETag::parse("\"a\"b\""), Err(ETagError::InvalidChar('"')));
        assert_eq!(ETag::parse("\"a b\""), Err(ETagError::InvalidChar(' ')));
        assert_eq!(ETag::parse("\"é\""), Err(ETagError::InvalidChar('é')));
        assert_eq!(ETag::parse("\"a\u{7f}\""), Err(ETagError::InvalidChar('\u{7f}')));
    }
}
