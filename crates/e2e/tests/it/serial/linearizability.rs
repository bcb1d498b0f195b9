//! Linearizability on the real runtime: eight clients PUT, GET and DELETE
//! a few keys of one namespace on workerd while the test evicts one replica
//! at a time (the coordinator every other time) every few hundred
//! milliseconds. Every operation's invocation and answer is recorded, and
//! the history is checked per key with stateright's LinearizabilityTester
//! over a register (`e2e::history`): an acknowledged write took effect
//! while it ran, a refused one (503 `recovering`, `overloaded`) never did,
//! an ambiguous one (503 `not_committed`, `superseded`,
//! `replica_unavailable`, a transport error) may have, at any later time.
//! A history that is not linearizable fails the test, printing a minimal
//! offending sub-history.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use e2e::history::{self, Call, Op, Outcome, Val};
use e2e::{Ack, Found, Resp, Store};

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
            let client = Client { id: c, store: s.clone(), ns: ns.clone(), start, rng: e2e::random_u64() | 1 };
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
    let mut ops = Vec::new();
    let mut written = HashMap::new();
    let mut reads = Vec::new();
    let mut unexpected = Vec::new();
    for client in clients {
        let log = client.await.expect("client task");
        ops.extend(log.ops);
        written.extend(log.written);
        reads.extend(log.reads);
        unexpected.extend(log.unexpected);
    }
    let run_time = start.elapsed();

    // What the register abstracts away: every value read is the one its
    // write id's PUT wrote, to that key.
    for (key, found) in &reads {
        match written.get(&found.wid) {
            Some((k, v)) => {
                assert_eq!(k, key, "write {} was to {k}, read under {key}", found.wid);
                assert_eq!(&found.value, v, "{key}: a value other than write {} wrote", found.wid);
            }
            None => panic!("{key}: read write id {}, which no client wrote", found.wid),
        }
    }
    let count = |f: fn(&Op) -> bool| ops.iter().filter(|o| f(o)).count();
    println!(
        "linearizability: {} operations by {CLIENTS} clients on {KEYS} keys in {run_time:.1?}: \
         {} acknowledged writes, {} reads, {} refused, {} ambiguous; {} evictions {evicted:?}",
        ops.len(),
        count(|o| o.outcome == Outcome::Written),
        count(|o| matches!(o.outcome, Outcome::Read(_))),
        count(|o| o.outcome == Outcome::Refused),
        count(|o| o.outcome == Outcome::Ambiguous),
        evicted.len()
    );
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

/// One client: sequential operations on random keys until told to stop.
struct Client {
    id: usize,
    store: Store,
    ns: String,
    start: Instant,
    rng: u64,
}

#[derive(Default)]
struct Log {
    ops: Vec<Op>,
    /// Write id -> (key, value) of every PUT sent.
    written: HashMap<String, (String, Vec<u8>)>,
    /// Every value read, with its key.
    reads: Vec<(String, Found)>,
    /// Answers the API does not promise.
    unexpected: Vec<String>,
}

impl Client {
    async fn run(mut self, stop: &AtomicBool, done: &AtomicUsize) -> Log {
        let mut log = Log::default();
        while !stop.load(Ordering::SeqCst) {
            let key = format!("k{}", self.below(KEYS));
            let path = Store::kv_path(&self.ns, &key);
            let wid = e2e::new_wid();
            let (call, method, body) = match self.below(100) {
                0..45 => (Call::Read, "GET", None),
                45..85 => {
                    let value = format!("{wid} from client {}", self.id).into_bytes();
                    log.written.insert(wid.clone(), (key.clone(), value.clone()));
                    (Call::Write(Val::Put(wid.clone())), "PUT", Some(value))
                }
                _ => (Call::Write(Val::Absent), "DELETE", None),
            };
            let headers: &[(&str, &str)] = if call == Call::Read { &[] } else { &[("handoff-write-id", &wid)] };
            let invoked = self.start.elapsed();
            let answer = self.store.try_request(method, &path, body, headers).await;
            let returned = self.start.elapsed();
            let (outcome, shown) = match classify(&call, &key, &wid, &answer) {
                Ok((outcome, found)) => {
                    if let Some(found) = found {
                        log.reads.push((key.clone(), found));
                    }
                    (outcome, status_of(&answer))
                }
                Err(what) => {
                    log.unexpected.push(format!("{method} {key}: {what}"));
                    (Outcome::Ambiguous, what)
                }
            };
            let refused = outcome == Outcome::Refused;
            log.ops.push(Op { client: self.id, key, call, invoked, returned, outcome, answer: shown });
            done.fetch_add(1, Ordering::SeqCst);
            // Back off while the coordinator recovers; otherwise a few
            // milliseconds between operations, so that keys go quiet now
            // and then.
            let pause = if refused { 50 } else { self.below(5) };
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        log
    }

    /// xorshift: a different sequence per client and run.
    fn below(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n
    }
}

/// What an answer says about the operation's effect (docs/handoff.md
/// section 4: which 503 comes before a write is accepted), and the value a
/// read returned; `Err` for an answer the API does not promise.
fn classify(
    call: &Call,
    key: &str,
    wid: &str,
    answer: &Result<Resp, reqwest::Error>,
) -> Result<(Outcome, Option<Found>), String> {
    let resp = match answer {
        Ok(resp) => resp,
        // Sent, perhaps served, no answer.
        Err(_) => return Ok((Outcome::Ambiguous, None)),
    };
    match (call, resp.status) {
        (Call::Read, 200) => {
            let found = Found::parse(resp);
            Ok((Outcome::Read(Val::Put(found.wid.clone())), Some(found)))
        }
        (Call::Read, 404) if resp.error_code() == "key_not_found" => Ok((Outcome::Read(Val::Absent), None)),
        (Call::Write(_), 200) => {
            let ack = Ack::parse(resp);
            if ack.key != key || ack.wid != wid {
                return Err(format!("acknowledged as {ack:?}"));
            }
            Ok((Outcome::Written, None))
        }
        // workerd's own plain-text answer when the isolate serving the
        // request was replaced (an eviction can take the Worker's isolate
        // with it): the request may have been served.
        (_, 503) if runtime_restart(resp) => Ok((Outcome::Ambiguous, None)),
        (_, 503) => match resp.error_code().as_str() {
            // Answered before the write entered the protocol.
            "recovering" | "overloaded" => Ok((Outcome::Refused, None)),
            // Pending, pushed, or the object reset while serving it.
            "not_committed" | "superseded" | "replica_unavailable" => Ok((Outcome::Ambiguous, None)),
            code => Err(format!("503 {code}: {}", resp.text())),
        },
        (_, status) => Err(format!("{status}: {}", resp.text())),
    }
}

/// The runtime's answer when the request's isolate restarted under it, not
/// one of the API's JSON errors.
fn runtime_restart(resp: &Resp) -> bool {
    serde_json::from_slice::<serde_json::Value>(&resp.body).is_err() && resp.text().contains("restarted mid-request")
}

fn status_of(answer: &Result<Resp, reqwest::Error>) -> String {
    match answer {
        Ok(resp) if resp.status == 200 || resp.status == 404 => resp.status.to_string(),
        Ok(resp) if runtime_restart(resp) => format!("{} runtime restart", resp.status),
        Ok(resp) => format!("{} {}", resp.status, resp.error_code()),
        Err(e) => format!("transport error: {e}"),
    }
}
