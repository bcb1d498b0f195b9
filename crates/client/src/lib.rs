//! A typed async client for the Handoff HTTP API: a namespace's keys with
//! ETags, conditional writes (`If-Match`, `If-None-Match: *`), TTLs and
//! listing, every write sent with a write id and retried with the same one
//! while the store answers `503` (see [`retry`]), and coordination
//! [`recipes`] on top.
//!
//! A lock with a lease, taken, renewed and given back:
//!
//! ```no_run
//! use std::time::Duration;
//! use handoff_client::{Client, recipes::Lock};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), handoff_client::Error> {
//!     let ns = Client::new("http://127.0.0.1:8787", "TOKEN")?.namespace("demo");
//!     if let Some(mut lock) = Lock::acquire(&ns, "nightly-report", b"worker-7", Duration::from_secs(30)).await? {
//!         // ... work, renewing well before the 30 s run out ...
//!         lock.renew().await?; // Err(Error::PreconditionFailed { .. }): the lock was lost
//!         lock.release().await?;
//!     }
//!     Ok(())
//! }
//! ```
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
pub mod recipes;
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
