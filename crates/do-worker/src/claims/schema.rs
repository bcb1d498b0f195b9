//! The claim store's SQLite schema, created and migrated by the object
//! itself on its first event (a fresh object, or one deployed with an older
//! schema), each migration in one transaction (`crate::sqlite::migrate`).
//!
//! Rows hold the protocol's own rows (`protocol::claim::ClaimRow`,
//! `OperationRow`) as JSON, next to the columns queries need. JSON keeps
//! every `u64` exact (a SQLite integer crosses into JavaScript as a double,
//! which loses precision above 2^53: fences are full `u64`s) and means there
//! is one definition of a row, the protocol's, not a second one here. The
//! columns beside it are times in ms, far below 2^53.

use worker::{SqlStorage, Storage};

use crate::sqlite::{self, Migration};

/// Migration `n` takes the schema from version `n` to `n + 1`.
const MIGRATIONS: &[Migration] = &[v1, v2, v3, v4, v5, v6];

/// Creates or migrates the tables; a no-op once current.
pub fn migrate(storage: &Storage) -> worker::Result<()> {
    sqlite::migrate(storage, "claim store", MIGRATIONS)
}

/// Records the namespace life the stored claims belong to (at each
/// opening, after [`migrate`]).
pub fn record_life(sql: &SqlStorage, life: u64) -> worker::Result<()> {
    sql.exec(
        "INSERT INTO life (id, life) VALUES (0, ?) ON CONFLICT(id) DO UPDATE SET life = excluded.life",
        vec![sqlite::int(life)],
    )?;
    Ok(())
}

/// The namespace life the stored claims belong to; `None` for a store
/// with no schema yet (a fresh or dropped one), which holds nothing.
pub fn stored_life(sql: &SqlStorage) -> worker::Result<Option<u64>> {
    let schema = sqlite::texts(sql, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'life'", vec![])?;
    if schema.is_empty() {
        return Ok(None);
    }
    Ok(sqlite::integers(sql, "SELECT life FROM life WHERE id = 0", vec![])?.first().copied())
}

/// The migration test hook (`POST /v1/{ns}/_test/migrations`): migrating a
/// current schema again changes nothing, and a schema whose second
/// migration fails keeps nothing of the first (they run in one
/// transaction). What it found, as `(idempotent, rolled_back)`.
pub fn check_migrations(storage: &Storage) -> worker::Result<(bool, bool)> {
    let sql = storage.sql();
    let tables = || sqlite::texts(&sql, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", vec![]);
    let before = tables()?;
    migrate(storage)?;
    let idempotent = tables()? == before;
    let failed = sqlite::migrate_in(storage, "scratch schema", "scratch_version", &[scratch_table, failing]);
    let after = tables()?;
    let rolled_back = failed.is_err() && !after.iter().any(|t| t.starts_with("scratch"));
    Ok((idempotent, rolled_back))
}

fn scratch_table(sql: &SqlStorage) -> worker::Result<()> {
    sqlite::exec_all(sql, &["CREATE TABLE scratch_table (x INTEGER)", "INSERT INTO scratch_table VALUES (1)"])
}

fn failing(sql: &SqlStorage) -> worker::Result<()> {
    sql.exec("INSERT INTO no_such_table VALUES (1)", None).map(|_| ())
}

/// The first schema: claims and operations.
fn v1(sql: &SqlStorage) -> worker::Result<()> {
    sqlite::exec_all(
        sql,
        &[
            // claim → its current attempt, state, reservation, durable lock
            // and effect count (the protocol's ClaimRow).
            "CREATE TABLE claims (claim TEXT PRIMARY KEY, state TEXT NOT NULL, row TEXT NOT NULL)",
            "CREATE INDEX claims_by_state ON claims (state)",
            // operation id (Idempotency-Key) → the request it is bound to
            // and its stored rejection (the protocol's OperationRow).
            "CREATE TABLE operations (operation TEXT PRIMARY KEY, row TEXT NOT NULL)",
        ],
    )
}

/// Operation ids scoped per claim; the reaper's and the purge's columns.
fn v2(sql: &SqlStorage) -> worker::Result<()> {
    sqlite::exec_all(
        sql,
        &[
            // The reservation deadline of an authorized claim: the reaper
            // reads the expired ones in deadline order from an index,
            // work proportional to what it reaps.
            "ALTER TABLE claims ADD COLUMN due_at INTEGER",
            "UPDATE claims SET due_at = json_extract(row, '$.reservation.expires_at') WHERE state = 'authorized'",
            "DROP INDEX claims_by_state",
            "CREATE INDEX claims_due ON claims (state, due_at)",
            // When a finished claim (reaped, or executing with its lease
            // lapsed) is deleted with its operations; NULL while it is live.
            // Rows from before this version get theirs at their next write,
            // or from the first purge after the migration
            // (`DurableStore::purge`).
            "ALTER TABLE claims ADD COLUMN purge_at INTEGER",
            "CREATE INDEX claims_purge ON claims (purge_at)",
            // An operation id belongs to its claim.
            "CREATE TABLE operations_by_claim (claim TEXT NOT NULL, operation TEXT NOT NULL, row TEXT NOT NULL, \
             PRIMARY KEY (claim, operation))",
            "INSERT INTO operations_by_claim (claim, operation, row) \
             SELECT json_extract(row, '$.request.claim'), operation, row FROM operations",
            "DROP TABLE operations",
            "ALTER TABLE operations_by_claim RENAME TO operations",
        ],
    )
}

/// Completion, attempts and dead letters: the listing by state in claim-id
/// order. Rows need no rewrite: the new fields of the protocol's rows
/// (`attempt`, `max_attempts`, `outcome`, `result`; an operation's `body`
/// and `completion`) have serde defaults (attempt 1, 3 attempts, none; an
/// operation bound before whole requests binds its attempt only), and the
/// `state` column keeps its names (`authorized`, `executing`, `reaped`),
/// to which `succeeded`, `failed` and `dead` are added.
fn v3(sql: &SqlStorage) -> worker::Result<()> {
    sqlite::exec_all(sql, &["CREATE INDEX claims_by_state ON claims (state, claim)"])
}

/// The namespace life the rows belong to (`created_at` in the registry):
/// a late drop of a deleted life leaves a store of the life created since.
fn v4(sql: &SqlStorage) -> worker::Result<()> {
    sqlite::exec_all(sql, &["CREATE TABLE life (id INTEGER PRIMARY KEY CHECK (id = 0), life INTEGER NOT NULL)"])
}

/// The rows the purge gives a `purge_at` (finished claims written before
/// version 2), in an index of their own: the purge finds them without
/// reading every authorized claim (whose `purge_at` is NULL too).
fn v5(sql: &SqlStorage) -> worker::Result<()> {
    sqlite::exec_all(
        sql,
        &["CREATE INDEX claims_unpurged ON claims (claim) WHERE purge_at IS NULL AND state != 'authorized'"],
    )
}

/// The bytes of every claim and operation row (their JSON and keys), as an
/// SQL expression that reads them all: what [`v6`] starts `usage` from and
/// what its triggers then add and take off row by row, and the recount the
/// test hook compares it with. A new definition needs a migration.
pub(super) const ROW_BYTES: &str = "((SELECT COALESCE(SUM(length(CAST(claim AS BLOB)) + length(CAST(row AS BLOB))), 0) \
     FROM claims) + (SELECT COALESCE(SUM(length(CAST(claim AS BLOB)) + length(CAST(operation AS BLOB)) + \
     length(CAST(row AS BLOB))), 0) FROM operations))";

/// What the store holds, kept by the database itself: the number of claims
/// and the bytes of the claim and operation rows (their JSON and keys),
/// counted from what is there at the migration and then by triggers on
/// every insert, rewrite and delete, whoever writes. A create reads one row
/// instead of counting the claims, and the byte bound (`max_claim_bytes`)
/// needs no pass over the store: the runtime refuses SQLite's own page
/// counts (docs/remora-operating.md).
fn v6(sql: &SqlStorage) -> worker::Result<()> {
    let counted = format!("INSERT INTO usage (id, claims, bytes) SELECT 0, (SELECT COUNT(*) FROM claims), {ROW_BYTES}");
    sqlite::exec_all(
        sql,
        &[
            "CREATE TABLE usage (id INTEGER PRIMARY KEY CHECK (id = 0), claims INTEGER NOT NULL, bytes INTEGER NOT NULL)",
            &counted,
            "CREATE TRIGGER usage_claim_added AFTER INSERT ON claims BEGIN \
             UPDATE usage SET claims = claims + 1, \
             bytes = bytes + length(CAST(NEW.claim AS BLOB)) + length(CAST(NEW.row AS BLOB)) WHERE id = 0; END",
            "CREATE TRIGGER usage_claim_rewritten AFTER UPDATE OF row ON claims BEGIN \
             UPDATE usage SET bytes = bytes - length(CAST(OLD.row AS BLOB)) + length(CAST(NEW.row AS BLOB)) \
             WHERE id = 0; END",
            "CREATE TRIGGER usage_claim_deleted AFTER DELETE ON claims BEGIN \
             UPDATE usage SET claims = claims - 1, \
             bytes = bytes - length(CAST(OLD.claim AS BLOB)) - length(CAST(OLD.row AS BLOB)) WHERE id = 0; END",
            "CREATE TRIGGER usage_operation_added AFTER INSERT ON operations BEGIN \
             UPDATE usage SET bytes = bytes + length(CAST(NEW.claim AS BLOB)) + length(CAST(NEW.operation AS BLOB)) \
             + length(CAST(NEW.row AS BLOB)) WHERE id = 0; END",
            "CREATE TRIGGER usage_operation_rewritten AFTER UPDATE OF row ON operations BEGIN \
             UPDATE usage SET bytes = bytes - length(CAST(OLD.row AS BLOB)) + length(CAST(NEW.row AS BLOB)) \
             WHERE id = 0; END",
            "CREATE TRIGGER usage_operation_deleted AFTER DELETE ON operations BEGIN \
             UPDATE usage SET bytes = bytes - length(CAST(OLD.claim AS BLOB)) - length(CAST(OLD.operation AS BLOB)) \
             - length(CAST(OLD.row AS BLOB)) WHERE id = 0; END",
        ],
    )
}
