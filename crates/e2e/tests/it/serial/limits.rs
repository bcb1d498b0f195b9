//! The limit on namespaces per deployment (`HANDOFF_MAX_NAMESPACES`;
//! `cargo xtask test` runs the Worker with 300). It fills the deployment up
//! to its limit, then empties what it filled.

use e2e::{Store, unique_ns};

#[tokio::test]
async fn a_deployment_has_at_most_its_limit_of_namespaces() {
    let s = Store::from_env();
    let listed = s.request("GET", "/v1", None, &[]).await.json();
    let (count, limit) = (listed["count"].as_u64().expect("count"), listed["limit"].as_u64().expect("limit"));
    assert!(count < limit, "{listed}");
    let mut created = Vec::new();
    for chunk in 0..(limit - count).div_ceil(16) {
        let batch: Vec<String> = (0..16).map(|i| unique_ns(&format!("limit-{chunk}-{i}"))).collect();
        let tasks: Vec<_> = batch
            .iter()
            .map(|ns| {
                let (s, ns) = (s.clone(), ns.clone());
                tokio::spawn(async move { (s.create_ns(&ns, "").await, ns) })
            })
            .collect();
        for task in tasks {
            let (resp, ns) = task.await.expect("task");
            match resp.status {
                201 => created.push(ns),
                _ => resp.expect_error(409, "namespace_limit"),
            }
        }
    }
    assert_eq!(created.len() as u64, limit - count, "exactly up to the limit");
    s.create_ns(&unique_ns("limit-over"), "").await.expect_error(409, "namespace_limit");
    let full = s.request("GET", "/v1", None, &[]).await.json();
    assert_eq!(full["count"].as_u64(), Some(limit), "{}", full["count"]);

    for ns in &created {
        let resp = s.request("DELETE", &format!("/v1/{}", e2e::enc(ns)), None, &[]).await;
        assert_eq!(resp.status, 200, "{ns}: {}", resp.text());
    }
    let one_more = unique_ns("limit-after");
    assert_eq!(s.create_ns(&one_more, "").await.status, 201, "room again after deleting");
    assert_eq!(s.request("DELETE", &format!("/v1/{}", e2e::enc(&one_more)), None, &[]).await.status, 200);
}
