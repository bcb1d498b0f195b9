//! `cargo xtask bench kv`: PUT and GET latency (p50, p99), throughput and
//! server CPU per operation of the replicated store on workerd, against
//! three baselines in the same run and through the same Worker code path:
//!
//! - `mem-do`: one Durable Object holding the map in memory (no replication);
//! - `sql-do`: one Durable Object writing every value to SQLite storage;
//! - `echo-do` (PUT only): one Durable Object sending a message of the size
//!   of a replicated PUT's replica message to a second, which just answers:
//!   the floor of one hop, i.e. of a replicated PUT on this platform.
//!
//! N closed-loop clients (one thread and one keep-alive connection each)
//! hammer one namespace per backend. Phases are interleaved: every round
//! (1 s per phase by default) runs PUT then GET for each backend, in an
//! order rotated per round, so bursts of other load on a shared machine
//! spread over all backends evenly.
//! CPU per operation is that of wrangler's processes (node and workerd)
//! while a series ran, divided by its operations. The worker runs without
//! wrangler's DevTools inspector ([`worker::Inspector::Off`]): the
//! inspector's `Network` events cost every request between objects CPU that
//! it does not cost on Cloudflare (docs/BENCHMARKS.md, issue 14 item 3).
//! Targets (issue 14): replicated PUT p50 ≤ 1.3x the in-memory DO's and
//! ≤ 1.0x the SQLite DO's; GET p50 ≤ 1.5x the in-memory DO's (issue 15: a
//! linearizable GET waits for one confirm round to a peer). Results go
//! to stdout, `target/bench/kv.json` and `target/bench/kv.md` (the table
//! docs/BENCHMARKS.md quotes). For the replicated store they also give the
//! deliveries (socket frames or HTTP requests, each carrying a batch) and
//! messages the replicas sent each other per operation (the
//! `deliveries_out` and `msgs_out` of `GET /v1/{ns}/status`, around each of
//! its series): how many pushes and confirms one delivery carries.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail, ensure};
use clap::Args;
use serde::Serialize;

use super::procs;
use super::shared::{
    MAX_CLIENTS, MAX_DURATION_S, Machine, Op, Ratio, Samples, Summary, agent, closed_loop, create_namespace, machine,
    namespace_status, rand_u32, ratio, ratio_table, replica_sum, request, write_report,
};
use crate::worker;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
enum Backend {
    Replicated,
    MemDo,
    SqlDo,
    EchoDo,
}

impl Backend {
    const ALL: [Backend; 4] = [Backend::Replicated, Backend::MemDo, Backend::SqlDo, Backend::EchoDo];

    fn name(self) -> &'static str {
        match self {
            Backend::Replicated => "replicated",
            Backend::MemDo => "mem-do",
            Backend::SqlDo => "sql-do",
            Backend::EchoDo => "echo-do",
        }
    }

    fn prefix(self, ns: &str) -> String {
        match self {
            Backend::Replicated => format!("/v1/{ns}/kv/"),
            Backend::MemDo => format!("/_bench/mem/{ns}/kv/"),
            Backend::SqlDo => format!("/_bench/sql/{ns}/kv/"),
            Backend::EchoDo => format!("/_bench/echo/{ns}/kv/"),
        }
    }

    /// What it serves: the echo stores nothing, so it has no reads.
    fn ops(self) -> &'static [Op] {
        match self {
            Backend::EchoDo => &[Op::Put],
            _ => &[Op::Put, Op::Get],
        }
    }
}

/// CPU time by process command name (`node`, `workerd`).
type CpuByCommand = BTreeMap<String, Duration>;

#[derive(Serialize)]
struct Stats {
    backend: &'static str,
    op: Op,
    #[serde(flatten)]
    summary: Summary,
    /// CPU time of the server's processes per successful operation, by
    /// command (`node`: wrangler, `workerd`); empty without /proc.
    cpu_ms_per_op: BTreeMap<String, f64>,
    /// The replicated store: deliveries and messages between replicas per
    /// successful operation (heartbeats and gossip included).
    #[serde(skip_serializing_if = "Option::is_none")]
    replica_traffic_per_op: Option<Traffic>,
}

/// One (backend, op) series: its samples, the server CPU spent while it
/// ran, and (replicated) the traffic between replicas meanwhile.
struct Series {
    key: (Backend, Op),
    samples: Samples,
    cpu: CpuByCommand,
    traffic: Option<Traffic>,
}

/// Deliveries and messages the three replicas sent each other.
#[derive(Serialize, Clone, Copy, Default)]
struct Traffic {
    deliveries: f64,
    messages: f64,
}

impl Traffic {
    /// The sums over the replicas in a namespace status; `None` if it
    /// cannot be read.
    fn read(base: &str, token: &str, ns: &str) -> Option<Traffic> {
        let status = namespace_status(base, token, ns).ok()?;
        let sum = |field: &str| replica_sum(&status, field) as f64;
        Some(Traffic { deliveries: sum("deliveries_out"), messages: sum("msgs_out") })
    }

    /// What was sent between two readings; `None` if a replica restarted
    /// in between (its counters started again from 0).
    fn since(self, before: Traffic) -> Option<Traffic> {
        let (deliveries, messages) = (self.deliveries - before.deliveries, self.messages - before.messages);
        (deliveries >= 0.0 && messages >= 0.0).then_some(Traffic { deliveries, messages })
    }
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
    /// Conditional writes, a contended counter, a listing (`coord.rs`).
    coordination: super::coord::Coord,
    ratios: Vec<Ratio>,
}

pub(super) fn run(root: &Path, args: &KvArgs) -> Result<bool> {
    ensure!((1..=MAX_CLIENTS).contains(&args.clients), "--clients must be 1 to {MAX_CLIENTS}");
    ensure!((1..=MAX_DURATION_S).contains(&args.duration), "--duration must be 1 to {MAX_DURATION_S} seconds");
    ensure!(args.rounds >= 1 && args.rounds <= args.duration * 10, "--rounds must be 1 to 10 x duration");
    ensure!(args.keys >= 1 && args.keys <= 10_000, "--keys must be 1 to 10000");
    ensure!(args.value_bytes <= 1024 * 1024, "--value-bytes must be at most 1 MiB");
    let machine = machine();
    let mut server = worker::serve_for_tests(root, "bench", "benchmark", worker::Inspector::Off)?;
    let base = server.base.clone();
    let token = server.token.clone();
    let ns = format!("bench-{:08x}", rand_u32()?);
    create_namespace(&base, &token, &ns)?;
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
            let (status, body) = request(&agent, &token, Op::Put, &url, &value);
            if status != 200 {
                bail!("warm-up PUT {url}: {status} {}{}", String::from_utf8_lossy(&body), server.log_tail());
            }
        }
        let warm = Duration::from_secs(args.warmup) / 2;
        for &op in backend.ops() {
            load(&base, &token, &ns, backend, op, args, warm);
        }
    }
    let cpu = procs::cpu_by_command(&server.groups());
    if !cpu.is_empty() {
        let procs: Vec<String> = cpu.iter().map(|(c, t)| format!("{c} {:.1} s", t.as_secs_f64())).collect();
        println!("bench: server processes (CPU so far): {}", procs.join(", "));
    }

    // Per series: its samples and the server CPU spent while it ran.
    let mut samples: Vec<Series> = Vec::new();
    for backend in Backend::ALL {
        for &op in backend.ops() {
            let traffic = (backend == Backend::Replicated).then(Traffic::default);
            samples.push(Series { key: (backend, op), samples: Samples::default(), cpu: BTreeMap::new(), traffic });
        }
    }
    let per_phase = Duration::from_secs(args.duration).div_f64(args.rounds as f64);
    for round in 0..args.rounds {
        let mut order = Backend::ALL;
        order.rotate_left((round % Backend::ALL.len() as u64) as usize);
        println!("bench: round {}/{} ({})", round + 1, args.rounds, order.map(Backend::name).join(", "));
        for backend in order {
            for &op in backend.ops() {
                let replicated = backend == Backend::Replicated;
                let sent_before = replicated.then(|| Traffic::read(&base, &token, &ns)).flatten();
                let before = procs::cpu_by_command(&server.groups());
                let got = load(&base, &token, &ns, backend, op, args, per_phase);
                let after = procs::cpu_by_command(&server.groups());
                let sent_after = replicated.then(|| Traffic::read(&base, &token, &ns)).flatten();
                if let Some(Series { samples: s, cpu, traffic, .. }) =
                    samples.iter_mut().find(|s| s.key == (backend, op))
                {
                    s.merge(got);
                    for (command, t) in after {
                        let spent = t.saturating_sub(before.get(&command).copied().unwrap_or_default());
                        *cpu.entry(command).or_default() += spent;
                    }
                    // A series whose status could not be read, or whose replicas
                    // restarted, reports no traffic.
                    let sent = sent_before.zip(sent_after).and_then(|(b, a)| a.since(b));
                    *traffic = traffic.zip(sent).map(|(sum, sent)| Traffic {
                        deliveries: sum.deliveries + sent.deliveries,
                        messages: sum.messages + sent.messages,
                    });
                }
            }
        }
    }
    println!("bench: coordination (conditional PUTs, a contended counter, a listing of 1,000 keys)");
    let coordination =
        super::coord::measure(&base, &token, args.clients, Duration::from_secs(args.duration), args.rounds)?;
    let panics = server.log_matches(&["panicked at", "RuntimeError: unreachable"]);
    server.stop()?;
    ensure!(panics.is_empty(), "the worker panicked during the benchmark:\n{}", panics.join("\n"));

    let results: Vec<Stats> = samples
        .iter_mut()
        .map(|Series { key: (b, op), samples: s, cpu, traffic }| {
            let summary = Summary::of(s);
            let ops = summary.ok.max(1) as f64;
            let cpu_ms_per_op = cpu
                .iter()
                .filter(|(_, t)| !t.is_zero())
                .map(|(c, t)| (c.clone(), t.as_secs_f64() * 1000.0 / ops))
                .collect();
            let replica_traffic_per_op =
                traffic.map(|t| Traffic { deliveries: t.deliveries / ops, messages: t.messages / ops });
            Stats { backend: b.name(), op: *op, summary, cpu_ms_per_op, replica_traffic_per_op }
        })
        .collect();
    for Series { key: (b, op), samples: s, .. } in &samples {
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
        let (mem_target, sql_target) = match op {
            Op::Put => (1.3, Some(1.0)),
            // Issue 15: a GET waits for one confirm round to a peer.
            Op::Get => (1.5, None),
        };
        let opname = format!("{op:?}").to_uppercase();
        ratios.push(ratio(
            format!("replicated/mem-do {opname} p50"),
            rep.summary.p50_ms / mem.summary.p50_ms,
            Some(mem_target),
        ));
        ratios.push(ratio(format!("replicated/mem-do {opname} p99"), rep.summary.p99_ms / mem.summary.p99_ms, None));
        ratios.push(ratio(
            format!("replicated/mem-do {opname} throughput"),
            rep.summary.ops_per_s / mem.summary.ops_per_s,
            None,
        ));
        ratios.push(ratio(
            format!("replicated/sql-do {opname} p50"),
            rep.summary.p50_ms / sql.summary.p50_ms,
            sql_target,
        ));
        if let (Op::Put, Some(echo)) = (op, find(Backend::EchoDo, op)) {
            // The floor: where a replicated PUT would be if replication cost
            // nothing but the hop.
            ratios.push(ratio("echo-do/mem-do PUT p50 (floor)".into(), echo.summary.p50_ms / mem.summary.p50_ms, None));
            ratios.push(ratio("echo-do/sql-do PUT p50 (floor)".into(), echo.summary.p50_ms / sql.summary.p50_ms, None));
            ratios.push(ratio("replicated/echo-do PUT p50".into(), rep.summary.p50_ms / echo.summary.p50_ms, None));
        }
    }
    ratios.extend(coordination.ratios());
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
        coordination,
        ratios,
    };
    let md = markdown(&report);
    println!("\n{md}");
    write_report(root, "kv", &report, &md)?;
    let errors: u64 = report.results.iter().map(|s| s.summary.errors).sum();
    let met = report.ratios.iter().all(|r| r.met != Some(false));
    if errors > 0 {
        println!("bench: {errors} requests failed (see above)");
    }
    println!("bench: targets {}", if met { "met" } else { "NOT met" });
    Ok(errors == 0)
}

/// `clients` closed-loop threads doing `op` on `backend` for `dur`.
fn load(base: &str, token: &str, ns: &str, backend: Backend, op: Op, args: &KvArgs, dur: Duration) -> Samples {
    let prefix = format!("{base}{}", backend.prefix(ns));
    let keys = args.keys;
    closed_loop(args.clients, dur, |c| {
        let (prefix, value, token) = (prefix.clone(), value(args.value_bytes, c), token.to_string());
        let mut i = c * 7919;
        move |agent: &ureq::Agent, s: &mut Samples| {
            i = i.wrapping_add(1);
            let url = format!("{prefix}{}", key(i % keys));
            let t = Instant::now();
            let (status, body) = request(agent, &token, op, &url, &value);
            if status == 200 {
                s.record(t.elapsed());
            } else {
                s.error(format!("{status} {}", String::from_utf8_lossy(&body)));
            }
        }
    })
}

fn markdown(r: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "Command: `{}`", r.command);
    let _ = writeln!(md, "{}", r.machine.line());
    let _ = writeln!(md);
    let _ =
        writeln!(md, "| backend | op | ok | errors | p50 ms | p99 ms | mean ms | ops/s | CPU ms/op: workerd, node |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for s in &r.results {
        let per = |c: &str| s.cpu_ms_per_op.get(c).map_or("-".to_string(), |ms| format!("{ms:.2}"));
        let cpu = format!("{}, {}", per("workerd"), per("node"));
        let _ = writeln!(
            md,
            "| {} | {:?} | {} | {} | {:.2} | {:.2} | {:.2} | {:.0} | {cpu} |",
            s.backend,
            s.op,
            s.summary.ok,
            s.summary.errors,
            s.summary.p50_ms,
            s.summary.p99_ms,
            s.summary.mean_ms,
            s.summary.ops_per_s
        );
    }
    let _ = writeln!(md);
    for s in &r.results {
        if let Some(t) = s.replica_traffic_per_op {
            let (deliveries, messages) = (t.deliveries, t.messages);
            let _ = writeln!(
                md,
                "{} {:?}: {deliveries:.2} deliveries and {messages:.2} messages between replicas per operation",
                s.backend, s.op
            );
        }
    }
    let _ = writeln!(md);
    let _ = writeln!(md, "{}", r.coordination.markdown());
    ratio_table(&mut md, &r.ratios);
    md
}

fn key(i: usize) -> String {
    format!("key-{i:05}")
}

/// A value of `len` bytes, different per client.
fn value(len: usize, client: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + ((i + client) % 26) as u8).collect()
}
