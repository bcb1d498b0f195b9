//! Several namespaces filled with tiny records at once: the coordinators
//! answer 507 `isolate_full` before the replicas of the isolate hold more
//! than its cap, and every acknowledged write stays readable.

use std::sync::Arc;

use e2e::Store;
use tokio::sync::Mutex;

use super::CAP;

const NAMESPACES: usize = 3;
const WRITERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
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
    // Each replica role runs in a script of its own: the coordinators'
    // isolate holds the three namespaces' r0 replicas.
    let status = s.status(&namespaces[0]).await;
    let r0 = &status["replicas"][0];
    let (wasm, held) = (r0["wasm_memory_bytes"].as_u64().unwrap_or(0), r0["isolate_held_bytes"].as_u64().unwrap_or(0));
    let acked = acked.lock().await.clone();
    println!("{} writes acknowledged; r0's isolate holds {held} bytes (cap {CAP}), wasm memory {wasm}", acked.len());
    assert!(!acked.is_empty());
    assert!(held > CAP / 2, "the coordinators' isolate holds only {held} bytes: the 507s came early");
    // Writes in flight when the cap was reached may land past it, by at
    // most one record each.
    assert!(held <= CAP + (NAMESPACES * WRITERS) as u64 * 512, "r0's isolate holds {held} bytes, past its cap {CAP}");
    let readers: Vec<_> = acked
        .chunks(acked.len().div_ceil(8))
        .map(|chunk| {
            let (s, chunk) = (s.clone(), chunk.to_vec());
            tokio::spawn(async move {
                for (ns, key) in chunk {
                    let found = s.get(&ns, &key).await;
                    assert_eq!(found.status, 200, "{ns}/{key} was acknowledged: {}", found.text());
                }
            })
        })
        .collect();
    for reader in readers {
        reader.await.expect("reader");
    }
}
