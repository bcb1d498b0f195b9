//! The isolate this code runs in: its wasm memory, and the bytes the
//! replicas in it hold. Objects of one Worker script can share an isolate,
//! and with it one wasm instance and the platform's 128 MB for everything
//! in it, however many namespaces' replicas that is; wasm memory never
//! shrinks. So besides each namespace's budget (the protocol's), the
//! replicas of an isolate together keep under [`CAP_BYTES`]: a coordinator
//! refuses a write that would take the isolate past it (507
//! `isolate_full`), and a peer past it by [`PEER_MARGIN_BYTES`] takes no
//! record that would grow it (as if the message were lost: the protocol
//! retries, and the write commits on the other peer's ack).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes the replicas of this isolate may hold together before a
/// coordinator refuses writes, unless the deployment sets another
/// (`HANDOFF_ISOLATE_CAP_BYTES`): half the platform's 128 MB, leaving room
/// for the allocator's slack, requests and answers in flight, and a
/// recovery's chunks (docs/operating.md 4.10, "Memory").
pub const CAP_BYTES: usize = 64 * 1024 * 1024;
/// How far past the cap a peer still takes records: a peer's isolate may
/// hold other namespaces than its coordinators', so the coordinators' cap
/// does not bound it; past the cap and this margin it takes none.
pub const PEER_MARGIN_BYTES: usize = 16 * 1024 * 1024;

/// The bytes the replicas of this isolate hold (each reports its changes).
static HELD: AtomicUsize = AtomicUsize::new(0);

/// A replica that held `old` bytes now holds `new`.
pub fn held_changed(old: usize, new: usize) {
    if new >= old {
        HELD.fetch_add(new - old, Ordering::Relaxed);
    } else {
        // Never below zero: a replica only gives back what it reported.
        let _ = HELD.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| Some(held.saturating_sub(old - new)));
    }
}

/// The bytes the replicas of this isolate hold.
pub fn held() -> usize {
    HELD.load(Ordering::Relaxed)
}

/// Whether `more` bytes still fit under `cap`.
pub fn room_for(more: usize, cap: usize) -> bool {
    held().saturating_add(more) <= cap
}

/// Bytes of the isolate's wasm linear memory: what the 128 MB isolate
/// limit counts of the Rust side (it only grows, so it is the peak).
#[cfg(target_arch = "wasm32")]
pub fn wasm_memory_bytes() -> usize {
    core::arch::wasm32::memory_size::<0>().saturating_mul(64 * 1024)
}

/// Not a wasm build (host unit tests): no isolate.
#[cfg(not(target_arch = "wasm32"))]
pub fn wasm_memory_bytes() -> usize {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gauge_sums_what_replicas_report_and_never_goes_below_zero() {
        let base = held();
        held_changed(0, 1000);
        held_changed(0, 500);
        assert_eq!(held(), base + 1500);
        held_changed(1000, 200);
        assert_eq!(held(), base + 700);
        assert!(room_for(100, base + 800) && !room_for(101, base + 800));
        held_changed(700, 0);
        assert_eq!(held(), base);
    }
}
