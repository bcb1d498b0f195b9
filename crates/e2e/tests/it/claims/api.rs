//! The claims API: happy path, idempotency, rejections, bad input, and the
//! lease prefix the KV API refuses to write.

use e2e::claims::{Claims, accepted, rejected};
use e2e::{Store, enc};
use serde_json::Value;

const LONG: u64 = 60_000;

#[tokio::test]
async fn a_worker_claims_and_activates_a_job() {
    let c = Claims::fresh("claims-happy").await;
    let created = c.create("job-1", 7, "w1", LONG).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let view = created.json();
    assert_eq!(view["state"], "authorized", "{view}");
    assert_eq!((view["fence"].as_u64(), view["worker"].as_str()), (Some(7), Some("w1")), "{view}");
    assert_eq!(view["reservation"]["worker"], "w1", "{view}");
    assert!(view["reservation"]["expires_at"].as_u64().is_some(), "{view}");
    assert_eq!((&view["lease"], &view["activations"]), (&Value::Null, &Value::from(0)), "{view}");

    let resp = c.activate("job-1", "op-1", 7, "w1", LONG).await;
    accepted(&resp);
    let body = resp.json();
    assert_eq!((body["operation"].as_str(), body["claim"].as_str()), (Some("op-1"), Some("job-1")), "{body}");

    let view = c.get("job-1").await;
    assert_eq!(view["state"], "executing", "{view}");
    assert_eq!(view["activations"], 1, "{view}");
    assert_eq!(view["reservation"], Value::Null, "{view}");
    assert_eq!(view["lease"]["worker"], "w1", "{view}");
    assert!(view["lease"]["expires_at"].as_u64().is_some(), "{view}");
}

#[tokio::test]
async fn fences_are_full_u64s() {
    let c = Claims::fresh("claims-u64").await;
    let fence = u64::MAX;
    assert_eq!(c.create("j", fence, "w1", LONG).await.status, 201);
    accepted(&c.activate("j", "k", fence, "w1", LONG).await);
    rejected(&c.activate("j", "k2", fence - 1, "w1", LONG).await, "stale_fence");
    let view = c.get("j").await;
    assert_eq!((view["fence"].as_u64(), view["activations"].as_u64()), (Some(fence), Some(1)), "{view}");
}

#[tokio::test]
async fn an_exact_replay_gets_the_same_answer_and_applies_nothing() {
    let c = Claims::fresh("claims-replay").await;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    let first = c.activate("j", "k", 1, "w1", LONG).await;
    accepted(&first);
    for _ in 0..3 {
        let again = c.activate("j", "k", 1, "w1", LONG).await;
        assert_eq!((again.status, again.json()), (first.status, first.json()), "a replay answers the same");
    }
    // Another key for the same attempt replays too (the claim executes).
    accepted(&c.activate("j", "k2", 1, "w1", LONG).await);
    assert_eq!(c.get("j").await["activations"], 1);
    // A replay is answered on what is left of the lease, and says so: the
    // deadline granted, or a heartbeat's since, not lease_ttl_ms from now.
    let granted = first.json()["lease"]["expires_at"].as_u64();
    assert!(granted.is_some(), "an accepted activation names its lease's deadline: {}", first.text());
    let renewed = c.heartbeat("j", 1, "w1", 2 * LONG).await.json()["lease"]["expires_at"].as_u64();
    assert!(renewed > granted, "{renewed:?} {granted:?}");
    let replay = c.activate("j", "k", 1, "w1", LONG).await;
    accepted(&replay);
    assert_eq!(replay.json()["lease"]["expires_at"].as_u64(), renewed, "{}", replay.text());
}

#[tokio::test]
async fn a_key_reused_for_another_request_is_a_conflict() {
    let c = Claims::fresh("claims-reuse").await;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    assert_eq!(c.create("other", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("j", "k", 1, "w1", LONG).await);
    c.activate("j", "k", 1, "w2", LONG).await.expect_error(409, "idempotency_key_reused");
    c.activate("j", "k", 2, "w1", LONG).await.expect_error(409, "idempotency_key_reused");
    // The binding is untouched: the original request still replays.
    accepted(&c.activate("j", "k", 1, "w1", LONG).await);
    assert_eq!(c.get("j").await["activations"], 1, "the conflicting requests did nothing");
    // A key belongs to its claim: the same key on another claim is another
    // operation.
    accepted(&c.activate("other", "k", 1, "w1", LONG).await);
    assert_eq!(c.get("other").await["state"], "executing");
}

#[tokio::test]
async fn stale_fences_and_wrong_workers_are_rejected_for_good() {
    let c = Claims::fresh("claims-reject").await;
    assert_eq!(c.create("j", 5, "w1", LONG).await.status, 201);
    rejected(&c.activate("j", "old", 4, "w1", LONG).await, "stale_fence");
    rejected(&c.activate("j", "newer", 6, "w1", LONG).await, "stale_fence");
    rejected(&c.activate("j", "thief", 5, "w2", LONG).await, "wrong_worker");
    assert_eq!(c.get("j").await["state"], "authorized");
    accepted(&c.activate("j", "right", 5, "w1", LONG).await);
    // A rejection is final: the same operation is answered the same.
    rejected(&c.activate("j", "thief", 5, "w2", LONG).await, "wrong_worker");
    let view = c.get("j").await;
    assert_eq!((view["state"].as_str(), view["activations"].as_u64()), (Some("executing"), Some(1)), "{view}");
    // Heartbeats from anyone but the executing attempt are refused.
    let hb = c.heartbeat("j", 5, "w2", LONG).await;
    assert_eq!((hb.status, hb.json()["reason"].as_str()), (422, Some("wrong_worker")), "{}", hb.text());
}

#[tokio::test]
async fn a_create_retried_is_answered_with_the_claim_as_it_is() {
    let c = Claims::fresh("claims-create-again").await;
    let first = c.create("j", 3, "w1", LONG).await;
    assert_eq!(first.status, 201, "{}", first.text());
    // The client lost the answer and sends the same create again.
    let again = c.create("j", 3, "w1", LONG).await;
    assert_eq!((again.status, again.json()), (200, first.json()), "the same attempt, unchanged");
    assert_eq!(c.get("j").await, first.json(), "its reservation was not renewed");
    // Another worker, or another first max_attempts, is another request.
    c.create("j", 3, "w2", LONG).await.expect_error(409, "claim_exists");
    let body =
        serde_json::json!({"claim": "j", "fence": 3, "worker": "w1", "reservation_ttl_ms": LONG, "max_attempts": 4});
    c.create_raw(&body).await.expect_error(409, "claim_exists");
    // Once the attempt executes, a retried create shows it executing.
    accepted(&c.activate("j", "a", 3, "w1", LONG).await);
    let executing = c.create("j", 3, "w1", LONG).await;
    assert_eq!(executing.status, 200, "{}", executing.text());
    let view = executing.json();
    assert_eq!((view["state"].as_str(), view["lease"]["worker"].as_str()), (Some("executing"), Some("w1")), "{view}");
    assert_eq!(view, c.get("j").await);
}

#[tokio::test]
async fn only_a_reaped_claim_takes_a_new_attempt_with_a_higher_fence() {
    let c = Claims::fresh("claims-create").await;
    assert_eq!(c.create("j", 3, "w1", 1_000).await.status, 201);
    c.create("j", 4, "w2", LONG).await.expect_error(409, "claim_exists");
    c.wait_state("j", "reaped", std::time::Duration::from_secs(30)).await;
    c.create("j", 3, "w2", LONG).await.expect_error(409, "stale_fence");
    let again = c.create("j", 4, "w2", LONG).await;
    assert_eq!(again.status, 201, "{}", again.text());
    rejected(&c.activate("j", "a", 3, "w1", LONG).await, "stale_fence");
    accepted(&c.activate("j", "b", 4, "w2", LONG).await);
    c.create("j", 9, "w3", LONG).await.expect_error(409, "claim_exists");
}

#[tokio::test]
async fn bad_requests_are_json_errors() {
    let c = Claims::fresh("claims-bad").await;
    let s = &c.store;
    let create_path = format!("/v1/{}/claims", enc(&c.ns));
    let post = |path: String, body: &str, key: Option<&'static str>| {
        let body = body.as_bytes().to_vec();
        async move {
            let headers: Vec<(&str, &str)> = key.map(|k| ("idempotency-key", k)).into_iter().collect();
            s.request("POST", &path, Some(body), &headers).await
        }
    };
    post(create_path.clone(), "{not json", None).await.expect_error(400, "invalid_body");
    post(create_path.clone(), r#"{"claim":"j","fence":1,"worker":"w"}"#, None).await.expect_error(400, "invalid_body");
    post(create_path.clone(), r#"{"claim":"j","fence":-1,"worker":"w","reservation_ttl_ms":5}"#, None)
        .await
        .expect_error(400, "invalid_body");
    post(create_path.clone(), r#"{"claim":"","fence":1,"worker":"w","reservation_ttl_ms":5}"#, None)
        .await
        .expect_error(400, "invalid_claim");
    post(create_path.clone(), r#"{"claim":"j","fence":1,"worker":"w\n","reservation_ttl_ms":5}"#, None)
        .await
        .expect_error(400, "invalid_worker");
    post(create_path.clone(), r#"{"claim":"j","fence":1,"worker":"w","reservation_ttl_ms":0}"#, None)
        .await
        .expect_error(400, "invalid_ttl");
    post(create_path.clone(), r#"{"claim":"j","fence":1,"worker":"w","reservation_ttl_ms":86400001}"#, None)
        .await
        .expect_error(400, "invalid_ttl");
    let huge = format!(r#"{{"claim":"{}","fence":1,"worker":"w","reservation_ttl_ms":5}}"#, "x".repeat(200_000));
    post(create_path.clone(), &huge, None).await.expect_error(413, "body_too_large");

    assert_eq!(c.create("j", 1, "w", LONG).await.status, 201);
    let activate = c.path("j", "activate");
    let body = r#"{"fence":1,"worker":"w","lease_ttl_ms":1000}"#;
    post(activate.clone(), body, None).await.expect_error(400, "missing_idempotency_key");
    post(activate.clone(), "[]", Some("k")).await.expect_error(400, "invalid_body");
    post(activate.clone(), r#"{"fence":1,"worker":"w","lease_ttl_ms":0}"#, Some("k"))
        .await
        .expect_error(400, "invalid_ttl");
    let long_key = "k".repeat(257);
    let resp = s.request("POST", &activate, Some(body.into()), &[("idempotency-key", &long_key)]).await;
    resp.expect_error(400, "invalid_idempotency_key");
    post(c.path("a/b", "activate"), body, Some("k")).await.expect_error(400, "invalid_claim");
    post(c.path(&"c".repeat(257), "activate"), body, Some("k")).await.expect_error(400, "invalid_claim");
    post(c.path("nope", "activate"), body, Some("k")).await.expect_error(404, "claim_not_found");
    s.request("GET", &c.path("nope", ""), None, &[]).await.expect_error(404, "claim_not_found");
    s.request("GET", &activate, None, &[]).await.expect_error(405, "method_not_allowed");
    s.request("DELETE", &create_path, None, &[]).await.expect_error(405, "method_not_allowed");
    // None of it touched the claim.
    let view = c.get("j").await;
    assert_eq!((view["state"].as_str(), view["activations"].as_u64()), (Some("authorized"), Some(0)), "{view}");
}

#[tokio::test]
async fn the_lease_prefix_is_read_only_through_the_kv_api() {
    let c = Claims::fresh("claims-prefix").await;
    let s = Store::from_env();
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    accepted(&c.activate("j", "k", 1, "w1", LONG).await);
    let lease_key = "_remora/lease/j";
    // The lease is in the namespace's Handoff KV, readable...
    let found = s.get(&c.ns, lease_key).await;
    assert_eq!(found.status, 200, "{}", found.text());
    let lease = found.json();
    assert_eq!((lease["fence"].as_u64(), lease["worker"].as_str()), (Some(1), Some("w1")), "{lease}");
    // ...and nobody but the claims service writes it.
    s.put(&c.ns, lease_key, br#"{"fence":1,"worker":"mallory","expires_at":99999999999999}"#)
        .await
        .expect_error(403, "reserved_key");
    s.delete(&c.ns, lease_key).await.expect_error(403, "reserved_key");
    s.put(&c.ns, "_remora/anything", b"x").await.expect_error(403, "reserved_key");
    assert_eq!(s.get(&c.ns, lease_key).await.json(), lease, "unchanged");
    assert_eq!(c.get("j").await["lease"]["worker"], "w1");
}

#[tokio::test]
async fn the_claim_store_is_not_reachable_from_outside() {
    let c = Claims::fresh("claims-internal").await;
    let s = &c.store;
    assert_eq!(c.create("j", 1, "w1", LONG).await.status, 201);
    let forged = [("handoff-internal-key", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")];
    let ns = enc(&c.ns);
    for path in [
        format!("/claims/create?ns={ns}"),
        format!("/claims/activate?ns={ns}"),
        format!("/claims/activate-baseline?ns={ns}"),
        format!("/claims/reap?ns={ns}"),
        format!("/claims/get?ns={ns}&key=j"),
        format!("/v1/{ns}/claims/j/activate-baseline"),
    ] {
        for method in ["GET", "POST"] {
            let resp = s.request(method, &path, Some(b"{}".to_vec()), &forged).await;
            assert_eq!(resp.status, 404, "{method} {path}: {}", resp.text());
        }
    }
    assert_eq!(c.get("j").await["state"], "authorized");
}

/// KV writers filled the namespace: an activation is refused with a
/// documented 507, not a 500, and applies nothing.
#[tokio::test]
async fn an_activation_in_a_namespace_full_of_kv_writes_is_507_and_applies_nothing() {
    let c = Claims::fresh_with("claims-full", r#"{"memory_budget_bytes":1048576}"#).await;
    let s = &c.store;
    // Big values, then the smallest records, until neither fits: no room is
    // left for anything, a lease included.
    for (size, prefix) in [(60_000, "big"), (1, "tiny")] {
        for i in 0.. {
            let resp = s.put(&c.ns, &format!("{prefix}{i}"), &vec![b'x'; size]).await;
            if resp.status == 507 {
                resp.expect_error(507, "namespace_full");
                break;
            }
            assert!(resp.status == 200 || resp.status == 503, "filling: {} {}", resp.status, resp.text());
            assert!(i < 100_000, "the namespace never filled");
        }
    }
    assert_eq!(c.create("job-1", 1, "w1", LONG).await.status, 201);
    c.activate("job-1", "op-1", 1, "w1", LONG).await.expect_error(507, "lease_store_full");
    let view = c.get("job-1").await;
    assert_eq!((&view["state"], &view["activations"]), (&Value::from("authorized"), &Value::from(0)), "{view}");
}
