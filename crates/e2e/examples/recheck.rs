//! Checks a history the linearizability test saved, again:
//! `cargo run -p e2e --release --example recheck -- /tmp/<ns>.history.json`.

use std::time::Instant;

use e2e::history::{self, Op};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: recheck <history.json>");
        std::process::exit(2);
    };
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let ops: Vec<Op> = serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let started = Instant::now();
    let report = history::check_on_large_stack(ops);
    println!("{report}checked in {:.1?}", started.elapsed());
    std::process::exit(if report.linearizable() && report.undecided() == 0 { 0 } else { 1 });
}
