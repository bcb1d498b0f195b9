//! `cargo xtask bench kv`: PUT and GET latency (p50, p99) and throughput of
//! the replicated store on workerd, against two baselines in the same run
//! and through the same Worker code path:
//!
//! - `mem-do`: one Durable Object holding the map in memory (no replication);
//! - `sql-do`: one Durable Object writing every value to SQLite storage.
//!
//! N closed-loop clients (one thread and one keep-alive connection each)
//! hammer one namespace per backend. Phases are interleaved: every round
//! (1 s per phase by default) runs PUT then GET for each backend, in an
//! order rotated per round, so bursts of other load on a shared machine
//! spread over all backends evenly.
//! Targets (issue): replicated PUT p50 within 2x the in-memory DO's, GET
//! within 1.2x. Results go to stdout, `target/bench/kv.json` and
//! `target/bench/kv.md` (the table docs/BENCHMARKS.md quotes).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::worker;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Subcommand)]
pub enum BenchWhat {
    /// The KV store on workerd vs a single in-memory DO and a single SQLite DO.
    Kv(KvArgs),
}

#[derive(Args, Clone, Debug)]
pub struct KvArgs {
    /// Concurrent closed-loop clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Seconds of measurement per (backend, operation), split over the rounds.
    #[arg(long, default_value_t = 12)]
    pub duration: u64,
    /// Rounds the measurement is split into (backend order rotates). Many
    /// short rounds spread bursts of other load on a shared machine evenly
    /// over the backends.
    #[arg(long, default_value_t = 12)]
    pub rounds: u64,
    /// Keys per namespace (all written during warm-up, so GETs hit).
    #[arg(long, default_value_t = 64)]
    pub keys: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 128)]
    pub value_bytes: usize,
    /// Seconds of unmeasured load per backend before measuring.
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
}

/// Upper bounds that keep a run polite on a shared machine.
const MAX_CLIENTS: usize = 64;
const MAX_DURATION_S: u64 = 120;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
enum Backend {
    Replicated,
    MemDo,
    SqlDo,
}

impl Backend {
    const ALL: [Backend; 3] = [Backend::Replicated, Backend::MemDo, Backend::SqlDo];

    fn name(self) -> &'static str {
        match self {
            Backend::Replicated => "replicated",
            Backend::MemDo => "mem-do",
            Backend::SqlDo => "sql-do",
        }
    }

    fn prefix(self, ns: &str) -> String {
        match self {
            Backend::Replicated => format!("/v1/{ns}/kv/"),
            Backend::MemDo => format!("/_bench/mem/{ns}/kv/"),
            Backend::SqlDo => format!("/_bench/sql/{ns}/kv/"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
enum Op {
    Put,
    Get,
}

/// Raw samples of one (backend, op).
#[derive(Default)]
struct Samples {
    latencies_us: Vec<u64>,
    errors: u64,
    first_error: Option<String>,
    wall: Duration,
}

#[derive(Serialize)]
struct Stats {
    backend: &'static str,
    op: Op,
    ok: usize,
    errors: u64,
    p50_ms: f64,
    p99_ms: f64,
    mean_ms: f64,
    ops_per_s: f64,
}

#[derive(Serialize)]
struct Report {
    command: String,
    machine: Machine,
    clients: usize,
    duration_s: u64,
    rounds: u64,
    keys: usize,
    value_bytes: usize,
    results: Vec<Stats>,
    ratios: Vec<Ratio>,
}

#[derive(Serialize)]
struct Ratio {
    what: String,
    value: f64,
    target: Option<f64>,
    met: Option<bool>,
}

#[derive(Serialize)]
struct Machine {
    cpus: usize,
    cpu_model: String,
    mem_total: String,
    load_before: String,
    kernel: String,
}

pub fn run(root: &Path, args: &BenchArgs) -> Result<bool> {
    match &args.what {
        BenchWhat::Kv(kv) => run_kv(root, kv),
    }
}

fn run_kv(root: &Path, args: &KvArgs) -> Result<bool> {
    ensure!((1..=MAX_CLIENTS).contains(&args.clients), "--clients must be 1 to {MAX_CLIENTS}");
    ensure!((1..=MAX_DURATION_S).contains(&args.duration), "--duration must be 1 to {MAX_DURATION_S} seconds");
    ensure!(args.rounds >= 1 && args.rounds <= args.duration * 10, "--rounds must be 1 to 10 x duration");
    ensure!(args.keys >= 1 && args.keys <= 10_000, "--keys must be 1 to 10000");
    ensure!(args.value_bytes <= 1024 * 1024, "--value-bytes must be at most 1 MiB");
    let machine = machine();
    let mut server = worker::serve_for_tests(root, "bench", "benchmark")?;
    let base = server.base.clone();
    let ns = format!("bench-{:08x}", rand_u32()?);
    println!(
        "bench: {} clients, {} s per (backend, op) in {} rounds, {} keys, {} B values, namespace {ns}",
        args.clients, args.duration, args.rounds, args.keys, args.value_bytes
    );

    for backend in Backend::ALL {
        println!("bench: warm-up {} (write every key, then {} s of load)", backend.name(), args.warmup);
        let agent = agent();
        let value = value(args.value_bytes, 0);
        for k in 0..args.keys {
            let url = format!("{base}{}{}", backend.prefix(&ns), key(k));
            let (status, body) = request(&agent, Op::Put, &url, &value);
            if status != 200 {
                bail!("warm-up PUT {url}: {status} {body}{}", server.log_tail());
            }
        }
        let warm = Duration::from_secs(args.warmup) / 2;
        load(&base, &ns, backend, Op::Put, args, warm);
        load(&base, &ns, backend, Op::Get, args, warm);
    }

    let mut samples: Vec<((Backend, Op), Samples)> = Vec::new();
    for backend in Backend::ALL {
        for op in [Op::Put, Op::Get] {
            samples.push(((backend, op), Samples::default()));
        }
    }
    let per_phase = Duration::from_secs(args.duration).div_f64(args.rounds as f64);
    for round in 0..args.rounds {
        let mut order = Backend::ALL;
        order.rotate_left((round % 3) as usize);
        println!("bench: round {}/{} ({})", round + 1, args.rounds, order.map(Backend::name).join(", "));
        for backend in order {
            for op in [Op::Put, Op::Get] {
                let got = load(&base, &ns, backend, op, args, per_phase);
                if let Some((_, s)) = samples.iter_mut().find(|(k, _)| *k == (backend, op)) {
                    s.latencies_us.extend(got.latencies_us);
                    s.errors += got.errors;
                    s.wall += got.wall;
                    if s.first_error.is_none() {
                        s.first_error = got.first_error;
                    }
                }
            }
        }
    }
    let panics = server.log_matches(&["panicked at", "RuntimeError: unreachable"]);
    server.stop()?;
    ensure!(panics.is_empty(), "the worker panicked during the benchmark:\n{}", panics.join("\n"));

    let results: Vec<Stats> = samples.iter_mut().map(|((b, op), s)| stats(*b, *op, s)).collect();
    for ((b, op), s) in &samples {
        if let Some(e) = &s.first_error {
            println!("bench: {} {:?}: {} errors, first: {e}", b.name(), op, s.errors);
        }
    }
    let find = |b: Backend, op: Op| results.iter().find(|s| s.backend == b.name() && s.op == op);
    let mut ratios = Vec::new();
    for op in [Op::Put, Op::Get] {
        let (Some(rep), Some(mem), Some(sql)) =
            (find(Backend::Replicated, op), find(Backend::MemDo, op), find(Backend::SqlDo, op))
        else {
            continue;
        };
        let target = match op {
            Op::Put => 2.0,
            Op::Get => 1.2,
        };
        let opname = format!("{op:?}").to_uppercase();
        ratios.push(ratio(format!("replicated/mem-do {opname} p50"), rep.p50_ms / mem.p50_ms, Some(target)));
        ratios.push(ratio(format!("replicated/mem-do {opname} p99"), rep.p99_ms / mem.p99_ms, None));
        ratios.push(ratio(format!("replicated/mem-do {opname} throughput"), rep.ops_per_s / mem.ops_per_s, None));
        ratios.push(ratio(format!("replicated/sql-do {opname} p50"), rep.p50_ms / sql.p50_ms, None));
    }
    let command = format!(
        "cargo xtask bench kv --clients {} --duration {} --rounds {} --keys {} --value-bytes {} --warmup {}",
        args.clients, args.duration, args.rounds, args.keys, args.value_bytes, args.warmup
    );
    let report = Report {
        command,
        machine,
        clients: args.clients,
        duration_s: args.duration,
        rounds: args.rounds,
        keys: args.keys,
        value_bytes: args.value_bytes,
        results,
        ratios,
    };
    let md = markdown(&report);
    println!("\n{md}");
    let dir = root.join("target/bench");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("kv.json"), serde_json::to_string_pretty(&report)?)?;
    fs::write(dir.join("kv.md"), &md)?;
    println!("bench: wrote {} and {}", dir.join("kv.json").display(), dir.join("kv.md").display());
    let errors: u64 = report.results.iter().map(|s| s.errors).sum();
    let met = report.ratios.iter().all(|r| r.met != Some(false));
    if errors > 0 {
        println!("bench: {errors} requests failed (see above)");
    }
    println!("bench: targets {}", if met { "met" } else { "NOT met" });
    Ok(errors == 0)
}

fn ratio(what: String, value: f64, target: Option<f64>) -> Ratio {
    Ratio { met: target.map(|t| value <= t), what, value, target }
}

/// `clients` closed-loop threads doing `op` on `backend` for `dur`.
fn load(base: &str, ns: &str, backend: Backend, op: Op, args: &KvArgs, dur: Duration) -> Samples {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..args.clients)
        .map(|c| {
            let (stop, prefix) = (stop.clone(), format!("{base}{}", backend.prefix(ns)));
            let (keys, value) = (args.keys, value(args.value_bytes, c));
            thread::spawn(move || {
                let agent = agent();
                let mut s = Samples::default();
                let mut i = c * 7919;
                while !stop.load(Ordering::Relaxed) {
                    i = i.wrapping_add(1);
                    let url = format!("{prefix}{}", key(i % keys));
                    let t = Instant::now();
                    let (status, body) = request(&agent, op, &url, &value);
                    let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
                    if status == 200 {
                        s.latencies_us.push(us);
                    } else {
                        s.errors += 1;
                        if s.first_error.is_none() {
                            s.first_error = Some(format!("{status} {}", body.chars().take(200).collect::<String>()));
                        }
                    }
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
            all.latencies_us.extend(s.latencies_us);
            all.errors += s.errors;
            if all.first_error.is_none() {
                all.first_error = s.first_error;
            }
        }
    }
    // The clients' last requests finish after `dur`; count them.
    all.wall = started.elapsed();
    all
}

fn stats(backend: Backend, op: Op, s: &mut Samples) -> Stats {
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
    Stats {
        backend: backend.name(),
        op,
        ok: n,
        errors: s.errors,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        mean_ms: mean,
        ops_per_s: n as f64 / s.wall.as_secs_f64().max(1e-9),
    }
}

fn markdown(r: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "Command: `{}`", r.command);
    let _ = writeln!(
        md,
        "Machine: {} CPUs ({}), {} RAM, kernel {}, load average before the run {}",
        r.machine.cpus, r.machine.cpu_model, r.machine.mem_total, r.machine.kernel, r.machine.load_before
    );
    let _ = writeln!(md);
    let _ = writeln!(md, "| backend | op | ok | errors | p50 ms | p99 ms | mean ms | ops/s |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|");
    for s in &r.results {
        let _ = writeln!(
            md,
            "| {} | {:?} | {} | {} | {:.2} | {:.2} | {:.2} | {:.0} |",
            s.backend, s.op, s.ok, s.errors, s.p50_ms, s.p99_ms, s.mean_ms, s.ops_per_s
        );
    }
    let _ = writeln!(md);
    let _ = writeln!(md, "| ratio | value | target |");
    let _ = writeln!(md, "|---|---:|---|");
    for q in &r.ratios {
        let target = match (q.target, q.met) {
            (Some(t), Some(true)) => format!("<= {t:.1}x: met"),
            (Some(t), _) => format!("<= {t:.1}x: NOT met"),
            _ => String::new(),
        };
        let _ = writeln!(md, "| {} | {:.2}x | {target} |", q.what, q.value);
    }
    md
}

fn key(i: usize) -> String {
    format!("key-{i:05}")
}

/// A value of `len` bytes, different per client.
fn value(len: usize, client: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + ((i + client) % 26) as u8).collect()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .proxy(None)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .new_agent()
}

/// One request → (status, body text); transport errors are status 0.
fn request(agent: &ureq::Agent, op: Op, url: &str, value: &[u8]) -> (u16, String) {
    let resp = match op {
        Op::Put => agent.put(url).send(value),
        Op::Get => agent.get(url).call(),
    };
    match resp {
        Ok(mut r) => {
            let status = r.status().as_u16();
            // Read the whole body: the latency includes the transfer.
            let body = r.body_mut().read_to_vec().unwrap_or_default();
            let text = if status == 200 { String::new() } else { String::from_utf8_lossy(&body).into_owned() };
            (status, text)
        }
        Err(e) => (0, e.to_string()),
    }
}

fn rand_u32() -> Result<u32> {
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b).map_err(|e| anyhow::anyhow!("randomness: {e}"))?;
    Ok(u32::from_le_bytes(b))
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
