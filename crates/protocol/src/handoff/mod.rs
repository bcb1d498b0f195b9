//! Handoff: replication and recovery for a memory-only KV store whose
//! replicas are evicted at will (Cloudflare Durable Objects), after
//! `tla/Handoff.tla` and its extensions `tla/HandoffAcks.tla` (every
//! replica-to-replica exchange a message), `tla/HandoffZombie.tla`
//! (superseded coordinator instances, fenced by epoch) and
//! `tla/HandoffScale.tla` (chunked snapshots, digest anti-entropy, the
//! tombstone floor, the memory budget), `tla/HandoffReads.tla`
//! (linearizable reads) and `tla/HandoffCond.tla` (conditional writes,
//! expiring keys).
//!
//! Three replicas: a fixed coordinator issues every write and commits it on
//! the first peer ack; records carry `(ep, ver, wid)` and merge by
//! lexicographic `(ep, ver)` ([`record`]); a rebooted coordinator collects
//! snapshots and epochs from both peers, chooses `collectMax + 1` and
//! announces it before serving; a rebooted peer reseeds from both other
//! replicas; ready replicas exchange digests and the records that differ;
//! tombstones below a floor the coordinator raises are collected.
//!
//! Sans-IO: a host (the Durable Object glue, a test network, the model
//! checker) boots a [`Replica`], feeds it [`Input`]s with the current time
//! and performs the [`Output`]s. No clock, no randomness (a seed is passed
//! in), no I/O, no panics: bad input is a typed error ([`error`]).
//!
//! - [`ids`]: identifiers and scalars; [`record`]: records and THE merge
//!   rule; [`cond`]: conditions, times to live and request fingerprints;
//!   [`memory`]: a replica's memory and snapshots.
//! - [`message`]: the wire messages (versioned postcard, bounded decoding).
//! - [`interface`]: the vocabulary with the host (inputs, outputs, timers,
//!   client answers, status).
//! - [`replica`]: the entry point (boot, checks, dispatch); [`coordinator`],
//!   [`peer`]: the roles; `node`: what both roles share.
//! - [`driver`]: a replica with its timer table, the loop every host runs;
//!   [`trace`]: the steps a driver records for trace validation.
//! - [`config`]: topology and timings; [`error`]: typed errors.

pub mod cond;
pub mod config;
pub mod coordinator;
pub mod driver;
pub mod error;
pub mod ids;
pub mod interface;
pub mod memory;
pub mod message;
mod node;
pub mod peer;
pub mod record;
pub mod replica;
pub mod trace;

#[cfg(test)]
mod tests;

pub use cond::{Cond, MAX_TTL_MS};
#[cfg(feature = "mutations")]
pub use config::Mutation;
pub use config::{Config, DEFAULT_BUDGET_BYTES};
pub use driver::Driver;
pub use error::{ConfigError, DecodeError, EncodeError, HandleError};
pub use ids::{
    ClientRequestId, Epoch, Fingerprint, Generation, Instance, Key, KeyError, Millis, ReplicaId, Version, WriteId,
};
pub use interface::{
    Input, List, ListEntry, MAX_JOINED, MAX_LIST_LIMIT, Output, Read, Status, StatusReport, Timer, WriteReply,
};
pub use memory::{Chunk, Digest, Memory, Records};
pub use message::{Batch, Body, MAX_MESSAGE_BYTES, MIN_PROTOCOL_VERSION, Message, PROTOCOL_VERSION, RecordV3};
pub use record::{MAX_VALUE_BYTES, Record, Stamp, Tag, Value};
pub use replica::{Replica, RoleView};
