//! Namespaces: created with their settings, deleted, expired when idle,
//! limited in number (docs/handoff.md section 4, "Namespaces").
//!
//! - [`Registry`] (one object, `registry`, SQLite) is the authority: which
//!   namespaces exist, their settings and state, which replicas booted.
//! - The replicas and the claim store learn their namespace's settings when
//!   they start ([`calls::boot`], [`calls::get`]), which is rare: a running
//!   namespace's KV requests cost no round trip to the registry. A replica
//!   of a namespace that does not exist (or is being deleted) refuses to
//!   start, so a request to an unknown namespace starts nothing.
//! - `api.rs`: the public handlers (`PUT|GET|DELETE /v1/{ns}`, `GET /v1`,
//!   `POST /v1/_tokens`).
//!
//! Nothing caches a namespace's existence across the registry: a deleted
//! namespace's objects are stopped (replicas) or emptied (claim store)
//! before the registry forgets it, and until then it refuses their boots.

pub mod api;
pub mod calls;
mod registry;
pub mod settings;

pub use registry::Registry;

use serde::{Deserialize, Serialize};

use crate::error::{Code, HttpError};
use settings::Settings;

/// Largest body of `PUT /v1/{ns}` and `POST /v1/_tokens` (and of the
/// registry's own requests).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// 404 `namespace_not_found`.
pub fn not_found(ns: &str) -> HttpError {
    HttpError::new(Code::NamespaceNotFound, format!("no namespace {ns:?}: create it with PUT /v1/{{ns}}"))
}

/// A namespace's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Its replicas may run.
    Active,
    /// Its replicas stopped after its idle expiry (their data went with
    /// them); a client request starts them again, empty.
    Idle,
    /// `DELETE /v1/{ns}` is stopping its objects: nothing may start.
    Deleting,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Idle => "idle",
            State::Deleting => "deleting",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        match s {
            "active" => Some(State::Active),
            "idle" => Some(State::Idle),
            "deleting" => Some(State::Deleting),
            _ => None,
        }
    }
}

/// What the registry knows of a namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Info {
    pub namespace: String,
    pub settings: Settings,
    pub state: State,
    /// Unix ms.
    pub created_at: u64,
    /// The replicas that started since the namespace last became active
    /// (`r0`, `r1`, `r2`).
    pub replicas_booted: Vec<String>,
}

/// The registry's answer to a replica that wants to start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Boot {
    Admitted {
        settings: Settings,
    },
    /// The namespace does not exist, is being deleted, or is idle and the
    /// request was not a client's.
    Refused {
        state: Option<State>,
    },
}
