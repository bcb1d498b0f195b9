//! Every route but `/health` needs a token: none, a wrong one, an expired
//! one → 401; one for another namespace or without the right → 403; and
//! nothing changes.

use std::time::Duration;

use e2e::claims::{Claims, accepted};
use e2e::{Ack, Found, Resp, Store, enc};
use serde_json::{Value, json};

/// Mints a token with `rights` on `ns` (`None`: every namespace) for
/// `ttl_seconds`, as `minter`.
async fn mint(minter: &Store, ns: Option<&str>, rights: &[&str], ttl_seconds: u64) -> Resp {
    let body = json!({ "namespace": ns, "rights": rights, "ttl_seconds": ttl_seconds }).to_string();
    minter.request("POST", "/v1/_tokens", Some(body.into_bytes()), &[("content-type", "application/json")]).await
}

async fn token(minter: &Store, ns: Option<&str>, rights: &[&str]) -> String {
    let resp = mint(minter, ns, rights, 3600).await;
    assert_eq!(resp.status, 201, "mint: {}", resp.text());
    resp.json()["token"].as_str().expect("token").to_string()
}

#[track_caller]
fn unauthorized(resp: &Resp) {
    resp.expect_error(401, "unauthorized");
    assert_eq!(resp.header("www-authenticate"), Some("Bearer"), "{:?}", resp.headers);
}

#[tokio::test]
async fn no_wrong_or_tampered_token_is_401_and_changes_nothing() {
    let admin = Store::from_env();
    let ns = admin.new_ns("auth-none").await;
    Ack::parse(&admin.put(&ns, "k", b"kept").await);
    let scoped = token(&admin, Some(&ns), &["read", "write"]).await;
    let tampered = format!("{}x", &scoped[..scoped.len() - 1]);
    let wrong = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".to_string();
    for who in [None, Some(wrong.as_str()), Some(tampered.as_str()), Some("")] {
        let s = admin.with_token(who);
        unauthorized(&s.put(&ns, "k", b"changed").await);
        unauthorized(&s.delete(&ns, "k").await);
        unauthorized(&s.get(&ns, "k").await);
        unauthorized(&s.request("DELETE", &format!("/v1/{}", enc(&ns)), None, &[]).await);
        unauthorized(&s.create_ns(&e2e::unique_ns("auth-none"), "").await);
        unauthorized(&s.request("GET", "/v1", None, &[]).await);
        unauthorized(&s.request("GET", "/v1/openapi.json", None, &[]).await);
        unauthorized(&s.request("GET", "/no-such-route", None, &[]).await);
    }
    let basic = [("authorization", "Basic dXNlcjpwYXNz")];
    unauthorized(&admin.request("GET", &Store::kv_path(&ns, "k"), None, &basic).await);
    // /health alone is open.
    assert_eq!(admin.with_token(None).request("GET", "/health", None, &[]).await.status, 200);
    assert_eq!(Found::parse(&admin.get(&ns, "k").await).value, b"kept", "nothing changed");
}

#[tokio::test]
async fn a_token_for_another_namespace_or_without_the_right_is_403() {
    let admin = Store::from_env();
    let (ns, other) = (admin.new_ns("auth-a").await, admin.new_ns("auth-b").await);
    Ack::parse(&admin.put(&ns, "k", b"kept").await);
    let c = Claims::new(&ns);
    assert_eq!(c.create("j", 1, "w1", 60_000).await.status, 201);

    let reader = admin.with_token(Some(&token(&admin, Some(&ns), &["read"]).await));
    assert_eq!(Found::parse(&reader.get(&ns, "k").await).value, b"kept");
    assert_eq!(reader.request("GET", &format!("/v1/{}/status", enc(&ns)), None, &[]).await.status, 200);
    assert_eq!(reader.request("GET", &c.path("j", ""), None, &[]).await.status, 200, "read sees claims");
    reader.put(&ns, "k", b"changed").await.expect_error(403, "forbidden");
    reader.delete(&ns, "k").await.expect_error(403, "forbidden");
    reader.get(&other, "k").await.expect_error(403, "forbidden");
    let activate = json!({ "fence": 1, "worker": "w1", "lease_ttl_ms": 60_000 }).to_string();
    reader
        .request("POST", &c.path("j", "activate"), Some(activate.clone().into_bytes()), &[("idempotency-key", "k1")])
        .await
        .expect_error(403, "forbidden");
    reader.request("DELETE", &format!("/v1/{}", enc(&ns)), None, &[]).await.expect_error(403, "forbidden");
    reader.request("GET", "/v1", None, &[]).await.expect_error(403, "forbidden");

    let writer = admin.with_token(Some(&token(&admin, Some(&ns), &["write"]).await));
    Ack::parse(&writer.put(&ns, "w", b"written").await);
    writer.get(&ns, "w").await.expect_error(403, "forbidden");
    writer.put(&other, "w", b"x").await.expect_error(403, "forbidden");

    let worker = admin.with_token(Some(&token(&admin, Some(&ns), &["claims"]).await));
    let as_worker = Claims { store: worker.clone(), ns: ns.clone() };
    accepted(&as_worker.activate("j", "k1", 1, "w1", 60_000).await);
    assert_eq!(as_worker.get("j").await["state"], "executing");
    worker.put(&ns, "k", b"changed").await.expect_error(403, "forbidden");
    Claims { store: worker, ns: other.clone() }.create("x", 1, "w", 1000).await.expect_error(403, "forbidden");

    // Nothing the refused requests asked for happened.
    assert_eq!(Found::parse(&admin.get(&ns, "k").await).value, b"kept");
    admin.get(&other, "w").await.expect_error(404, "key_not_found");
    admin
        .request("GET", &format!("/v1/{}/claims/x", enc(&other)), None, &[])
        .await
        .expect_error(404, "claim_not_found");
    assert_eq!(c.get("j").await["activations"], 1);
}

#[tokio::test]
async fn tokens_are_minted_by_admins_and_never_outlive_them() {
    let admin = Store::from_env();
    let (ns, other) = (admin.new_ns("auth-mint").await, admin.new_ns("auth-mint").await);
    let ns_admin = admin.with_token(Some(&token(&admin, Some(&ns), &["admin"]).await));
    // Admin on a namespace: every right there, minting included...
    Ack::parse(&ns_admin.put(&ns, "k", b"v").await);
    let minted = mint(&ns_admin, Some(&ns), &["read"], 60).await;
    assert_eq!(minted.status, 201, "{}", minted.text());
    let body: Value = minted.json();
    assert_eq!(body["namespace"], ns.as_str());
    assert_eq!(body["rights"], json!(["read"]));
    // ...and nothing elsewhere.
    mint(&ns_admin, Some(&other), &["read"], 60).await.expect_error(403, "forbidden");
    mint(&ns_admin, None, &["read"], 60).await.expect_error(403, "forbidden");
    ns_admin.request("GET", "/v1", None, &[]).await.expect_error(403, "forbidden");
    let reader = admin.with_token(Some(&token(&admin, Some(&ns), &["read"]).await));
    mint(&reader, Some(&ns), &["read"], 60).await.expect_error(403, "forbidden");
    // A deployment-wide admin lists the namespaces.
    let everywhere = admin.with_token(Some(&token(&admin, None, &["admin"]).await));
    let listed = everywhere.request("GET", "/v1", None, &[]).await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert!(listed.json()["namespaces"].as_array().is_some_and(|a| a.iter().any(|n| n["namespace"] == ns.as_str())));

    // A token minted by a token expires no later than it.
    let short = mint(&admin, Some(&ns), &["admin"], 2).await.json();
    let short_store = admin.with_token(short["token"].as_str());
    let child = mint(&short_store, Some(&ns), &["read"], 3600).await.json();
    assert!(child["expires_at"].as_u64() <= short["expires_at"].as_u64(), "{child} {short}");
    tokio::time::sleep(Duration::from_millis(3100)).await;
    unauthorized(&short_store.get(&ns, "k").await);
    unauthorized(&admin.with_token(child["token"].as_str()).get(&ns, "k").await);

    for (body, code) in [
        (json!({ "namespace": ns, "rights": [], "ttl_seconds": 60 }), "invalid_rights"),
        (json!({ "namespace": ns, "rights": ["read"], "ttl_seconds": 0 }), "invalid_ttl"),
        (json!({ "namespace": ns, "rights": ["root"], "ttl_seconds": 60 }), "invalid_body"),
        (json!({ "namespace": "_x", "rights": ["read"], "ttl_seconds": 60 }), "invalid_namespace"),
    ] {
        let resp = admin.request("POST", "/v1/_tokens", Some(body.to_string().into_bytes()), &[]).await;
        resp.expect_error(400, code);
    }
}

#[tokio::test]
async fn deleting_a_namespace_ends_its_tokens_even_if_it_is_created_again() {
    let admin = Store::from_env();
    let ns = admin.new_ns("auth-life").await;
    Ack::parse(&admin.put(&ns, "k", b"first life").await);
    let old = admin.with_token(Some(&token(&admin, Some(&ns), &["admin"]).await));
    assert_eq!(Found::parse(&old.get(&ns, "k").await).value, b"first life");
    let every = admin.with_token(Some(&token(&admin, None, &["admin"]).await));

    assert_eq!(admin.request("DELETE", &format!("/v1/{}", enc(&ns)), None, &[]).await.status, 200);
    // While it does not exist the token cannot create it again...
    unauthorized(&old.create_ns(&ns, "").await);
    // ...nor mint for it; and no token is minted for a namespace that does
    // not exist.
    mint(&admin, Some(&ns), &["read"], 60).await.expect_error(404, "namespace_not_found");
    assert_eq!(admin.create_ns(&ns, "").await.status, 201);
    // The new life's replicas are not running yet; the old token starts
    // none of them (the registry checks its life before admitting a boot).
    unauthorized(&old.get(&ns, "k").await);
    unauthorized(&old.request("GET", &format!("/v1/{}/kv", enc(&ns)), None, &[]).await);
    let replicas = admin.request("GET", &format!("/v1/{}/_test/replicas", enc(&ns)), None, &[]).await.json();
    let lines = replicas["replicas"].as_array().cloned().unwrap_or_default();
    assert_eq!(lines.len(), 3, "{replicas}");
    assert!(lines.iter().all(|line| line["booted"] == false), "the old token woke a replica: {replicas}");
    Ack::parse(&admin.put(&ns, "k", b"second life").await);

    // Every route of the namespace refuses the old token, and changes nothing.
    let c = Claims { store: old.clone(), ns: ns.clone() };
    unauthorized(&old.get(&ns, "k").await);
    unauthorized(&old.put(&ns, "k", b"from the first life").await);
    unauthorized(&old.delete(&ns, "k").await);
    unauthorized(&old.request("GET", &format!("/v1/{}/kv", enc(&ns)), None, &[]).await);
    unauthorized(&old.request("GET", &format!("/v1/{}/status", enc(&ns)), None, &[]).await);
    unauthorized(&old.request("GET", &format!("/v1/{}", enc(&ns)), None, &[]).await);
    unauthorized(&old.request("DELETE", &format!("/v1/{}", enc(&ns)), None, &[]).await);
    unauthorized(&old.create_ns(&ns, "").await);
    unauthorized(&c.create("j", 1, "w1", 60_000).await);
    unauthorized(&old.request("GET", &c.path("j", ""), None, &[]).await);
    unauthorized(&mint(&old, Some(&ns), &["read"], 60).await);
    // The test hooks too (they exist in this deployment).
    unauthorized(&old.request("POST", &format!("/v1/{}/_test/evict/r0", enc(&ns)), None, &[]).await);
    unauthorized(&old.request("GET", &format!("/v1/{}/_test/replicas", enc(&ns)), None, &[]).await);
    assert_eq!(Found::parse(&admin.get(&ns, "k").await).value, b"second life", "nothing changed");
    admin.request("GET", &format!("/v1/{}/claims/j", enc(&ns)), None, &[]).await.expect_error(404, "claim_not_found");

    // A token for every namespace is bound to none of them; one minted now
    // is bound to the second life.
    assert_eq!(Found::parse(&every.get(&ns, "k").await).value, b"second life");
    let new = admin.with_token(Some(&token(&admin, Some(&ns), &["read"]).await));
    assert_eq!(Found::parse(&new.get(&ns, "k").await).value, b"second life");
}
