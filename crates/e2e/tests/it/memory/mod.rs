//! The isolate's memory, against a Worker of its own (`cargo xtask e2e`
//! runs `memory::` alone, after the other suites, on a fresh server whose
//! isolate cap is small: [`CAP`]). The tests run in name order, one at a
//! time: `a_` first, while the isolate is fresh, so that memory freed by
//! earlier requests cannot hide a body read whole.

mod a_bodies;
mod b_isolate_cap;

/// The isolate cap the memory stage's server runs with
/// (`HANDOFF_ISOLATE_CAP_BYTES`, set by xtask).
pub const CAP: u64 = 1024 * 1024;

/// The front's isolate's wasm memory and the bytes replicas hold in it (none:
/// replicas run in their roles' scripts), as `/health` reports them.
pub async fn isolate(s: &e2e::Store) -> (u64, u64) {
    let health = s.request("GET", "/health", None, &[]).await.json();
    let field = |name: &str| health[name].as_u64().unwrap_or_else(|| panic!("/health has no {name}: {health}"));
    (field("wasm_memory_bytes"), field("isolate_held_bytes"))
}
