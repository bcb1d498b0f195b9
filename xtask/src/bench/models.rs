//! `cargo xtask bench models`: the Rust checker (1 and 2 threads) and the
//! TLA+ checker (TLC with 2 workers, else the single-threaded `tla`) on the
//! same cfgs in one run: distinct states, wall seconds, distinct states per
//! second, peak RSS (all measured by GNU time around the process), and the
//! ratio of the Rust checker's rate on 2 threads to the TLA+ checker's.
//! The table goes to target/bench/models.{json,md} and into
//! docs/BENCHMARKS.md between its `bench models` markers.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;

use super::shared::{Machine, machine, splice_into_docs, write_report};
use crate::check::checker_bin;
use crate::check::stream::{self, Output};
use crate::check::{tla_rs, tlc};

#[derive(Args)]
pub struct ModelsArgs {
    /// Only the rows whose cfg path contains this text (repeatable: any of them).
    #[arg(long)]
    only: Vec<String>,
    /// The Rust checker only (no TLA+ checker column).
    #[arg(long)]
    no_tla: bool,
}

/// One benchmarked cfg.
struct Bench {
    cfg: &'static str,
    /// Whether the `tla` fallback may run it (it is single-threaded: the
    /// large Remora cfg would take hours).
    fallback_ok: bool,
}

const BENCHES: [Bench; 4] = [
    Bench { cfg: "tla/Handoff.cfg", fallback_ok: true },
    Bench { cfg: "tla/large/HandoffV2MaxEvicts3.cfg", fallback_ok: true },
    Bench { cfg: "tla/large/RemoraClaimActivationTwoClaimsTwoOps.cfg", fallback_ok: false },
    Bench { cfg: "crates/checker/models/large/HandoffImpl.cfg", fallback_ok: true },
];

/// Thread counts of the Rust checker's runs; the TLA+ checker runs with
/// the last (TLC workers; `tla` has one thread whatever is asked).
const THREADS: [usize; 2] = [1, 2];

/// GNU time: wall seconds and peak RSS of one process.
const GNU_TIME: &str = "/usr/bin/time";

#[derive(Serialize)]
struct Run {
    checker: String,
    threads: usize,
    verdict: String,
    distinct_states: Option<u64>,
    seconds: f64,
    states_per_s: Option<f64>,
    peak_rss_mib: f64,
}

#[derive(Serialize)]
struct Row {
    cfg: String,
    runs: Vec<Run>,
    /// Why the TLA+ checker did not run on this cfg.
    tla_skipped: Option<String>,
    /// Rust checker on 2 threads, distinct states per second, over the TLA+
    /// checker's.
    ratio: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    machine: Machine,
    tla_checker: Option<String>,
    rows: Vec<Row>,
}

enum TlaChecker {
    Tlc(tlc::Tlc),
    Tla(PathBuf),
}

pub fn run(root: &Path, args: &ModelsArgs) -> Result<bool> {
    if !Path::new(GNU_TIME).is_file() {
        bail!("{GNU_TIME} is missing: install GNU time (`apt-get install time`) to measure peak RSS");
    }
    let machine = machine();
    eprintln!("Building the Rust checker (release) ...");
    let bin = checker_bin::build(root)?;
    let tla = if args.no_tla {
        None
    } else {
        Some(match tlc::locate() {
            Ok(t) => TlaChecker::Tlc(t),
            Err(e) => {
                eprintln!("TLC unavailable ({e:#}); using the tla fallback");
                TlaChecker::Tla(tla_rs::locate(root)?.exe)
            }
        })
    };
    let mut tla_version = None;
    let mut rows = Vec::new();
    let mut ok = true;
    for b in BENCHES.iter().filter(|b| args.only.is_empty() || args.only.iter().any(|o| b.cfg.contains(o.as_str()))) {
        let cfg = root.join(b.cfg);
        let mut row = Row { cfg: b.cfg.to_string(), runs: Vec::new(), tla_skipped: None, ratio: None };
        for threads in THREADS {
            eprintln!("  {}: Rust checker, {threads} thread(s) ...", b.cfg);
            let run = rust_run(&bin, &cfg, threads)?;
            eprintln!("{}", table_line(b.cfg, &run, None));
            ok &= run.verdict == "pass";
            row.runs.push(run);
        }
        let module = checker_bin::describe(&bin, &cfg)?.module;
        let spec = root.join("tla").join(format!("{module}.tla"));
        match &tla {
            None => row.tla_skipped = Some("--no-tla".into()),
            Some(_) if !spec.is_file() => row.tla_skipped = Some(format!("no TLA+ module {module}")),
            Some(TlaChecker::Tla(_)) if !b.fallback_ok => {
                row.tla_skipped = Some("the tla fallback is single-threaded: hours on this cfg".into());
            }
            Some(checker) => {
                eprintln!("  {}: TLA+ checker ...", b.cfg);
                let (run, version) = tla_run(checker, &spec, &cfg)?;
                ok &= run.verdict == "pass";
                let rust_rate = row.runs.last().and_then(|r| r.states_per_s);
                row.ratio = rust_rate.zip(run.states_per_s).map(|(a, b)| a / b);
                eprintln!("{}", table_line(b.cfg, &run, None));
                tla_version = tla_version.or(version);
                row.runs.push(run);
            }
        }
        rows.push(row);
    }
    let report = Report { machine, tla_checker: tla_version, rows };
    let md = markdown(&report);
    print!("{md}");
    write_report(root, "models", &report, &md)?;
    if args.only.is_empty() {
        splice_into_docs(root, "models", &md)?;
    }
    Ok(ok)
}

fn rust_run(bin: &Path, cfg: &Path, threads: usize) -> Result<Run> {
    let mut cmd = Command::new(bin);
    cmd.arg("check").arg(cfg).args(["--threads", &threads.to_string(), "--json", "--progress"]);
    let (out, seconds, rss) =
        timed(cmd, &label(cfg), |line| line.contains("distinct states,").then(|| line.trim().to_string()))?;
    let v: serde_json::Value = serde_json::from_str(&out.stdout)
        .with_context(|| format!("the checker printed no JSON report: {}", out.stderr.trim()))?;
    let distinct = v["unique_states"].as_u64();
    Ok(Run {
        checker: "Rust".into(),
        threads,
        verdict: v["verdict"].as_str().unwrap_or("error").to_string(),
        states_per_s: distinct.map(|n| n as f64 / seconds),
        distinct_states: distinct,
        seconds,
        peak_rss_mib: rss,
    })
}

/// Runs the TLA+ checker; returns the run and the version it printed.
fn tla_run(checker: &TlaChecker, spec: &Path, cfg: &Path) -> Result<(Run, Option<String>)> {
    let label = label(cfg);
    let (outcome, name, threads, seconds, rss, version) = match checker {
        TlaChecker::Tlc(t) => {
            let workers = THREADS[THREADS.len() - 1];
            let meta = tlc::meta_dir(&format!("bench-{label}"));
            let (out, seconds, rss) = timed(
                tlc::command(t, spec, cfg, tlc::How { workers, liveness: false }, &meta)?,
                &label,
                tlc::is_progress,
            )?;
            let _ = fs::remove_dir_all(&meta);
            (tlc::parse(&out.stdout, seconds), "TLC", workers, seconds, rss, Some(t.version.clone()))
        }
        TlaChecker::Tla(bin) => {
            let (out, seconds, rss) = timed(tla_rs::command(bin, spec, cfg, false)?, &label, tla_rs::is_progress)?;
            let version = format!("tla-checker {}", tla_rs::VERSION);
            (tla_rs::read_output(&out, seconds), "tla", 1, seconds, rss, Some(version))
        }
    };
    let distinct = outcome.distinct_states;
    let run = Run {
        checker: name.into(),
        threads,
        verdict: outcome.verdict.to_string(),
        states_per_s: distinct.map(|n| n as f64 / seconds),
        distinct_states: distinct,
        seconds,
        peak_rss_mib: rss,
    };
    Ok((run, version))
}

fn label(cfg: &Path) -> String {
    cfg.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Runs `cmd` under GNU time: its output, wall seconds, peak RSS in MiB.
fn timed(cmd: Command, label: &str, progress: impl Fn(&str) -> Option<String>) -> Result<(Output, f64, f64)> {
    let report = std::env::temp_dir().join(format!("handoff-bench-models-{}.time", std::process::id()));
    let mut t = Command::new(GNU_TIME);
    t.arg("-o").arg(&report).args(["-f", "%e %M"]).arg(cmd.get_program()).args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        t.current_dir(dir);
    }
    let out = stream::run(t, label, progress)?;
    let text = fs::read_to_string(&report).with_context(|| format!("{GNU_TIME} wrote no report"))?;
    let _ = fs::remove_file(&report);
    // A failing command adds a "Command exited with non-zero status" line first.
    let last = text.lines().last().unwrap_or("");
    let mut fields = last.split_whitespace().map(str::parse::<f64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(seconds)), Some(Ok(kib))) => Ok((out, seconds, kib / 1024.0)),
        _ => bail!("cannot read {GNU_TIME}'s report {last:?}"),
    }
}

fn markdown(r: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "{}\n", r.machine.line());
    if let Some(v) = &r.tla_checker {
        let _ = writeln!(md, "TLA+ checker: {v}\n");
    }
    let _ = writeln!(md, "| cfg | checker | threads | distinct states | seconds | states/s | peak RSS | vs TLA+ |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|");
    for row in &r.rows {
        for run in &row.runs {
            let ratio = if run.checker == "Rust" && run.threads == 2 { row.ratio } else { None };
            let _ = writeln!(md, "{}", table_line(&row.cfg, run, ratio));
        }
        if let Some(why) = &row.tla_skipped {
            let _ = writeln!(md, "| {} | TLA+ checker not run: {why} | | | | | | |", row.cfg);
        }
    }
    md
}

/// One run as a line of the table (also printed as soon as it ends, so
/// that an interrupted bench keeps what it measured).
fn table_line(cfg: &str, run: &Run, ratio: Option<f64>) -> String {
    let ratio = ratio.map_or(String::new(), |x| format!("{x:.1}x"));
    let states = run.distinct_states.map_or("-".into(), group);
    let rate = run.states_per_s.map_or("-".into(), |x| group(x.round() as u64));
    let verdict = if run.verdict == "pass" { String::new() } else { format!(" ({})", run.verdict) };
    format!(
        "| {cfg} | {}{verdict} | {} | {states} | {:.1} | {rate} | {:.0} MiB | {ratio} |",
        run.checker, run.threads, run.seconds, run.peak_rss_mib
    )
}

/// `12345678` as `12,345,678`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::group;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(95028), "95,028");
        assert_eq!(group(8974592), "8,974,592");
    }
}
