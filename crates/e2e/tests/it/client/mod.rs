//! End-to-end tests of `handoff-client` (crates/client) against the Worker
//! on workerd (`cargo xtask test` starts `wrangler dev` and sets
//! HANDOFF_URL and HANDOFF_TOKEN; without them every test FAILS). They use
//! the client alone, as an application would: conditional writes, write
//! ids, TTLs, listing, and the recipes (lock, counter, leader election),
//! each test in its own namespace.

mod conditions;
mod counter;
mod creates;
mod leader;
mod listing;
mod lock;
mod ttl;
mod write_ids;

use handoff_client::{Client, Namespace};

/// The client of the Worker under test (panics without HANDOFF_URL or
/// HANDOFF_TOKEN, as every end-to-end test does).
fn client() -> Client {
    Client::new(&e2e::base_url(), &e2e::admin_token()).expect("a client of HANDOFF_URL")
}

/// A fresh namespace named after `prefix`, created through the client.
async fn fresh_ns(prefix: &str) -> Namespace {
    let name = e2e::unique_ns(&format!("client-{prefix}"));
    client().create_namespace(&name).await.unwrap_or_else(|e| panic!("creating namespace {name}: {e}"))
}
