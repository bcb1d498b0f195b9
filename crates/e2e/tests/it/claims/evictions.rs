//! Handoff replicas evicted while activations run: the durable store stays
//! the authority. An activation is accepted, rejected or asked to retry,
//! never applied twice, and a rejection once given stands.

use std::time::Duration;

use e2e::claims::{Claims, outcome};

const LONG: u64 = 60_000;
const SETTLE: Duration = Duration::from_secs(25);

#[tokio::test]
async fn evicting_handoff_replicas_during_activations_never_applies_twice() {
    let c = Claims::fresh("claims-evict").await;
    for (i, replicas) in [&["r0"][..], &["r1", "r0"], &["r0", "r1", "r2"]].into_iter().enumerate() {
        let claim = format!("job-{i}");
        assert_eq!(c.create(&claim, 1, "w1", LONG).await.status, 201);
        let tasks: Vec<_> = (0..3)
            .map(|k| {
                let (c, claim) = (c.clone(), claim.clone());
                tokio::spawn(async move {
                    c.activate_settled(&claim, &format!("{claim}-k{k}"), 1, "w1", LONG, SETTLE).await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(30)).await;
        for r in replicas {
            c.store.evict(&c.ns, r).await;
        }
        let mut answers = Vec::new();
        for task in tasks {
            let resp = task.await.expect("task");
            answers.push(outcome(&resp));
        }
        let view = c.wait_state(&claim, "executing", SETTLE).await;
        assert_eq!(view["activations"], 1, "applied exactly once after evicting {replicas:?}: {view}, {answers:?}");
        for (result, reason) in &answers {
            assert!(
                result == "accepted" || reason.as_deref() == Some("lease_lost"),
                "{claim}: {result} {reason:?} (all: {answers:?})"
            );
        }
        // A rejection is final (stored in the durable store): its replay
        // is the same rejection, whatever the lease store lost meanwhile.
        for (k, first) in answers.iter().enumerate() {
            let resp = c.activate_settled(&claim, &format!("{claim}-k{k}"), 1, "w1", LONG, SETTLE).await;
            if first.0 == "rejected" {
                assert_eq!(&outcome(&resp), first, "{claim}-k{k}: {}", resp.text());
            } else {
                outcome(&resp);
            }
        }
        assert_eq!(c.get(&claim).await["activations"], 1);
    }
    c.store.save_trace(&c.ns).await;
}
