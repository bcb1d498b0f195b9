//! Every Handoff mutation must be caught on Handoff.cfg; the shortest
//! counterexample (single-threaded BFS) is pinned as an insta snapshot.

use std::path::PathBuf;

use checker::cfg::TlcConfig;
use checker::mirror::handoff::Handoff;
use checker::run::{self, RunOptions};
use checker::spec::Mirror;
use stateright::{Checker, Model};

fn model(mutation: &str) -> Handoff {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla/Handoff.cfg");
    Handoff::from_cfg(&TlcConfig::load(&path).unwrap(), Some(mutation)).unwrap()
}

#[test]
fn every_mutation_is_caught_with_a_shortest_counterexample() {
    for &mutation in Handoff::MUTATIONS {
        let report = run::check(model(mutation), "Handoff", "Handoff.cfg", Some(mutation), &RunOptions::default());
        assert_eq!(report.verdict, "violation", "mutation {mutation} was not caught");
        let violated = report.violated.as_deref().unwrap();

        // Shortest: no property fails in any state reachable in fewer
        // steps (target_max_depth(n) checks exactly the paths of < n states).
        let shorter = model(mutation).checker().target_max_depth(report.trace.len()).spawn_bfs().join();
        assert!(
            shorter.discoveries().is_empty(),
            "{mutation}: a counterexample shorter than {} states exists",
            report.trace.len()
        );

        let counterexample =
            format!("violated: {violated}\nstates: {}\n\n{}", report.trace.len(), run::format_trace(&report));
        insta::assert_snapshot!(mutation, counterexample);
    }
}
