//! `cargo xtask bench scale`'s memory accounting: do the bytes a replica
//! counts (`bytes` in its status line: `protocol::handoff::memory::cost`
//! summed) match what its isolate's wasm memory grows by? Issue 29's
//! target is agreement within 20% for tiny records (8-byte keys, 1-byte
//! values) and for large ones (100 KB values).
//!
//! Each role's replicas run in their own script, so each replica of a
//! fresh namespace sits in an isolate that holds nothing else of it:
//! filling the namespace grows the three isolates, and each replica's
//! counted bytes are compared with its own isolate's growth. It runs on
//! fresh isolates, before anything was freed in them (wasm memory never
//! shrinks, and memory an allocator got back would be reused without
//! growth), tiny records first, then large ones in a second namespace.

use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde::Serialize;
use serde_json::Value;

use super::shared::{Op, agent, create_namespace_with, namespace_status, rand_u32, replicas, request};

const MIB: u64 = 1024 * 1024;
/// How far from the wasm growth the counted bytes may be.
pub(super) const AGREEMENT: f64 = 0.20;
/// Writers filling a namespace at once (each its own keys).
const WRITERS: usize = 4;
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// One kind of record, as a fill writes it.
struct Kind {
    label: &'static str,
    key: fn(usize) -> String,
    value_bytes: usize,
    /// What r0 counts when the fill stops.
    counted_target: u64,
    /// The namespace's budget (above the target).
    budget: u64,
}

const KINDS: [Kind; 2] = [
    Kind {
        label: "tiny (8 B keys, 1 B values)",
        key: tiny_key,
        value_bytes: 1,
        counted_target: 6 * MIB,
        budget: 16 * MIB,
    },
    Kind {
        label: "large (100 KB values)",
        key: large_key,
        value_bytes: 100_000,
        counted_target: 24 * MIB,
        budget: 32 * MIB,
    },
];

fn tiny_key(i: usize) -> String {
    format!("t{i:07}")
}

fn large_key(i: usize) -> String {
    format!("l{i:07}")
}

/// One replica's counted bytes against its isolate's growth.
#[derive(Serialize)]
pub(super) struct Replica {
    pub(super) name: String,
    pub(super) counted_bytes: u64,
    pub(super) wasm_growth_bytes: u64,
}

impl Replica {
    /// Growth / counted.
    pub(super) fn ratio(&self) -> f64 {
        self.wasm_growth_bytes as f64 / (self.counted_bytes.max(1)) as f64
    }

    pub(super) fn agrees(&self) -> bool {
        (self.ratio() - 1.0).abs() <= AGREEMENT
    }
}

#[derive(Serialize)]
pub(super) struct Accounting {
    pub(super) label: &'static str,
    pub(super) records: usize,
    pub(super) replicas: Vec<Replica>,
}

/// Both kinds, each in a namespace of its own.
pub(super) fn measure(base: &str, token: &str) -> Result<Vec<Accounting>> {
    KINDS.iter().map(|kind| measure_kind(base, token, kind)).collect()
}

fn measure_kind(base: &str, token: &str, kind: &Kind) -> Result<Accounting> {
    let ns = format!("acct-{:08x}", rand_u32()?);
    create_namespace_with(base, token, &ns, Some(&format!("{{\"memory_budget_bytes\":{}}}", kind.budget)))?;
    // A read boots the replicas; then the isolates' memory before the fill.
    let (status, _) = request(&agent(), token, Op::Get, &format!("{base}/v1/{ns}/kv/none"), &[]);
    ensure!(status == 404, "the first GET of {ns} answered {status}");
    let before = settled(base, token, &ns, 0)?;
    let started = Instant::now();
    let records = fill(base, token, &ns, kind)?;
    let after = settled(base, token, &ns, records)?;
    println!("bench: accounting {}: {records} records in {:.1} s", kind.label, started.elapsed().as_secs_f64());
    let mut out = Vec::new();
    for line in replicas(&after) {
        let name = line.get("name").and_then(Value::as_str).context("a status line without a name")?;
        let field = |doc: &Value, f: &str| {
            replicas(doc)
                .iter()
                .find(|l| l.get("name").and_then(Value::as_str) == Some(name))
                .and_then(|l| l.get(f))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let replica = Replica {
            name: name.to_string(),
            counted_bytes: field(&after, "bytes").saturating_sub(field(&before, "bytes")),
            wasm_growth_bytes: field(&after, "wasm_memory_bytes").saturating_sub(field(&before, "wasm_memory_bytes")),
        };
        println!(
            "bench: accounting {}: {name} counted {:.2} MiB, its isolate grew {:.2} MiB ({:.2}x)",
            kind.label,
            replica.counted_bytes as f64 / MIB as f64,
            replica.wasm_growth_bytes as f64 / MIB as f64,
            replica.ratio()
        );
        out.push(replica);
    }
    Ok(Accounting { label: kind.label, records, replicas: out })
}

/// Writes records of `kind` with [`WRITERS`] writers until r0 counts the
/// kind's target; returns how many.
fn fill(base: &str, token: &str, ns: &str, kind: &Kind) -> Result<usize> {
    // Each record's cost is the same: find it from the first one.
    let url = |i: usize| format!("{base}/v1/{ns}/kv/{}", (kind.key)(i));
    let value = vec![b'v'; kind.value_bytes];
    let (status, body) = request(&agent(), token, Op::Put, &url(0), &value);
    ensure!(status == 200, "PUT {}: {status} {}", url(0), String::from_utf8_lossy(&body));
    let one = counted(&namespace_status(base, token, ns)?).max(1);
    let records = usize::try_from(kind.counted_target / one).unwrap_or(usize::MAX).max(1);
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (base, token, ns, value) = (base.to_string(), token.to_string(), ns.to_string(), value.clone());
            let key = kind.key;
            thread::spawn(move || -> Result<()> {
                let agent = agent();
                for i in (1..records).filter(|i| i % WRITERS == w) {
                    let url = format!("{base}/v1/{ns}/kv/{}", key(i));
                    // A 503 (a busy coordinator) is sent again: the fill
                    // must reach its count.
                    let mut tries = 0;
                    loop {
                        let (status, body) = request(&agent, &token, Op::Put, &url, &value);
                        match status {
                            200 => break,
                            503 if tries < 20 => tries += 1,
                            _ => anyhow::bail!("PUT {url}: {status} {}", String::from_utf8_lossy(&body)),
                        }
                        thread::sleep(Duration::from_millis(100));
                    }
                }
                Ok(())
            })
        })
        .collect();
    for w in writers {
        w.join().map_err(|_| anyhow::anyhow!("a fill writer panicked"))??;
    }
    Ok(records)
}

/// r0's counted bytes.
fn counted(status: &Value) -> u64 {
    replicas(status)
        .iter()
        .find(|l| l.get("name").and_then(Value::as_str) == Some("r0"))
        .and_then(|l| l.get("bytes"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The namespace's status once the three replicas are ready and each holds
/// `records` keys (the peers received every push).
fn settled(base: &str, token: &str, ns: &str, records: usize) -> Result<Value> {
    let started = Instant::now();
    loop {
        let status = namespace_status(base, token, ns)?;
        let lines = replicas(&status);
        let done = lines.len() == 3
            && lines.iter().all(|l| {
                l.get("status").and_then(Value::as_str) == Some("ready")
                    && l.get("keys").and_then(Value::as_u64) == Some(records as u64)
            });
        if done {
            return Ok(status);
        }
        ensure!(started.elapsed() < READY_TIMEOUT, "{ns} did not settle at {records} keys: {status}");
        thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_is_within_a_fifth_either_way() {
        let r = |counted, grown| Replica { name: "r1".into(), counted_bytes: counted, wasm_growth_bytes: grown };
        assert!(r(100, 120).agrees() && r(100, 80).agrees() && r(100, 100).agrees());
        assert!(!r(100, 121).agrees() && !r(100, 79).agrees() && !r(0, 64).agrees());
    }

    #[test]
    fn tiny_keys_are_eight_bytes() {
        assert_eq!(tiny_key(1_234).len(), 8);
        assert_eq!(large_key(0), "l0000000");
    }
}
