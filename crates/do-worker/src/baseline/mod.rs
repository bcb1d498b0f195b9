//! The benchmark baselines `cargo xtask bench kv` compares the replicated
//! store against, reached through the same Worker code path
//! (`/_bench/{mem|sql|echo}/{ns}/kv/{key}`, test hooks only):
//!
//! - [`MemBaseline`]: one Durable Object per namespace holding the map in
//!   memory. No replication, no keepalive: it loses everything when idle
//!   (the e2e idle test uses it as the control that hibernation happens).
//! - [`SqlBaseline`]: one Durable Object per namespace writing every value
//!   to its SQLite storage; a write is answered once durable (the output
//!   gate holds the response until the storage write is confirmed).
//! - [`EchoBaseline`] (`echo.rs`, PUT only): the floor of one hop, one
//!   object sending a replica-sized message to a second that just answers.
//!
//! All answer like the replicated store (`{"key","ep","ver","wid"}` on a
//! write, raw bytes and `handoff-*` headers on a read) with `ep` = 0 and a
//! per-key version, so the client side of the benchmark is identical.

mod echo;

pub use echo::EchoBaseline;
pub(crate) use echo::front as echo_front;

use std::cell::RefCell;
use std::collections::HashMap;

use protocol::handoff::Key;
use worker::{DurableObject, Env, Request, Response, Result, SqlStorageValue, State, durable_object};

use crate::auth::KeyProblem;
use crate::body;
use crate::error::{Code, HttpError, HttpResult};
use crate::http::{self, WRITE_ID_HEADER};
use crate::internal;
use crate::names;
use crate::replica::Committed;
use crate::vocab::{KvOp, MAX_VALUE_BYTES};

/// What the map baselines need from a request: op, key, write id, body.
struct KvRequest {
    op: KvOp,
    key: Key,
    wid: String,
    body: Vec<u8>,
}

async fn admit(secret: &std::result::Result<String, KeyProblem>, req: Request) -> HttpResult<KvRequest> {
    let target = internal::admit::<KvOp>(secret, &req)?;
    let (key, wid) = key_and_wid(target.key, &req)?;
    let body = if target.op == KvOp::Put { value(&req).await? } else { Vec::new() };
    Ok(KvRequest { op: target.op, key, wid, body })
}

/// The validated key of a client request and its write id (empty if none).
fn key_and_wid(key: Option<String>, req: &Request) -> HttpResult<(Key, String)> {
    let key = key.ok_or_else(|| HttpError::new(Code::BadRequest, "missing key"))?;
    let key = names::valid_key(&key).map_err(|e| HttpError::new(Code::InvalidKey, format!("the key {e}")))?;
    let wid = req.headers().get(WRITE_ID_HEADER).ok().flatten().unwrap_or_default();
    Ok((key, wid))
}

/// The value a PUT carries, at most 1 MiB.
async fn value(req: &Request) -> HttpResult<Vec<u8>> {
    body::read(req, MAX_VALUE_BYTES, Code::ValueTooLarge).await
}

fn ack(key: &str, ver: u64, wid: String) -> HttpResult {
    Ok(http::json(&Committed { key, ep: 0, ver, wid })?)
}

fn absent(key: &str) -> HttpError {
    HttpError::new(Code::KeyNotFound, format!("{key} does not exist"))
}

/// A stored value: (version, write id, bytes).
type Entry = (u64, String, Vec<u8>);

/// Baseline 1: an in-memory map in one object.
#[durable_object]
pub struct MemBaseline {
    secret: std::result::Result<String, KeyProblem>,
    map: RefCell<HashMap<Key, Entry>>,
}

impl DurableObject for MemBaseline {
    fn new(_state: State, env: Env) -> Self {
        Self { secret: internal::internal_key(&env), map: RefCell::new(HashMap::new()) }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        self.serve(req).await.or_else(HttpError::respond)
    }

    async fn alarm(&self) -> Result<Response> {
        Response::ok("no alarms")
    }
}

/// Baseline 2: every value in the object's SQLite storage.
#[durable_object]
pub struct SqlBaseline {
    state: State,
    secret: std::result::Result<String, KeyProblem>,
}

impl MemBaseline {
    async fn serve(&self, req: Request) -> HttpResult {
        let kv = admit(&self.secret, req).await?;
        // The one entry point after the await: the map is borrowed once.
        let mut map = self.map.try_borrow_mut().map_err(|_| HttpError::internal("bug: the map was borrowed twice"))?;
        match kv.op {
            KvOp::Put => {
                let ver = map.get(&kv.key).map_or(0, |(v, _, _)| *v).saturating_add(1);
                map.insert(kv.key.clone(), (ver, kv.wid.clone(), kv.body));
                ack(kv.key.as_str(), ver, kv.wid)
            }
            KvOp::Delete => {
                let removed = map.remove(&kv.key);
                ack(kv.key.as_str(), removed.map_or(0, |(v, _, _)| v.saturating_add(1)), kv.wid)
            }
            KvOp::Get => {
                let found = map.get(&kv.key).cloned();
                match found {
                    Some((ver, wid, bytes)) => Ok(http::record(bytes, 0, ver, &wid)?),
                    None => Err(absent(kv.key.as_str())),
                }
            }
        }
    }
}

impl DurableObject for SqlBaseline {
    fn new(state: State, env: Env) -> Self {
        Self { state, secret: internal::internal_key(&env) }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        self.serve(req).await.or_else(HttpError::respond)
    }

    async fn alarm(&self) -> Result<Response> {
        Response::ok("no alarms")
    }
}

impl SqlBaseline {
    async fn serve(&self, req: Request) -> HttpResult {
        let kv = admit(&self.secret, req).await?;
        let sql = self.state.storage().sql();
        sql.exec(
            "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB NOT NULL, ver INTEGER NOT NULL, wid TEXT NOT NULL)",
            None,
        )?;
        match kv.op {
            KvOp::Put => {
                let cursor = sql.exec(
                    "INSERT INTO kv (k, v, ver, wid) VALUES (?, ?, 1, ?) \
                     ON CONFLICT(k) DO UPDATE SET v = excluded.v, ver = kv.ver + 1, wid = excluded.wid RETURNING ver",
                    vec![kv.key.as_str().into(), SqlStorageValue::Blob(kv.body), kv.wid.as_str().into()],
                )?;
                let ver = match cursor.raw().next() {
                    Some(Ok(row)) => match row.first() {
                        Some(SqlStorageValue::Integer(v)) => u64::try_from(*v).unwrap_or(0),
                        _ => 0,
                    },
                    _ => 0,
                };
                ack(kv.key.as_str(), ver, kv.wid)
            }
            KvOp::Delete => {
                sql.exec("DELETE FROM kv WHERE k = ?", vec![kv.key.as_str().into()])?;
                ack(kv.key.as_str(), 0, kv.wid)
            }
            KvOp::Get => {
                let cursor = sql.exec("SELECT v, ver, wid FROM kv WHERE k = ?", vec![kv.key.as_str().into()])?;
                match cursor.raw().next() {
                    Some(Ok(row)) => match row.as_slice() {
                        [SqlStorageValue::Blob(v), SqlStorageValue::Integer(ver), SqlStorageValue::String(wid)] => {
                            Ok(http::record(v.clone(), 0, u64::try_from(*ver).unwrap_or(0), wid)?)
                        }
                        // An empty BLOB may come back as an empty string or null.
                        [_, SqlStorageValue::Integer(ver), SqlStorageValue::String(wid)] => {
                            Ok(http::record(Vec::new(), 0, u64::try_from(*ver).unwrap_or(0), wid)?)
                        }
                        _ => Err(HttpError::internal("unexpected row shape")),
                    },
                    Some(Err(e)) => Err(e.into()),
                    None => Err(absent(kv.key.as_str())),
                }
            }
        }
    }
}
