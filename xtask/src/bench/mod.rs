//! `cargo xtask bench kv|claims`: benchmarks on workerd, each against its
//! baselines in the same run and through the same Worker code path.
//!
//! - `kv` (`kv.rs`): the replicated KV store against one in-memory DO and
//!   one SQLite DO.
//! - `claims` (`claims.rs`): activations of the claims service against the
//!   same activation done in one SQLite transaction without the lease store.
//! - `models` (`models.rs`): the Rust model checker against the TLA+ checker
//!   on the same cfgs (no workerd).
//! - `scale` (`scale.rs`): one namespace of the KV store at growing sizes:
//!   idle CPU, PUT latency, recovery after evictions, memory, idle traffic
//!   (`procs.rs` reads workerd's CPU time and memory from `/proc`); the
//!   bytes counted against the isolates' growth (`accounting.rs`); a
//!   rolling restart at the budget under writes (`rolling.rs`).
//!
//! This file holds the arguments; what the benchmarks share is in
//! `bench/shared.rs` (samples and their statistics, the HTTP agent, the
//! machine description, the report).

mod accounting;
mod claims;
mod coord;
mod kv;
mod models;
mod procs;
mod rolling;
mod scale;
mod shared;

use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Subcommand)]
pub enum BenchWhat {
    /// The KV store on workerd vs a single in-memory DO and a single SQLite DO.
    Kv(kv::KvArgs),
    /// Claim activations (durable store + leases in Handoff) vs one SQLite
    /// transaction without the lease store.
    Claims(claims::ClaimsArgs),
    /// The Rust model checker (1 and 2 threads) against the TLA+ checker:
    /// distinct states, seconds, states/s, peak RSS.
    Models(models::ModelsArgs),
    /// One namespace at growing sizes (empty, 8 MiB, 32 MiB or the budget,
    /// the budget): idle CPU, PUT latency, recovery after evictions, peak
    /// RSS and idle traffic between replicas.
    Scale(scale::ScaleArgs),
}

pub fn run(root: &std::path::Path, args: &BenchArgs) -> Result<bool> {
    match &args.what {
        BenchWhat::Kv(a) => kv::run(root, a),
        BenchWhat::Claims(a) => claims::run(root, a),
        BenchWhat::Models(a) => models::run(root, a),
        BenchWhat::Scale(a) => scale::run(root, a),
    }
}
