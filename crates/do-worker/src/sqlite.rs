//! SQLite in a Durable Object: transactions and schema migrations, shared
//! by the objects that keep SQLite storage (`ClaimStore`, `Registry`).
//!
//! [`transaction`] runs a synchronous closure in `ctx.storage.transactionSync`
//! (workers-rs 0.8.7 has no binding for it; it is called through the
//! storage object, which the crate exposes): if the closure fails, every
//! statement it ran is rolled back. The runtime refuses `BEGIN`/`COMMIT`.
//!
//! [`migrate`] moves a schema to its current version: all the migrations
//! still to apply and the new version number in one transaction, so a
//! migration is applied whole or not at all, and running it again (a
//! restarted object, two events racing to be first) finds the version
//! already current and does nothing.

use js_sys::{Function, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::JsValue;
use worker::{SqlStorage, SqlStorageValue, Storage};

/// Runs `body` as one SQLite transaction: committed if it returns `Ok`,
/// rolled back (and its error returned) otherwise.
pub fn transaction(storage: &Storage, body: impl FnOnce() -> worker::Result<()> + 'static) -> worker::Result<()> {
    let raw: &JsValue = storage.as_raw().as_ref();
    let sync = Reflect::get(raw, &JsValue::from_str("transactionSync"))?
        .dyn_into::<Function>()
        .map_err(|_| worker::Error::RustError("storage.transactionSync is not a function".into()))?;
    // An `Err` is thrown into JavaScript, where transactionSync rolls back
    // and throws it on to us.
    let callback = Closure::once_into_js(move || -> Result<JsValue, JsValue> {
        body().map(|()| JsValue::UNDEFINED).map_err(|e| JsValue::from_str(&e.to_string()))
    });
    sync.call1(raw, &callback).map(|_| ()).map_err(|e| {
        worker::Error::RustError(format!(
            "transaction rolled back: {}",
            e.as_string().unwrap_or_else(|| format!("{e:?}"))
        ))
    })
}

/// One step of a schema: from version `n` to `n + 1`, given the SQL storage.
pub type Migration = fn(&SqlStorage) -> worker::Result<()>;

/// Brings the schema whose history is `migrations` (migration `n` takes it
/// from version `n` to `n + 1`) to its latest version, in one transaction;
/// the version is kept in the table `schema_version`. Fails, changing
/// nothing, on a schema newer than this build knows.
pub fn migrate(storage: &Storage, what: &'static str, migrations: &'static [Migration]) -> worker::Result<()> {
    migrate_in(storage, what, "schema_version", migrations)
}

/// [`migrate`], keeping the version in `version_table` (the migration test
/// hook uses a scratch schema beside the real one).
pub fn migrate_in(
    storage: &Storage,
    what: &'static str,
    version_table: &'static str,
    migrations: &'static [Migration],
) -> worker::Result<()> {
    let sql = storage.sql();
    transaction(storage, move || {
        sql.exec(&format!("CREATE TABLE IF NOT EXISTS {version_table} (version INTEGER NOT NULL)"), None)?;
        let current = version(&sql, version_table)?;
        let latest = i64::try_from(migrations.len()).unwrap_or(i64::MAX);
        if current > latest {
            return Err(worker::Error::RustError(format!(
                "the {what} is at schema version {current}; this build knows up to {latest}"
            )));
        }
        if current == latest {
            return Ok(());
        }
        for migration in migrations.iter().skip(usize::try_from(current).unwrap_or(usize::MAX)) {
            migration(&sql)?;
        }
        sql.exec(&format!("DELETE FROM {version_table}"), None)?;
        sql.exec(&format!("INSERT INTO {version_table} (version) VALUES (?)"), vec![SqlStorageValue::Integer(latest)])?;
        Ok(())
    })
}

fn version(sql: &SqlStorage, version_table: &str) -> worker::Result<i64> {
    let cursor = sql.exec(&format!("SELECT version FROM {version_table}"), None)?;
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

/// Runs each statement of `statements` in turn.
pub fn exec_all(sql: &SqlStorage, statements: &[&str]) -> worker::Result<()> {
    for statement in statements {
        sql.exec(statement, None)?;
    }
    Ok(())
}

/// A `u64` (a time in ms, a count) as a SQLite integer, saturating.
pub fn int(value: u64) -> SqlStorageValue {
    SqlStorageValue::Integer(i64::try_from(value).unwrap_or(i64::MAX))
}

/// The first column of every row `query` selects, as integers (a count, a
/// time); non-integers are skipped.
pub fn integers(sql: &SqlStorage, query: &str, bindings: Vec<SqlStorageValue>) -> worker::Result<Vec<u64>> {
    let mut out = Vec::new();
    for row in sql.exec(query, bindings)?.raw() {
        match row?.first() {
            Some(SqlStorageValue::Integer(v)) => out.push(u64::try_from(*v).unwrap_or(0)),
            Some(SqlStorageValue::Float(v)) => out.push(*v as u64),
            _ => {}
        }
    }
    Ok(out)
}

/// The first column of every row `query` selects, as text.
pub fn texts(sql: &SqlStorage, query: &str, bindings: Vec<SqlStorageValue>) -> worker::Result<Vec<String>> {
    let mut out = Vec::new();
    for row in sql.exec(query, bindings)?.raw() {
        if let Some(SqlStorageValue::String(s)) = row?.first() {
            out.push(s.clone());
        }
    }
    Ok(out)
}
