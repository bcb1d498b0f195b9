//! A namespace with no client request for its idle expiry stops its
//! replicas: the keepalive stops, the status said when, and the data goes;
//! the next client request starts it again, empty.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use e2e::{Ack, Store, enc};
use serde_json::Value;

const EXPIRY_S: u64 = 5;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[tokio::test]
async fn an_idle_namespace_stops_its_keepalive_at_its_expiry() {
    let s = Store::from_env();
    let ns = s.new_ns_with("idle-expiry", &format!(r#"{{"idle_expiry_seconds":{EXPIRY_S}}}"#)).await;
    // The expiry counts from when the write reached the replicas: between
    // sending it and its answer (which may take seconds: it starts them);
    // 200 ms of slack for the runtime's coarse clock.
    let sent = now_ms();
    Ack::parse(&s.put(&ns, "k", b"goes").await);
    let written = now_ms();
    let status = s.wait_ready(&ns, Duration::from_secs(20)).await;
    let expires_at = status["idle_expires_at"].as_u64().unwrap_or_else(|| panic!("idle_expires_at: {status}"));
    assert!(
        (sent + EXPIRY_S * 1000 - 200..=written + EXPIRY_S * 1000 + 1000).contains(&expires_at),
        "expiry {expires_at} for a write sent at {sent}, answered at {written}: {status}"
    );
    assert_eq!(status["state"], "active");

    // Status requests are not client requests: polling it does not keep
    // the namespace alive.
    let deadline = Instant::now() + Duration::from_secs(EXPIRY_S + 20);
    let stopped = loop {
        let st = s.status(&ns).await;
        if st["state"] == "idle" && replicas_stopped(&st) {
            break st;
        }
        assert!(Instant::now() < deadline, "the namespace did not stop after its idle expiry: {st}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(now_ms() + 1000 >= expires_at, "stopped before its expiry ({expires_at}): {stopped}");
    assert_eq!(stopped["idle_expires_at"], Value::Null, "{stopped}");
    // The keepalive stays stopped: no replica object starts again by itself.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let replicas = s.request("GET", &format!("/v1/{}/_test/replicas", enc(&ns)), None, &[]).await.json();
    for line in replicas["replicas"].as_array().cloned().unwrap_or_default() {
        assert_eq!(line["booted"], false, "{replicas}");
    }
    // The data went with the replicas; a client request starts the
    // namespace again, empty.
    s.get(&ns, "k").await.expect_error(404, "key_not_found");
    let woken = s.wait_ready(&ns, Duration::from_secs(20)).await;
    assert_eq!(woken["state"], "active", "{woken}");
    assert!(woken["idle_expires_at"].as_u64().is_some(), "{woken}");
}

fn replicas_stopped(status: &Value) -> bool {
    status["replicas"].as_array().is_some_and(|rs| rs.iter().all(|r| r["status"] == "stopped"))
}
