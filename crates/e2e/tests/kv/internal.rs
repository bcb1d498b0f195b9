//! The replicas' internal endpoints cannot be reached from outside, and
//! the replicas themselves refuse what does not come from the Worker; bad
//! peer messages are answered with errors, never with a panic (which would
//! wipe every replica in the isolate).

use e2e::{Ack, Found, Store, replica_field};

#[tokio::test]
async fn internal_endpoints_are_not_routed() {
    let s = Store::from_env();
    let ns = s.new_ns("internal").await;
    Ack::parse(&s.put(&ns, "k", b"v").await);
    let secretish = [("handoff-internal-key", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")];
    let spoof_host = [("host", "handoff.internal")];
    for path in [
        "/msg".to_string(),
        format!("/msg?ns={ns}&r=r1"),
        format!("/put?ns={ns}&r=r0&key=k"),
        format!("/get?ns={ns}&r=r0&key=k"),
        format!("/delete?ns={ns}&r=r0&key=k"),
        format!("/status?ns={ns}&r=r0"),
        format!("/evict?ns={ns}&r=r0"),
        format!("/pause?ns={ns}&r=r1&ms=1000"),
        format!("/whoami?ns={ns}&r=r0"),
        "/ping".to_string(),
        "/internal/ping".to_string(),
        format!("/v1/{ns}/msg"),
        format!("/v1/{ns}/r1/msg"),
        format!("/v1/{ns}:r1/msg"),
        format!("/v1/{ns}/_internal/msg"),
    ] {
        for method in ["GET", "POST", "PUT", "DELETE"] {
            for headers in [&secretish[..], &spoof_host[..], &[]] {
                let resp = s.request(method, &path, Some(b"{}".to_vec()), headers).await;
                resp.expect_error(404, "not_found");
            }
        }
    }
    // The data is untouched by all of that.
    assert_eq!(Found::parse(&s.get(&ns, "k").await).value, b"v");
}

#[tokio::test]
async fn replicas_refuse_requests_without_the_worker_credential() {
    let s = Store::from_env();
    let ns = s.new_ns("noauth").await;
    Ack::parse(&s.put(&ns, "k", b"v").await);
    let heartbeat = br#"{"v":1,"generation":null,"from":0,"to":1,"body":{"type":"heartbeat"}}"#;
    for r in ["r0", "r1", "r2"] {
        // The test hook delivers the body to the replica's peer endpoint
        // WITHOUT the internal credential: the replica itself must refuse.
        let resp = s.request("POST", &format!("/v1/{ns}/_test/raw/{r}?auth=0"), Some(heartbeat.to_vec()), &[]).await;
        resp.expect_error(403, "forbidden");
    }
    // With it, the same (well-formed) message is accepted: the 403 above
    // was the credential check, not a broken endpoint.
    let resp = s.request("POST", &format!("/v1/{ns}/_test/raw/r1?auth=1"), Some(heartbeat.to_vec()), &[]).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
}

#[tokio::test]
async fn malformed_peer_messages_are_errors_not_panics() {
    let s = Store::from_env();
    let ns = s.new_ns("garbage").await;
    let ack = Ack::parse(&s.put(&ns, "k", b"survives").await);
    let before = s.wait_ready(&ns, std::time::Duration::from_secs(10)).await;
    let deep = format!("{}1{}", "{\"v\":".repeat(100_000), "}".repeat(100_000));
    let bodies: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "empty"),
        (b"\xff\xfe\x00".to_vec(), "not utf-8"),
        (b"null".to_vec(), "null"),
        (b"{\"v\":1}".to_vec(), "missing fields"),
        (b"{\"v\":99,\"x\":1}".to_vec(), "future version"),
        (b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"nope\"}}".to_vec(), "unknown type"),
        (b"{\"v\":1,\"generation\":null,\"from\":300,\"to\":1,\"body\":{\"type\":\"heartbeat\"}}".to_vec(), "sender out of range"),
        (b"{\"v\":1,\"generation\":null,\"from\":7,\"to\":1,\"body\":{\"type\":\"heartbeat\"}}".to_vec(), "unknown replica"),
        (b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":2,\"body\":{\"type\":\"heartbeat\"}}".to_vec(), "wrong destination"),
        (b"{\"v\":1,\"generation\":null,\"from\":1,\"to\":1,\"body\":{\"type\":\"heartbeat\"}}".to_vec(), "from itself"),
        (
            b"{\"v\":1,\"generation\":null,\"from\":2,\"to\":1,\"body\":{\"type\":\"push\",\"instance\":1,\"key\":\"k\",\"record\":{\"stamp\":{\"ep\":1,\"ver\":1},\"wid\":\"0000000000000000000000000000002a\",\"value\":{\"bytes\":\"00\"}}}}".to_vec(),
            "push not from the coordinator",
        ),
        (
            b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"push\",\"instance\":1,\"key\":\"\",\"record\":{\"stamp\":{\"ep\":1,\"ver\":1},\"wid\":\"2a\",\"value\":{\"bytes\":\"0\"}}}}".to_vec(),
            "invalid key, wid and bytes",
        ),
        (b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"collect\",\"instance\":-1}}".to_vec(), "negative"),
        (b"{\"v\":1,\"generation\":{\"minted_at\":1e400,\"nonce\":1},\"from\":0,\"to\":1,\"body\":{\"type\":\"heartbeat\"}}".to_vec(), "huge number"),
        (deep.into_bytes(), "deep nesting"),
    ];
    for (body, what) in bodies {
        let resp = s.request("POST", &format!("/v1/{ns}/_test/raw/r1?auth=1"), Some(body), &[]).await;
        assert!(matches!(resp.status, 400 | 409), "{what}: expected 400/409, got {}: {}", resp.status, resp.text());
        let code = resp.error_code();
        assert!(matches!(code.as_str(), "bad_message" | "refused"), "{what}: {code}");
    }
    // Batches (what replicas send each other under load): a malformed
    // batch is refused whole; in a well-formed one, each message stands
    // alone.
    let hb = r#"{"v":1,"generation":null,"from":0,"to":1,"body":{"type":"heartbeat"}}"#;
    for (body, status) in [
        (format!("[{hb},{hb}]"), 200),
        (format!("[{hb},{{\"v\":1}},\"junk\",{hb}]"), 200),
        ("[]".to_string(), 200),
        // Deep nesting inside a batch: one undecodable element, skipped.
        (format!("[{}{}]", "[".repeat(100_000), "]".repeat(100_000)), 200),
        (format!("[{hb},"), 400),
        (format!("[{}]", vec![hb; 300].join(",")), 400),
    ] {
        let resp = s.request("POST", &format!("/v1/{ns}/_test/raw/r1?auth=1"), Some(body.into_bytes()), &[]).await;
        assert_eq!(resp.status, status, "{}", resp.text());
        if status == 200 {
            assert_eq!(resp.json(), serde_json::json!([]), "heartbeats need no reply");
        } else {
            assert_eq!(resp.error_code(), "bad_message");
        }
    }
    // Nothing panicked: the same object instances, the same protocol
    // instances, the data intact, still serving writes.
    let after = s.status(&ns).await;
    for r in ["r0", "r1", "r2"] {
        for field in ["object", "instance"] {
            assert_eq!(replica_field(&after, r, field), replica_field(&before, r, field), "{r} {field}: {after}");
        }
    }
    let found = Found::parse(&s.get(&ns, "k").await);
    assert_eq!((found.value.as_slice(), found.stamp()), (&b"survives"[..], ack.stamp()));
    Ack::parse(&s.put(&ns, "k2", b"still serving").await);
}
