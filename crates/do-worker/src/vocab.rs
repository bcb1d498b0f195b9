//! The words the router, the handlers and the objects share, kept low in
//! the crate so that nothing imports them from a layer above it: the KV
//! operations, the reserved key prefix and the limits that are not the
//! protocol's (those come from `protocol` itself, one definition each).

/// Largest value a PUT may carry: the protocol's own limit (1 MiB).
pub use protocol::handoff::MAX_VALUE_BYTES;

/// A KV operation, as the public API and the map baselines name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvOp {
    Get,
    Put,
    Delete,
}

/// Keys under this prefix belong to the services built on the store (the
/// claims service keeps its leases there): clients may read them, never
/// write them (403 `reserved_key`).
pub const RESERVED_PREFIX: &str = "_remora/";

/// Longest pause the pause test hook accepts.
pub const MAX_PAUSE_MS: u64 = 30_000;

/// Most claims the bulk test hook authorizes at once.
pub const MAX_BULK_CLAIMS: u64 = 20_000;
