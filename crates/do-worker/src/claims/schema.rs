//! The claim store's SQLite schema, created and migrated by the object
//! itself on its first event (a fresh object, or one deployed with an older
//! schema): `schema_version` holds the version the tables are at, and each
//! migration moves it one step, in the same synchronous run of statements.
//!
//! Rows hold the protocol's own rows (`protocol::claim::ClaimRow`,
//! `OperationRow`) as JSON, next to the columns queries need. JSON keeps
//! every `u64` exact (a SQLite integer crosses into JavaScript as a double,
//! which loses precision above 2^53: fences are full `u64`s) and means there
//! is one definition of a row, the protocol's, not a second one here.

use worker::{SqlStorage, SqlStorageValue};

/// The schema this build expects.
pub const VERSION: i64 = 1;

/// Migration `n` takes the schema from version `n` to `n + 1`.
const MIGRATIONS: &[&[&str]] = &[&[
    // claim → its current attempt, state, reservation, durable lock and
    // effect count (the protocol's ClaimRow); `state` for the reaper's scan.
    "CREATE TABLE claims (claim TEXT PRIMARY KEY, state TEXT NOT NULL, row TEXT NOT NULL)",
    "CREATE INDEX claims_by_state ON claims (state)",
    // operation id (Idempotency-Key) → the request it is bound to and its
    // stored rejection (the protocol's OperationRow).
    "CREATE TABLE operations (operation TEXT PRIMARY KEY, row TEXT NOT NULL)",
]];

/// Creates or migrates the tables; a no-op once at [`VERSION`].
pub fn migrate(sql: &SqlStorage) -> worker::Result<()> {
    sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", None)?;
    let mut version = current(sql)?;
    if version > VERSION {
        return Err(worker::Error::RustError(format!(
            "the claim store is at schema version {version}; this build knows up to {VERSION}"
        )));
    }
    while let Some(steps) = usize::try_from(version).ok().and_then(|v| MIGRATIONS.get(v)) {
        for step in *steps {
            sql.exec(step, None)?;
        }
        version += 1;
        sql.exec("DELETE FROM schema_version", None)?;
        sql.exec("INSERT INTO schema_version (version) VALUES (?)", vec![SqlStorageValue::Integer(version)])?;
    }
    Ok(())
}

fn current(sql: &SqlStorage) -> worker::Result<i64> {
    let cursor = sql.exec("SELECT version FROM schema_version", None)?;
    Ok(match cursor.raw().next() {
        Some(Ok(row)) => match row.first() {
            Some(SqlStorageValue::Integer(v)) => *v,
            Some(SqlStorageValue::Float(v)) => *v as i64,
            _ => 0,
        },
        Some(Err(e)) => return Err(e),
        None => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_migration_per_version() {
        assert_eq!(i64::try_from(MIGRATIONS.len()), Ok(VERSION));
    }
}
