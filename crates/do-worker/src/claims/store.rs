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
//!   `put_operation`: each transition of the protocol changes one row),
//!   except a completion's commit, which writes the claim and the
//!   operation's stored answer. The
//!   writes are buffered in [`SqlRows`] and issued after `apply` returns, each
//!   as one statement; a failed read discards them all. One statement is
//!   atomic in SQLite, and writes made without an intervening await are
//!   committed together by the runtime's write coalescing (the output gate
//!   holds the response until they are durable), so a transition is never
//!   half-applied, and its answer is never sent before it is durable;
//! - so a transition needs neither `ctx.storage.transactionSync` (which
//!   schema migrations use, `crate::sqlite`) nor `BEGIN`/`COMMIT` (which the
//!   runtime refuses).
//!
//! Beside the protocol's row, a claim's SQL row keeps two times the object
//! needs without reading every row: `due_at`, the reservation deadline of an
//! authorized claim, or the recorded lease deadline of an executing one (the
//! time of its commit while none is recorded) (the reapers' scans read the
//! passed ones from an index, in deadline order), and `purge_at`, when a finished claim is deleted with
//! its operations: a reaped, completed or dead claim `retention` after it
//! got there (a failed or reaped claim that takes a new attempt is
//! authorized again and loses its `purge_at`), an
//! executing one `retention` after the last lease deadline the store
//! recorded for it (every acceptance and heartbeat records one), so a claim
//! whose worker still heartbeats is never deleted.

use std::cell::Cell;
use std::collections::BTreeMap;

use protocol::claim::durable::apply;
use protocol::claim::types::deadline;
use protocol::claim::{
    ClaimId, ClaimRow, ClaimState, DurableReply, DurableRequest, DurableRows, Millis, OperationId, OperationRow,
    RequestKey,
};
use serde::de::DeserializeOwned;
use worker::{SqlStorage, SqlStorageValue};

use protocol::claim::AuthorizeRefused;

use super::request::Create;
use crate::sqlite;

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

/// Most Idempotency-Keys one claim binds (507 `operations_full` for a new
/// one beyond). An attempt needs two (its activation, its completion), so
/// a claim of [`super::request::MAX_ATTEMPTS`] attempts fits with room for
/// clients that retry with new keys; an operation row holds its request,
/// so this bounds what one claim stores to about 256 times the largest
/// request (a completion's 16 KiB result).
pub const MAX_OPERATIONS_PER_CLAIM: u64 = 256;

/// What a create that is not refused did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorized {
    /// Authorized the attempt: the claim's new row (201).
    New(ClaimRow),
    /// The attempt was the claim's current one already: its row, unchanged
    /// (200).
    Again(ClaimRow),
}

/// Why a create is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateRefused {
    /// The protocol refuses the attempt (409).
    Authorize(AuthorizeRefused),
    /// A new claim, and the store has no room for one (507 `claims_full`).
    Full(NoRoom),
}

/// What a store that refuses more is full of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoRoom {
    /// It holds `max` claims (`max_claims`).
    Claims { max: u64 },
    /// Its rows hold `held` bytes, at or over `bound`.
    Bytes { held: u64, bound: u64 },
    /// The claim has bound `max` Idempotency-Keys.
    Keys { max: u64 },
}

/// What a claim store holds against its bounds (a listing shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    pub claims: u64,
    /// Bytes of claim and operation rows (their JSON and keys).
    pub bytes: u64,
    pub max_claims: u64,
    pub max_claim_bytes: u64,
}

/// How much a claim store holds at most: the namespace's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_claims: u64,
    pub max_claim_bytes: u64,
}

impl Limits {
    /// Room for a new claim, in a store holding `claims` claims and
    /// `bytes` bytes of rows.
    pub fn room_for_claim(&self, claims: u64, bytes: u64) -> Result<(), NoRoom> {
        if claims >= self.max_claims {
            return Err(NoRoom::Claims { max: self.max_claims });
        }
        if bytes >= self.max_claim_bytes {
            return Err(NoRoom::Bytes { held: bytes, bound: self.max_claim_bytes });
        }
        Ok(())
    }

    /// Room for a new Idempotency-Key of a claim that has bound `keys`:
    /// an eighth beyond `max_claim_bytes` is kept for the claims already
    /// held, so work admitted before new claims stopped can finish (its
    /// completion, a retry's activation) while purges make room.
    pub fn room_for_key(&self, keys: u64, bytes: u64) -> Result<(), NoRoom> {
        if keys >= MAX_OPERATIONS_PER_CLAIM {
            return Err(NoRoom::Keys { max: MAX_OPERATIONS_PER_CLAIM });
        }
        let bound = self.max_claim_bytes.saturating_add(self.max_claim_bytes / 8);
        if bytes >= bound {
            return Err(NoRoom::Bytes { held: bytes, bound });
        }
        Ok(())
    }
}

/// The durable store of one namespace: its SQLite storage, how long a
/// finished claim is kept there and how much it holds at most (the
/// namespace's settings). A handle, made for each request.
pub struct DurableStore {
    sql: SqlStorage,
    retention_ms: Millis,
    limits: Limits,
}

/// One page of a listing: the claims, and the cursor of the next page.
pub struct ClaimPage {
    pub claims: Vec<ClaimRow>,
    pub next: Option<ClaimId>,
}

impl DurableStore {
    pub fn new(sql: SqlStorage, retention_ms: Millis, limits: Limits) -> DurableStore {
        DurableStore { sql, retention_ms, limits }
    }

    /// How many claims the store holds and the bytes of its rows, against
    /// its bounds (one row, kept by triggers: schema v6).
    pub fn usage(&self) -> Result<Usage, StoreError> {
        let cursor = self.sql.exec("SELECT claims, bytes FROM usage WHERE id = 0", vec![])?;
        let row = cursor.raw().next().transpose()?;
        let count = |v: Option<&SqlStorageValue>| match v {
            Some(SqlStorageValue::Integer(n)) => Ok(u64::try_from(*n).unwrap_or(0)),
            other => Err(StoreError::Corrupt(format!("usage column is {other:?}"))),
        };
        match row {
            Some(values) => Ok(Usage {
                claims: count(values.first())?,
                bytes: count(values.get(1))?,
                max_claims: self.limits.max_claims,
                max_claim_bytes: self.limits.max_claim_bytes,
            }),
            None => Err(StoreError::Corrupt("the usage row is missing".to_string())),
        }
    }

    /// Serves one protocol request at `now` as one transaction (module docs).
    pub fn transition(&self, request: &DurableRequest, now: Millis) -> Result<DurableReply, StoreError> {
        let mut rows = SqlRows::new(&self.sql, now, self.retention_ms);
        let reply = apply(&mut rows, request, now);
        rows.commit()?;
        Ok(reply)
    }

    /// Authorizes the attempt `create` asks for, reserved from `now` for
    /// its `reservation_ttl_ms` (the protocol's `Authorize`, one
    /// transaction): the claim's new row, or why it is refused. A new claim
    /// needs room ([`Limits::room_for_claim`], read in the same synchronous
    /// run, so two creates cannot both take the last place). A create of
    /// the claim's current attempt again ([`Create::repeats`]: a client
    /// retrying a create whose answer it lost) changes nothing: the row as
    /// it is, [`Authorized::Again`].
    pub fn authorize(&self, create: &Create, now: Millis) -> Result<Result<Authorized, CreateRefused>, StoreError> {
        match self.claim(&create.claim)? {
            Some(row) if create.repeats(&row) => return Ok(Ok(Authorized::Again(row))),
            Some(_) => {}
            None => {
                let usage = self.usage()?;
                if let Err(full) = self.limits.room_for_claim(usage.claims, usage.bytes) {
                    return Ok(Err(CreateRefused::Full(full)));
                }
            }
        }
        let request = DurableRequest::Authorize {
            claim: create.claim.clone(),
            fence: create.fence,
            worker: create.worker.clone(),
            reservation_expires_at: deadline(now, create.reservation_ttl_ms),
            max_attempts: create.max_attempts(),
        };
        match self.transition(&request, now)? {
            DurableReply::Authorized { row } => Ok(Ok(Authorized::New(row))),
            DurableReply::AuthorizeRefused { refused } => Ok(Err(CreateRefused::Authorize(refused))),
            reply => Err(StoreError::Unexpected { request: format!("{request:?}"), reply: format!("{reply:?}") }),
        }
    }

    /// One page of the claims in claim-id order: those after `after` (in
    /// `state`, if given), at most `limit` and, past the first, at most
    /// [`MAX_PAGE_BYTES`] of stored rows; and the cursor of the next page if
    /// there may be more (a read; the primary key, or the index on
    /// `(state, claim)`, gives the order). Rows are read one at a time, so a
    /// page of claims with large results never holds more than its bound.
    pub fn list(
        &self,
        state: Option<ClaimState>,
        after: Option<&ClaimId>,
        limit: usize,
    ) -> Result<ClaimPage, StoreError> {
        let after = after.map_or("", |c| c.0.as_str());
        let fetch = sqlite::int(limit.saturating_add(1) as u64);
        let cursor = match state {
            Some(state) => self.sql.exec(
                "SELECT row FROM claims WHERE state = ? AND claim > ? ORDER BY claim LIMIT ?",
                vec![state_name(state).into(), after.into(), fetch],
            ),
            None => self
                .sql
                .exec("SELECT row FROM claims WHERE claim > ? ORDER BY claim LIMIT ?", vec![after.into(), fetch]),
        }?;
        let mut page = Page::new(limit, MAX_PAGE_BYTES);
        for row in cursor.raw() {
            let json = match row?.into_iter().next() {
                Some(SqlStorageValue::String(json)) => json,
                other => return Err(StoreError::Corrupt(format!("row column is {other:?}"))),
            };
            if !page.admits(json.len()) {
                break;
            }
            page.rows.push(serde_json::from_str::<ClaimRow>(&json).map_err(|e| StoreError::Corrupt(e.to_string()))?);
        }
        let next = if page.more { page.rows.last().map(|row| row.claim.clone()) } else { None };
        Ok(ClaimPage { claims: page.rows, next })
    }

    /// Whether `operation` may be bound to a request on `claim`: it is
    /// bound already (a retry, answered as before), or there is room for a
    /// new key ([`Limits::room_for_key`]: two reads of the operations'
    /// primary key, one of the usage row). Checked right before the bind,
    /// in the same synchronous run, so two requests cannot both take the
    /// last place.
    pub fn operation_room(&self, claim: &ClaimId, operation: &OperationId) -> Result<Result<(), NoRoom>, StoreError> {
        let bound_already = sqlite::integers(
            &self.sql,
            "SELECT 1 FROM operations WHERE claim = ? AND operation = ?",
            vec![claim.0.as_str().into(), operation.0.as_str().into()],
        )?;
        if !bound_already.is_empty() {
            return Ok(Ok(()));
        }
        let bound = sqlite::integers(
            &self.sql,
            "SELECT COUNT(*) FROM operations WHERE claim = ?",
            vec![claim.0.as_str().into()],
        )?;
        let bytes = self.usage()?.bytes;
        Ok(self.limits.room_for_key(bound.first().copied().unwrap_or(0), bytes))
    }

    /// One claim row (a read).
    pub fn claim(&self, claim: &ClaimId) -> Result<Option<ClaimRow>, StoreError> {
        let rows = SqlRows::new(&self.sql, 0, 0);
        let row = rows.claim(claim);
        rows.check()?;
        Ok(row)
    }

    /// The earliest reservation deadline of a claim awaiting activation,
    /// and the earliest purge (reads of an index each).
    pub fn next_deadlines(&self) -> Result<(Option<Millis>, Option<Millis>), StoreError> {
        let due = sqlite::integers(
            &self.sql,
            "SELECT MIN(due_at) FROM claims WHERE state IN ('authorized', 'executing')",
            vec![],
        )?;
        let purge = sqlite::integers(&self.sql, "SELECT MIN(purge_at) FROM claims", vec![])?;
        Ok((due.first().copied(), purge.first().copied()))
    }

    /// (At most `limit` of) the claims whose retention has passed at `now`.
    /// Rows kept from before `purge_at` existed get theirs here,
    /// `retention` from `now` (found by a partial index that holds only
    /// them, not by reading every authorized claim). Synchronous, hence one
    /// transaction (module docs).
    pub fn due_for_purge(&self, now: Millis, limit: usize) -> Result<Vec<ClaimId>, StoreError> {
        let limit = sqlite::int(limit as u64);
        self.sql.exec(
            "UPDATE claims SET purge_at = ? WHERE claim IN \
             (SELECT claim FROM claims INDEXED BY claims_unpurged \
              WHERE purge_at IS NULL AND state != 'authorized' LIMIT ?)",
            vec![sqlite::int(now.saturating_add(self.retention_ms)), limit.clone()],
        )?;
        let due = sqlite::texts(
            &self.sql,
            "SELECT claim FROM claims WHERE purge_at <= ? ORDER BY purge_at LIMIT ?",
            vec![sqlite::int(now), limit],
        )?;
        Ok(due.into_iter().map(ClaimId).collect())
    }

    /// The lease deadline the durable store recorded for attempt
    /// `request`, while it executes the claim (the activation's, or a later
    /// heartbeat's).
    pub fn lease_until(&self, request: &RequestKey) -> Result<Option<Millis>, StoreError> {
        let row = self.claim(&request.claim)?;
        Ok(row.filter(|row| row.check_executing(request).is_ok()).and_then(|row| row.lease_until))
    }

    /// Whether `claim`'s retention has passed at `now` (it was not
    /// authorized again meanwhile).
    pub fn is_due_for_purge(&self, claim: &ClaimId, now: Millis) -> Result<bool, StoreError> {
        let found = sqlite::integers(
            &self.sql,
            "SELECT COUNT(*) FROM claims WHERE claim = ? AND purge_at <= ?",
            vec![claim.0.as_str().into(), sqlite::int(now)],
        )?;
        Ok(found.first().is_some_and(|&n| n > 0))
    }

    /// Deletes `claim` with its operations if its retention has passed at
    /// `now`; whether it did. Synchronous, hence one transaction.
    pub fn purge(&self, claim: &ClaimId, now: Millis) -> Result<bool, StoreError> {
        if !self.is_due_for_purge(claim, now)? {
            return Ok(false);
        }
        self.sql.exec("DELETE FROM operations WHERE claim = ?", vec![claim.0.as_str().into()])?;
        self.sql.exec("DELETE FROM claims WHERE claim = ?", vec![claim.0.as_str().into()])?;
        Ok(true)
    }

    /// How many claims are in each state (the test hook).
    pub fn count_by_state(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let mut counts = BTreeMap::new();
        for state in ClaimState::ALL {
            let n = sqlite::integers(
                &self.sql,
                "SELECT COUNT(*) FROM claims WHERE state = ?",
                vec![state_name(state).into()],
            )?;
            counts.insert(state_name(state).to_string(), n.first().copied().unwrap_or(0));
        }
        let ops = sqlite::integers(&self.sql, "SELECT COUNT(*) FROM operations", vec![])?;
        counts.insert("operations".to_string(), ops.first().copied().unwrap_or(0));
        // What the triggers kept, beside a count from the rows (they agree
        // unless a trigger misses a write).
        let usage = self.usage()?;
        counts.insert("usage_claims".to_string(), usage.claims);
        counts.insert("usage_bytes".to_string(), usage.bytes);
        let recounted = sqlite::integers(&self.sql, &format!("SELECT {}", super::schema::ROW_BYTES), vec![])?;
        counts.insert("recounted_bytes".to_string(), recounted.first().copied().unwrap_or(0));
        // The whole database, pages, indexes and free pages included (what
        // the runtime bills and bounds at 10 GB), beside the rows counted.
        counts.insert("database_bytes".to_string(), self.sql.database_size() as u64);
        Ok(counts)
    }
}

/// A buffered write.
enum Write {
    Claim(ClaimRow),
    Operation(OperationRow),
}

/// Bytes of stored claim rows one listing page holds at most (beyond its
/// first row): a page of 1000 claims whose results are 16 KiB each would
/// be 16 MiB of rows, and more again as the answer, in an isolate of 128 MB.
pub const MAX_PAGE_BYTES: usize = 1024 * 1024;

/// A listing page as its rows arrive in order: it takes rows while within
/// its limit and bytes (at least one), and knows whether a row was left
/// out (then the next page starts after its last row).
struct Page<T> {
    rows: Vec<T>,
    limit: usize,
    bytes_left: usize,
    more: bool,
}

impl<T> Page<T> {
    fn new(limit: usize, bytes: usize) -> Page<T> {
        Page { rows: Vec::new(), limit, bytes_left: bytes, more: false }
    }

    /// Whether the next row, of `bytes`, belongs on this page; if not, the
    /// page is full and there is more.
    fn admits(&mut self, bytes: usize) -> bool {
        let first = self.rows.is_empty();
        if self.rows.len() >= self.limit || (!first && bytes > self.bytes_left) {
            self.more = true;
            return false;
        }
        self.bytes_left = self.bytes_left.saturating_sub(bytes);
        true
    }
}

/// `DurableRows` over SQL: reads go to SQLite (or to this transition's own
/// buffered writes), writes are buffered until [`SqlRows::commit`]. The
/// trait's methods cannot fail, so the first error is kept and fails the
/// commit, which then writes nothing.
pub struct SqlRows<'a> {
    sql: &'a SqlStorage,
    /// The transition's `now` and the namespace's retention, for `purge_at`.
    now: Millis,
    retention_ms: Millis,
    claims: BTreeMap<ClaimId, ClaimRow>,
    operations: BTreeMap<(ClaimId, OperationId), OperationRow>,
    writes: Vec<Write>,
    /// The first error, kept by the reads (`DurableRows` reads take
    /// `&self`); a transaction's own adapter, not object state.
    error: Cell<Option<StoreError>>,
}

impl<'a> SqlRows<'a> {
    fn new(sql: &'a SqlStorage, now: Millis, retention_ms: Millis) -> SqlRows<'a> {
        SqlRows {
            sql,
            now,
            retention_ms,
            claims: BTreeMap::new(),
            operations: BTreeMap::new(),
            writes: Vec::new(),
            error: Cell::new(None),
        }
    }

    /// When `row` is to be deleted: never while it awaits activation;
    /// `retention` after it was reaped, or after the last lease deadline
    /// recorded for its executing attempt (or now, if none is).
    fn purge_at(&self, row: &ClaimRow) -> Option<Millis> {
        let since = match row.state {
            ClaimState::Authorized => return None,
            ClaimState::Reaped | ClaimState::Succeeded | ClaimState::Failed | ClaimState::Dead => self.now,
            ClaimState::Executing => row.lease_until.map_or(self.now, |t| t.max(self.now)),
        };
        Some(since.saturating_add(self.retention_ms))
    }

    fn fail(&self, e: StoreError) {
        let first = self.error.take().unwrap_or(e);
        self.error.set(Some(first));
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
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        for write in &self.writes {
            match write {
                Write::Claim(row) => {
                    let json = encode(row)?;
                    let due_at = match row.state {
                        ClaimState::Authorized => row.reservation.as_ref().map(|r| sqlite::int(r.expires_at)),
                        // When recovery looks at its lease: once the recorded
                        // deadline passed, or at once with none recorded.
                        ClaimState::Executing => Some(sqlite::int(row.lease_until.unwrap_or(self.now))),
                        _ => None,
                    };
                    let purge_at = self.purge_at(row).map(sqlite::int);
                    self.sql.exec(
                        "INSERT INTO claims (claim, state, row, due_at, purge_at) VALUES (?, ?, ?, ?, ?) \
                         ON CONFLICT(claim) DO UPDATE SET state = excluded.state, row = excluded.row, \
                         due_at = excluded.due_at, purge_at = excluded.purge_at",
                        vec![
                            row.claim.0.as_str().into(),
                            state_name(row.state).into(),
                            json.into(),
                            due_at.unwrap_or(SqlStorageValue::Null),
                            purge_at.unwrap_or(SqlStorageValue::Null),
                        ],
                    )?;
                }
                Write::Operation(row) => {
                    let json = encode(row)?;
                    self.sql.exec(
                        "INSERT INTO operations (claim, operation, row) VALUES (?, ?, ?) \
                         ON CONFLICT(claim, operation) DO UPDATE SET row = excluded.row",
                        vec![row.request.claim.0.as_str().into(), row.operation.0.as_str().into(), json.into()],
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

    fn awaiting_recovery(&self, now: Millis, limit: usize) -> Vec<ClaimRow> {
        // Only the reaper's scan calls this, in a transition that writes
        // nothing, so there are no buffered writes to merge.
        self.select(
            "SELECT row FROM claims WHERE state = 'authorized' AND due_at <= ? ORDER BY due_at LIMIT ?",
            vec![sqlite::int(now), sqlite::int(limit as u64)],
        )
    }

    fn executing_unleased(&self, now: Millis, limit: usize) -> Vec<ClaimRow> {
        // As `awaiting_recovery`: a scan that writes nothing. (An executing
        // row last written before `due_at` was kept for executing claims has
        // none, and is looked at once its next heartbeat writes it.)
        self.select(
            "SELECT row FROM claims WHERE state = 'executing' AND due_at <= ? ORDER BY due_at LIMIT ?",
            vec![sqlite::int(now), sqlite::int(limit as u64)],
        )
    }

    fn operation(&self, claim: &ClaimId, operation: &OperationId) -> Option<OperationRow> {
        if let Some(row) = self.operations.get(&(claim.clone(), operation.clone())) {
            return Some(row.clone());
        }
        self.select(
            "SELECT row FROM operations WHERE claim = ? AND operation = ?",
            vec![claim.0.as_str().into(), operation.0.as_str().into()],
        )
        .pop()
    }

    fn put_operation(&mut self, row: OperationRow) {
        self.operations.insert((row.request.claim.clone(), row.operation.clone()), row.clone());
        self.writes.push(Write::Operation(row));
    }
}

#[cfg(test)]
mod tests {
    use super::{Limits, MAX_OPERATIONS_PER_CLAIM, NoRoom, Page};

    #[test]
    fn new_claims_stop_at_the_bounds_and_held_claims_keep_an_eighth_more() {
        let limits = Limits { max_claims: 10, max_claim_bytes: 800 };
        assert_eq!(limits.room_for_claim(9, 799), Ok(()));
        assert_eq!(limits.room_for_claim(10, 0), Err(NoRoom::Claims { max: 10 }));
        assert_eq!(limits.room_for_claim(0, 800), Err(NoRoom::Bytes { held: 800, bound: 800 }));
        // A claim already held binds a new key past max_claim_bytes, up to
        // an eighth more, and within its own number of keys.
        assert_eq!(limits.room_for_key(0, 800), Ok(()));
        assert_eq!(limits.room_for_key(0, 899), Ok(()));
        assert_eq!(limits.room_for_key(0, 900), Err(NoRoom::Bytes { held: 900, bound: 900 }));
        assert_eq!(limits.room_for_key(MAX_OPERATIONS_PER_CLAIM - 1, 0), Ok(()));
        assert_eq!(
            limits.room_for_key(MAX_OPERATIONS_PER_CLAIM, 0),
            Err(NoRoom::Keys { max: MAX_OPERATIONS_PER_CLAIM })
        );
        let huge = Limits { max_claims: u64::MAX, max_claim_bytes: u64::MAX };
        assert_eq!(huge.room_for_key(0, u64::MAX - 1), Ok(()), "the eighth saturates");
    }

    /// The rows of `sizes` a page of `limit` and `bytes` takes, and whether
    /// it left one out.
    fn fill(limit: usize, bytes: usize, sizes: &[usize]) -> (usize, bool) {
        let mut page = Page::new(limit, bytes);
        for &size in sizes {
            if !page.admits(size) {
                break;
            }
            page.rows.push(size);
        }
        (page.rows.len(), page.more)
    }

    #[test]
    fn a_page_stops_at_its_limit_or_its_bytes_and_takes_at_least_one_row() {
        assert_eq!(fill(2, 1000, &[10, 10, 10]), (2, true), "the limit");
        assert_eq!(fill(2, 1000, &[10, 10]), (2, false), "all there is");
        assert_eq!(fill(10, 25, &[10, 10, 10]), (2, true), "the bytes");
        assert_eq!(fill(10, 20, &[10, 10]), (2, false), "exactly the bytes");
        assert_eq!(fill(10, 5, &[10, 10]), (1, true), "a first row larger than the bound still comes");
        assert_eq!(fill(10, 5, &[]), (0, false));
    }
}
