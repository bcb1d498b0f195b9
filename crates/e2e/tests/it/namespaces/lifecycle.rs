//! A namespace exists once created, with its settings; requests to one that
//! does not exist are 404 and start nothing; a deleted one is gone with its
//! data and its claims.

use std::time::Duration;

use e2e::claims::Claims;
use e2e::{Ack, Found, Store, enc, unique_ns};
use serde_json::{Value, json};

#[tokio::test]
async fn created_once_same_settings_200_other_settings_409_out_of_range_400() {
    let s = Store::from_env();
    let ns = unique_ns("life-create");
    let settings = r#"{"idle_expiry_seconds":3600,"claim_retention_seconds":60,"memory_budget_bytes":4194304}"#;
    let created = s.create_ns(&ns, settings).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let info = created.json();
    assert_eq!(info["namespace"], ns.as_str());
    assert_eq!(
        info["settings"],
        json!({
            "idle_expiry_seconds": 3600,
            "claim_retention_seconds": 60,
            "memory_budget_bytes": 4194304,
            "max_claims": 100000,
            "max_claim_bytes": 1073741824
        })
    );
    assert_eq!(info["state"], "active");
    let again = s.create_ns(&ns, settings).await;
    assert_eq!(again.status, 200, "the same settings: {}", again.text());
    s.create_ns(&ns, r#"{"idle_expiry_seconds":60}"#).await.expect_error(409, "namespace_exists");
    s.create_ns(&ns, "").await.expect_error(409, "namespace_exists");
    assert_eq!(s.request("GET", &format!("/v1/{}", enc(&ns)), None, &[]).await.json(), info);

    // Defaults: an empty body and the defaults spelled out are the same.
    let plain = s.new_ns("life-defaults").await;
    let spelled = r#"{"idle_expiry_seconds":86400,"claim_retention_seconds":604800}"#;
    assert_eq!(s.create_ns(&plain, spelled).await.status, 200);

    for (body, field) in [
        (r#"{"memory_budget_bytes":1}"#, "memory_budget_bytes"),
        (r#"{"idle_expiry_seconds":1}"#, "idle_expiry_seconds"),
        (r#"{"idle_expiry_seconds":99999999}"#, "idle_expiry_seconds"),
        (r#"{"claim_retention_seconds":0}"#, "claim_retention_seconds"),
        (r#"{"max_claims":0}"#, "max_claims"),
        (r#"{"max_claim_bytes":1024}"#, "max_claim_bytes"),
    ] {
        let resp = s.create_ns(&unique_ns("life-bad"), body).await;
        resp.expect_error(400, "invalid_setting");
        assert!(resp.json()["error"]["message"].as_str().is_some_and(|m| m.contains(field)), "{}", resp.text());
    }
    for body in [r#"{"color":"blue"}"#, "{", r#"{"idle_expiry_seconds":"10"}"#] {
        s.create_ns(&unique_ns("life-bad"), body).await.expect_error(400, "invalid_body");
    }
    // Names of the API's own paths are not namespaces.
    for name in ["_mine", "_x", "%5Fencoded"] {
        let resp = s.request("PUT", &format!("/v1/{name}"), None, &[]).await;
        resp.expect_error(400, "invalid_namespace");
    }
    for name in ["_tokens", "openapi.json"] {
        s.request("PUT", &format!("/v1/{name}"), None, &[]).await.expect_error(405, "method_not_allowed");
    }
    s.request("PUT", "/v1/openapi.json/kv/k", Some(b"v".to_vec()), &[]).await.expect_error(400, "invalid_namespace");
}

#[tokio::test]
async fn requests_to_unknown_namespaces_are_404_and_start_nothing() {
    let s = Store::from_env();
    let unknown: Vec<String> = (0..50).map(|_| unique_ns("never")).collect();
    let create = json!({ "claim": "j", "fence": 1, "worker": "w", "reservation_ttl_ms": 1000 }).to_string();
    let attempt = json!({ "fence": 1, "worker": "w", "lease_ttl_ms": 1000 }).to_string();
    for (i, ns) in unknown.iter().enumerate() {
        let n = enc(ns);
        let resp = match i % 7 {
            0 => s.get(ns, "k").await,
            1 => s.put(ns, "k", b"v").await,
            2 => s.delete(ns, "k").await,
            3 => s.request("GET", &format!("/v1/{n}/status"), None, &[]).await,
            4 => s.request("POST", &format!("/v1/{n}/claims"), Some(create.clone().into_bytes()), &[]).await,
            5 => s.request("GET", &format!("/v1/{n}/claims/j"), None, &[]).await,
            _ => {
                let path = format!("/v1/{n}/claims/j/activate");
                s.request("POST", &path, Some(attempt.clone().into_bytes()), &[("idempotency-key", "k")]).await
            }
        };
        resp.expect_error(404, "namespace_not_found");
    }
    // No replica of any of them runs (asked without starting one), and the
    // deployment lists none of them.
    for ns in &unknown {
        let replicas = s.request("GET", &format!("/v1/{}/_test/replicas", enc(ns)), None, &[]).await.json();
        let lines = replicas["replicas"].as_array().cloned().unwrap_or_default();
        assert_eq!(lines.len(), 3, "{replicas}");
        for line in lines {
            assert_eq!(line["booted"], false, "{ns}: {line}");
        }
    }
    let listed = s.request("GET", "/v1", None, &[]).await.json();
    let names: Vec<&str> =
        listed["namespaces"].as_array().into_iter().flatten().filter_map(|n| n["namespace"].as_str()).collect();
    assert!(unknown.iter().all(|ns| !names.contains(&ns.as_str())), "{listed}");
    // Nor did their claim stores create anything.
    let count = s.request("GET", &format!("/v1/{}/_test/claims", enc(&unknown[0])), None, &[]).await;
    count.expect_error(404, "namespace_not_found");
}

#[tokio::test]
async fn a_deleted_namespace_is_gone_with_its_data_and_claims() {
    let s = Store::from_env();
    let ns = s.new_ns("life-delete").await;
    Ack::parse(&s.put(&ns, "k", b"v").await);
    let c = Claims::new(&ns);
    assert_eq!(c.create("j", 1, "w1", 60_000).await.status, 201);
    s.wait_ready(&ns, Duration::from_secs(20)).await;
    let listed = s.request("GET", "/v1", None, &[]).await.json();
    let entry = listed["namespaces"].as_array().and_then(|a| a.iter().find(|n| n["namespace"] == ns.as_str()).cloned());
    assert_eq!(entry.map(|e| e["replicas_booted"].clone()), Some(json!(["r0", "r1", "r2"])), "{listed}");

    let path = format!("/v1/{}", enc(&ns));
    let deleted = s.request("DELETE", &path, None, &[]).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert_eq!(deleted.json(), json!({ "deleted": ns }));
    let replicas = s.request("GET", &format!("/v1/{}/_test/replicas", enc(&ns)), None, &[]).await.json();
    for line in replicas["replicas"].as_array().cloned().unwrap_or_default() {
        assert_eq!(line["booted"], false, "{replicas}");
    }
    s.request("GET", &path, None, &[]).await.expect_error(404, "namespace_not_found");
    s.get(&ns, "k").await.expect_error(404, "namespace_not_found");
    s.request("GET", &c.path("j", ""), None, &[]).await.expect_error(404, "namespace_not_found");
    s.request("DELETE", &path, None, &[]).await.expect_error(404, "namespace_not_found");
    let listed = s.request("GET", "/v1", None, &[]).await.json();
    assert!(!listed.to_string().contains(&ns), "{listed}");

    // The same name again is a new, empty namespace.
    assert_eq!(s.create_ns(&ns, "").await.status, 201);
    s.get(&ns, "k").await.expect_error(404, "key_not_found");
    s.request("GET", &c.path("j", ""), None, &[]).await.expect_error(404, "claim_not_found");
    assert_eq!(c.create("j", 1, "w1", 60_000).await.status, 201, "the claim id is free again");
    let info: Value = s.request("GET", &path, None, &[]).await.json();
    assert_eq!(info["state"], "active");
    Ack::parse(&s.put(&ns, "k", b"new").await);
    assert_eq!(Found::parse(&s.get(&ns, "k").await).value, b"new");
}
