//! `cargo xtask bench claims`: activations of the claims service on
//! workerd against a baseline in the same run:
//!
//! - `service`: `POST /v1/{ns}/claims/{claim}/activate`: the durable store
//!   (SQLite, one transaction per protocol step) and the lease in the
//!   namespace's Handoff KV (one round trip to the coordinator `{ns}:r0`,
//!   the lease's conditional create, a replicated write: a frame on the
//!   claim object's socket to r0 once it is open; the report says how many
//!   lease calls per activation went as frames);
//! - `sqlite-only`: `/_bench/claims/{ns}/claims/{claim}/activate` (test
//!   hooks only): the same activator with the lease kept in memory for the
//!   call, so the whole activation is one SQLite transaction in the claim
//!   object and never leaves it.
//!
//! Every activation needs a claim that awaits activation, so each of N
//! closed-loop clients repeats: create a claim (not measured), activate it
//! (measured). Throughput is therefore complete claim + activation cycles
//! per second, the rate at which jobs can be started; latency percentiles
//! are the activation requests alone. Phases alternate between the two
//! backends (order rotated per round), one namespace per backend.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use clap::Args;
use serde::Serialize;
use serde_json::json;

use super::shared::{
    MAX_CLIENTS, MAX_DURATION_S, Machine, Ratio, Samples, Summary, closed_loop, create_namespace, machine,
    namespace_status, rand_u32, ratio, ratio_table, replica_sum, write_report,
};
use crate::worker;

#[derive(Args, Clone, Debug)]
pub struct ClaimsArgs {
    /// Concurrent closed-loop clients (all in one namespace per backend:
    /// one claim object serves them all).
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Seconds of measurement per backend, split over the rounds.
    #[arg(long, default_value_t = 12)]
    pub duration: u64,
    /// Rounds the measurement is split into (backend order rotates).
    #[arg(long, default_value_t = 6)]
    pub rounds: u64,
    /// Seconds of unmeasured load per backend before measuring.
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
enum Backend {
    Service,
    SqliteOnly,
}

impl Backend {
    const ALL: [Backend; 2] = [Backend::Service, Backend::SqliteOnly];

    fn name(self) -> &'static str {
        match self {
            Backend::Service => "service",
            Backend::SqliteOnly => "sqlite-only",
        }
    }

    fn activate_url(self, base: &str, ns: &str, claim: &str) -> String {
        match self {
            Backend::Service => format!("{base}/v1/{ns}/claims/{claim}/activate"),
            Backend::SqliteOnly => format!("{base}/_bench/claims/{ns}/claims/{claim}/activate"),
        }
    }
}

#[derive(Serialize)]
struct Stats {
    backend: &'static str,
    #[serde(flatten)]
    activate: Summary,
}

#[derive(Serialize)]
struct Report {
    command: String,
    machine: Machine,
    clients: usize,
    duration_s: u64,
    rounds: u64,
    results: Vec<Stats>,
    ratios: Vec<Ratio>,
    /// The service's lease calls that reached its coordinator as frames on
    /// the claim object's socket (`calls_in_frames` of `{ns}:r0`), per
    /// accepted activation, warm-up included; `None` if unread.
    lease_frames_per_activation: Option<f64>,
}

pub(super) fn run(root: &Path, args: &ClaimsArgs) -> Result<bool> {
    ensure!((1..=MAX_CLIENTS).contains(&args.clients), "--clients must be 1 to {MAX_CLIENTS}");
    ensure!((1..=MAX_DURATION_S).contains(&args.duration), "--duration must be 1 to {MAX_DURATION_S} seconds");
    ensure!(args.rounds >= 1 && args.rounds <= args.duration * 10, "--rounds must be 1 to 10 x duration");
    let machine = machine();
    let mut server = worker::serve_for_tests(root, "bench", "benchmark", worker::Inspector::Off)?;
    let base = server.base.clone();
    let token = server.token.clone();
    let run_id = format!("{:08x}", rand_u32()?);
    let ns = |b: Backend| format!("bench-claims-{}-{run_id}", b.name());
    for backend in Backend::ALL {
        create_namespace(&base, &token, &ns(backend))?;
    }
    println!(
        "bench: {} clients, {} s per backend in {} rounds, namespaces {} and {}",
        args.clients,
        args.duration,
        args.rounds,
        ns(Backend::Service),
        ns(Backend::SqliteOnly)
    );
    // Each phase's claims get fresh ids: a phase counter in the claim id.
    let mut phase = 0u64;
    // Every accepted activation of the service, warm-up included.
    let mut service_activations = 0u64;
    for backend in Backend::ALL {
        println!("bench: warm-up {} ({} s)", backend.name(), args.warmup);
        phase += 1;
        let got = load(&base, &token, &ns(backend), backend, args.clients, phase, Duration::from_secs(args.warmup));
        if backend == Backend::Service {
            service_activations += got.latencies_us.len() as u64;
        }
    }
    let mut samples: Vec<(Backend, Samples)> = Backend::ALL.map(|b| (b, Samples::default())).into();
    let per_phase = Duration::from_secs(args.duration).div_f64(args.rounds as f64);
    for round in 0..args.rounds {
        let mut order = Backend::ALL;
        order.rotate_left((round % 2) as usize);
        println!("bench: round {}/{} ({})", round + 1, args.rounds, order.map(Backend::name).join(", "));
        for backend in order {
            phase += 1;
            let got = load(&base, &token, &ns(backend), backend, args.clients, phase, per_phase);
            if backend == Backend::Service {
                service_activations += got.latencies_us.len() as u64;
            }
            if let Some((_, s)) = samples.iter_mut().find(|(b, _)| *b == backend) {
                s.merge(got);
            }
        }
    }
    let framed = namespace_status(&base, &token, &ns(Backend::Service)).map(|st| replica_sum(&st, "calls_in_frames"));
    let panics = server.log_matches(&["panicked at", "RuntimeError: unreachable"]);
    server.stop()?;
    ensure!(panics.is_empty(), "the worker panicked during the benchmark:\n{}", panics.join("\n"));

    for (b, s) in &samples {
        if let Some(e) = &s.first_error {
            println!("bench: {}: {} errors, first: {e}", b.name(), s.errors);
        }
    }
    let results: Vec<Stats> =
        samples.iter_mut().map(|(b, s)| Stats { backend: b.name(), activate: Summary::of(s) }).collect();
    let lease_frames_per_activation =
        framed.ok().filter(|_| service_activations > 0).map(|f| f as f64 / service_activations as f64);
    let mut ratios = Vec::new();
    if let [service, baseline] = results.as_slice() {
        let (s, b) = (&service.activate, &baseline.activate);
        ratios.push(ratio("service/sqlite-only activate p50".into(), s.p50_ms / b.p50_ms, None));
        ratios.push(ratio("service/sqlite-only activate p99".into(), s.p99_ms / b.p99_ms, None));
        ratios.push(ratio("service/sqlite-only cycles per second".into(), s.ops_per_s / b.ops_per_s, None));
    }
    let report = Report {
        command: format!(
            "cargo xtask bench claims --clients {} --duration {} --rounds {} --warmup {}",
            args.clients, args.duration, args.rounds, args.warmup
        ),
        machine,
        clients: args.clients,
        duration_s: args.duration,
        rounds: args.rounds,
        results,
        ratios,
        lease_frames_per_activation,
    };
    let md = markdown(&report);
    println!("\n{md}");
    write_report(root, "claims", &report, &md)?;
    let errors: u64 = report.results.iter().map(|s| s.activate.errors).sum();
    if errors > 0 {
        println!("bench: {errors} requests failed (see above)");
    }
    Ok(errors == 0)
}

/// `clients` closed-loop threads, each creating and activating claims on
/// `backend` for `dur`; only accepted activations count.
fn load(base: &str, token: &str, ns: &str, backend: Backend, clients: usize, phase: u64, dur: Duration) -> Samples {
    closed_loop(clients, dur, |c| {
        let (base, ns, worker) = (base.to_string(), ns.to_string(), format!("w{c}"));
        let token = token.to_string();
        let mut i = 0u64;
        move |agent: &ureq::Agent, s: &mut Samples| {
            i += 1;
            let claim = format!("p{phase}-c{c}-{i}");
            let create = json!({ "claim": claim, "fence": 1, "worker": worker, "reservation_ttl_ms": 60_000 });
            let (status, body) = post(agent, &token, &format!("{base}/v1/{ns}/claims"), &create, None);
            if status != 201 {
                s.error(format!("create: {status} {body}"));
                return;
            }
            let activate = json!({ "fence": 1, "worker": worker, "lease_ttl_ms": 60_000 });
            let t = Instant::now();
            let url = backend.activate_url(&base, &ns, &claim);
            let (status, body) = post(agent, &token, &url, &activate, Some(&claim));
            if status == 200 && body.contains("\"accepted\"") {
                s.record(t.elapsed());
            } else {
                s.error(format!("activate: {status} {body}"));
            }
        }
    })
}

/// A JSON POST → (status, body text); transport errors are status 0.
fn post(agent: &ureq::Agent, token: &str, url: &str, body: &serde_json::Value, key: Option<&str>) -> (u16, String) {
    let mut req =
        agent.post(url).header("content-type", "application/json").header("authorization", &format!("Bearer {token}"));
    if let Some(key) = key {
        req = req.header("idempotency-key", key);
    }
    match req.send(body.to_string().as_bytes()) {
        Ok(mut r) => (r.status().as_u16(), r.body_mut().read_to_string().unwrap_or_default()),
        Err(e) => (0, e.to_string()),
    }
}

fn markdown(r: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "Command: `{}`", r.command);
    let _ = writeln!(md, "{}", r.machine.line());
    let _ = writeln!(md);
    let _ = writeln!(md, "| backend | activations | errors | activate p50 ms | p99 ms | mean ms | cycles/s |");
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for s in &r.results {
        let a = &s.activate;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.1} |",
            s.backend, a.ok, a.errors, a.p50_ms, a.p99_ms, a.mean_ms, a.ops_per_s
        );
    }
    let _ = writeln!(md);
    if let Some(frames) = r.lease_frames_per_activation {
        let _ = writeln!(md, "service: {frames:.2} lease calls as frames on the socket to r0 per accepted activation");
        let _ = writeln!(md);
    }
    ratio_table(&mut md, &r.ratios);
    md
}
