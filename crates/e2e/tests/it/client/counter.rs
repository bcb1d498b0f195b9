//! The counter recipe under contention: 8 clients increment one key by
//! compare-and-set; the final value equals the number of acknowledged
//! increments, and every acknowledged value is distinct (no increment lost,
//! none applied twice).

use std::collections::BTreeSet;

use handoff_client::recipes::increment;

use super::{client, fresh_ns};

const CLIENTS: usize = 8;
const INCREMENTS_PER_CLIENT: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_clients_lose_no_increment() {
    let name = fresh_ns("counter").await.name().to_owned();
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        // Each its own client (its own connections), as separate processes.
        let ns = client().namespace(&name);
        tasks.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            for _ in 0..INCREMENTS_PER_CLIENT {
                acked.push(increment(&ns, "hits").await.unwrap_or_else(|e| panic!("increment: {e}")));
            }
            acked
        }));
    }
    let mut values = BTreeSet::new();
    let mut acked = 0u64;
    for task in tasks {
        for value in task.await.expect("a client task") {
            acked += 1;
            assert!(values.insert(value), "two increments acknowledged with the same value {value}");
        }
    }
    assert_eq!(values, (1..=acked).collect(), "the acknowledged values are exactly 1..={acked}");
    let last = client().namespace(&name).get("hits").await.unwrap().expect("the counter exists");
    assert_eq!(last.value, acked.to_string().into_bytes(), "the final value is the number of acknowledged increments");
    assert_eq!(acked, (CLIENTS * INCREMENTS_PER_CLIENT) as u64);
}
