//! Trace recording, for trace validation (`cargo xtask validate`,
//! docs/verification.md 1.6): with the test hooks on and `HANDOFF_TRACE`
//! = "1" (`cargo xtask e2e` sets it), the protocol's driver records every
//! step and this appends the rows to the object's SQLite storage,
//! synchronously after each step. Storage is what survives the eviction
//! hook (it resets the object, its memory goes), so the trace of an
//! evicted instance stays fetchable (`GET /v1/{ns}/_test/trace/{r}`); and
//! the runtime's output gate holds a step's messages until its rows are
//! written, so no replica can receive a message whose sending step was
//! lost.

use std::cell::Cell;

use protocol::handoff::trace::{self, Row};
use worker::{Env, SqlStorage, SqlStorageValue, State};

use crate::sqlite;

/// The variable that turns recording on (test hooks only).
const TRACE_VAR: &str = "HANDOFF_TRACE";

/// Bytes of rows one object records at most.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Bytes of rows in one page a fetch returns.
const PAGE_BYTES: usize = 4 * 1024 * 1024;

/// An object's trace store.
pub(super) struct TraceStore {
    sql: SqlStorage,
    /// This object instance (its birth nonce): the rows of one driver.
    object: u64,
    bytes: Cell<u64>,
    /// A step was not recorded: recording has stopped.
    lost: Cell<bool>,
}

impl TraceStore {
    /// The store, when recording is on.
    pub(super) fn open(state: &State, env: &Env, object: u64) -> Option<TraceStore> {
        let on = crate::test_hooks(env) && env.var(TRACE_VAR).is_ok_and(|v| v.to_string() == "1");
        if !on {
            return None;
        }
        let sql = state.storage().sql();
        create_table(&sql).ok()?;
        Some(TraceStore { sql, object, bytes: Cell::new(0), lost: Cell::new(false) })
    }

    /// Appends a step's rows. Past the bound (or a failed write) one
    /// `Row::Lost` is written and nothing more: the validator refuses an
    /// incomplete trace rather than check part of it.
    pub(super) fn append(&self, rows: Vec<Row>) {
        for row in rows {
            if self.lost.get() {
                return;
            }
            let bytes = row.encode();
            self.bytes.set(self.bytes.get().saturating_add(bytes.len() as u64));
            if matches!(row, Row::Lost { .. }) || self.bytes.get() > MAX_BYTES || self.insert(bytes).is_err() {
                self.lost.set(true);
                let _ = self.insert(Row::Lost { steps: 1 }.encode());
            }
        }
    }

    fn insert(&self, row: Vec<u8>) -> worker::Result<()> {
        self.sql.exec(
            "INSERT INTO trace_steps (object, row) VALUES (?, ?)",
            vec![object(self.object), SqlStorageValue::Blob(row)],
        )?;
        Ok(())
    }

    /// The rows after row id `after` (of every instance this object had),
    /// as frames, up to a page; and the id to ask after next, if more
    /// rows may follow.
    pub(super) fn page(state: &State, after: u64) -> worker::Result<(Vec<u8>, Option<u64>)> {
        let sql = state.storage().sql();
        create_table(&sql)?;
        let query = "SELECT id, object, row FROM trace_steps WHERE id > ? ORDER BY id LIMIT 4096";
        let mut page = Vec::new();
        let mut last = None;
        for row in sql.exec(query, vec![sqlite::int(after)])?.raw() {
            let row = row?;
            let id = match row.first() {
                Some(SqlStorageValue::Integer(id)) => u64::try_from(*id).ok(),
                Some(SqlStorageValue::Float(id)) => Some(*id as u64),
                _ => None,
            };
            // The object is hex text: a JavaScript number loses the low bits of a random u64.
            let obj = match row.get(1) {
                Some(SqlStorageValue::String(hex)) => u64::from_str_radix(hex, 16).ok(),
                _ => None,
            };
            let (Some(id), Some(obj)) = (id, obj) else { continue };
            let bytes = match row.get(2) {
                Some(SqlStorageValue::Blob(b)) => b.as_slice(),
                _ => &[],
            };
            trace::push_frame(&mut page, obj, bytes);
            last = Some(id);
            if page.len() >= PAGE_BYTES {
                break;
            }
        }
        Ok((page, last))
    }
}

fn create_table(sql: &SqlStorage) -> worker::Result<()> {
    let table = "CREATE TABLE IF NOT EXISTS trace_steps (id INTEGER PRIMARY KEY AUTOINCREMENT, \
                 object TEXT NOT NULL, row BLOB NOT NULL)";
    sql.exec(table, None).map(|_| ())
}

/// An object id as SQLite text, 16 hex digits.
fn object(id: u64) -> SqlStorageValue {
    SqlStorageValue::String(format!("{id:016x}"))
}
