//! `cargo xtask bench kv|claims`: benchmarks on workerd, each against its
//! baselines in the same run and through the same Worker code path.
//!
//! - `kv` (`kv.rs`): the replicated KV store against one in-memory DO and
//!   one SQLite DO.
//! - `claims` (`claims.rs`): activations of the claims service against the
//!   same activation done in one SQLite transaction without the lease store.
//! - `models` (`models.rs`): the Rust model checker against the TLA+ checker
//!   on the same cfgs (no workerd).
//! - `scale` (`scale.rs`): one namespace of the KV store at growing sizes:
//!   idle CPU, PUT latency, recovery after evictions, memory, idle traffic
//!   (`procs.rs` reads workerd's CPU time and memory from `/proc`); the
//!   bytes counted against the isolates' growth (`accounting.rs`); a
//!   rolling restart at the budget under writes (`rolling.rs`).
//!
//! This file holds what they share: the arguments, closed-loop clients'
//! samples and their statistics, the HTTP agent, the machine description.

mod accounting;
mod claims;
mod coord;
mod kv;
mod models;
mod procs;
mod rolling;
mod scale;

use std::fs;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Subcommand)]
pub enum BenchWhat {
    /// The KV store on workerd vs a single in-memory DO and a single SQLite DO.
    Kv(kv::KvArgs),
    /// Claim activations (durable store + leases in Handoff) vs one SQLite
    /// transaction without the lease store.
    Claims(claims::ClaimsArgs),
    /// The Rust model checker (1 and 2 threads) against the TLA+ checker:
    /// distinct states, seconds, states/s, peak RSS.
    Models(models::ModelsArgs),
    /// One namespace at growing sizes (empty, 8 MiB, 32 MiB or the budget,
    /// the budget): idle CPU, PUT latency, recovery after evictions, peak
    /// RSS and idle traffic between replicas.
    Scale(scale::ScaleArgs),
}

pub fn run(root: &std::path::Path, args: &BenchArgs) -> Result<bool> {
    match &args.what {
        BenchWhat::Kv(a) => kv::run(root, a),
        BenchWhat::Claims(a) => claims::run(root, a),
        BenchWhat::Models(a) => models::run(root, a),
        BenchWhat::Scale(a) => scale::run(root, a),
    }
}

/// Upper bounds that keep a run polite on a shared machine.
const MAX_CLIENTS: usize = 64;
const MAX_DURATION_S: u64 = 120;

/// Raw samples of one measured series.
#[derive(Default)]
struct Samples {
    latencies_us: Vec<u64>,
    errors: u64,
    first_error: Option<String>,
    wall: Duration,
}

impl Samples {
    fn record(&mut self, latency: Duration) {
        self.latencies_us.push(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
    }

    fn error(&mut self, what: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what.chars().take(200).collect());
        }
    }

    fn merge(&mut self, other: Samples) {
        self.latencies_us.extend(other.latencies_us);
        self.errors += other.errors;
        self.wall += other.wall;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// Latency percentiles and throughput of one series.
#[derive(Serialize)]
struct Summary {
    ok: usize,
    errors: u64,
    p50_ms: f64,
    p99_ms: f64,
    mean_ms: f64,
    ops_per_s: f64,
}

impl Summary {
    fn of(s: &mut Samples) -> Summary {
        s.latencies_us.sort_unstable();
        let n = s.latencies_us.len();
        let pct = |p: f64| -> f64 {
            if n == 0 {
                return f64::NAN;
            }
            let idx = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
            s.latencies_us.get(idx).copied().unwrap_or(0) as f64 / 1000.0
        };
        let mean = if n == 0 { f64::NAN } else { s.latencies_us.iter().sum::<u64>() as f64 / n as f64 / 1000.0 };
        Summary {
            ok: n,
            errors: s.errors,
            p50_ms: pct(0.50),
            p99_ms: pct(0.99),
            mean_ms: mean,
            ops_per_s: n as f64 / s.wall.as_secs_f64().max(1e-9),
        }
    }
}

#[derive(Serialize)]
struct Ratio {
    what: String,
    value: f64,
    target: Option<f64>,
    met: Option<bool>,
}

fn ratio(what: String, value: f64, target: Option<f64>) -> Ratio {
    Ratio { met: target.map(|t| value <= t), what, value, target }
}

/// The ratio table shared by the reports.
fn ratio_table(md: &mut String, ratios: &[Ratio]) {
    use std::fmt::Write as _;
    let _ = writeln!(md, "| ratio | value | target |");
    let _ = writeln!(md, "|---|---:|---|");
    for q in ratios {
        let target = match (q.target, q.met) {
            (Some(t), Some(true)) => format!("<= {t:.1}x: met"),
            (Some(t), _) => format!("<= {t:.1}x: NOT met"),
            _ => String::new(),
        };
        let _ = writeln!(md, "| {} | {:.2}x | {target} |", q.what, q.value);
    }
}

#[derive(Serialize)]
struct Machine {
    cpus: usize,
    cpu_model: String,
    mem_total: String,
    load_before: String,
    kernel: String,
}

impl Machine {
    fn line(&self) -> String {
        format!(
            "Machine: {} CPUs ({}), {} RAM, kernel {}, load average before the run {}",
            self.cpus, self.cpu_model, self.mem_total, self.kernel, self.load_before
        )
    }
}

/// `clients` closed-loop client threads for `dur`: client `c` runs the
/// request loop `make(c)` (one request per call, recording into the
/// samples) on its own keep-alive connection until the time is up. The
/// wall time includes the last requests, which finish after `dur`.
fn closed_loop<M, S>(clients: usize, dur: Duration, make: M) -> Samples
where
    M: Fn(usize) -> S,
    S: FnMut(&ureq::Agent, &mut Samples) + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (stop, mut step) = (stop.clone(), make(c));
            thread::spawn(move || {
                let agent = agent();
                let mut s = Samples::default();
                while !stop.load(Ordering::Relaxed) {
                    step(&agent, &mut s);
                }
                s
            })
        })
        .collect();
    thread::sleep(dur);
    stop.store(true, Ordering::Relaxed);
    let mut all = Samples::default();
    for h in handles {
        if let Ok(s) = h.join() {
            all.merge(s);
        }
    }
    all.wall = started.elapsed();
    all
}

/// Creates namespace `ns` (admin `token`), for the load that follows.
fn create_namespace(base: &str, token: &str, ns: &str) -> Result<()> {
    create_namespace_with(base, token, ns, None)
}

/// Creates namespace `ns` with `settings` (a JSON object; `None`: the defaults).
fn create_namespace_with(base: &str, token: &str, ns: &str, settings: Option<&str>) -> Result<()> {
    let (status, body) = crate::worker::http::send("PUT", &format!("{base}/v1/{ns}"), Some(token), settings)?;
    anyhow::ensure!(status == 201 || status == 200, "creating namespace {ns}: {status} {body}");
    Ok(())
}

/// `GET /v1/{ns}/status`: the namespace and each replica's status line.
fn namespace_status(base: &str, token: &str, ns: &str) -> Result<serde_json::Value> {
    let (status, body) = crate::worker::http::get(&format!("{base}/v1/{ns}/status"), Some(token))?;
    anyhow::ensure!(status == 200, "status of {ns}: {status} {body}");
    serde_json::from_str(&body).context("status is not JSON")
}

/// The replicas' status lines in a namespace status.
fn replicas(status: &serde_json::Value) -> &[serde_json::Value] {
    status.get("replicas").and_then(serde_json::Value::as_array).map_or(&[], Vec::as_slice)
}

/// A counter of the status lines (`bytes_out`, `deliveries_out`, ...) summed
/// over the replicas.
fn replica_sum(status: &serde_json::Value, field: &str) -> u64 {
    replicas(status).iter().filter_map(|r| r.get(field).and_then(serde_json::Value::as_u64)).sum()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
enum Op {
    Put,
    Get,
}

/// One KV request → (status, body: the error text, or the value of a
/// 200 GET; empty for a 200 PUT); transport errors are status 0.
fn request(agent: &ureq::Agent, token: &str, op: Op, url: &str, value: &[u8]) -> (u16, Vec<u8>) {
    let bearer = format!("Bearer {token}");
    let resp = match op {
        Op::Put => agent.put(url).header("authorization", &bearer).send(value),
        Op::Get => agent.get(url).header("authorization", &bearer).call(),
    };
    match resp {
        Ok(mut r) => {
            let status = r.status().as_u16();
            // Read the whole body: the latency includes the transfer.
            let body = r.body_mut().with_config().limit(MAX_BODY).read_to_vec().unwrap_or_default();
            let body = if status == 200 && op == Op::Put { Vec::new() } else { body };
            (status, body)
        }
        Err(e) => (0, e.to_string().into_bytes()),
    }
}

/// The largest response body a benchmark reads (a value is at most 1 MiB).
const MAX_BODY: u64 = 2 * 1024 * 1024;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .proxy(None)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .new_agent()
}

fn rand_u32() -> Result<u32> {
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b).map_err(|e| anyhow::anyhow!("randomness: {e}"))?;
    Ok(u32::from_le_bytes(b))
}

/// Writes `target/bench/{name}.json` and `.md`.
fn write_report<T: Serialize>(root: &std::path::Path, name: &str, report: &T, md: &str) -> Result<()> {
    let dir = root.join("target/bench");
    fs::create_dir_all(&dir)?;
    let (json, table) = (dir.join(format!("{name}.json")), dir.join(format!("{name}.md")));
    fs::write(&json, serde_json::to_string_pretty(report)?)?;
    fs::write(&table, md)?;
    println!("bench: wrote {} and {}", json.display(), table.display());
    Ok(())
}

/// Replaces the text between `bench {name}`'s markers in
/// docs/BENCHMARKS.md with `md`.
fn splice_into_docs(root: &std::path::Path, name: &str, md: &str) -> Result<()> {
    let path = root.join("docs/BENCHMARKS.md");
    let begin = format!("<!-- bench {name}: begin (written by `cargo xtask bench {name}`) -->");
    let end = format!("<!-- bench {name}: end -->");
    let doc = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let (Some(b), Some(e)) = (doc.find(&begin), doc.find(&end)) else {
        anyhow::bail!("{} has no `bench {name}` markers", path.display());
    };
    anyhow::ensure!(b < e, "{}: the `bench {name}` markers are out of order", path.display());
    let spliced = format!("{}{begin}\n{md}{}", &doc[..b], &doc[e..]);
    fs::write(&path, spliced)?;
    println!("bench: wrote the table into {}", path.display());
    Ok(())
}

fn machine() -> Machine {
    let cpus = thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let lscpu =
        Command::new("lscpu").output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let cpu_model = lscpu
        .lines()
        .find_map(|l| l.strip_prefix("Model name:").map(|m| m.trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into());
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_total = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or_else(|| "unknown".into(), |kb| format!("{:.1} GiB", kb as f64 / 1024.0 / 1024.0));
    let load_before = fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let kernel = Command::new("uname")
        .arg("-r")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .context("uname")
        .unwrap_or_default();
    Machine { cpus, cpu_model, mem_total, load_before, kernel }
}
