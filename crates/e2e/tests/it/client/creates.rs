//! 16 concurrent `If-None-Match: *` creates of one key: exactly one
//! applies; every other is refused with the winner's ETag, and the key
//! holds the winner's value.

use std::sync::Arc;

use handoff_client::{Error, PutOptions};
use tokio::sync::Barrier;

use super::{client, fresh_ns};

const CLIENTS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_of_sixteen_creates_succeeds() {
    let name = fresh_ns("creates").await.name().to_owned();
    let start = Arc::new(Barrier::new(CLIENTS));
    let mut tasks = Vec::new();
    for i in 0..CLIENTS {
        let (ns, start) = (client().namespace(&name), start.clone());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            (i, ns.put("the-key", format!("client {i}"), PutOptions::new().if_absent()).await)
        }));
    }
    let (mut winners, mut refused) = (Vec::new(), Vec::new());
    for task in tasks {
        match task.await.expect("a client task") {
            (i, Ok(written)) => winners.push((i, written.etag)),
            (_, Err(Error::PreconditionFailed { current })) => refused.push(current),
            (i, Err(e)) => panic!("client {i}: {e}"),
        }
    }
    let [(winner, etag)] = winners.as_slice() else { panic!("exactly one create applies, not {winners:?}") };
    assert_eq!(refused.len(), CLIENTS - 1);
    assert!(
        refused.iter().all(|current| current.as_ref() == Some(etag)),
        "refused with the winner's ETag: {refused:?}"
    );
    let read = client().namespace(&name).get("the-key").await.unwrap().expect("created");
    assert_eq!((read.value, &read.etag), (format!("client {winner}").into_bytes(), etag));
}
