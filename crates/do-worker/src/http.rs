//! Response helpers shared by the Worker and the Durable Objects: the JSON
//! error envelope, `Retry-After`, and the `handoff-*` headers.

use worker::{Headers, Response, Result};

use crate::route::ErrorBody;

/// Response headers carrying a record's stamp and write id on `GET`.
pub const EPOCH_HEADER: &str = "handoff-epoch";
pub const VERSION_HEADER: &str = "handoff-version";
pub const WRITE_ID_HEADER: &str = "handoff-write-id";

/// The JSON error envelope with `status`:
/// `{"error":{"code":"...","message":"..."}}`.
pub fn error(status: u16, code: &str, message: &str) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    Ok(Response::from_json(&ErrorBody::new(code, message))?.with_status(status).with_headers(headers))
}

/// A 503 with `Retry-After` (whole seconds, at least 1).
pub fn unavailable(code: &str, message: &str, retry_after_ms: u64) -> Result<Response> {
    let secs = retry_after_ms.div_ceil(1000).max(1);
    let resp = error(503, code, message)?;
    resp.headers().set("retry-after", &secs.to_string())?;
    Ok(resp)
}

/// A 405 naming the allowed methods.
pub fn method_not_allowed(method: &str, path: &str, allow: &str) -> Result<Response> {
    let resp = error(405, "method_not_allowed", &format!("{method} is not allowed on {path}; use {allow}"))?;
    resp.headers().set("allow", allow)?;
    Ok(resp)
}

/// A JSON body with `status` 200.
pub fn json<T: serde::Serialize>(value: &T) -> Result<Response> {
    Response::from_json(value)
}

/// Raw bytes with the record headers.
pub fn record(bytes: Vec<u8>, ep: u64, ver: u64, wid: &str) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/octet-stream")?;
    headers.set(EPOCH_HEADER, &ep.to_string())?;
    headers.set(VERSION_HEADER, &ver.to_string())?;
    headers.set(WRITE_ID_HEADER, wid)?;
    Ok(Response::from_bytes(bytes)?.with_headers(headers))
}
