//! A client for the claims API (`/v1/{ns}/claims...`), on top of [`Store`].

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Resp, Store, enc};

/// The claims of one namespace.
#[derive(Clone)]
pub struct Claims {
    pub store: Store,
    pub ns: String,
}

impl Claims {
    /// The claims of namespace `ns` (which must exist).
    pub fn new(ns: &str) -> Claims {
        Claims { store: Store::from_env(), ns: ns.to_string() }
    }

    /// The claims of a fresh namespace named after `prefix`.
    pub async fn fresh(prefix: &str) -> Claims {
        Claims::new(&crate::new_ns(prefix).await)
    }

    /// The claims of a fresh namespace created with `settings`.
    pub async fn fresh_with(prefix: &str, settings: &str) -> Claims {
        Claims::new(&Store::from_env().new_ns_with(prefix, settings).await)
    }

    pub fn path(&self, claim: &str, action: &str) -> String {
        let base = format!("/v1/{}/claims/{}", enc(&self.ns), enc(claim));
        if action.is_empty() { base } else { format!("{base}/{action}") }
    }

    /// `POST /v1/{ns}/claims`.
    pub async fn create(&self, claim: &str, fence: u64, worker: &str, reservation_ttl_ms: u64) -> Resp {
        let body =
            json!({ "claim": claim, "fence": fence, "worker": worker, "reservation_ttl_ms": reservation_ttl_ms });
        let path = format!("/v1/{}/claims", enc(&self.ns));
        self.store.request("POST", &path, Some(body.to_string().into_bytes()), &[]).await
    }

    /// `POST /v1/{ns}/claims` with the body `body` as given.
    pub async fn create_raw(&self, body: &Value) -> Resp {
        let path = format!("/v1/{}/claims", enc(&self.ns));
        self.store.request("POST", &path, Some(body.to_string().into_bytes()), &[]).await
    }

    /// `POST .../complete` with `Idempotency-Key: key` (none if `None`) and
    /// the body `body` as given.
    pub async fn complete_raw(&self, claim: &str, key: Option<&str>, body: Vec<u8>) -> Resp {
        let headers: Vec<(&str, &str)> = key.map(|k| ("idempotency-key", k)).into_iter().collect();
        self.store.request("POST", &self.path(claim, "complete"), Some(body), &headers).await
    }

    /// `POST .../complete`: attempt `(fence, worker)` ended with `outcome`
    /// (`succeeded`, `failed`) and `result` (none if null).
    pub async fn complete(
        &self,
        claim: &str,
        key: &str,
        fence: u64,
        worker: &str,
        outcome: &str,
        result: Value,
    ) -> Resp {
        let body = json!({ "fence": fence, "worker": worker, "outcome": outcome, "result": result });
        self.complete_raw(claim, Some(key), body.to_string().into_bytes()).await
    }

    /// `GET /v1/{ns}/claims?{query}`.
    pub async fn list(&self, query: &str) -> Resp {
        let path = format!("/v1/{}/claims?{query}", enc(&self.ns));
        self.store.request("GET", &path, None, &[]).await
    }

    /// `POST .../activate` with `Idempotency-Key: key`.
    pub async fn activate(&self, claim: &str, key: &str, fence: u64, worker: &str, lease_ttl_ms: u64) -> Resp {
        let body = json!({ "fence": fence, "worker": worker, "lease_ttl_ms": lease_ttl_ms });
        let headers = [("idempotency-key", key)];
        self.store.request("POST", &self.path(claim, "activate"), Some(body.to_string().into_bytes()), &headers).await
    }

    /// [`Claims::activate`] again while the answer is a 503 (bounded).
    pub async fn activate_settled(
        &self,
        claim: &str,
        key: &str,
        fence: u64,
        worker: &str,
        lease_ttl_ms: u64,
        within: Duration,
    ) -> Resp {
        settled(within, || self.activate(claim, key, fence, worker, lease_ttl_ms)).await
    }

    /// [`Claims::complete`] again while the answer is a 503 (bounded).
    #[allow(clippy::too_many_arguments)]
    pub async fn complete_settled(
        &self,
        claim: &str,
        key: &str,
        fence: u64,
        worker: &str,
        outcome: &str,
        result: Value,
        within: Duration,
    ) -> Resp {
        settled(within, || self.complete(claim, key, fence, worker, outcome, result.clone())).await
    }

    /// `POST .../heartbeat`.
    pub async fn heartbeat(&self, claim: &str, fence: u64, worker: &str, lease_ttl_ms: u64) -> Resp {
        let body = json!({ "fence": fence, "worker": worker, "lease_ttl_ms": lease_ttl_ms });
        self.store.request("POST", &self.path(claim, "heartbeat"), Some(body.to_string().into_bytes()), &[]).await
    }

    /// `GET /v1/{ns}/claims/{claim}`; fails the test unless 200.
    pub async fn get(&self, claim: &str) -> Value {
        let resp = self.store.request("GET", &self.path(claim, ""), None, &[]).await;
        assert_eq!(resp.status, 200, "GET claim {claim}: {}", resp.text());
        resp.json()
    }

    /// `POST /v1/{ns}/_test/reap`: the claims reaped by this pass.
    pub async fn reap(&self) -> Vec<String> {
        let resp = self.store.request("POST", &format!("/v1/{}/_test/reap", enc(&self.ns)), None, &[]).await;
        assert_eq!(resp.status, 200, "reap: {}", resp.text());
        let reaped = resp.json()["reaped"].as_array().cloned().unwrap_or_else(|| panic!("reap: {}", resp.text()));
        reaped.iter().filter_map(|c| c.as_str().map(str::to_string)).collect()
    }

    /// What the claim store holds, `(claims, bytes of rows, bytes of its
    /// whole database)`, the first two as its triggers kept them (`GET
    /// /v1/{ns}/_test/claims`); fails the test unless they agree with a
    /// count of the rows.
    pub async fn usage(&self) -> (u64, u64, u64) {
        let resp = self.store.request("GET", &format!("/v1/{}/_test/claims", enc(&self.ns)), None, &[]).await;
        assert_eq!(resp.status, 200, "counts: {}", resp.text());
        let counts = resp.json();
        let n = |k: &str| counts[k].as_u64().unwrap_or_else(|| panic!("no {k}: {counts}"));
        let states = ["authorized", "executing", "succeeded", "failed", "reaped", "dead"];
        let claims = states.iter().map(|s| n(s)).sum::<u64>();
        assert_eq!(n("usage_claims"), claims, "the kept count of claims: {counts}");
        assert_eq!(n("usage_bytes"), n("recounted_bytes"), "the kept bytes: {counts}");
        (claims, n("usage_bytes"), n("database_bytes"))
    }

    /// Polls the claim until `state` (bounded); the last view.
    pub async fn wait_state(&self, claim: &str, state: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let view = self.get(claim).await;
            if view["state"] == state {
                return view;
            }
            assert!(Instant::now() < deadline, "claim {claim} not {state} after {within:?}: {view}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// `request()` again while it answers 503, which must carry Retry-After,
/// for at most `within`: the last answer.
async fn settled<F: Future<Output = Resp>>(within: Duration, mut request: impl FnMut() -> F) -> Resp {
    let deadline = Instant::now() + within;
    loop {
        let resp = request().await;
        if resp.status != 503 || Instant::now() > deadline {
            return resp;
        }
        assert!(resp.header("retry-after").is_some(), "503 without Retry-After: {}", resp.text());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `result` (and `reason`) of an activation or heartbeat answer, checking
/// the status that goes with it.
#[track_caller]
pub fn outcome(resp: &Resp) -> (String, Option<String>) {
    let body = resp.json();
    let result = body["result"].as_str().unwrap_or_else(|| panic!("no result: {} {body}", resp.status)).to_string();
    let reason = body["reason"].as_str().map(str::to_string);
    let expected = match result.as_str() {
        "accepted" | "renewed" | "completed" => 200,
        "rejected" | "refused" => 422,
        other => panic!("unknown result {other}: {body}"),
    };
    assert_eq!(resp.status, expected, "{body}");
    (result, reason)
}

/// Asserts an accepted activation.
#[track_caller]
pub fn accepted(resp: &Resp) {
    assert_eq!(outcome(resp), ("accepted".to_string(), None), "{}", resp.text());
}

/// Asserts a rejection for `reason`.
#[track_caller]
pub fn rejected(resp: &Resp, reason: &str) {
    assert_eq!(outcome(resp), ("rejected".to_string(), Some(reason.to_string())), "{}", resp.text());
}

/// Asserts a completion answered 200 with `outcome`.
#[track_caller]
pub fn completed(resp: &Resp, outcome: &str) {
    assert_eq!(super::claims::outcome(resp), ("completed".to_string(), None), "{}", resp.text());
    assert_eq!(resp.json()["outcome"], outcome, "{}", resp.text());
}

/// Asserts a refusal (a heartbeat's or a completion's) for `reason`.
#[track_caller]
pub fn refused(resp: &Resp, reason: &str) {
    assert_eq!(outcome(resp), ("refused".to_string(), Some(reason.to_string())), "{}", resp.text());
}
