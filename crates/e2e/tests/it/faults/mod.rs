//! The platform's faults, on a server of its own (`cargo xtask e2e` runs
//! `faults::` alone and applies the faults while it runs): clients write
//! and read a namespace while xtask kills replica role r1's process without
//! warning (as an isolate's loss or a runtime restart would) and restarts
//! it, then rolls the deployment onto a new build (r1, r2, r0, the front,
//! each after the previous recovered: `cargo xtask dev roll`). Afterwards
//! the history must be linearizable (so every acknowledged write is
//! readable), and the only failures documented 503s with `Retry-After`,
//! which are counted and reported.
//!
//! The test and xtask meet through files in `HANDOFF_FAULTS_DIR`: the test
//! writes `started` once its clients run, xtask writes `done` once the
//! faults are over.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use e2e::history::{self, Outcome};
use e2e::workload::{Client, Log};
use e2e::{Ack, Store};

const CLIENTS: usize = 6;
const KEYS: u64 = 4;
const RECOVER: Duration = Duration::from_secs(20);
/// The faults must be over by then.
const MAX_RUN: Duration = Duration::from_secs(240);

fn signals() -> PathBuf {
    std::env::var_os("HANDOFF_FAULTS_DIR")
        .map(PathBuf::from)
        .expect("HANDOFF_FAULTS_DIR is not set: `cargo xtask e2e` runs this test while it applies the faults")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_and_a_rolling_restart_lose_no_acknowledged_write() {
    let dir = signals();
    let s = Store::from_env();
    let ns = s.new_ns("faults").await;
    Ack::parse(&s.put(&ns, "warm", b"up").await);
    s.wait_ready(&ns, RECOVER).await;

    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let client =
                Client { id: c, store: s.clone(), ns: ns.clone(), start, rng: e2e::random_u64() | 1, keys: KEYS };
            let (stop, done) = (stop.clone(), done.clone());
            tokio::spawn(async move { client.run(&stop, &done).await })
        })
        .collect();
    std::fs::write(dir.join("started"), ns.as_bytes()).expect("writing the started signal");
    while !dir.join("done").exists() {
        assert!(start.elapsed() < MAX_RUN, "the faults did not end within {MAX_RUN:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A last second of operations on the recovered deployment.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::SeqCst);
    let mut logs = Vec::new();
    for client in clients {
        logs.push(client.await.expect("client task"));
    }
    let log = Log::merge(logs);
    log.check_reads();
    let count = |outcome: Outcome| log.ops.iter().filter(|o| o.outcome == outcome).count();
    println!(
        "faults: {} operations in {:.1?} by {CLIENTS} clients: {} acknowledged writes, {} refused, {} ambiguous; \
         answers {:?}; longest time without an acknowledged write {:.2?}; {} operations done",
        log.ops.len(),
        start.elapsed(),
        count(Outcome::Written),
        count(Outcome::Refused),
        count(Outcome::Ambiguous),
        log.answers(),
        log.longest_write_gap(),
        done.load(Ordering::SeqCst),
    );
    assert!(log.unexpected.is_empty(), "answers outside the API's contract:\n{}", log.unexpected.join("\n"));
    assert!(count(Outcome::Written) > 0, "no write was acknowledged");
    s.save_trace(&ns).await;
    let report = history::check_on_large_stack(log.ops);
    println!("{report}");
    assert!(report.linearizable(), "the history is not linearizable:\n{report}");
    assert_eq!(report.undecided(), 0, "the check ran out of steps:\n{report}");
}
