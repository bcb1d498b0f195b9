//! What is known of a namespace: its life ([`State`]), the registry's
//! [`Info`] and its answer to a replica that wants to start ([`Boot`]).

use serde::{Deserialize, Serialize};

use super::settings::Settings;
use crate::error::{Code, HttpError};

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
        /// The namespace's `created_at`: its life, which scoped tokens name.
        created_at: u64,
    },
    /// The namespace does not exist, is being deleted, or is idle and the
    /// request was not a client's.
    Refused { state: Option<State> },
}
