//! Success responses shared by the Worker and the Durable Objects (errors
//! are [`crate::error::HttpError`]), and the `handoff-*` headers.

use worker::{Headers, Response, Result};

/// Response headers carrying a record's stamp and write id on `GET`.
pub const EPOCH_HEADER: &str = "handoff-epoch";
pub const VERSION_HEADER: &str = "handoff-version";
pub const WRITE_ID_HEADER: &str = "handoff-write-id";
/// Internal: on a client request to a replica that is not running, answer
/// 410 instead of starting the namespace (a purge deleting lease records
/// must not wake an idle namespace).
pub const NO_WAKE_HEADER: &str = "handoff-no-wake";

/// The content type of raw bytes: values, replica messages.
pub const BINARY: &str = "application/octet-stream";

/// A JSON body with `status` 200.
pub fn json<T: serde::Serialize>(value: &T) -> Result<Response> {
    Response::from_json(value)
}

/// Raw bytes with the record headers.
pub fn record(bytes: Vec<u8>, ep: u64, ver: u64, wid: &str) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", BINARY)?;
    headers.set(EPOCH_HEADER, &ep.to_string())?;
    headers.set(VERSION_HEADER, &ver.to_string())?;
    headers.set(WRITE_ID_HEADER, wid)?;
    Ok(Response::from_bytes(bytes)?.with_headers(headers))
}
