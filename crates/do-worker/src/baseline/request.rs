//! What the baselines share with the replicated store's requests: the
//! internal request of a KV operation, its key, write id and value, and
//! the answers in the store's shape.

use protocol::handoff::Key;
use worker::Request;

use crate::auth::KeyProblem;
use crate::body;
use crate::error::{Code, HttpError, HttpResult};
use crate::http::{self, WRITE_ID_HEADER};
use crate::internal;
use crate::names;
use crate::vocab::{KvOp, MAX_VALUE_BYTES};

/// What the map baselines need from a request: op, key, write id, body.
pub(super) struct KvRequest {
    pub(super) op: KvOp,
    pub(super) key: Key,
    pub(super) wid: String,
    pub(super) body: Vec<u8>,
}

pub(super) async fn admit(secret: &std::result::Result<String, KeyProblem>, req: Request) -> HttpResult<KvRequest> {
    let target = internal::admit::<KvOp>(secret, &req)?;
    let (key, wid) = key_and_wid(target.key, &req)?;
    let body = if target.op == KvOp::Put { value(&req).await? } else { Vec::new() };
    Ok(KvRequest { op: target.op, key, wid, body })
}

/// The validated key of a client request and its write id (empty if none).
pub(super) fn key_and_wid(key: Option<String>, req: &Request) -> HttpResult<(Key, String)> {
    let key = key.ok_or_else(|| HttpError::new(Code::BadRequest, "missing key"))?;
    let key = names::valid_key(&key).map_err(|e| HttpError::new(Code::InvalidKey, format!("the key {e}")))?;
    let wid = req.headers().get(WRITE_ID_HEADER).ok().flatten().unwrap_or_default();
    Ok((key, wid))
}

/// The value a PUT carries, at most 1 MiB.
pub(super) async fn value(req: &Request) -> HttpResult<Vec<u8>> {
    body::read(req, MAX_VALUE_BYTES, Code::ValueTooLarge).await
}

/// A baseline's answer to a write: the replicated store's first fields.
#[derive(serde::Serialize)]
struct Ack<'a> {
    key: &'a str,
    ep: u64,
    ver: u64,
    wid: String,
}

pub(super) fn ack(key: &str, ver: u64, wid: String) -> HttpResult {
    Ok(http::json(&Ack { key, ep: 0, ver, wid })?)
}

pub(super) fn absent(key: &str) -> HttpError {
    HttpError::new(Code::KeyNotFound, format!("{key} does not exist"))
}
