//! Namespaces: created with their settings, deleted, expired when idle,
//! limited in number (docs/operating.md 4.4, "Namespaces").
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
mod info;
mod registry;
pub mod settings;

pub use info::{Boot, Info, MAX_BODY_BYTES, State, not_found};
pub use registry::Registry;
