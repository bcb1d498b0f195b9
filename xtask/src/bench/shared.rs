//! What the benchmarks share: closed-loop clients' samples and their
//! statistics, ratios against targets, the HTTP agent and requests, the
//! machine description, and the report with its splice into
//! docs/BENCHMARKS.md.

use std::fs;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

/// Upper bounds that keep a run polite on a shared machine.
pub(super) const MAX_CLIENTS: usize = 64;
pub(super) const MAX_DURATION_S: u64 = 120;

/// Raw samples of one measured series.
#[derive(Default)]
pub(super) struct Samples {
    pub(super) latencies_us: Vec<u64>,
    pub(super) errors: u64,
    pub(super) first_error: Option<String>,
    pub(super) wall: Duration,
}

impl Samples {
    pub(super) fn record(&mut self, latency: Duration) {
        self.latencies_us.push(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
    }

    pub(super) fn error(&mut self, what: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what.chars().take(200).collect());
        }
    }

    pub(super) fn merge(&mut self, other: Samples) {
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
pub(super) struct Summary {
    pub(super) ok: usize,
    pub(super) errors: u64,
    pub(super) p50_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) mean_ms: f64,
    pub(super) ops_per_s: f64,
}

impl Summary {
    pub(super) fn of(s: &mut Samples) -> Summary {
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
pub(super) struct Ratio {
    pub(super) what: String,
    pub(super) value: f64,
    pub(super) target: Option<f64>,
    pub(super) met: Option<bool>,
}

pub(super) fn ratio(what: String, value: f64, target: Option<f64>) -> Ratio {
    Ratio { met: target.map(|t| value <= t), what, value, target }
}

/// The ratio table shared by the reports.
pub(super) fn ratio_table(md: &mut String, ratios: &[Ratio]) {
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
pub(super) struct Machine {
    pub(super) cpus: usize,
    pub(super) cpu_model: String,
    pub(super) mem_total: String,
    pub(super) load_before: String,
    pub(super) kernel: String,
}

impl Machine {
    pub(super) fn line(&self) -> String {
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
pub(super) fn closed_loop<M, S>(clients: usize, dur: Duration, make: M) -> Samples
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
pub(super) fn create_namespace(base: &str, token: &str, ns: &str) -> Result<()> {
    create_namespace_with(base, token, ns, None)
}

/// Creates namespace `ns` with `settings` (a JSON object; `None`: the defaults).
pub(super) fn create_namespace_with(base: &str, token: &str, ns: &str, settings: Option<&str>) -> Result<()> {
    let (status, body) = crate::worker::http::send("PUT", &format!("{base}/v1/{ns}"), Some(token), settings)?;
    anyhow::ensure!(status == 201 || status == 200, "creating namespace {ns}: {status} {body}");
    Ok(())
}

/// `GET /v1/{ns}/status`: the namespace and each replica's status line.
pub(super) fn namespace_status(base: &str, token: &str, ns: &str) -> Result<serde_json::Value> {
    let (status, body) = crate::worker::http::get(&format!("{base}/v1/{ns}/status"), Some(token))?;
    anyhow::ensure!(status == 200, "status of {ns}: {status} {body}");
    serde_json::from_str(&body).context("status is not JSON")
}

/// The replicas' status lines in a namespace status.
pub(super) fn replicas(status: &serde_json::Value) -> &[serde_json::Value] {
    status.get("replicas").and_then(serde_json::Value::as_array).map_or(&[], Vec::as_slice)
}

/// A counter of the status lines (`bytes_out`, `deliveries_out`, ...) summed
/// over the replicas.
pub(super) fn replica_sum(status: &serde_json::Value, field: &str) -> u64 {
    replicas(status).iter().filter_map(|r| r.get(field).and_then(serde_json::Value::as_u64)).sum()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(super) enum Op {
    Put,
    Get,
}

/// One KV request → (status, body: the error text, or the value of a
/// 200 GET; empty for a 200 PUT); transport errors are status 0.
pub(super) fn request(agent: &ureq::Agent, token: &str, op: Op, url: &str, value: &[u8]) -> (u16, Vec<u8>) {
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
pub(super) const MAX_BODY: u64 = 2 * 1024 * 1024;

pub(super) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .proxy(None)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .new_agent()
}

pub(super) fn rand_u32() -> Result<u32> {
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b).map_err(|e| anyhow::anyhow!("randomness: {e}"))?;
    Ok(u32::from_le_bytes(b))
}

/// Writes `target/bench/{name}.json` and `.md`.
pub(super) fn write_report<T: Serialize>(root: &std::path::Path, name: &str, report: &T, md: &str) -> Result<()> {
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
pub(super) fn splice_into_docs(root: &std::path::Path, name: &str, md: &str) -> Result<()> {
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

pub(super) fn machine() -> Machine {
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
