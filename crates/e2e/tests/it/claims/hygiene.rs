//! Claims hygiene: an Idempotency-Key is bound only for a claim that exists
//! (and only on it); finished claims and their operations are deleted after
//! the namespace's retention, a claim's lease record before its rows;
//! migrations are idempotent and atomic.

use std::time::{Duration, Instant};

use e2e::Store;
use e2e::claims::{Claims, accepted, rejected};

const LONG: u64 = 60_000;

/// Activating a claim that does not exist binds nothing: the key is free
/// for the real claim created afterwards.
#[tokio::test]
async fn the_squatting_sequence_succeeds() {
    let c = Claims::fresh("claims-squat").await;
    c.activate("job", "K", 1, "w1", LONG).await.expect_error(404, "claim_not_found");
    c.activate("job", "K", 2, "w9", LONG).await.expect_error(404, "claim_not_found");
    assert_eq!(c.create("job", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("job", "K", 1, "w1", LONG).await);
    assert_eq!(c.get("job").await["activations"], 1);
}

/// A finished claim (reaped, or executing with its lease lapsed) is
/// deleted with its operations after the retention; then every request
/// about it is a 404 as for a claim never created, its id is free (any
/// fence), its keys are free, and its lease record is gone.
#[tokio::test]
async fn finished_claims_are_deleted_after_the_retention_and_replays_are_404() {
    // Long enough to see the claim reaped before it goes, on a busy machine.
    let c = Claims::fresh_with("claims-retention", r#"{"claim_retention_seconds":3}"#).await;
    let s = &c.store;
    // A reaped claim, with a rejection stored under key "late".
    assert_eq!(c.create("reaped", 5, "w1", 300).await.status, 201);
    c.wait_state("reaped", "reaped", Duration::from_secs(15)).await;
    rejected(&c.activate("reaped", "late", 5, "w1", LONG).await, "reaped");
    // An executing claim whose lease lapses.
    assert_eq!(c.create("done", 1, "w1", LONG).await.status, 201);
    // A lease short enough to lapse soon, long enough to outlast the
    // activation itself on a busy machine.
    accepted(&c.activate("done", "first", 1, "w1", 1500).await);
    assert_eq!(s.get(&c.ns, "_remora/lease/done").await.status, 200);
    // A live one, heartbeating, is kept.
    assert_eq!(c.create("live", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("live", "go", 1, "w1", 3000).await);

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert_eq!(c.heartbeat("live", 1, "w1", 3000).await.status, 200, "the live claim keeps its lease");
        let gone = |claim: &'static str| {
            let c = c.clone();
            async move { s_get_status(&c, claim).await == 404 }
        };
        if gone("reaped").await && gone("done").await {
            break;
        }
        assert!(Instant::now() < deadline, "finished claims not deleted after their retention");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for claim in ["reaped", "done"] {
        s.request("GET", &c.path(claim, ""), None, &[]).await.expect_error(404, "claim_not_found");
        c.heartbeat(claim, 1, "w1", 1000).await.expect_error(404, "claim_not_found");
    }
    // Replays after the deletion: the claim is unknown, nothing is bound.
    c.activate("reaped", "late", 5, "w1", LONG).await.expect_error(404, "claim_not_found");
    c.activate("done", "first", 1, "w1", LONG).await.expect_error(404, "claim_not_found");
    s.get(&c.ns, "_remora/lease/done").await.expect_error(404, "key_not_found");
    // The id is free again, at any fence; the old keys mean nothing.
    assert_eq!(c.create("reaped", 1, "w2", LONG).await.status, 201);
    accepted(&c.activate("reaped", "late", 1, "w2", LONG).await);
    assert_eq!(c.create("done", 1, "w3", LONG).await.status, 201);
    accepted(&c.activate("done", "first", 1, "w3", LONG).await);
    assert_eq!(c.get("live").await["state"], "executing", "the heartbeating claim is kept");
    // The kept usage followed the deletions: three claims, as counted.
    assert_eq!(c.usage().await.0, 3);
}

/// A purge whose lease store fails deletes nothing: the claim's lease
/// record goes first, and only then its rows, so while the coordinator
/// cannot commit (paused: it drops every peer message) the reaped claim
/// keeps its rows; once it can, a later alarm deletes both.
#[tokio::test]
async fn a_purge_the_lease_store_fails_keeps_the_claim_for_the_next_alarm() {
    const RETENTION_S: u64 = 5;
    const PAUSE: Duration = Duration::from_secs(20);
    let c = Claims::fresh_with("claims-purge-fails", &format!(r#"{{"claim_retention_seconds":{RETENTION_S}}}"#)).await;
    let s = &c.store;
    assert_eq!(c.create("x", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("x", "go", 1, "w1", 1000).await);
    c.wait_state("x", "reaped", Duration::from_secs(20)).await;
    // Within the retention: the purge is not due yet.
    let paused_at = Instant::now();
    s.pause(&c.ns, "r0", PAUSE.as_millis() as u64).await;
    assert_eq!(c.usage().await.0, 1, "paused before the purge was due");
    // Past the retention, while the lease record cannot be deleted: the
    // alarm's purge fails (a lease call gives up after 10 s) and the rows stay.
    tokio::time::sleep(Duration::from_secs(RETENTION_S + 2)).await;
    while paused_at.elapsed() + Duration::from_secs(2) < PAUSE {
        assert_eq!(
            c.usage().await.0,
            1,
            "rows deleted while the lease record could not be, {:?} into the pause",
            paused_at.elapsed()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // After the pause, a later alarm (the runtime retries a failed one)
    // deletes both.
    let deadline = Instant::now() + PAUSE + Duration::from_secs(60);
    while s_get_status(&c, "x").await != 404 {
        assert!(Instant::now() < deadline, "the claim not purged after the pause");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(c.usage().await.0, 0);
    s.get(&c.ns, "_remora/lease/x").await.expect_error(404, "key_not_found");
}

async fn s_get_status(c: &Claims, claim: &str) -> u16 {
    c.store.request("GET", &c.path(claim, ""), None, &[]).await.status
}

#[tokio::test]
async fn migrations_are_idempotent_and_run_in_one_transaction() {
    let c = Claims::fresh("claims-migrations").await;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    let s = Store::from_env();
    let resp = s.request("POST", &format!("/v1/{}/_test/migrations", e2e::enc(&c.ns)), None, &[]).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json(), serde_json::json!({ "idempotent": true, "rolled_back": true }));
    assert_eq!(c.get("j").await["state"], "authorized", "the data is untouched");
}
