//! The coordination primitives' part of `cargo xtask bench kv` (issue 31),
//! on the replicated store of the same run:
//!
//! - a conditional PUT (`If-Match` the client's own key's last ETag, so it
//!   always holds) against a plain PUT of the same key, in alternating
//!   phases: p50 each, and their ratio (target ≤ 1.2x: a condition that
//!   holds costs no confirmation round);
//! - a contended counter: every client increments one key by
//!   compare-and-set (GET, then PUT `If-Match`, again on 412): successful
//!   increments per second;
//! - a listing of 1,000 keys in one page: p50.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde::Serialize;

use super::shared::{Ratio, Samples, Summary, agent, closed_loop, create_namespace, rand_u32, ratio};

/// What it measured.
#[derive(Serialize)]
pub(super) struct Coord {
    pub plain_put: Summary,
    pub conditional_put: Summary,
    pub counter_increments_per_s: f64,
    pub counter_conflicts: u64,
    pub list_1000: Summary,
}

impl Coord {
    pub(super) fn ratios(&self) -> Vec<Ratio> {
        vec![ratio("conditional/plain PUT p50".into(), self.conditional_put.p50_ms / self.plain_put.p50_ms, Some(1.2))]
    }

    pub(super) fn markdown(&self) -> String {
        format!(
            "| coordination | value |\n|---|---:|\n| plain PUT p50 | {:.2} ms |\n| conditional PUT p50 (If-Match, holds) | {:.2} ms |\n\
             | contended counter (all clients, one key, compare-and-set) | {:.0} increments/s ({} 412s) |\n\
             | listing 1,000 keys in one page, p50 | {:.2} ms |\n",
            self.plain_put.p50_ms,
            self.conditional_put.p50_ms,
            self.counter_increments_per_s,
            self.counter_conflicts,
            self.list_1000.p50_ms
        )
    }
}

/// One request with headers → (status, ETag, body); transport errors are
/// status 0.
fn send(
    agent: &ureq::Agent,
    token: &str,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Option<String>, Vec<u8>) {
    let bearer = format!("Bearer {token}");
    let answer = match method {
        "PUT" => {
            let mut req = agent.put(url).header("authorization", &bearer);
            for (n, v) in headers {
                req = req.header(*n, *v);
            }
            req.send(body)
        }
        _ => agent.get(url).header("authorization", &bearer).call(),
    };
    match answer {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let etag = r.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_string);
            let body = r.body_mut().with_config().limit(super::shared::MAX_BODY).read_to_vec().unwrap_or_default();
            (status, etag, body)
        }
        Err(e) => (0, None, e.to_string().into_bytes()),
    }
}

pub(super) fn measure(base: &str, token: &str, clients: usize, duration: Duration, rounds: u64) -> Result<Coord> {
    let ns = format!("bench-coord-{:08x}", rand_u32()?);
    create_namespace(base, token, &ns)?;
    let kv = format!("{base}/v1/{ns}/kv");
    // Plain and conditional PUTs of each client's own key, phases alternating.
    let (mut plain, mut conditional) = (Samples::default(), Samples::default());
    let per_phase = duration.div_f64(rounds as f64);
    for _ in 0..rounds {
        for cond in [false, true] {
            let got = closed_loop(clients, per_phase, |c| {
                let (url, token) = (format!("{kv}/own-{c}"), token.to_string());
                let mut etag: Option<String> = None;
                move |agent: &ureq::Agent, s: &mut Samples| {
                    let headers: Vec<(&str, &str)> = match (&etag, cond) {
                        (Some(tag), true) => vec![("if-match", tag.as_str())],
                        _ => Vec::new(),
                    };
                    let t = Instant::now();
                    let (status, tag, body) = send(agent, &token, "PUT", &url, &headers, b"value");
                    if status == 200 {
                        // The first PUT of a key is plain (nothing to match yet).
                        if etag.is_some() || !cond {
                            s.record(t.elapsed());
                        }
                        etag = tag;
                    } else {
                        s.error(format!("{status} {}", String::from_utf8_lossy(&body)));
                    }
                }
            });
            if cond { conditional.merge(got) } else { plain.merge(got) }
        }
    }
    // The contended counter.
    let counter = format!("{kv}/counter");
    let started = Instant::now();
    let counted = closed_loop(clients, duration / 2, |_| {
        let (url, token) = (counter.clone(), token.to_string());
        move |agent: &ureq::Agent, s: &mut Samples| {
            let (status, etag, body) = send(agent, &token, "GET", &url, &[], &[]);
            let (n, headers) = match (status, &etag) {
                (200, Some(tag)) => {
                    let n: u64 = String::from_utf8_lossy(&body).parse().unwrap_or(0);
                    (n, vec![("if-match", tag.as_str())])
                }
                (404, _) => (0, vec![("if-none-match", "*")]),
                _ => {
                    s.error(format!("GET {status}"));
                    return;
                }
            };
            let t = Instant::now();
            match send(agent, &token, "PUT", &url, &headers, (n + 1).to_string().as_bytes()).0 {
                200 => s.record(t.elapsed()),
                // Another client incremented first: read again.
                412 => s.error("412".into()),
                other => s.error(format!("PUT {other}")),
            }
        }
    });
    let elapsed = started.elapsed();
    let conflicts = counted.errors;
    let mut counted = counted;
    let counter_summary = Summary::of(&mut counted);
    if counted.first_error.as_deref().is_some_and(|e| e != "412") {
        bail!("the counter failed: {:?}", counted.first_error);
    }
    // A listing of 1,000 keys.
    let agent = agent();
    for i in 0..1000 {
        let (status, _, body) = send(&agent, token, "PUT", &format!("{kv}/list-{i:04}"), &[], b"v");
        if status != 200 {
            bail!("filling the listing: {status} {}", String::from_utf8_lossy(&body));
        }
    }
    let listed = closed_loop(1, Duration::from_secs(3), |_| {
        let (url, token) = (format!("{kv}?prefix=list-&limit=1000"), token.to_string());
        move |agent: &ureq::Agent, s: &mut Samples| {
            let t = Instant::now();
            let (status, _, body) = send(agent, &token, "GET", &url, &[], &[]);
            if status == 200 && body.len() > 1000 {
                s.record(t.elapsed());
            } else {
                s.error(format!("{status}"));
            }
        }
    });
    let mut listed = listed;
    Ok(Coord {
        plain_put: Summary::of(&mut plain),
        conditional_put: Summary::of(&mut conditional),
        counter_increments_per_s: counter_summary.ok as f64 / elapsed.as_secs_f64(),
        counter_conflicts: conflicts,
        list_1000: Summary::of(&mut listed),
    })
}
