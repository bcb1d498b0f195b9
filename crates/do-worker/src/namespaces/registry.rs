//! `Registry`: the one object (named `registry`, SQLite) that knows which
//! namespaces exist, with their settings and state, and which of their
//! replicas started. Every operation is one synchronous run of statements
//! (one transaction: no await between its reads and writes; see
//! `claims/store.rs`), its schema migrated in one transaction
//! (`crate::sqlite`).

use std::cell::RefCell;

use serde::Deserialize;
use serde_json::json;
use worker::{
    DurableObject, Env, Request, Response, Result, SqlStorage, SqlStorageValue, State as DoState, durable_object,
};

use super::info::{Boot, Info, MAX_BODY_BYTES, State, not_found};
use super::settings::Settings;
use crate::auth::KeyProblem;
use crate::body;
use crate::error::{Code, HttpError, HttpResult};
use crate::http;
use crate::internal::{self, now_ms};
use crate::names::{self, ReplicaName};
use crate::sqlite::{self, Migration};
use crate::tokens;
use crate::wire::{RegistryOp, Target};

/// The deployment's limit on namespaces (a `[vars]` entry).
pub const MAX_NAMESPACES_VAR: &str = "HANDOFF_MAX_NAMESPACES";
/// The limit when the variable is not set (or not a number).
pub const DEFAULT_MAX_NAMESPACES: u64 = 1000;

const MIGRATIONS: &[Migration] = &[v1, v2];

fn v1(sql: &SqlStorage) -> Result<()> {
    sqlite::exec_all(
        sql,
        &[
            "CREATE TABLE namespaces (ns TEXT PRIMARY KEY, settings TEXT NOT NULL, state TEXT NOT NULL, \
             created_at INTEGER NOT NULL)",
            "CREATE TABLE boots (ns TEXT NOT NULL, replica TEXT NOT NULL, at INTEGER NOT NULL, \
             PRIMARY KEY (ns, replica))",
        ],
    )
}

/// The last namespace life issued ([`next_life`]).
fn v2(sql: &SqlStorage) -> Result<()> {
    sqlite::exec_all(sql, &["CREATE TABLE last_life (id INTEGER PRIMARY KEY CHECK (id = 0), life INTEGER NOT NULL)"])
}

#[durable_object]
pub struct Registry {
    object: DoState,
    secret: std::result::Result<String, KeyProblem>,
    max: u64,
    state: RefCell<RegistryState>,
}

/// The registry object's state (its data is in SQLite).
#[derive(Default)]
struct RegistryState {
    /// The schema is known to be current in this instance.
    migrated: bool,
}

impl DurableObject for Registry {
    fn new(state: DoState, env: Env) -> Self {
        let max = env
            .var(MAX_NAMESPACES_VAR)
            .ok()
            .and_then(|v| v.to_string().trim().parse().ok())
            .unwrap_or(DEFAULT_MAX_NAMESPACES);
        Self { object: state, secret: internal::internal_key(&env), max, state: RefCell::default() }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        self.serve(req).await.or_else(HttpError::respond)
    }
}

#[derive(Deserialize)]
struct BootBody {
    client: bool,
}

impl Registry {
    async fn serve(&self, req: Request) -> HttpResult {
        let target = internal::admit::<RegistryOp>(&self.secret, &req)?;
        if target.op != RegistryOp::List {
            names::valid_namespace(&target.ns)
                .map_err(|e| HttpError::new(Code::InvalidNamespace, format!("the namespace {e}")))?;
        }
        let body = match target.op {
            RegistryOp::Create | RegistryOp::Boot => body::read(&req, MAX_BODY_BYTES, Code::BodyTooLarge).await?,
            _ => Vec::new(),
        };
        // The one entry point after the await: the state is borrowed once.
        let mut state =
            self.state.try_borrow_mut().map_err(|_| HttpError::internal("bug: registry state borrowed twice"))?;
        if !state.migrated {
            sqlite::migrate(&self.object.storage(), "registry", MIGRATIONS)?;
            state.migrated = true;
        }
        let sql = self.object.storage().sql();
        self.answer(&sql, &target, &body)
    }

    /// Serves one operation: synchronous, so one transaction.
    fn answer(&self, sql: &SqlStorage, target: &Target<RegistryOp>, body: &[u8]) -> HttpResult {
        let ns = target.ns.as_str();
        let now = now_ms();
        if target.life.is_some() {
            tokens::check_life(target.life, ns, info(sql, ns)?.map(|i| i.created_at))?;
        }
        match target.op {
            RegistryOp::Create => {
                let settings = Settings::parse(body).map_err(|e| HttpError::new(e.code(), e.to_string()))?;
                if let Some(existing) = info(sql, ns)? {
                    return match existing.state {
                        State::Deleting => Err(deleting(ns)),
                        _ if existing.settings == settings => Ok(http::json(&existing)?),
                        _ => Err(HttpError::new(
                            Code::NamespaceExists,
                            format!("namespace {ns:?} exists with other settings: {}", settings_text(&existing)),
                        )),
                    };
                }
                if count(sql)? >= self.max {
                    let message = format!("this deployment has its limit of {} namespaces; delete one first", self.max);
                    return Err(HttpError::new(Code::NamespaceLimit, message));
                }
                let settings_json = serde_json::to_string(&settings)?;
                let life = next_life(sql, now)?;
                sql.exec(
                    "INSERT INTO namespaces (ns, settings, state, created_at) VALUES (?, ?, 'active', ?)",
                    vec![ns.into(), settings_json.into(), sqlite::int(life)],
                )?;
                let created =
                    info(sql, ns)?.ok_or_else(|| HttpError::internal("the namespace just created is gone"))?;
                Ok(http::json(&created)?.with_status(201))
            }
            RegistryOp::Get => Ok(http::json(&info(sql, ns)?.ok_or_else(|| not_found(ns))?)?),
            RegistryOp::List => {
                let names = sqlite::texts(sql, "SELECT ns FROM namespaces ORDER BY ns", vec![])?;
                let mut all = Vec::with_capacity(names.len());
                for ns in names {
                    all.extend(info(sql, &ns)?);
                }
                Ok(http::json(&json!({ "namespaces": all, "count": all.len(), "limit": self.max }))?)
            }
            RegistryOp::Delete => {
                let mut found = info(sql, ns)?.ok_or_else(|| not_found(ns))?;
                set_state(sql, ns, State::Deleting)?;
                found.state = State::Deleting;
                Ok(http::json(&found)?)
            }
            RegistryOp::Forget => {
                sql.exec("DELETE FROM boots WHERE ns = ?", vec![ns.into()])?;
                sql.exec("DELETE FROM namespaces WHERE ns = ? AND state = 'deleting'", vec![ns.into()])?;
                Ok(http::json(&json!({ "forgotten": ns }))?)
            }
            RegistryOp::Boot => {
                let client = serde_json::from_slice::<BootBody>(body)
                    .map_err(|e| HttpError::new(Code::BadRequest, format!("boot body: {e}")))?
                    .client;
                let replica =
                    target.replica.ok_or_else(|| HttpError::new(Code::BadRequest, "a boot names its replica"))?;
                Ok(http::json(&boot(sql, ns, replica, client, now)?)?)
            }
            RegistryOp::Idle => {
                let idled = info(sql, ns)?.is_some_and(|i| i.state == State::Active);
                if idled {
                    set_state(sql, ns, State::Idle)?;
                    sql.exec("DELETE FROM boots WHERE ns = ?", vec![ns.into()])?;
                }
                Ok(http::json(&json!({ "idle": idled }))?)
            }
        }
    }
}

/// May `replica` of `ns` start? A client request to the coordinator of an
/// idle namespace makes it active again; nothing else starts an idle or a
/// deleting one, or one that does not exist. An admitted boot is recorded.
fn boot(sql: &SqlStorage, ns: &str, replica: ReplicaName, client: bool, now: u64) -> HttpResult<Boot> {
    let Some(found) = info(sql, ns)? else { return Ok(Boot::Refused { state: None }) };
    match found.state {
        State::Active => {}
        State::Idle if client && replica == ReplicaName::R0 => set_state(sql, ns, State::Active)?,
        state => return Ok(Boot::Refused { state: Some(state) }),
    }
    sql.exec(
        "INSERT INTO boots (ns, replica, at) VALUES (?, ?, ?) ON CONFLICT(ns, replica) DO UPDATE SET at = excluded.at",
        vec![ns.into(), replica.as_str().into(), sqlite::int(now)],
    )?;
    Ok(Boot::Admitted { settings: found.settings, created_at: found.created_at })
}

/// The life of a namespace created at `now`: its creation time in
/// milliseconds, but after every life issued before, so that no two lives
/// of a name are equal (a token is bound to its namespace's life, and one
/// of a deleted life must not work on a namespace created again within the
/// same millisecond).
fn next_life(sql: &SqlStorage, now: u64) -> HttpResult<u64> {
    let last = sqlite::integers(sql, "SELECT life FROM last_life WHERE id = 0", vec![])?.first().copied();
    let life = life_after(now, last);
    sql.exec(
        "INSERT INTO last_life (id, life) VALUES (0, ?) ON CONFLICT(id) DO UPDATE SET life = excluded.life",
        vec![sqlite::int(life)],
    )?;
    Ok(life)
}

/// `now`, or the first millisecond after the `last` life issued.
fn life_after(now: u64, last: Option<u64>) -> u64 {
    last.map_or(now, |last| now.max(last.saturating_add(1)))
}

fn info(sql: &SqlStorage, ns: &str) -> HttpResult<Option<Info>> {
    let cursor = sql.exec("SELECT settings, state, created_at FROM namespaces WHERE ns = ?", vec![ns.into()])?;
    let Some(row) = cursor.raw().next() else { return Ok(None) };
    let row = row?;
    let corrupt = || HttpError::internal(format!("the registry's row of {ns:?} does not decode"));
    let (Some(SqlStorageValue::String(settings)), Some(SqlStorageValue::String(state)), Some(created)) =
        (row.first(), row.get(1), row.get(2))
    else {
        return Err(corrupt());
    };
    let created_at = match created {
        SqlStorageValue::Integer(v) => u64::try_from(*v).unwrap_or(0),
        SqlStorageValue::Float(v) => *v as u64,
        _ => return Err(corrupt()),
    };
    let replicas_booted =
        sqlite::texts(sql, "SELECT replica FROM boots WHERE ns = ? ORDER BY replica", vec![ns.into()])?;
    Ok(Some(Info {
        namespace: ns.to_string(),
        settings: serde_json::from_str(settings).map_err(|_| corrupt())?,
        state: State::parse(state).ok_or_else(corrupt)?,
        created_at,
        replicas_booted,
    }))
}

fn count(sql: &SqlStorage) -> HttpResult<u64> {
    Ok(sqlite::integers(sql, "SELECT COUNT(*) FROM namespaces", vec![])?.first().copied().unwrap_or(0))
}

fn set_state(sql: &SqlStorage, ns: &str, state: State) -> HttpResult<()> {
    sql.exec("UPDATE namespaces SET state = ? WHERE ns = ?", vec![state.name().into(), ns.into()])?;
    Ok(())
}

fn settings_text(info: &Info) -> String {
    serde_json::to_string(&info.settings).unwrap_or_default()
}

fn deleting(ns: &str) -> HttpError {
    HttpError::new(Code::NamespaceDeleting, format!("namespace {ns:?} is being deleted; retry DELETE to finish"))
}

#[cfg(test)]
mod tests {
    use super::life_after;

    #[test]
    fn a_life_comes_after_every_life_issued_before() {
        assert_eq!(life_after(1_000, None), 1_000);
        assert_eq!(life_after(1_000, Some(999)), 1_000);
        assert_eq!(life_after(1_000, Some(1_000)), 1_001, "two lives within one millisecond");
        assert_eq!(life_after(1_000, Some(1_005)), 1_006, "the clock went back");
    }
}
