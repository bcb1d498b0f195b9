//! Linearizability on the real runtime: eight clients PUT, GET and DELETE
//! a few keys of one namespace, some PUTs conditional (`If-Match` the value
//! last read, or `If-None-Match: *`), on workerd while the test evicts one replica
//! at a time (the coordinator every other time) every few hundred
//! milliseconds. Every operation's invocation and answer is recorded, and
//! the history is checked per key with stateright's LinearizabilityTester
//! over a register (`e2e::history`): an acknowledged write took effect
//! while it ran, a refused one (503 `recovering`, `overloaded`) never did,
//! an ambiguous one (503 `not_committed`, `superseded`,
//! `replica_unavailable`, a transport error) may have, at any later time.
//! A history that is not linearizable fails the test, printing a minimal
//! offending sub-history.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use e2e::history::{self, Call, Op, Outcome};
use e2e::workload::{Client, Log};
use e2e::{Ack, Store};

const CLIENTS: usize = 8;
const KEYS: u64 = 4;
const MIN_OPS: usize = 3_000;
const EVICTIONS: usize = 24;
/// One replica at a time, the coordinator every other time.
const ROTATION: [&str; 4] = ["r0", "r1", "r0", "r2"];
/// The pause between the namespace being ready again and the next eviction.
const EVICT_EVERY: Duration = Duration::from_millis(300);
const RECOVER: Duration = Duration::from_secs(20);
/// The clients stop by then even if the evictions are not done (the test
/// then fails on their count).
const MAX_RUN: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn histories_under_evictions_are_linearizable() {
    let s = Store::from_env();
    let ns = s.new_ns("linearizable").await;
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

    // Evict one replica at a time, each once the namespace recovered from
    // the previous eviction (a write is then held by two live replicas, so
    // no acknowledged write is lost: a loss would be a violation).
    let mut evicted = Vec::new();
    for i in 0..EVICTIONS {
        if start.elapsed() > MAX_RUN {
            break;
        }
        s.wait_ready(&ns, RECOVER).await;
        tokio::time::sleep(EVICT_EVERY).await;
        let r = ROTATION[i % ROTATION.len()];
        assert_eq!(s.evict(&ns, r).await["evicted"], r);
        evicted.push(r);
    }
    while done.load(Ordering::SeqCst) < MIN_OPS && start.elapsed() < MAX_RUN {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let mut logs = Vec::new();
    for client in clients {
        logs.push(client.await.expect("client task"));
    }
    let (Log { ops, unexpected, .. }, expiring) = {
        let log = Log::merge(logs);
        let expiring = log.check_reads();
        (log, expiring)
    };
    let run_time = start.elapsed();
    let count = |f: fn(&Op) -> bool| ops.iter().filter(|o| f(o)).count();
    let cond_written = count(|o| matches!(o.call, Call::CondWrite { .. }) && o.outcome == Outcome::Written);
    let cond_failed = count(|o| matches!(o.outcome, Outcome::PreconditionFailed(_)));
    println!(
        "linearizability: {} operations by {CLIENTS} clients on {KEYS} keys in {run_time:.1?}: \
         {} acknowledged writes ({cond_written} conditional), {} reads, {cond_failed} 412s, {} refused, \
         {} ambiguous, {expiring} reads of a value with a time to live (its expiry as written); {} evictions {evicted:?}",
        ops.len(),
        count(|o| o.outcome == Outcome::Written),
        count(|o| matches!(o.outcome, Outcome::Read(_))),
        count(|o| o.outcome == Outcome::Refused),
        count(|o| o.outcome == Outcome::Ambiguous),
        evicted.len()
    );
    // The compare-and-set check had both kinds of answer to judge, and the
    // expiry check values to look at.
    assert!(cond_written > 0 && cond_failed > 0, "conditional writes: {cond_written} written, {cond_failed} 412s");
    assert!(expiring > 0, "no read of a value written with a time to live");
    assert!(unexpected.is_empty(), "answers outside the API's contract:\n{}", unexpected.join("\n"));
    assert!(ops.len() >= MIN_OPS, "only {} operations", ops.len());
    assert_eq!(evicted.len(), EVICTIONS, "evictions done within {MAX_RUN:?}");

    // Kept for a second look (`history::check` reads it back).
    let saved = std::env::temp_dir().join(format!("{ns}.history.json"));
    std::fs::write(&saved, serde_json::to_vec(&ops).expect("history as JSON")).expect("saving the history");
    println!("linearizability: history saved in {}", saved.display());
    s.save_trace(&ns).await;

    let checked = Instant::now();
    let report = history::check_on_large_stack(ops);
    println!("{report}checked in {:.1?}", checked.elapsed());
    assert!(report.linearizable(), "the history is not linearizable:\n{report}");
    assert_eq!(report.undecided(), 0, "the check ran out of steps:\n{report}");
}
