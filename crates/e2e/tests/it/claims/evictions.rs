//! Handoff replicas evicted while activations run: the durable store stays
//! the authority. An activation is accepted, rejected or asked to retry,
//! never applied twice, and a rejection once given stands. Completions
//! racing the same evictions end each claim once.

use std::time::Duration;

use e2e::claims::{Claims, outcome};
use serde_json::json;

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

/// Completions racing each other, a stale fence and the reaper while every
/// lease-store replica is evicted (all at once, as a deploy does), after
/// another such loss that two of the four claims' workers repaired by a
/// heartbeat and two did not: each claim ends in exactly one terminal
/// state, consistent with every answer given. A completion needs the lease
/// in force, so one that finds it lost is refused (`lease_lost`, final for
/// its key); the claim then still executes (a lost lease is restorable, so
/// the reaper leaves it), its worker's heartbeat restores the lease and a
/// new completion ends it. Every key answers again as it did.
#[tokio::test]
async fn completions_racing_evictions_of_every_lease_store_replica_end_each_claim_once() {
    const CLAIMS: u64 = 4;
    let c = Claims::fresh("claims-complete-evict").await;
    for i in 0..CLAIMS {
        let claim = format!("e{i}");
        assert_eq!(c.create(&claim, 1, "w1", LONG).await.status, 201);
        let resp = c.activate_settled(&claim, "act", 1, "w1", LONG, SETTLE).await;
        assert_eq!(outcome(&resp), ("accepted".into(), None), "{}", resp.text());
    }
    // The lease store loses every lease (as a deploy does); the workers of
    // e0 and e1 restore theirs, e2 and e3 race with theirs lost.
    c.store.evict_all(&c.ns).await;
    for claim in ["e0", "e1"] {
        let renewed = c.heartbeat(claim, 1, "w1", LONG).await;
        assert_eq!(outcome(&renewed), ("renewed".into(), None), "{}", renewed.text());
    }
    // Two keys with other outcomes and a stale fence per claim.
    const KEYS: [Completion; 3] = [("a", 1, "succeeded"), ("b", 1, "failed"), ("s", 0, "failed")];
    let mut tasks = Vec::new();
    for i in 0..CLAIMS {
        let claim = format!("e{i}");
        for k in KEYS {
            let (c, claim) = (c.clone(), claim.clone());
            tasks.push(tokio::spawn(async move {
                let answer = complete(&c, &claim, k).await;
                (claim, k.0, answer)
            }));
        }
    }
    let reaper = {
        let c = c.clone();
        tokio::spawn(async move { c.reap().await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    c.store.evict_all(&c.ns).await;
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("task"));
    }
    assert!(reaper.await.expect("reaper").is_empty(), "a lost lease is restorable: nothing is reaped");
    for i in 0..CLAIMS {
        let claim = format!("e{i}");
        let mine: Vec<_> = answers.iter().filter(|(c, ..)| *c == claim).collect();
        let won: Vec<&str> = mine.iter().filter(|(_, _, (status, _))| *status == 200).map(|(_, key, _)| *key).collect();
        assert!(won.len() <= 1, "{claim}: at most one key completes it: {mine:?}");
        if i >= 2 {
            assert!(won.is_empty(), "{claim}: its lease was lost before any completion: {mine:?}");
        }
        for (_, key, (status, body)) in &mine {
            match (*status, *key) {
                (200, _) => assert_eq!(body["result"], "completed", "{body}"),
                (422, "s") => assert_eq!(body["reason"], "stale_fence", "{body}"),
                (422, _) => assert!(
                    body["reason"] == "not_executing" || body["reason"] == "lease_lost",
                    "{claim} {key}: {body}"
                ),
                other => panic!("{claim} {key}: unexpected answer {other:?} {body}"),
            }
        }
        let view = c.get(&claim).await;
        let winner = match won.first() {
            Some(key) => *key,
            None => {
                // Nobody completed it: the lease was lost under every
                // completion. It still executes; its worker restores the
                // lease and completes it with a new key.
                assert_eq!(view["state"], "executing", "{claim}: {view} {mine:?}");
                let renewed = c.heartbeat(&claim, 1, "w1", LONG).await;
                assert_eq!(outcome(&renewed), ("renewed".into(), None), "{}", renewed.text());
                let last = complete(&c, &claim, ("z", 1, "succeeded")).await;
                assert_eq!((last.0, &last.1["result"]), (200, &json!("completed")), "{claim}: {}", last.1);
                "z"
            }
        };
        let view = c.get(&claim).await;
        let state = if winner == "b" { "failed" } else { "succeeded" };
        assert_eq!((view["state"].as_str(), view["outcome"].as_str()), (Some(state), Some(state)), "{view}");
        assert_eq!(view["result"], json!({ "by": winner }), "the winner's result: {view}");
        assert_eq!(view["activations"], 1, "{view}");
        for k in KEYS {
            let first = mine.iter().find(|(_, key, _)| *key == k.0).map(|(_, _, answer)| answer.clone());
            assert_eq!(Some(complete(&c, &claim, k).await), first, "{claim} {} replayed", k.0);
        }
    }
    c.store.save_trace(&c.ns).await;
}

/// A completion request: key, fence, outcome (worker `w1`).
type Completion = (&'static str, u64, &'static str);

/// Completes `claim` as `key` says (503s retried): its status and body.
async fn complete(c: &Claims, claim: &str, (key, fence, result): Completion) -> (u16, serde_json::Value) {
    let resp = c.complete_settled(claim, key, fence, "w1", result, json!({ "by": key }), SETTLE).await;
    (resp.status, resp.json())
}
