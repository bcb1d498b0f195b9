//! Write ids: a request sent again with its write id is answered as the
//! first time (what makes the client's retries safe, conditional writes
//! included); the id used for another request is refused.

use handoff_client::{DeleteOptions, Error, PutOptions, WriteId};

use super::fresh_ns;

#[tokio::test]
async fn the_same_write_sent_again_is_answered_as_the_first_time() {
    let ns = fresh_ns("wid-same").await;
    let id = WriteId::random().unwrap();
    let first = ns.put("k", "v", PutOptions::new().write_id(id)).await.unwrap();
    let again = ns.put("k", "v", PutOptions::new().write_id(id)).await.unwrap();
    assert_eq!((again.etag, again.write_id), (first.etag.clone(), id), "not applied twice");
    assert_eq!(ns.get("k").await.unwrap().unwrap().etag, first.etag);
}

#[tokio::test]
async fn a_conditional_write_sent_again_is_not_refused_by_its_own_first_attempt() {
    let ns = fresh_ns("wid-cond").await;
    let v1 = ns.put("k", "1", PutOptions::new()).await.unwrap();
    // As if the answer to the first attempt were lost: the retry carries the
    // same id and the same If-Match, which no longer matches the key.
    let cas = PutOptions::new().if_match(v1.etag.clone()).write_id(WriteId::random().unwrap());
    let first = ns.put("k", "2", cas.clone()).await.unwrap();
    let retry = ns.put("k", "2", cas).await.expect("the first answer, not a 412");
    assert_eq!(retry.etag, first.etag);

    let create = PutOptions::new().if_absent().write_id(WriteId::random().unwrap());
    let made = ns.put("new", "x", create.clone()).await.unwrap();
    assert_eq!(ns.put("new", "x", create).await.unwrap().etag, made.etag);

    let delete = DeleteOptions::new().if_match(made.etag).write_id(WriteId::random().unwrap());
    let gone = ns.delete("new", delete.clone()).await.unwrap();
    assert_eq!(ns.delete("new", delete).await.unwrap().etag, gone.etag);
    assert_eq!(ns.get("new").await.unwrap(), None);
}

#[tokio::test]
async fn a_write_id_reused_for_another_request_is_refused() {
    let ns = fresh_ns("wid-reused").await;
    let id = WriteId::random().unwrap();
    let first = ns.put("k", "v", PutOptions::new().write_id(id)).await.unwrap();
    for other in [
        PutOptions::new().write_id(id).if_absent(),
        PutOptions::new().write_id(id).ttl(std::time::Duration::from_secs(60)),
    ] {
        assert!(matches!(ns.put("k", "v", other).await, Err(Error::WriteIdReused { .. })));
    }
    assert!(matches!(
        ns.put("k", "another value", PutOptions::new().write_id(id)).await,
        Err(Error::WriteIdReused { .. })
    ));
    let read = ns.get("k").await.unwrap().unwrap();
    assert_eq!((read.value.as_slice(), read.etag), (&b"v"[..], first.etag), "nothing changed");
}
