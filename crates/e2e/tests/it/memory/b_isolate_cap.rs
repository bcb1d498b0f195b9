//! Several namespaces filled with tiny records at once: the coordinators
//! answer 507 `isolate_full` before the replicas of the isolate hold more
//! than its cap, and every acknowledged write stays readable.

use std::sync::Arc;

use e2e::Store;
use tokio::sync::Mutex;

use super::{CAP, isolate};

const NAMESPACES: usize = 3;
const WRITERS: usize = 4;

#[tokio::test]
async fn namespaces_filling_one_isolate_get_507_before_its_cap() {
    let s = Store::from_env();
    let mut namespaces = Vec::new();
    for i in 0..NAMESPACES {
        namespaces.push(s.new_ns(&format!("cap{i}")).await);
    }
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    for ns in &namespaces {
        for w in 0..WRITERS {
            let (s, ns, acked) = (s.clone(), ns.clone(), acked.clone());
            writers.push(tokio::spawn(async move {
                for i in 0.. {
                    let key = format!("{w}-{i:06}");
                    let resp = s.put(&ns, &key, b"v").await;
                    match resp.status {
                        200 => acked.lock().await.push((ns.clone(), key)),
                        507 => {
                            assert_eq!(resp.error_code(), "isolate_full", "{}", resp.text());
                            return i;
                        }
                        503 => {}
                        other => panic!("PUT {ns}/{key}: {other} {}", resp.text()),
                    }
                }
                unreachable!()
            }));
        }
    }
    for writer in writers {
        writer.await.expect("writer");
    }
    let (wasm, held) = isolate(&s).await;
    let acked = acked.lock().await;
    println!("{} writes acknowledged; the isolate holds {held} bytes (cap {CAP}), wasm memory {wasm}", acked.len());
    assert!(!acked.is_empty());
    // Writes in flight when the cap was reached may land past it, by at
    // most one record each.
    assert!(held <= CAP + (NAMESPACES * WRITERS) as u64 * 512, "the isolate holds {held} bytes, past its cap {CAP}");
    for (ns, key) in acked.iter() {
        let found = s.get(ns, key).await;
        assert_eq!(found.status, 200, "{ns}/{key} was acknowledged: {}", found.text());
    }
}
