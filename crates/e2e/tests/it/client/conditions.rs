//! ETags and conditional writes: every committed write gets a new ETag,
//! `If-Match` and `If-None-Match: *` apply a write only when they hold, and
//! a refused write changes nothing.

use handoff_client::{DeleteOptions, Error, PutOptions};

use super::{client, fresh_ns};

#[tokio::test]
async fn every_write_gets_a_new_etag_that_reads_return() {
    let ns = fresh_ns("etags").await;
    assert_eq!(ns.get("a/b").await.unwrap(), None, "absent before any write");
    let first = ns.put("a/b", "one", PutOptions::new()).await.unwrap();
    let read = ns.get("a/b").await.unwrap().expect("present");
    assert_eq!((read.value.as_slice(), &read.etag, read.expires_at), (&b"one"[..], &first.etag, None));
    let second = ns.put("a/b", "one", PutOptions::new()).await.unwrap();
    assert_ne!(second.etag, first.etag, "the same value written again is a new version");
    let deleted = ns.delete("a/b", DeleteOptions::new()).await.unwrap();
    assert_ne!(deleted.etag, second.etag);
    assert_eq!(ns.get("a/b").await.unwrap(), None);
}

#[tokio::test]
async fn if_match_applies_a_write_only_over_that_version() {
    let ns = fresh_ns("if-match").await;
    let v1 = ns.put("k", "1", PutOptions::new()).await.unwrap();
    let v2 = ns.put("k", "2", PutOptions::new().if_match(v1.etag.clone())).await.unwrap();
    assert_eq!(ns.get("k").await.unwrap().unwrap().value, b"2");

    // A write over a version that is gone: refused with the current ETag.
    match ns.put("k", "stale", PutOptions::new().if_match(v1.etag.clone())).await {
        Err(Error::PreconditionFailed { current }) => assert_eq!(current, Some(v2.etag.clone())),
        other => panic!("expected 412, got {other:?}"),
    }
    match ns.delete("k", DeleteOptions::new().if_match(v1.etag.clone())).await {
        Err(Error::PreconditionFailed { current }) => assert_eq!(current, Some(v2.etag.clone())),
        other => panic!("expected 412, got {other:?}"),
    }
    let read = ns.get("k").await.unwrap().unwrap();
    assert_eq!((read.value.as_slice(), &read.etag), (&b"2"[..], &v2.etag), "refused writes changed nothing");

    ns.delete("k", DeleteOptions::new().if_match(v2.etag.clone())).await.unwrap();
    assert_eq!(ns.get("k").await.unwrap(), None);
    // Over an absent key no ETag matches, and there is none to report.
    match ns.put("k", "again", PutOptions::new().if_match(v2.etag)).await {
        Err(Error::PreconditionFailed { current: None }) => {}
        other => panic!("expected 412 without ETag, got {other:?}"),
    }
    assert_eq!(ns.get("k").await.unwrap(), None);
}

#[tokio::test]
async fn if_none_match_creates_only_an_absent_key() {
    let ns = fresh_ns("if-none-match").await;
    let created = ns.put("k", "first", PutOptions::new().if_absent()).await.unwrap();
    match ns.put("k", "second", PutOptions::new().if_absent()).await {
        Err(Error::PreconditionFailed { current }) => assert_eq!(current, Some(created.etag.clone())),
        other => panic!("expected 412, got {other:?}"),
    }
    assert_eq!(ns.get("k").await.unwrap().unwrap().value, b"first");
    // Deleted is absent: the create applies again.
    ns.delete("k", DeleteOptions::new()).await.unwrap();
    ns.put("k", "third", PutOptions::new().if_absent()).await.unwrap();
    assert_eq!(ns.get("k").await.unwrap().unwrap().value, b"third");
}

#[tokio::test]
async fn an_unknown_namespace_is_not_found() {
    let ns = client().namespace(&e2e::unique_ns("client-never-created"));
    match ns.get("k").await {
        Err(Error::NotFound { code, .. }) => assert_eq!(code, "namespace_not_found"),
        other => panic!("expected 404, got {other:?}"),
    }
    match ns.put("k", "v", PutOptions::new().if_absent()).await {
        Err(Error::NotFound { code, .. }) => assert_eq!(code, "namespace_not_found"),
        other => panic!("expected 404, got {other:?}"),
    }
}
