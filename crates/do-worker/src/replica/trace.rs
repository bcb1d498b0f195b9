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

use protocol::handoff::trace::{self, Row};
use worker::{Env, SqlStorage, SqlStorageValue, State};

use crate::{sqlite, vars};

/// Bytes of rows one object records at most.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Bytes of rows in one page a fetch returns.
const PAGE_BYTES: usize = 4 * 1024 * 1024;

/// What the replica's state keeps of its recording: the bound, and
/// whether a step was lost.
#[derive(Default)]
pub(super) struct TraceLog {
    bytes: u64,
    /// A step was not recorded: recording has stopped.
    lost: bool,
}

impl TraceLog {
    /// The rows of a step, encoded for the store. Past the bound one
    /// `Row::Lost` is written and nothing more: the validator refuses an
    /// incomplete trace rather than check part of it.
    pub(super) fn encode(&mut self, rows: Vec<Row>) -> Vec<Vec<u8>> {
        let mut encoded = Vec::new();
        for row in rows {
            if self.lost {
                break;
            }
            let bytes = row.encode();
            self.bytes = self.bytes.saturating_add(bytes.len() as u64);
            if matches!(row, Row::Lost { .. }) || self.bytes > MAX_BYTES {
                encoded.extend(self.lose());
            } else {
                encoded.push(bytes);
            }
        }
        encoded
    }

    /// Recording stops; the one `Row::Lost` to write, if not written yet.
    pub(super) fn lose(&mut self) -> Option<Vec<u8>> {
        (!std::mem::replace(&mut self.lost, true)).then(|| Row::Lost { steps: 1 }.encode())
    }
}

/// An object's trace store: its SQLite table.
pub(super) struct TraceStore {
    sql: SqlStorage,
}

impl TraceStore {
    /// The store, when recording is on.
    pub(super) fn open(state: &State, env: &Env) -> Option<TraceStore> {
        if !vars::trace(env) {
            return None;
        }
        let sql = state.storage().sql();
        create_table(&sql).ok()?;
        Some(TraceStore { sql })
    }

    /// Appends an encoded row of the state instance `object` (its birth
    /// nonce: the rows of one driver).
    pub(super) fn insert(&self, object: u64, row: Vec<u8>) -> worker::Result<()> {
        self.sql.exec(
            "INSERT INTO trace_steps (object, row) VALUES (?, ?)",
            vec![object_id(object), SqlStorageValue::Blob(row)],
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
fn object_id(id: u64) -> SqlStorageValue {
    SqlStorageValue::String(format!("{id:016x}"))
}
