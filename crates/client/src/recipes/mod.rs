//! Coordination recipes built on conditional writes and TTLs, each a few
//! lines over [`Namespace`](crate::Namespace):
//!
//! - [`Lock`]: a lock with a lease (`If-None-Match: *` and a TTL to take it,
//!   `If-Match` to renew and release it; a lost lock shows as a `412`);
//! - [`increment`]: a counter by compare-and-set (read value and ETag,
//!   write value + 1 `If-Match`, again on `412`);
//! - [`Candidate`]: leader election, a lock whose holder renews it before
//!   its TTL runs out while the others keep trying to take it.
//!
//! A lease is a promise about time: the store lets the key expire `ttl`
//! after the write committed, and the holder counts the same `ttl` from
//! before it sent the write ([`Lock::valid_until`]), so it stops first as
//! long as both clocks run at about the same rate.

mod counter;
mod leader;
mod lock;

pub use counter::{CounterError, increment};
pub use leader::{Candidate, Role};
pub use lock::Lock;
