//! The replica's status line (`GET /v1/{ns}/status` shows the three), for
//! tests and debugging.

use protocol::handoff::{Driver, Instance};
use serde::Serialize;

use super::transport::Counters;
use crate::names::ReplicaName;

/// One replica's entry in `GET /v1/{ns}/status`.
#[derive(Serialize)]
pub(super) struct StatusLine {
    name: &'static str,
    role: &'static str,
    status: String,
    epoch: u64,
    known: u64,
    keys: usize,
    /// Tombstones not yet collected.
    tombstones: usize,
    /// Bytes of keys, values and tombstones this replica holds.
    bytes: usize,
    /// The namespace's memory budget (a write beyond it gets a 507).
    budget: usize,
    /// The tombstone floor, `ep.ver`.
    floor: String,
    pending: usize,
    /// Bytes of the coordinator's uncommitted writes.
    pending_bytes: usize,
    generation: Option<String>,
    instance: Option<String>,
    object: String,
    uptime_ms: u64,
    /// The wasm linear memory of the isolate this replica runs in (shared
    /// by every object of the isolate; it only grows, so it is the peak).
    wasm_memory_bytes: usize,
    /// The bytes the replicas of that isolate hold together (every
    /// namespace's replicas of this role that run there).
    isolate_held_bytes: usize,
    paused_ms: u64,
    timers: usize,
    /// The coordinator: when the namespace stops if no client request
    /// comes first (unix ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    idle_expires_at: Option<u64>,
    /// The coordinator: the peer it waits for (thrifty sends, `outbox.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    preferred_peer: Option<&'static str>,
    /// The namespace's memory budget (`None`: the protocol's default).
    memory_budget_bytes: Option<u64>,
    msgs_in: u64,
    msgs_out: u64,
    /// Bytes sent to the other replicas (deliveries and replies).
    bytes_out: u64,
    /// Deliveries to the other replicas (each carries a batch).
    deliveries_out: u64,
    send_failures: u64,
    refused: u64,
    /// The wire version this replica writes, and how many messages it read
    /// in an older one (`replica/versions.rs`).
    wire_version: u16,
    msgs_in_older: u64,
    /// The coordinator: client calls that came as frames on a socket (the
    /// claim object's lease calls, `crate::tunnel`), not as HTTP requests.
    calls_in_frames: u64,
}

/// What the status line shows besides the protocol's report.
pub(super) struct Shown<'a> {
    pub(super) me: ReplicaName,
    pub(super) object: u64,
    pub(super) born_at: u64,
    pub(super) now: u64,
    pub(super) wasm_memory_bytes: usize,
    pub(super) instance: Option<Instance>,
    pub(super) paused_until: u64,
    pub(super) idle_expires_at: Option<u64>,
    pub(super) preferred: ReplicaName,
    pub(super) memory_budget_bytes: Option<u64>,
    pub(super) counters: &'a Counters,
    pub(super) wire_version: u16,
    pub(super) calls_in_frames: u64,
}

/// The status line of the replica `driver` runs.
pub(super) fn line(driver: &Driver, shown: Shown<'_>) -> StatusLine {
    let report = driver.replica().status();
    let c = shown.counters;
    StatusLine {
        name: shown.me.as_str(),
        role: report.role,
        status: report.status.to_string(),
        epoch: report.epoch.0,
        known: report.known.0,
        keys: report.keys,
        tombstones: report.tombstones,
        bytes: report.bytes,
        budget: report.budget,
        floor: format!("{}.{}", report.floor.ep.0, report.floor.ver.0),
        pending: report.pending,
        pending_bytes: report.pending_bytes,
        generation: report.generation.map(|g| format!("{}-{:016x}", g.minted_at, g.nonce)),
        instance: shown.instance.map(|i| format!("{}-{:016x}", i.born, i.nonce)),
        object: format!("{:016x}", shown.object),
        uptime_ms: shown.now.saturating_sub(shown.born_at),
        wasm_memory_bytes: shown.wasm_memory_bytes,
        isolate_held_bytes: crate::isolate::held(),
        paused_ms: shown.paused_until.saturating_sub(shown.now),
        timers: driver.armed(),
        idle_expires_at: shown.idle_expires_at,
        preferred_peer: (shown.me == ReplicaName::R0).then(|| shown.preferred.as_str()),
        memory_budget_bytes: shown.memory_budget_bytes,
        msgs_in: c.msgs_in,
        msgs_out: c.msgs_out,
        bytes_out: c.bytes_out,
        deliveries_out: c.deliveries_out,
        send_failures: c.send_failures,
        refused: c.refused,
        wire_version: shown.wire_version,
        msgs_in_older: c.msgs_in_older,
        calls_in_frames: shown.calls_in_frames,
    }
}
