//! The durable store on the claim object's SQLite storage: the authority.
//!
//! [`DurableStore::transition`] serves one `protocol::claim::DurableRequest`
//! with `durable::apply` over [`SqlRows`], and is one transaction:
//!
//! - it is synchronous: every `exec` runs to completion, and nothing in it
//!   awaits. A Durable Object runs one event's JavaScript at a time and only
//!   lets another event in at an `await` (the input gate), so no other
//!   request, alarm or transition can observe or change the rows between
//!   the reads and the write of a transition;
//! - `apply` reads its rows, then writes at most one row (`put_claim` or
//!   `put_operation`: each transition of the protocol changes one row). The
//!   writes are buffered in [`SqlRows`] and issued after `apply` returns, each
//!   as one statement; a failed read discards them all. One statement is
//!   atomic in SQLite, and writes made without an intervening await are
//!   committed together by the runtime's write coalescing (the output gate
//!   holds the response until they are durable), so a transition is never
//!   half-applied, and its answer is never sent before it is durable;
//! - workers-rs 0.8.7 has no binding for `ctx.storage.transactionSync`, and
//!   `BEGIN`/`COMMIT` statements are refused by the runtime; the two points
//!   above are why neither is needed here.

use std::cell::RefCell;
use std::collections::BTreeMap;

use protocol::claim::durable::apply;
use protocol::claim::types::deadline;
use protocol::claim::{
    ClaimId, ClaimRow, ClaimState, DurableReply, DurableRequest, DurableRows, Millis, OperationId, OperationRow,
};
use serde::de::DeserializeOwned;
use worker::{SqlStorage, SqlStorageValue};

use super::error::ClaimError;
use super::request::Create;

/// Why the store could not serve a request (500).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("sqlite: {0}")]
    Sql(String),
    #[error("a stored row does not decode: {0}")]
    Corrupt(String),
    /// The protocol's durable store answered a request with a reply of
    /// another (a bug).
    #[error("the durable store answered {request} with {reply}")]
    Unexpected { request: String, reply: String },
}

impl From<worker::Error> for StoreError {
    fn from(e: worker::Error) -> Self {
        StoreError::Sql(e.to_string())
    }
}

/// The wire name of a state (also the `state` column).
pub fn state_name(state: ClaimState) -> &'static str {
    state.name()
}

/// The durable store of one namespace.
pub struct DurableStore {
    sql: SqlStorage,
}

impl DurableStore {
    pub fn new(sql: SqlStorage) -> DurableStore {
        DurableStore { sql }
    }

    pub fn sql(&self) -> &SqlStorage {
        &self.sql
    }

    /// Serves one protocol request at `now` as one transaction (module docs).
    pub fn transition(&self, request: &DurableRequest, now: Millis) -> Result<DurableReply, StoreError> {
        let mut rows = SqlRows::new(&self.sql);
        let reply = apply(&mut rows, request, now);
        rows.commit()?;
        Ok(reply)
    }

    /// Authorizes the attempt `create` asks for, reserved from `now` for
    /// its `reservation_ttl_ms` (the protocol's `Authorize`, one
    /// transaction): the claim's new row, or why it is refused.
    pub fn authorize(&self, create: &Create, now: Millis) -> Result<ClaimRow, ClaimError> {
        let request = DurableRequest::Authorize {
            claim: create.claim.clone(),
            fence: create.fence,
            worker: create.worker.clone(),
            reservation_expires_at: deadline(now, create.reservation_ttl_ms),
        };
        match self.transition(&request, now)? {
            DurableReply::Authorized { row } => Ok(row),
            DurableReply::AuthorizeRefused { refused } => Err(ClaimError::Authorize(refused)),
            reply => {
                Err(StoreError::Unexpected { request: format!("{request:?}"), reply: format!("{reply:?}") }.into())
            }
        }
    }

    /// One claim row (a read).
    pub fn claim(&self, claim: &ClaimId) -> Result<Option<ClaimRow>, StoreError> {
        let rows = SqlRows::new(&self.sql);
        let row = rows.claim(claim);
        rows.check()?;
        Ok(row)
    }

    /// Every claim awaiting activation (a read, for the alarm's schedule).
    pub fn authorized(&self) -> Result<Vec<ClaimRow>, StoreError> {
        let rows = SqlRows::new(&self.sql);
        let found = rows.claims_in(ClaimState::Authorized);
        rows.check()?;
        Ok(found)
    }
}

/// A buffered write.
enum Write {
    Claim(ClaimRow),
    Operation(OperationRow),
}

/// `DurableRows` over SQL: reads go to SQLite (or to this transition's own
/// buffered writes), writes are buffered until [`SqlRows::commit`]. The
/// trait's methods cannot fail, so the first error is kept and fails the
/// commit, which then writes nothing.
pub struct SqlRows<'a> {
    sql: &'a SqlStorage,
    claims: BTreeMap<ClaimId, ClaimRow>,
    operations: BTreeMap<OperationId, OperationRow>,
    writes: Vec<Write>,
    error: RefCell<Option<StoreError>>,
}

impl<'a> SqlRows<'a> {
    fn new(sql: &'a SqlStorage) -> SqlRows<'a> {
        SqlRows {
            sql,
            claims: BTreeMap::new(),
            operations: BTreeMap::new(),
            writes: Vec::new(),
            error: RefCell::new(None),
        }
    }

    fn fail(&self, e: StoreError) {
        if let Ok(mut slot) = self.error.try_borrow_mut()
            && slot.is_none()
        {
            *slot = Some(e);
        }
    }

    fn check(self) -> Result<(), StoreError> {
        match self.error.into_inner() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Rows of JSON documents selected by `query`.
    fn select<T: DeserializeOwned>(&self, query: &str, bindings: Vec<SqlStorageValue>) -> Vec<T> {
        let cursor = match self.sql.exec(query, bindings) {
            Ok(c) => c,
            Err(e) => {
                self.fail(e.into());
                return Vec::new();
            }
        };
        let mut found = Vec::new();
        for row in cursor.raw() {
            match row {
                Ok(values) => match values.first() {
                    Some(SqlStorageValue::String(json)) => match serde_json::from_str(json) {
                        Ok(value) => found.push(value),
                        Err(e) => self.fail(StoreError::Corrupt(e.to_string())),
                    },
                    other => self.fail(StoreError::Corrupt(format!("row column is {other:?}"))),
                },
                Err(e) => self.fail(e.into()),
            }
        }
        found
    }

    /// Issues the buffered writes, unless a read failed.
    fn commit(self) -> Result<(), StoreError> {
        let SqlRows { sql, writes, error, .. } = self;
        if let Some(e) = error.into_inner() {
            return Err(e);
        }
        for write in writes {
            match write {
                Write::Claim(row) => {
                    let json = encode(&row)?;
                    sql.exec(
                        "INSERT INTO claims (claim, state, row) VALUES (?, ?, ?) \
                         ON CONFLICT(claim) DO UPDATE SET state = excluded.state, row = excluded.row",
                        vec![row.claim.0.as_str().into(), state_name(row.state).into(), json.into()],
                    )?;
                }
                Write::Operation(row) => {
                    let json = encode(&row)?;
                    sql.exec(
                        "INSERT INTO operations (operation, row) VALUES (?, ?) \
                         ON CONFLICT(operation) DO UPDATE SET row = excluded.row",
                        vec![row.operation.0.as_str().into(), json.into()],
                    )?;
                }
            }
        }
        Ok(())
    }
}

fn encode<T: serde::Serialize>(row: &T) -> Result<String, StoreError> {
    serde_json::to_string(row).map_err(|e| StoreError::Corrupt(e.to_string()))
}

impl DurableRows for SqlRows<'_> {
    fn claim(&self, claim: &ClaimId) -> Option<ClaimRow> {
        if let Some(row) = self.claims.get(claim) {
            return Some(row.clone());
        }
        self.select("SELECT row FROM claims WHERE claim = ?", vec![claim.0.as_str().into()]).pop()
    }

    fn put_claim(&mut self, row: ClaimRow) {
        self.claims.insert(row.claim.clone(), row.clone());
        self.writes.push(Write::Claim(row));
    }

    fn claims_in(&self, state: ClaimState) -> Vec<ClaimRow> {
        // Only the reaper's scan calls this, in a transition that writes
        // nothing, so there are no buffered writes to merge.
        self.select("SELECT row FROM claims WHERE state = ? ORDER BY claim", vec![state_name(state).into()])
    }

    fn operation(&self, operation: &OperationId) -> Option<OperationRow> {
        if let Some(row) = self.operations.get(operation) {
            return Some(row.clone());
        }
        self.select("SELECT row FROM operations WHERE operation = ?", vec![operation.0.as_str().into()]).pop()
    }

    fn put_operation(&mut self, row: OperationRow) {
        self.operations.insert(row.operation.clone(), row.clone());
        self.writes.push(Write::Operation(row));
    }
}
