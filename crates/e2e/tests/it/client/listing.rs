//! Listing 10,000 keys page by page: each key exactly once, in key order,
//! only those with the prefix, pages no larger than their limit; and the
//! same while other keys are written and deleted between the pages (keys
//! present throughout are each listed exactly once).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use handoff_client::{DeleteOptions, Listed, MAX_PAGE, Namespace, PutOptions};

use super::fresh_ns;

const KEYS: usize = 10_000;
/// Fewer in the test with changes meanwhile: it is about the changes.
const CHURN_KEYS: usize = 2_000;
const WRITERS: usize = 16;

fn key(i: usize) -> String {
    format!("k/{i:05}")
}

/// Writes `k/00000` .. `k/{n - 1}` (value `v{i}`) and a key on either side
/// of the prefix.
async fn fill(ns: &Namespace, n: usize) {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let ns = ns.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..n).step_by(WRITERS) {
                ns.put(&key(i), format!("v{i}"), PutOptions::new()).await.unwrap_or_else(|e| panic!("{}: {e}", key(i)));
            }
        }));
    }
    for task in tasks {
        task.await.expect("a writer");
    }
    for outside in ["j/0", "k", "l/0"] {
        ns.put(outside, "x", PutOptions::new()).await.unwrap();
    }
}

/// Every key of a listing of prefix `k/` with pages of at most `limit`
/// (`None`: the server's default, 100), checking page sizes and that keys
/// only ever go forward.
async fn list_by_pages(ns: &Namespace, limit: Option<u32>) -> (Vec<Listed>, usize) {
    let most = limit.unwrap_or(100) as usize;
    let mut pages = ns.pages("k/", limit);
    let (mut all, mut count) = (Vec::<Listed>::new(), 0);
    while let Some(page) = pages.next_page().await.unwrap() {
        count += 1;
        assert!(page.len() <= most, "page {count} has {} keys, over its limit {most}", page.len());
        for listed in page {
            assert!(listed.key.starts_with("k/"), "{} does not have the prefix", listed.key);
            if let Some(previous) = all.last() {
                assert!(
                    listed.key > previous.key,
                    "{} listed after {}: twice, or out of order",
                    listed.key,
                    previous.key
                );
            }
            all.push(listed);
        }
    }
    (all, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_keys_each_listed_exactly_once() {
    let ns = fresh_ns("listing").await;
    fill(&ns, KEYS).await;
    let expected: Vec<String> = (0..KEYS).map(key).collect();

    let (big, pages) = list_by_pages(&ns, Some(MAX_PAGE)).await;
    assert_eq!(big.iter().map(|l| l.key.clone()).collect::<Vec<_>>(), expected);
    assert!((KEYS / MAX_PAGE as usize..=KEYS / MAX_PAGE as usize + 1).contains(&pages), "{pages} pages of 1000");
    let (small, pages) = list_by_pages(&ns, None).await;
    assert_eq!(small, big, "the same keys, ETags and sizes whatever the page size");
    assert!(pages >= KEYS / 100, "{pages} pages of at most 100");
    assert_eq!(ns.list_all("k/").await.unwrap(), big);

    // What a listing says of a key is what a read says.
    for i in [0, 4321, KEYS - 1] {
        let read = ns.get(&key(i)).await.unwrap().expect("written");
        let listed = &big[i];
        assert_eq!((&listed.etag, listed.bytes, listed.expires_at), (&read.etag, read.value.len() as u64, None));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_present_throughout_are_listed_once_while_others_change() {
    let ns = fresh_ns("listing-churn").await;
    fill(&ns, CHURN_KEYS).await;
    // Keys between the stable ones, written and deleted while listing.
    let churn = |i: usize| format!("{}~churn", key(i));
    let stop = Arc::new(AtomicBool::new(false));
    let churner = {
        let (ns, stop) = (ns.clone(), stop.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                ns.put(&churn(i * 37 % CHURN_KEYS), "c", PutOptions::new()).await.unwrap();
                ns.delete(&churn((i + CHURN_KEYS / 2) * 37 % CHURN_KEYS), DeleteOptions::new()).await.unwrap();
                i += 1;
            }
            i
        })
    };
    let (listed, _) = list_by_pages(&ns, Some(50)).await;
    stop.store(true, Ordering::SeqCst);
    let churned = churner.await.expect("the churner");
    assert!(churned > 0, "keys changed during the listing");

    // Keys only went forward (list_by_pages), so none was listed twice.
    let stable: Vec<&str> = listed.iter().map(|l| l.key.as_str()).filter(|k| !k.ends_with("~churn")).collect();
    let expected: Vec<String> = (0..CHURN_KEYS).map(key).collect();
    assert_eq!(stable, expected, "every key present throughout, exactly once");
}
