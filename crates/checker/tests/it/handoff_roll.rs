//! The HandoffRoll mirror (`tla/HandoffRoll.tla`, push acks that name the
//! acking incarnation, rolling restarts): parity with TLC's distinct-state
//! count, and `RollLosesNothing` shown to catch the stale ack it exists for.

use std::path::PathBuf;

use checker::cfg::TlcConfig;
use checker::mirror::handoff_roll::HandoffRoll;
use checker::run::{self, Report, RunOptions};
use checker::search::Search;
use checker::spec::Mirror;

fn check(cfg_name: &str, mutation: Option<&str>) -> Report {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla").join(cfg_name);
    let cfg = TlcConfig::load(&path).unwrap();
    let model = HandoffRoll::from_cfg(&cfg, mutation).unwrap();
    let opts = RunOptions { threads: 2, search: Search::Bfs, ..Default::default() };
    let report = run::check(model, HandoffRoll::MODULE, &path.display().to_string(), mutation, &opts);
    println!("{}\n{}", report.summary(), run::format_trace(&report));
    report
}

/// TLC (2026.12.05 snapshot) reports 89,229 distinct states.
#[test]
fn the_rolling_cfg_matches_tlc_and_passes() {
    let report = check("HandoffRoll.cfg", None);
    assert_eq!(report.verdict, "pass", "{:?}", report.violated);
    assert_eq!(report.unique_states, 89_229);
}

/// Counting an ack whatever incarnation sent it (HandoffCond's rule): the
/// acking peer is replaced, its new incarnation reseeds from the
/// coordinator before the commit, the old ack commits a write only the
/// coordinator holds, and the roll's next eviction, the coordinator's,
/// dooms it.
#[test]
fn a_stale_ack_counted_is_caught() {
    let report = check("HandoffRoll.cfg", Some("count-stale-ack"));
    assert_eq!(report.violated.as_deref(), Some("RollLosesNothing"));
    let trace = run::format_trace(&report);
    assert!(trace.contains("CommitWriteRo"), "a write committed:\n{trace}");
    assert!(trace.contains("EvictRo(r0)"), "then the coordinator was evicted:\n{trace}");
}
