//! The checker's integration tests, one binary (`cargo test -p checker --test it`),
//! a module per subject.

mod claim_jobs;
mod claim_model;
mod claim_mutations;
mod claim_paths;
mod cli;
mod handoff_bounds;
mod handoff_cond;
mod handoff_generations;
mod handoff_impl_ext;
mod handoff_impl_liveness;
mod handoff_impl_model;
mod handoff_impl_mutations;
mod handoff_mirror;
mod handoff_mutations;
mod handoff_reads;
mod handoff_roll;
mod remora_jobs_mirror;
mod remora_loss_mirror;
mod remora_mirror;
mod remora_mutations;

use std::path::PathBuf;

use checker::cfg::TlcConfig;
use checker::run::{self, Report, RunOptions};
use checker::search::Search;
use checker::spec::Mirror;

/// Checks `tla/{cfg_name}` with the mirror `M` (2 threads, breadth first,
/// so a counterexample is a shortest one), printing the summary and trace.
fn check_tla<M: Mirror>(cfg_name: &str, mutation: Option<&str>) -> Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla").join(cfg_name);
    let cfg = TlcConfig::load(&path).unwrap();
    let model = M::from_cfg(&cfg, mutation).unwrap();
    let opts = RunOptions { threads: 2, search: Search::Bfs, ..Default::default() };
    let report = run::check(model, M::MODULE, &path.display().to_string(), mutation, &opts);
    println!("{}\n{}", report.summary(), run::format_trace(&report));
    report
}
