//! The HTTP API: the happy paths and every error of the contract.

use std::time::Duration;

use e2e::{Ack, Found, Store, enc, enc_bytes, new_wid, replica_field, unique_ns};

const SETTLE: Duration = Duration::from_secs(10);

#[tokio::test]
async fn put_get_overwrite_delete() {
    let s = Store::from_env();
    let ns = s.new_ns("api").await;
    let first = Ack::parse(&s.put(&ns, "greeting", b"hello").await);
    assert_eq!(first.key, "greeting");
    assert!(first.ep >= 1 && first.ver >= 1, "{first:?}");

    let got = Found::parse(&s.get(&ns, "greeting").await);
    assert_eq!(got.value, b"hello");
    assert_eq!((got.ep, got.ver, got.wid.as_str()), (first.ep, first.ver, first.wid.as_str()));

    let second = Ack::parse(&s.put(&ns, "greeting", b"hello again").await);
    assert!(second.stamp() > first.stamp(), "an overwrite gets a later stamp: {first:?} then {second:?}");
    assert_ne!(second.wid, first.wid);
    let got = Found::parse(&s.get(&ns, "greeting").await);
    assert_eq!(got.value, b"hello again");
    assert_eq!(got.stamp(), second.stamp());

    let del = Ack::parse(&s.delete(&ns, "greeting").await);
    assert!(del.stamp() > second.stamp(), "{del:?}");
    let gone = s.get(&ns, "greeting").await;
    gone.expect_error(404, "key_not_found");
    // The 404 of a deleted key names its deletion's stamp; a key never
    // written names none.
    let stamp = |h: &str| gone.header(h).and_then(|v| v.parse::<u64>().ok());
    assert_eq!((stamp("handoff-epoch"), stamp("handoff-version")), (Some(del.ep), Some(del.ver)), "{:?}", gone.headers);
    let never = s.get(&ns, "never-written").await;
    never.expect_error(404, "key_not_found");
    assert_eq!(never.header("handoff-epoch"), None);

    // Deleting what is already gone is a committed tombstone, too.
    let again = Ack::parse(&s.delete(&ns, "greeting").await);
    assert!(again.stamp() > del.stamp());
    // And a deleted key can be written again.
    Ack::parse(&s.put(&ns, "greeting", b"back").await);
    assert_eq!(Found::parse(&s.get(&ns, "greeting").await).value, b"back");
}

#[tokio::test]
async fn status_reports_three_replicas() {
    let s = Store::from_env();
    let ns = s.new_ns("status").await;
    for k in ["a", "b", "c"] {
        Ack::parse(&s.put(&ns, k, k.as_bytes()).await);
    }
    Ack::parse(&s.delete(&ns, "c").await);
    let status = s.wait_ready(&ns, SETTLE).await;
    let replicas = status["replicas"].as_array().expect("replicas array");
    let names: Vec<&str> = replicas.iter().map(|r| r["name"].as_str().unwrap_or("")).collect();
    assert_eq!(names, ["r0", "r1", "r2"]);
    let roles: Vec<&str> = replicas.iter().map(|r| r["role"].as_str().unwrap_or("")).collect();
    assert_eq!(roles, ["coordinator", "peer", "peer"]);
    for r in replicas {
        assert_eq!(r["status"], "ready", "{r}");
        for field in ["epoch", "known", "keys"] {
            assert!(r[field].is_u64(), "{field} is a number: {r}");
        }
    }
    // The coordinator holds exactly the committed live keys (c is deleted).
    assert_eq!(replica_field(&status, "r0", "keys"), 2, "{status}");
    // Pushes reach both peers: they converge on the same two keys.
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        let st = s.status(&ns).await;
        if replica_field(&st, "r1", "keys") == 2 && replica_field(&st, "r2", "keys") == 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "peers did not converge: {st}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn binary_and_edge_values() {
    let s = Store::from_env();
    let ns = s.new_ns("bin").await;
    let all_bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    let invalid_utf8 = vec![0xff, 0xfe, 0x00, 0xc3, 0x28, 0xa0, 0xa1];
    let max = vec![0xa5u8; 1024 * 1024];
    for (key, value) in [("all-bytes", all_bytes), ("not-utf8", invalid_utf8), ("empty", Vec::new()), ("one-mib", max)]
    {
        Ack::parse(&s.put(&ns, key, &value).await);
        let got = s.get(&ns, key).await;
        assert_eq!(got.header("content-type"), Some("application/octet-stream"));
        assert_eq!(Found::parse(&got).value, value, "{key}");
    }
}

#[tokio::test]
async fn awkward_but_valid_names() {
    let s = Store::from_env();
    let max_key = "k".repeat(512);
    let max_ns = format!("n{}", "s".repeat(511));
    for (ns, key) in [
        (unique_ns("names"), "a/b/c".to_string()),
        (unique_ns("names"), "with space & ? # %".to_string()),
        (unique_ns("names"), "🔑 clé".to_string()),
        (unique_ns("names"), "colon:r0".to_string()),
        (unique_ns("names:with:colons"), "k".to_string()),
        (unique_ns("names"), max_key),
        (max_ns, "k".to_string()),
    ] {
        assert_eq!(s.create_ns(&ns, "").await.status, 201, "{ns}");
        let value = format!("{ns}/{key}");
        let ack = Ack::parse(&s.put(&ns, &key, value.as_bytes()).await);
        assert_eq!(ack.key, key);
        assert_eq!(Found::parse(&s.get(&ns, &key).await).value, value.as_bytes(), "{ns} {key}");
    }
    // A raw "/" and "%2F" in a key are the same key.
    let ns = s.new_ns("slash").await;
    Ack::parse(&s.request("PUT", &format!("/v1/{ns}/kv/x/y"), Some(b"raw".to_vec()), &[]).await);
    assert_eq!(Found::parse(&s.request("GET", &format!("/v1/{ns}/kv/x%2Fy"), None, &[]).await).value, b"raw");
}

#[tokio::test]
async fn unknown_namespaces_and_keys() {
    let s = Store::from_env();
    // A namespace that does not exist: 404, whatever the request.
    let unknown = unique_ns("never-created");
    s.get(&unknown, "k").await.expect_error(404, "namespace_not_found");
    s.put(&unknown, "k", b"v").await.expect_error(404, "namespace_not_found");
    s.delete(&unknown, "k").await.expect_error(404, "namespace_not_found");
    s.request("GET", &format!("/v1/{unknown}/status"), None, &[]).await.expect_error(404, "namespace_not_found");
    // A created one starts empty: reads find nothing, writes work.
    let ns = s.new_ns("fresh").await;
    s.get(&ns, "nothing-here").await.expect_error(404, "key_not_found");
    Ack::parse(&s.delete(&ns, "nothing-here").await);
    s.get(&ns, "nothing-here").await.expect_error(404, "key_not_found");
    let status = s.wait_ready(&ns, SETTLE).await;
    assert_eq!(replica_field(&status, "r0", "keys"), 0);
}

#[tokio::test]
async fn bad_names_are_400() {
    let s = Store::from_env();
    let ns = s.new_ns("bad").await;
    let long = "k".repeat(513);
    let long_utf8 = "é".repeat(257); // 514 bytes
    for (path, code) in [
        (format!("/v1/{ns}/kv/"), "invalid_key"),
        (format!("/v1/{ns}/kv/{}", enc(&long)), "invalid_key"),
        (format!("/v1/{ns}/kv/{}", enc(&long_utf8)), "invalid_key"),
        (format!("/v1/{ns}/kv/a%00b"), "invalid_key"),
        (format!("/v1/{ns}/kv/a%0Ab"), "invalid_key"),
        (format!("/v1/{ns}/kv/%7F"), "invalid_key"),
        (format!("/v1/{ns}/kv/{}", enc_bytes(&[0xff, 0xfe])), "invalid_key"),
        ("/v1//kv/k".to_string(), "invalid_namespace"),
        ("/v1/a%2Fb/kv/k".to_string(), "invalid_namespace"),
        (format!("/v1/{}/kv/k", enc(&long)), "invalid_namespace"),
        ("/v1/a%01b/kv/k".to_string(), "invalid_namespace"),
        ("/v1/%C3/kv/k".to_string(), "invalid_namespace"),
        ("/v1/a%09b/status".to_string(), "invalid_namespace"),
    ] {
        for method in ["GET", "PUT", "DELETE"] {
            if path.ends_with("/status") && method != "GET" {
                continue;
            }
            let body = (method == "PUT").then(|| b"v".to_vec());
            s.request(method, &path, body, &[]).await.expect_error(400, code);
        }
    }
    // A huge key is refused without being stored anywhere.
    let huge = "h".repeat(8 * 1024);
    s.request("PUT", &format!("/v1/{ns}/kv/{huge}"), Some(b"v".to_vec()), &[]).await.expect_error(400, "invalid_key");
    // A query parameter on a key would be ignored (a time to live is the
    // Handoff-TTL-Ms header): refused, and nothing written.
    for method in ["GET", "PUT", "DELETE"] {
        let body = (method == "PUT").then(|| b"v".to_vec());
        s.request(method, &format!("/v1/{ns}/kv/q?ttl_ms=5"), body, &[]).await.expect_error(400, "bad_request");
    }
    s.get(&ns, "q").await.expect_error(404, "key_not_found");
}

#[tokio::test]
async fn values_over_one_mib_are_413() {
    let s = Store::from_env();
    let ns = s.new_ns("big").await;
    let resp = s.put(&ns, "big", &vec![1u8; 1024 * 1024 + 1]).await;
    resp.expect_error(413, "value_too_large");
    let resp = s.put(&ns, "bigger", &vec![2u8; 5 * 1024 * 1024]).await;
    resp.expect_error(413, "value_too_large");
    s.get(&ns, "big").await.expect_error(404, "key_not_found");
    // The same without a Content-Length (chunked): counted while read.
    let resp = e2e::chunked_put(&s.base, &format!("/v1/{ns}/kv/chunked"), 1024 * 1024 + 10).await;
    assert!(resp.starts_with("HTTP/1.1 413"), "chunked oversize: {resp}");
    let ok = e2e::chunked_put(&s.base, &format!("/v1/{ns}/kv/chunked-ok"), 1000).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "chunked small: {ok}");
    assert_eq!(Found::parse(&s.get(&ns, "chunked-ok").await).value, vec![b'x'; 1000]);
}

#[tokio::test]
async fn wrong_methods_are_405_with_allow() {
    let s = Store::from_env();
    let ns = s.new_ns("methods").await;
    for (method, path, allow) in [
        ("POST", format!("/v1/{ns}/kv/k"), "GET, HEAD, PUT, DELETE"),
        ("PATCH", format!("/v1/{ns}/kv/k"), "GET, HEAD, PUT, DELETE"),
        ("OPTIONS", format!("/v1/{ns}/kv/k"), "GET, HEAD, PUT, DELETE"),
        ("PUT", format!("/v1/{ns}/kv"), "GET"),
        ("DELETE", format!("/v1/{ns}/kv"), "GET"),
        ("PUT", format!("/v1/{ns}/status"), "GET"),
        ("DELETE", format!("/v1/{ns}/status"), "GET"),
        ("POST", "/health".to_string(), "GET"),
        ("GET", format!("/v1/{ns}/_test/evict/r1"), "POST"),
    ] {
        let resp = s.request(method, &path, None, &[]).await;
        resp.expect_error(405, "method_not_allowed");
        assert_eq!(resp.header("allow"), Some(allow), "{method} {path}");
    }
}

#[tokio::test]
async fn unknown_paths_are_404() {
    let s = Store::from_env();
    for path in ["/", "/v1/", "/v1/ns/", "/v1/ns/kvs", "/v1/ns/keys/k", "/v2/ns/kv/k", "/V1/ns/kv/k", "/healthz"] {
        for method in ["GET", "PUT", "POST", "DELETE"] {
            s.request(method, path, None, &[]).await.expect_error(404, "not_found");
        }
    }
}

#[tokio::test]
async fn write_ids_make_retries_idempotent() {
    let s = Store::from_env();
    let ns = s.new_ns("wid").await;
    let wid = new_wid();
    let first = Ack::parse(&s.put_wid(&ns, "k", b"once", &wid).await);
    assert_eq!(first.wid, wid);
    let retry = Ack::parse(&s.put_wid(&ns, "k", b"once", &wid).await);
    assert_eq!(retry, first, "a retried write id is answered from the committed write, not written twice");
    for bad in ["", "xyz", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef00"] {
        s.put_wid(&ns, "k", b"v", bad).await.expect_error(400, "invalid_write_id");
    }
}

#[tokio::test]
async fn bodies_where_none_belong_are_ignored() {
    let s = Store::from_env();
    let ns = s.new_ns("bodies").await;
    Ack::parse(&s.put(&ns, "k", b"v").await);
    // A body on GET/DELETE is not a value: ignored, never stored.
    let got = s.request("GET", &Store::kv_path(&ns, "k"), Some(b"ignored".to_vec()), &[]).await;
    assert_eq!(Found::parse(&got).value, b"v");
    Ack::parse(&s.request("DELETE", &Store::kv_path(&ns, "k"), Some(b"{\"not\":\"json\"".to_vec()), &[]).await);
    s.get(&ns, "k").await.expect_error(404, "key_not_found");
    // Content types mean nothing: a value is bytes.
    let json_ct = [("content-type", "application/json")];
    Ack::parse(&s.request("PUT", &Store::kv_path(&ns, "j"), Some(b"{broken".to_vec()), &json_ct).await);
    assert_eq!(Found::parse(&s.get(&ns, "j").await).value, b"{broken");
}
