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

/// The header of a trace page: the row id to fetch after next, when more
/// rows may follow (test hooks).
pub const TRACE_NEXT_HEADER: &str = "handoff-trace-next";

/// A page of trace frames (`protocol::handoff::trace`).
pub fn trace_page(page: Vec<u8>, next: Option<u64>) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", BINARY)?;
    if let Some(next) = next {
        headers.set(TRACE_NEXT_HEADER, &next.to_string())?;
    }
    Ok(Response::from_bytes(page)?.with_headers(headers))
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
