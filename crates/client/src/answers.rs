//! The success answers of reads and writes, read from their replies.

use std::time::SystemTime;

use serde::Deserialize;

use crate::error::Error;
use crate::etag::ETag;
use crate::reply::Reply;
use crate::write_id::WriteId;

/// A key's current value, as `GET` returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The value, as written.
    pub value: Vec<u8>,
    /// This version's ETag (the `If-Match` that writes over exactly it).
    pub etag: ETag,
    /// When the key expires, if it has a TTL (`Handoff-Expires-At`).
    pub expires_at: Option<SystemTime>,
}

/// A committed PUT or DELETE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The ETag of the version this write made.
    pub etag: ETag,
    /// When the key expires: the PUT's TTL after it committed (`None`
    /// without TTL, and for a DELETE).
    pub expires_at: Option<SystemTime>,
    /// The write id it was sent with.
    pub write_id: WriteId,
}

/// The fields of a write's JSON acknowledgement this client reads (the
/// ETag comes from the header, so one source says it).
#[derive(Deserialize)]
struct Ack {
    #[serde(default)]
    expires_at: Option<u64>,
}

impl Entry {
    /// A `200` read.
    pub(crate) fn parse(reply: Reply) -> Result<Entry, Error> {
        let (etag, expires_at) = (reply.required_etag()?, reply.expires_at()?);
        Ok(Entry { value: reply.body, etag, expires_at })
    }
}

impl Written {
    /// A `200` write, sent with `write_id`.
    pub(crate) fn parse(reply: &Reply, write_id: WriteId) -> Result<Written, Error> {
        let ack: Ack = reply.json()?;
        let expires_at = ack.expires_at.map(|ms| reply.unix_ms(ms)).transpose()?;
        Ok(Written { etag: reply.required_etag()?, expires_at, write_id })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::{Entry, Written};
    use crate::error::Error;
    use crate::reply::tests::reply;
    use crate::write_id::WriteId;

    #[test]
    fn a_read_is_its_body_etag_and_expiry() {
        let r = reply(200, &[("etag", "\"e\""), ("handoff-expires-at", "2000")], "hello");
        let entry = Entry::parse(r).unwrap();
        assert_eq!(entry.value, b"hello");
        assert_eq!(entry.etag.to_string(), "\"e\"");
        assert_eq!(entry.expires_at, Some(UNIX_EPOCH + Duration::from_secs(2)));
        assert_eq!(Entry::parse(reply(200, &[("etag", "\"e\"")], "")).unwrap().expires_at, None);
        assert!(matches!(Entry::parse(reply(200, &[], "x")), Err(Error::InvalidResponse { .. })));
    }

    #[test]
    fn a_write_is_its_etag_and_expiry() {
        let wid = WriteId::random().unwrap();
        let put = r#"{"key":"k","ep":1,"ver":2,"wid":"00","etag":"\"e\"","expires_at":5000}"#;
        let written = Written::parse(&reply(200, &[("etag", "\"e\"")], put), wid).unwrap();
        assert_eq!(written.etag.to_string(), "\"e\"");
        assert_eq!(written.expires_at, Some(UNIX_EPOCH + Duration::from_secs(5)));
        assert_eq!(written.write_id, wid);
        // A DELETE's acknowledgement (and a PUT's without TTL) has no expiry.
        let delete = r#"{"key":"k","ep":1,"ver":3,"wid":"00"}"#;
        assert_eq!(Written::parse(&reply(200, &[("etag", "\"f\"")], delete), wid).unwrap().expires_at, None);
        let null = r#"{"key":"k","ep":1,"ver":3,"wid":"00","expires_at":null}"#;
        assert_eq!(Written::parse(&reply(200, &[("etag", "\"f\"")], null), wid).unwrap().expires_at, None);
    }

    #[test]
    fn a_write_answer_without_etag_or_json_is_invalid() {
        let wid = WriteId::random().unwrap();
        assert!(matches!(Written::parse(&reply(200, &[], "{}"), wid), Err(Error::InvalidResponse { .. })));
        assert!(matches!(
            Written::parse(&reply(200, &[("etag", "\"e\"")], "ok"), wid),
            Err(Error::InvalidResponse { .. })
        ));
    }
}
