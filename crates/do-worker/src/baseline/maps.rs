//! The two map baselines: [`MemBaseline`] (the map in memory) and
//! [`SqlBaseline`] (every value in SQLite).

use std::cell::RefCell;
use std::collections::HashMap;

use protocol::handoff::Key;
use worker::{DurableObject, Env, Request, Response, Result, SqlStorageValue, State, durable_object};

use super::request::{absent, ack, admit};
use crate::auth::KeyProblem;
use crate::error::{HttpError, HttpResult};
use crate::http;
use crate::internal;
use crate::vocab::KvOp;

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
