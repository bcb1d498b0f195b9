//! A typed async client for the Handoff HTTP API: a namespace's keys with
//! ETags, conditional writes (`If-Match`, `If-None-Match: *`), TTLs and
//! listing, every write sent with a write id and retried with the same one
//! while the store answers `503` (see [`retry`]).
#![deny(missing_docs, unreachable_pub)]
// A library answers with errors, never a panic (tests may unwrap).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing))]

mod answers;
mod client;
mod error;
mod etag;
mod listing;
mod namespace;
mod options;
mod pages;
mod path;
mod reply;
pub mod retry;
mod write_id;

pub use answers::{Entry, Written};
pub use client::Client;
pub use error::Error;
pub use etag::{ETag, ETagError};
pub use listing::{ListQuery, Listed, MAX_PAGE, Page};
pub use namespace::Namespace;
pub use options::{Condition, DeleteOptions, PutOptions};
pub use pages::Pages;
pub use retry::RetryPolicy;
pub use write_id::{WriteId, WriteIdError};
