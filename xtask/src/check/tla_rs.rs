//! The fallback TLA+ checker: the `tla` binary of the crate `tla-checker`,
//! pinned, installed once into the shared tools cache (`crate::tools`). It reads TLC `.cfg` files and
//! reports the same distinct-state counts as TLC on these specs; it is
//! single-threaded and slower.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::Result;
use serde_json::Value;

use super::outcome::{Outcome, TraceStep};
use super::stream;
use crate::tools;

pub const VERSION: &str = "0.24.11";

/// Installs (once) and returns the verified `tla` binary.
pub fn locate(root: &Path) -> Result<tools::Installed> {
    let why = "the fallback TLA+ checker, used when TLC cannot be had";
    tools::cargo_tool(root, &tools::CargoTool { krate: "tla-checker", version: VERSION, bin: "tla", why })
}

/// Runs `tla` on one target, streaming its progress; with `liveness`, the
/// cfg's liveness properties are checked too (under the spec's fairness).
pub fn run(tla: &Path, spec: &Path, cfg: &Path, label: &str, liveness: bool) -> Result<Outcome> {
    let cmd = command(tla, spec, cfg, liveness)?;
    let started = Instant::now();
    let out = stream::run(cmd, label, is_progress)?;
    Ok(read_output(&out, started.elapsed().as_secs_f64()))
}

/// The `tla` command line for one cfg, run from the spec's directory.
pub fn command(tla: &Path, spec: &Path, cfg: &Path, liveness: bool) -> Result<Command> {
    let mut cmd = Command::new(tla);
    cmd.arg(spec.canonicalize()?).arg("--config").arg(cfg.canonicalize()?).args([
        "--json",
        "--max-states",
        "4000000000",
        "--max-depth",
        "1000000",
    ]);
    if liveness {
        cmd.arg("--check-liveness");
    }
    if let Some(dir) = spec.parent() {
        cmd.current_dir(dir);
    }
    Ok(cmd)
}

/// Progress lines look like `  12000 states explored | 598/s | depth: 7 | queue: 5397`.
pub fn is_progress(line: &str) -> Option<String> {
    line.contains("states explored |").then(|| line.trim().to_string())
}

/// Reads a finished `tla --json` run: its last JSON line, else its error.
pub fn read_output(out: &stream::Output, seconds: f64) -> Outcome {
    let json = out.stdout.lines().rev().find(|l| l.trim_start().starts_with('{'));
    match json.and_then(|l| serde_json::from_str::<Value>(l).ok()) {
        Some(v) => parse(&v, seconds),
        None => {
            let msg = out
                .stderr
                .lines()
                .chain(out.stdout.lines())
                .find(|l| l.contains("error") || l.contains("Error"))
                .unwrap_or("tla stopped without a result")
                .trim()
                .to_string();
            Outcome::error(msg, seconds)
        }
    }
}

/// Reads `tla --json` output.
pub fn parse(v: &Value, seconds: f64) -> Outcome {
    let stats = &v["stats"];
    // A safety violation is a `trace`; a liveness violation a `prefix` and
    // a `cycle` that repeats forever, whose steps name no action.
    let steps = |key: &str, unnamed: &str| -> Vec<TraceStep> {
        v[key]
            .as_array()
            .map(|steps| {
                steps
                    .iter()
                    .enumerate()
                    .map(|(i, s)| TraceStep {
                        action: s["action"]
                            .as_str()
                            .map(str::to_string)
                            .or_else(|| (key == "cycle" || i > 0).then(|| unnamed.to_string())),
                        state: s["state"]
                            .as_object()
                            .map(|o| o.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut trace = steps("trace", "a step");
    trace.extend(steps("prefix", "a step"));
    trace.extend(steps("cycle", "a step of the cycle that repeats forever"));
    let mut o = Outcome {
        distinct_states: stats["states_explored"].as_u64(),
        depth: stats["max_depth"].as_u64(),
        seconds,
        verdict: "pass",
        violated: None,
        trace,
        error: None,
        coverage: None,
    };
    match v["status"].as_str().unwrap_or("") {
        "ok" => {}
        "invariant_violation" => {
            o.verdict = "violation";
            o.violated = v["invariant_name"].as_str().map(str::to_string);
        }
        "property_violation" | "liveness_violation" => {
            o.verdict = "violation";
            o.violated = v["property"].as_str().map(str::to_string);
        }
        "deadlock" => {
            o.verdict = "violation";
            o.violated = Some("deadlock".into());
        }
        other => return Outcome::error(format!("tla reported {other}: {v}"), seconds),
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pass_and_violations() {
        let ok: Value = serde_json::from_str(r#"{"status": "ok", "stats": {"states_explored": 9, "transitions": 12, "max_depth": 5, "elapsed_secs": 0.0}}"#).unwrap();
        let o = parse(&ok, 0.1);
        assert_eq!((o.verdict, o.distinct_states, o.depth), ("pass", Some(9), Some(5)));

        let bad: Value = serde_json::from_str(r#"{"status": "property_violation", "property": "Mono", "kind": "action", "trace": [{"index": 0, "action": null, "state": {"x": 2}}, {"index": 1, "action": "Next", "state": {"x": 1}}], "stats": {"states_explored": 1, "transitions": 1, "max_depth": 1, "elapsed_secs": 0.0}}"#).unwrap();
        let o = parse(&bad, 0.1);
        assert_eq!((o.verdict, o.violated.as_deref()), ("violation", Some("Mono")));
        assert_eq!(o.trace[1].action.as_deref(), Some("Next"));
        assert_eq!(o.trace[1].state, vec![("x".to_string(), "1".to_string())]);

        let missing: Value = serde_json::from_str(r#"{"status": "missing_constants", "constants": ["Max"]}"#).unwrap();
        assert_eq!(parse(&missing, 0.0).verdict, "error");
    }

    #[test]
    fn reads_a_liveness_violation_as_a_prefix_and_a_cycle() {
        // Shaped like `tla --check-liveness --json` 0.24.11 (abridged).
        let lasso: Value = serde_json::from_str(r#"{"status": "liveness_violation", "property": "Live", "prefix": [{"index": 0, "action": null, "state": {"x": 0}}, {"index": 1, "action": null, "state": {"x": 1}}], "cycle": [{"index": 0, "action": null, "state": {"x": 1}}], "stats": {"states_explored": 2, "transitions": 2, "max_depth": 1, "elapsed_secs": 0.0}}"#).unwrap();
        let o = parse(&lasso, 0.1);
        assert_eq!((o.verdict, o.violated.as_deref()), ("violation", Some("Live")));
        let actions: Vec<Option<&str>> = o.trace.iter().map(|s| s.action.as_deref()).collect();
        assert_eq!(actions, [None, Some("a step"), Some("a step of the cycle that repeats forever")]);
    }
}
