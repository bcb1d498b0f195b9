//! The replicas' internal endpoints cannot be reached from outside, and
//! the replicas themselves refuse what does not come from the Worker; bad
//! peer messages are answered with errors, never with a panic (which would
//! wipe every replica in the isolate).

use e2e::{Ack, Found, Store, replica_field};
use protocol::handoff::message::MAX_BATCH;
use protocol::handoff::{
    Batch, Body, Epoch, Instance, Key, Message, Record, ReplicaId, Stamp, Value as RecordValue, Version, WriteId,
};

/// One message in its wire form.
fn wire(from: u8, to: u8, body: Body) -> Vec<u8> {
    Message::new(None, ReplicaId(from), ReplicaId(to), body).encode().expect("encodable")
}

/// A `POST /msg` body.
fn batch(messages: &[Vec<u8>]) -> Vec<u8> {
    Batch::encode(messages).expect("encodable")
}

fn heartbeat() -> Vec<u8> {
    wire(0, 1, Body::Heartbeat)
}

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
    let body = batch(&[heartbeat()]);
    for r in ["r0", "r1", "r2"] {
        // The test hook delivers the body to the replica's peer endpoint
        // WITHOUT the internal credential: the replica itself must refuse.
        let resp = s.request("POST", &format!("/v1/{ns}/_test/raw/{r}?auth=0"), Some(body.clone()), &[]).await;
        resp.expect_error(403, "forbidden");
    }
    // With it, the same (well-formed) message is accepted: the 403 above
    // was the credential check, not a broken endpoint.
    let resp = s.request("POST", &format!("/v1/{ns}/_test/raw/r1?auth=1"), Some(body), &[]).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    // The socket between replicas (`GET /link`) is refused the same way,
    // and opens with the credential.
    for (r, auth, status) in [("r0", 0, 403), ("r1", 0, 403), ("r2", 0, 403), ("r2", 1, 101)] {
        let resp = s.request("POST", &format!("/v1/{ns}/_test/link/{r}?auth={auth}"), None, &[]).await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        let got = resp.json()["status"].as_u64();
        assert_eq!(got, Some(status), "{r} auth={auth}: {}", resp.text());
    }
}

#[tokio::test]
async fn malformed_peer_messages_are_errors_not_panics() {
    let s = Store::from_env();
    let ns = s.new_ns("garbage").await;
    let ack = Ack::parse(&s.put(&ns, "k", b"survives").await);
    let before = s.wait_ready(&ns, std::time::Duration::from_secs(10)).await;
    let raw = |body: Vec<u8>| {
        let s = &s;
        let path = format!("/v1/{ns}/_test/raw/r1?auth=1");
        async move { s.request("POST", &path, Some(body), &[]).await }
    };
    // A body that is no batch is refused whole.
    let hb = heartbeat();
    let whole = batch(std::slice::from_ref(&hb));
    let mut trailing = whole.clone();
    trailing.push(0);
    let bad_bodies: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "empty"),
        (b"\xff\xfe\x00".to_vec(), "not a count"),
        (vec![0xff, 0xff, 0xff, 0xff, 0x0f], "4 G messages"),
        (vec![1, 0xff, 0xff, 0xff, 0xff, 0x0f], "a 4 GB message"),
        (whole[..whole.len() - 1].to_vec(), "truncated"),
        (trailing, "trailing bytes"),
        (batch(&vec![hb.clone(); MAX_BATCH + 1]), "too many messages"),
        (br#"[{"v":1,"generation":null,"from":0,"to":1,"body":{"type":"heartbeat"}}]"#.to_vec(), "version 1 JSON"),
    ];
    for (body, what) in bad_bodies {
        let resp = raw(body).await;
        assert_eq!(resp.status, 400, "{what}: {}", resp.text());
        assert_eq!(resp.error_code(), "bad_message", "{what}");
    }
    // In a well-formed batch each message stands alone: the bad ones are
    // counted as refused and skipped, the good ones stepped.
    let key = Key::new("k").expect("a key");
    let record = Record {
        stamp: Stamp { ep: Epoch(1), ver: Version(1) },
        wid: WriteId(42),
        value: RecordValue::Bytes(b"ghost".to_vec()),
        expires_at: None,
        fp: None,
    };
    let push = Body::Push { instance: Instance { born: 0, nonce: 1 }, key: key.clone(), record: record.clone() };
    let bad_messages: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "empty"),
        (vec![2], "truncated"),
        (vec![99, 0], "future version"),
        (vec![2, 0, 0, 1, 99], "unknown body"),
        (format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(), "deep nesting"),
        (wire(7, 1, Body::Heartbeat), "unknown replica"),
        (wire(0, 2, Body::Heartbeat), "wrong destination"),
        (wire(1, 1, Body::Heartbeat), "from itself"),
        (wire(2, 1, push), "push not from the coordinator"),
    ];
    let refused = |status: &serde_json::Value| replica_field(status, "r1", "refused").as_u64().unwrap_or(0);
    let refused_before = refused(&before);
    let mut body: Vec<Vec<u8>> = vec![hb.clone()];
    body.extend(bad_messages.iter().map(|(m, _)| m.clone()));
    body.push(hb.clone());
    let resp = raw(batch(&body)).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(Batch::decode(&resp.body).map(|r| r.len()), Ok(0), "heartbeats need no reply");
    let refused_after = refused(&s.status(&ns).await);
    assert!(
        refused_after >= refused_before + bad_messages.len() as u64,
        "{} bad messages, refused {refused_before} -> {refused_after}: {:?}",
        bad_messages.len(),
        bad_messages.iter().map(|(_, what)| what).collect::<Vec<_>>()
    );
    // An empty batch is fine.
    assert_eq!(raw(batch(&[])).await.status, 200);
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
