//! Checks a history the linearizability test saved, again:
//! `cargo run -p e2e --release --example recheck -- /tmp/<ns>.history.json`.

use std::time::Instant;

use e2e::history::{self, Effort, Op};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: recheck <history.json>");
        std::process::exit(2);
    };
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let ops: Vec<Op> = serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let started = Instant::now();
    let report = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || history::check(&ops, Effort::default()))
        .expect("checker thread")
        .join()
        .expect("the check");
    println!("{report}checked in {:.1?}", started.elapsed());
    std::process::exit(if report.linearizable() && report.undecided() == 0 { 0 } else { 1 });
}
