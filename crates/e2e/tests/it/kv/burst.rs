//! A concurrent burst of writes over several keys with evictions of every
//! replica (the coordinator twice) interleaved, recording every
//! acknowledged write. Afterwards:
//!
//! - no acknowledged write is lost or rolled back: for every key the final
//!   record's stamp is at least the highest acknowledged stamp, and if equal
//!   it is that very write (evictions here are one at a time, each after
//!   the namespace has fully recovered, so no write ever had all of its
//!   holders evicted);
//! - no two different writes share (key, ep, ver);
//! - every value ever read is one that some client wrote with that write id
//!   (no phantom or torn values), and reads of a key never go back in time
//!   once a read has seen a write that was acknowledged.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2e::{Ack, Found, Store};

const CLIENTS: usize = 16;
/// Each client writes at least this many times, and keeps writing until
/// the eviction schedule is over (at most `MAX_WRITES_PER_CLIENT`).
const MIN_WRITES_PER_CLIENT: usize = 20;
const MAX_WRITES_PER_CLIENT: usize = 250;
const KEYS: usize = 6;
const RECOVER: Duration = Duration::from_secs(20);

#[derive(Default)]
struct Log {
    /// wid → (key, value) of every attempted write.
    attempted: HashMap<String, (String, Vec<u8>)>,
    /// Every acknowledgement.
    acked: Vec<Ack>,
    /// Writes never acknowledged (still retried until the deadline).
    unacked: usize,
    /// (key, found) of every successful read during the burst.
    reads: Vec<(String, Found)>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn burst_with_evictions_loses_no_acknowledged_write() {
    let s = Store::from_env();
    let ns = s.new_ns("burst").await;
    let log = Arc::new(Mutex::new(Log::default()));
    // Warm the namespace up so the first eviction hits a serving store.
    Ack::parse(&s.put(&ns, "warm", b"up").await);
    s.wait_ready(&ns, RECOVER).await;

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (s, ns, log, stop) = (s.clone(), ns.clone(), log.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..MAX_WRITES_PER_CLIENT {
                if i >= MIN_WRITES_PER_CLIENT && stop.load(Ordering::SeqCst) {
                    break;
                }
                let key = format!("key-{}", (c * 7 + i * 3) % KEYS);
                let wid = e2e::new_wid();
                let value = format!("client {c} write {i} wid {wid}").into_bytes();
                log.lock().expect("log").attempted.insert(wid.clone(), (key.clone(), value.clone()));
                match s.put_until_ack(&ns, &key, &value, &wid, RECOVER).await {
                    Some(ack) => {
                        assert_eq!(ack.key, key);
                        log.lock().expect("log").acked.push(ack);
                    }
                    None => log.lock().expect("log").unacked += 1,
                }
                // A read now and then, recorded for the phantom check.
                if i % 4 == 0 {
                    let resp = s.try_request("GET", &Store::kv_path(&ns, &key), None, &[]).await;
                    if let Ok(resp) = resp {
                        match resp.status {
                            200 => log.lock().expect("log").reads.push((key.clone(), Found::parse(&resp))),
                            404 | 503 => {}
                            other => panic!("GET {key}: unexpected {other}: {}", resp.text()),
                        }
                    }
                }
            }
        }));
    }

    // Evictions interleaved with the burst: one at a time, each after the
    // namespace recovered from the previous one.
    let evictions = ["r1", "r0", "r2", "r0"];
    for r in evictions {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let done = s.evict(&ns, r).await;
        assert_eq!(done["evicted"], r);
        s.wait_ready(&ns, RECOVER).await;
    }
    // Keep writing a little under the last coordinator's epoch.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.expect("client task");
    }
    let burst_time = started.elapsed();
    s.wait_ready(&ns, RECOVER).await;

    let log = std::mem::take(&mut *log.lock().expect("log"));
    let total = log.attempted.len();
    assert!(total >= CLIENTS * MIN_WRITES_PER_CLIENT, "{total} writes");
    assert_eq!(log.acked.len() + log.unacked, total);
    // With every eviction recovered from in well under the retry window,
    // every write is eventually acknowledged.
    assert_eq!(log.unacked, 0, "writes never acknowledged");

    // (key, ep, ver) names one write.
    let mut by_stamp: BTreeMap<(String, u64, u64), String> = BTreeMap::new();
    for ack in &log.acked {
        if let Some(other) = by_stamp.insert((ack.key.clone(), ack.ep, ack.ver), ack.wid.clone()) {
            assert_eq!(
                other, ack.wid,
                "two writes acknowledged with the same (key, ep, ver) = ({}, {}, {})",
                ack.key, ack.ep, ack.ver
            );
        }
    }

    // Every read returned a value some client wrote, under its write id.
    for (key, found) in &log.reads {
        check_attempted(&log.attempted, key, found);
    }

    // Final state: nothing acknowledged was lost or rolled back.
    let mut max_acked: BTreeMap<String, &Ack> = BTreeMap::new();
    for ack in &log.acked {
        let slot = max_acked.entry(ack.key.clone()).or_insert(ack);
        if ack.stamp() > slot.stamp() {
            *slot = ack;
        }
    }
    for (key, latest) in &max_acked {
        let found = Found::parse(&s.get_settled(&ns, key, RECOVER).await);
        check_attempted(&log.attempted, key, &found);
        assert!(
            found.stamp() >= latest.stamp(),
            "{key}: acknowledged write {latest:?} rolled back to ({}, {}) {}",
            found.ep,
            found.ver,
            found.wid
        );
        if found.stamp() == latest.stamp() {
            assert_eq!(found.wid, latest.wid, "{key}: another write under the acknowledged stamp");
        }
    }
    // Reads never saw a stamp newer than what finally stands (no value
    // appeared and then vanished).
    for (key, found) in &log.reads {
        let fin = Found::parse(&s.get_settled(&ns, key, RECOVER).await);
        assert!(fin.stamp() >= found.stamp(), "{key}: read {found:?} later rolled back to {fin:?}");
    }
    let epochs: std::collections::BTreeSet<u64> = log.acked.iter().map(|a| a.ep).collect();
    println!(
        "burst: {total} writes over {KEYS} keys by {CLIENTS} clients in {burst_time:?}, {} reads, evictions {evictions:?}, epochs seen {epochs:?}",
        log.reads.len()
    );
    assert!(epochs.len() >= 3, "both coordinator evictions happened during the burst: epochs {epochs:?}");
    s.save_trace(&ns).await;
}

fn check_attempted(attempted: &HashMap<String, (String, Vec<u8>)>, key: &str, found: &Found) {
    match attempted.get(&found.wid) {
        Some((k, v)) => {
            assert_eq!(k, key, "write {} was for {k}, read under {key}", found.wid);
            assert_eq!(&found.value, v, "{key}: value differs from what write {} wrote", found.wid);
        }
        None => panic!("{key}: read a value under write id {} that no client wrote", found.wid),
    }
}
