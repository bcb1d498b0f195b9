//! The replica's status line (`GET /v1/{ns}/status` shows the three) and
//! the counters it reports, for tests and debugging.

use protocol::handoff::{Driver, Instance};
use serde::Serialize;

use super::state::ReplicaState;
use crate::names::ReplicaName;

/// Counters shown in the status line.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) msgs_in: u64,
    pub(super) msgs_out: u64,
    /// Bytes of message batches this replica sent to the others: the
    /// batches of its deliveries and of the replies it returned (`cargo
    /// xtask bench scale` reads it for the idle traffic).
    pub(super) bytes_out: u64,
    /// Deliveries this replica sent to the others, socket frames or HTTP
    /// requests (each carries a batch: `msgs_out` / `deliveries_out` is
    /// the batching).
    pub(super) deliveries_out: u64,
    pub(super) send_failures: u64,
    pub(super) refused: u64,
}

/// Adds `n` to a counter, saturating.
pub(super) fn add(counter: &mut u64, n: usize) {
    *counter = counter.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
}

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
}

/// The status line of `state`, whose driver is `driver`.
pub(super) fn line(
    state: &ReplicaState,
    driver: &Driver,
    me: ReplicaName,
    now: u64,
    wasm_memory_bytes: usize,
    instance: Option<Instance>,
) -> StatusLine {
    let report = driver.replica().status();
    let c = &state.counters;
    StatusLine {
        name: me.as_str(),
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
        instance: instance.map(|i| format!("{}-{:016x}", i.born, i.nonce)),
        object: format!("{:016x}", state.born),
        uptime_ms: now.saturating_sub(state.born_at),
        wasm_memory_bytes,
        paused_ms: state.paused_until.saturating_sub(now),
        timers: driver.armed(),
        idle_expires_at: state.idle_expires_at(),
        preferred_peer: (me == ReplicaName::R0).then(|| state.transport.preferred.as_str()),
        memory_budget_bytes: state.life.settings.as_ref().and_then(|s| s.memory_budget_bytes),
        msgs_in: c.msgs_in,
        msgs_out: c.msgs_out,
        bytes_out: c.bytes_out,
        deliveries_out: c.deliveries_out,
        send_failures: c.send_failures,
        refused: c.refused,
    }
}
