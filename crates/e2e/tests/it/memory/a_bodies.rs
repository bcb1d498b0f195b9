//! A body over its limit is refused after reading at most the limit and a
//! chunk: 32 MiB, chunked or with a Content-Length, grows the isolate's
//! wasm memory by less than 2 MiB (wasm memory never shrinks, so a body
//! read whole before it is refused would cost 32 MiB for good).

use e2e::Store;

use super::isolate;

const BIG: usize = 32 * 1024 * 1024;
const GROWTH: u64 = 2 * 1024 * 1024;

#[tokio::test]
async fn a_32_mib_body_is_refused_without_being_read() {
    let s = Store::from_env();
    let ns = s.new_ns("bodies").await;
    // The path warmed up: a value of the largest size, accepted.
    s.put(&ns, "warm", &vec![1u8; 1024 * 1024]).await;
    let (before, _) = isolate(&s).await;
    // The Worker answers 413 before the body ends; the local runtime in
    // front of it at times turns that early answer into its own 503 (the
    // Worker's log shows the 413). Such an attempt is sent again, at most
    // twice: every attempt counts against the memory growth below.
    let mut head = String::new();
    for _ in 0..3 {
        head = e2e::chunked_put(&s.base, &format!("/v1/{ns}/kv/chunked"), BIG).await;
        if !head.starts_with("HTTP/1.1 503") {
            break;
        }
    }
    assert!(head.starts_with("HTTP/1.1 413"), "chunked 32 MiB: {head}");
    let (after_chunked, _) = isolate(&s).await;
    s.put(&ns, "declared", &vec![2u8; BIG]).await.expect_error(413, "value_too_large");
    let (after, _) = isolate(&s).await;
    println!("wasm memory: {before} before, {after_chunked} after the chunked body, {after} after the declared one");
    assert!(after - before < GROWTH, "the isolate grew {} bytes for two refused 32 MiB bodies", after - before);
    s.get(&ns, "chunked").await.expect_error(404, "key_not_found");
    s.get(&ns, "declared").await.expect_error(404, "key_not_found");
}
