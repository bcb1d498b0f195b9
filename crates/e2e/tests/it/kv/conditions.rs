//! Conditional writes, TTLs and listings refused as documented, over raw
//! HTTP: each bad input gets its 400 or 412 and its code, and changes
//! nothing (the key keeps its value and its ETag).

use e2e::Store;

#[tokio::test]
async fn bad_conditions_ttls_and_pages_are_refused_and_change_nothing() {
    let s = Store::from_env();
    let ns = s.new_ns("bad-input").await;
    let path = Store::kv_path(&ns, "k");
    let first = s.request("PUT", &path, Some(b"v1".to_vec()), &[]).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let etag = first.header("etag").expect("a PUT answers its ETag").to_string();
    assert_eq!(first.json()["etag"].as_str(), Some(etag.as_str()));
    let weak = format!("W/{etag}");
    for (method, headers, status, code) in [
        ("PUT", vec![("if-match", weak.as_str())], 400, "invalid_precondition"),
        ("PUT", vec![("if-match", "\"not-a-tag\"")], 400, "invalid_precondition"),
        ("PUT", vec![("if-none-match", "\"x\"")], 400, "invalid_precondition"),
        ("DELETE", vec![("if-none-match", "*")], 400, "invalid_precondition"),
        ("PUT", vec![("handoff-ttl-ms", "0")], 400, "invalid_ttl"),
        ("PUT", vec![("handoff-ttl-ms", "2592000001")], 400, "invalid_ttl"),
        ("PUT", vec![("if-none-match", "*")], 412, "precondition_failed"),
    ] {
        let body = (method == "PUT").then(|| b"v2".to_vec());
        let resp = s.request(method, &path, body, &headers).await;
        resp.expect_error(status, code);
        if status == 412 {
            assert_eq!(resp.header("etag"), Some(etag.as_str()), "a 412 names the current ETag");
        }
    }
    // If-Match on a missing key: 412 without an ETag.
    let missing = Store::kv_path(&ns, "missing");
    let resp = s.request("PUT", &missing, Some(b"x".to_vec()), &[("if-match", etag.as_str())]).await;
    resp.expect_error(412, "precondition_failed");
    assert_eq!(resp.header("etag"), None);
    s.get(&ns, "missing").await.expect_error(404, "key_not_found");
    // Nothing changed.
    let now = s.get(&ns, "k").await;
    assert_eq!((now.status, now.body.as_slice(), now.header("etag")), (200, &b"v1"[..], Some(etag.as_str())));
    // HEAD: the headers, no body.
    let head = s.request("HEAD", &path, None, &[]).await;
    assert_eq!((head.status, head.header("etag"), head.body.len()), (200, Some(etag.as_str()), 0));
    // Listing pages out of range.
    for (query, code) in [("limit=0", "invalid_limit"), ("limit=1001", "invalid_limit"), ("after=", "invalid_cursor")] {
        s.request("GET", &format!("/v1/{ns}/kv?{query}"), None, &[]).await.expect_error(400, code);
    }
    let page = s.request("GET", &format!("/v1/{ns}/kv?limit=1"), None, &[]).await;
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(page.json()["keys"][0]["key"], "k");
    assert_eq!(page.json()["keys"][0]["etag"].as_str(), Some(etag.as_str()));
}
