//! A small client for the Handoff HTTP API, for the end-to-end tests in
//! `tests/`. They run against a real Worker on workerd, whose base URL is
//! `HANDOFF_URL` and whose admin token is `HANDOFF_TOKEN` (`cargo xtask test`
//! starts `wrangler dev` and sets both). Without them every test FAILS: a
//! skipped end-to-end test would pass without proving anything.

pub mod claims;
pub mod history;
pub mod workload;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Base URL of the Worker under test.
pub fn base_url() -> String {
    match std::env::var("HANDOFF_URL") {
        Ok(url) if !url.trim().is_empty() => url.trim().trim_end_matches('/').to_string(),
        _ => panic!(
            "HANDOFF_URL is not set: these tests need the Worker running on workerd. \
             Run them with `cargo xtask test` (or start `cargo xtask dev` and set HANDOFF_URL=http://127.0.0.1:8787)"
        ),
    }
}

/// The deployment's admin token.
pub fn admin_token() -> String {
    match std::env::var("HANDOFF_TOKEN") {
        Ok(token) if !token.trim().is_empty() => token.trim().to_string(),
        _ => panic!(
            "HANDOFF_TOKEN is not set: these tests need the Worker's admin token. Run them with `cargo xtask test` \
             (or start `cargo xtask dev` and set HANDOFF_TOKEN=$(cat target/worker-dev/token))"
        ),
    }
}

/// A namespace name no other test (or earlier run) uses (not created).
pub fn unique_ns(prefix: &str) -> String {
    format!("{prefix}-{:016x}", random_u64())
}

/// A fresh namespace, created with the default settings.
pub async fn new_ns(prefix: &str) -> String {
    Store::from_env().new_ns(prefix).await
}

pub fn random_u64() -> u64 {
    let mut buf = [0u8; 8];
    getrandom::getrandom(&mut buf).expect("OS randomness");
    u64::from_le_bytes(buf)
}

/// A fresh write id: 32 hex digits.
pub fn new_wid() -> String {
    format!("{:016x}{:016x}", random_u64(), random_u64())
}

/// Percent-encodes everything but RFC 3986 unreserved characters, so any
/// name (`/`, `%`, controls, non-ASCII) reaches the Worker byte for byte.
pub fn enc(s: &str) -> String {
    enc_bytes(s.as_bytes())
}

pub fn enc_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A response, fully read.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Resp {
    /// Wrangler's own answer when the Worker was reloaded or restarted
    /// under the request (docs/operating.md 4.2: not one of the API's JSON
    /// errors; the request may have been served, and a retry under the
    /// same write id or Idempotency-Key is safe).
    pub fn is_runtime_restart(&self) -> bool {
        self.status == 503
            && serde_json::from_slice::<Value>(&self.body).is_err()
            && self.text().contains("restarted mid-request")
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("status {}: body is not JSON ({e}): {}", self.status, self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// The `error.code` of a JSON error envelope; panics (fails the test)
    /// if the body is not exactly `{"error":{"code":..,"message":..}}`.
    pub fn error_code(&self) -> String {
        let json = self.json();
        let error = json.get("error").and_then(Value::as_object).unwrap_or_else(|| panic!("no error object: {json}"));
        assert_eq!(json.as_object().map(|o| o.len()), Some(1), "extra top-level fields: {json}");
        let code = error.get("code").and_then(Value::as_str).unwrap_or_else(|| panic!("no error.code: {json}"));
        assert!(error.get("message").and_then(Value::as_str).is_some(), "no error.message: {json}");
        assert!(
            self.header("content-type").is_some_and(|c| c.starts_with("application/json")),
            "error without a JSON content type: {:?}",
            self.headers
        );
        code.to_string()
    }

    /// Asserts status and error code together.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "expected {status} {code}, got {}: {}", self.status, self.text());
        assert_eq!(self.error_code(), code, "body: {}", self.text());
    }
}

/// A committed write, as acknowledged by `PUT`/`DELETE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    pub key: String,
    pub ep: u64,
    pub ver: u64,
    pub wid: String,
    /// When the written value expires (a write with a time to live).
    pub expires_at: Option<u64>,
}

impl Ack {
    pub fn parse(resp: &Resp) -> Ack {
        assert_eq!(resp.status, 200, "not an ack: {}", resp.text());
        let j = resp.json();
        let field = |name: &str| j.get(name).cloned().unwrap_or_else(|| panic!("ack without {name}: {j}"));
        let ack = Ack {
            key: field("key").as_str().unwrap_or_else(|| panic!("key: {j}")).to_string(),
            ep: field("ep").as_u64().unwrap_or_else(|| panic!("ep: {j}")),
            ver: field("ver").as_u64().unwrap_or_else(|| panic!("ver: {j}")),
            wid: field("wid").as_str().unwrap_or_else(|| panic!("wid: {j}")).to_string(),
            expires_at: field("expires_at").as_u64(),
        };
        assert_eq!(ack.wid.len(), 32, "wid is 32 hex digits: {j}");
        ack
    }

    pub fn stamp(&self) -> (u64, u64) {
        (self.ep, self.ver)
    }
}

/// A value read by `GET`, with its stamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub value: Vec<u8>,
    pub ep: u64,
    pub ver: u64,
    pub wid: String,
    /// When the value expires (`Handoff-Expires-At`), if it was written
    /// with a time to live.
    pub expires_at: Option<u64>,
}

impl Found {
    pub fn parse(resp: &Resp) -> Found {
        assert_eq!(resp.status, 200, "not a value: {}", resp.text());
        let num = |h: &str| {
            resp.header(h)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("missing/bad {h}: {:?}", resp.headers))
        };
        Found {
            value: resp.body.clone(),
            ep: num("handoff-epoch"),
            ver: num("handoff-version"),
            wid: resp.header("handoff-write-id").unwrap_or_else(|| panic!("no handoff-write-id")).to_string(),
            expires_at: resp
                .header("handoff-expires-at")
                .map(|v| v.parse().unwrap_or_else(|_| panic!("bad handoff-expires-at {v:?}: {:?}", resp.headers))),
        }
    }

    pub fn stamp(&self) -> (u64, u64) {
        (self.ep, self.ver)
    }
}

/// The store under test.
#[derive(Clone)]
pub struct Store {
    pub base: String,
    /// Sent as `Authorization: Bearer ..` unless a request sets its own.
    pub token: Option<String>,
    http: reqwest::Client,
}

impl Default for Store {
    fn default() -> Self {
        Store::from_env()
    }
}

impl Store {
    pub fn from_env() -> Store {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(64)
            // wrangler dev closes idle connections; one reused just as it
            // does so fails the request before it reaches the Worker (seen
            // after a 3 s sleep), so none idle that long is reused.
            .pool_idle_timeout(Duration::from_secs(1))
            .build()
            .expect("HTTP client");
        Store { base: base_url(), token: Some(admin_token()), http }
    }

    /// The same store, speaking with `token` (`None`: no Authorization).
    pub fn with_token(&self, token: Option<&str>) -> Store {
        Store { token: token.map(str::to_string), ..self.clone() }
    }

    /// `PUT /v1/{ns}` with `settings` (a JSON object, or empty).
    pub async fn create_ns(&self, ns: &str, settings: &str) -> Resp {
        let body = (!settings.is_empty()).then(|| settings.as_bytes().to_vec());
        self.request("PUT", &format!("/v1/{}", enc(ns)), body, &[("content-type", "application/json")]).await
    }

    /// A fresh namespace named after `prefix`, created with the default
    /// settings (fails the test unless 201).
    pub async fn new_ns(&self, prefix: &str) -> String {
        self.new_ns_with(prefix, "").await
    }

    /// A fresh namespace created with `settings`.
    pub async fn new_ns_with(&self, prefix: &str, settings: &str) -> String {
        let ns = unique_ns(prefix);
        let resp = self.create_ns(&ns, settings).await;
        assert_eq!(resp.status, 201, "creating namespace {ns}: {}", resp.text());
        ns
    }

    /// Any request; `path` is sent as given (already encoded). A GET, PUT
    /// or DELETE (idempotent) that fails before any answer is sent once
    /// more: wrangler dev's proxy now and then drops a pooled connection
    /// as it is reused, and such a request never reaches the Worker.
    pub async fn request(&self, method: &str, path: &str, body: Option<Vec<u8>>, headers: &[(&str, &str)]) -> Resp {
        let first = self.try_request(method, path, body.clone(), headers).await;
        let result = match first {
            Err(e) if matches!(method, "GET" | "PUT" | "DELETE") && e.is_request() => {
                eprintln!("{method} {path}: {e:?}; sending it again");
                self.try_request(method, path, body, headers).await
            }
            other => other,
        };
        result.unwrap_or_else(|e| panic!("{method} {path}: {e:?}"))
    }

    pub async fn try_request(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Result<Resp, reqwest::Error> {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        let own_authorization = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        if let Some(token) = self.token.as_deref().filter(|_| !own_authorization) {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(body) = body {
            req = req.body(body);
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        let body = resp.bytes().await?.to_vec();
        Ok(Resp { status, headers, body })
    }

    pub fn kv_path(ns: &str, key: &str) -> String {
        format!("/v1/{}/kv/{}", enc(ns), enc(key))
    }

    pub async fn put(&self, ns: &str, key: &str, value: &[u8]) -> Resp {
        self.request("PUT", &Store::kv_path(ns, key), Some(value.to_vec()), &[]).await
    }

    pub async fn put_wid(&self, ns: &str, key: &str, value: &[u8], wid: &str) -> Resp {
        self.request("PUT", &Store::kv_path(ns, key), Some(value.to_vec()), &[("handoff-write-id", wid)]).await
    }

    pub async fn get(&self, ns: &str, key: &str) -> Resp {
        self.request("GET", &Store::kv_path(ns, key), None, &[]).await
    }

    pub async fn delete(&self, ns: &str, key: &str) -> Resp {
        self.request("DELETE", &Store::kv_path(ns, key), None, &[]).await
    }

    pub async fn status(&self, ns: &str) -> Value {
        let resp = self.request("GET", &format!("/v1/{}/status", enc(ns)), None, &[]).await;
        assert_eq!(resp.status, 200, "status: {}", resp.text());
        resp.json()
    }

    /// `POST /v1/{ns}/_test/evict/{r}`; fails the test unless it is 200.
    pub async fn evict(&self, ns: &str, r: &str) -> Value {
        let resp = self.request("POST", &format!("/v1/{}/_test/evict/{r}", enc(ns)), None, &[]).await;
        assert_eq!(resp.status, 200, "evict {r}: {}", resp.text());
        resp.json()
    }

    /// `POST /v1/{ns}/_test/evict/all`: the three replicas reset at once,
    /// so none is left to reseed the others (their memory is gone); fails
    /// the test unless it is 200.
    pub async fn evict_all(&self, ns: &str) -> Value {
        let resp = self.request("POST", &format!("/v1/{}/_test/evict/all", enc(ns)), None, &[]).await;
        assert_eq!(resp.status, 200, "evict all: {}", resp.text());
        resp.json()
    }

    /// Saves the namespace's replica traces for trace validation (`cargo
    /// xtask validate`, docs/verification.md 1.6) when `HANDOFF_TRACE_DIR`
    /// is set (`cargo xtask e2e` sets it and has the Worker record): one
    /// directory per namespace, one file per replica. The three replicas
    /// are paused first (they step no message from then on), so every
    /// message a saved step received was sent by a saved step; where each
    /// one's trace stood at its pause is saved beside it (`{r}.end`: its
    /// current instance's object and steps, if it booted), so a trace cut
    /// short of that is found.
    pub async fn save_trace(&self, ns: &str) {
        let Ok(root) = std::env::var("HANDOFF_TRACE_DIR") else { return };
        let dir = std::path::Path::new(&root).join(ns);
        std::fs::create_dir_all(&dir).expect("creating the trace directory");
        for r in ["r0", "r1", "r2"] {
            // None from a replica whose current instance has not booted
            // (evicted, and asked nothing since): it has no steps to cut.
            let end = &self.pause(ns, r, 30_000).await["trace"];
            if end.is_object() {
                std::fs::write(dir.join(format!("{r}.end")), end.to_string()).expect("writing a trace end");
            }
        }
        for r in ["r0", "r1", "r2"] {
            let mut rows = Vec::new();
            let mut after = 0u64;
            loop {
                let path = format!("/v1/{}/_test/trace/{r}?after={after}", enc(ns));
                let resp = self.request("GET", &path, None, &[]).await;
                assert_eq!(resp.status, 200, "trace of {r}: {}", resp.text());
                rows.extend_from_slice(&resp.body);
                match resp.header("handoff-trace-next").map(str::parse::<u64>) {
                    Some(Ok(next)) => after = next,
                    // A page that names no next one is the last.
                    None => break,
                    // Stopping here would save a cut trace, whose prefix validates.
                    Some(Err(e)) => panic!("trace of {r}: handoff-trace-next is no page number: {e}"),
                }
            }
            std::fs::write(dir.join(format!("{r}.trace")), rows).expect("writing a trace");
        }
    }

    /// `POST /v1/{ns}/_test/pause/{r}?ms=`: the hook's answer (with
    /// `trace`, where the replica's trace stands, when it records).
    pub async fn pause(&self, ns: &str, r: &str, ms: u64) -> Value {
        let resp = self.request("POST", &format!("/v1/{}/_test/pause/{r}?ms={ms}", enc(ns)), None, &[]).await;
        assert_eq!(resp.status, 200, "pause {r}: {}", resp.text());
        resp.json()
    }

    /// PUT with the same write id until acknowledged (503s and transport
    /// errors are retried after `Retry-After`, bounded by `within`).
    /// `None` if never acknowledged.
    pub async fn put_until_ack(&self, ns: &str, key: &str, value: &[u8], wid: &str, within: Duration) -> Option<Ack> {
        let deadline = Instant::now() + within;
        loop {
            let path = Store::kv_path(ns, key);
            let wait = match self.try_request("PUT", &path, Some(value.to_vec()), &[("handoff-write-id", wid)]).await {
                Ok(resp) if resp.status == 200 => {
                    let ack = Ack::parse(&resp);
                    assert_eq!(ack.wid, wid, "ack for another write id");
                    return Some(ack);
                }
                Ok(resp) if resp.status == 503 => {
                    assert!(resp.header("retry-after").is_some(), "503 without Retry-After: {}", resp.text());
                    Duration::from_millis(200)
                }
                Ok(resp) => panic!("PUT {key}: unexpected {}: {}", resp.status, resp.text()),
                Err(_) => Duration::from_millis(200),
            };
            if Instant::now() + wait > deadline {
                return None;
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// GET until it is not a 503 (bounded); the last response.
    pub async fn get_settled(&self, ns: &str, key: &str, within: Duration) -> Resp {
        let deadline = Instant::now() + within;
        loop {
            let resp = self.try_request("GET", &Store::kv_path(ns, key), None, &[]).await;
            match resp {
                Ok(r) if r.status != 503 => return r,
                other if Instant::now() > deadline => panic!("GET {key} still failing after {within:?}: {other:?}"),
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// Waits until all three replicas report `ready` (and the same epoch).
    pub async fn wait_ready(&self, ns: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let status = self.status(ns).await;
            if all_ready(&status) {
                return status;
            }
            assert!(Instant::now() < deadline, "namespace {ns} not ready after {within:?}: {status}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// All three replicas `ready` with one epoch.
pub fn all_ready(status: &Value) -> bool {
    let Some(replicas) = status.get("replicas").and_then(Value::as_array) else { return false };
    let epochs: Vec<Option<u64>> = replicas.iter().map(|r| r.get("epoch").and_then(Value::as_u64)).collect();
    replicas.len() == 3
        && replicas.iter().all(|r| r.get("status").and_then(Value::as_str) == Some("ready"))
        && epochs.windows(2).all(|w| w[0] == w[1])
}

/// A replica's field in a status document.
pub fn replica_field<'a>(status: &'a Value, name: &str, field: &str) -> &'a Value {
    status
        .get("replicas")
        .and_then(Value::as_array)
        .and_then(|rs| rs.iter().find(|r| r.get("name").and_then(Value::as_str) == Some(name)))
        .and_then(|r| r.get(field))
        .unwrap_or(&Value::Null)
}

/// A PUT with `Transfer-Encoding: chunked` over a raw socket (no length
/// announced); returns the response head.
pub async fn chunked_put(base: &str, path: &str, total: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut sock = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let token = admin_token();
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    );
    sock.write_all(head.as_bytes()).await.expect("write head");
    let chunk = vec![b'x'; 64 * 1024];
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len());
        let mut frame = format!("{n:x}\r\n").into_bytes();
        frame.extend_from_slice(&chunk[..n]);
        frame.extend_from_slice(b"\r\n");
        if sock.write_all(&frame).await.is_err() {
            break; // the server may answer 413 and close before the end
        }
        left -= n;
    }
    let _ = sock.write_all(b"0\r\n\r\n").await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), sock.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).lines().next().unwrap_or("").to_string()
}
