//! The Rust stage: runs the `checker` binary (stateright models) on a cfg
//! and reads its JSON report.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::stream;
use super::target::Target;

/// How the Rust checker's lines are labelled (beside `tlc` or `tla`).
pub const RUST: &str = "rust";

/// What the Rust checker said about one cfg.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RustOutcome {
    /// `"pass"`, `"violation"`, `"vacuous"` (an undeclared action never
    /// fired), `"no model"` or `"error"`.
    pub verdict: String,
    pub unique_states: Option<u64>,
    pub max_depth: Option<u64>,
    /// A breadth-first run bounded in depth (the cfg's `\* UNREDUCED depth
    /// N` line): complete to that depth only.
    pub depth_bound: Option<u64>,
    /// A bounded run whose graph ended above its bound: it met every
    /// reachable state, so the bound was not needed.
    pub ended_within_bound: bool,
    /// How the run used the model's reductions, as the checker reports it
    /// (`"on"`, `"off"`, `"keep-one"`).
    pub reduction: Option<String>,
    pub seconds: Option<f64>,
    pub violated: Option<String>,
    pub message: Option<String>,
    /// Per action: steps taken and distinct states reached first
    /// (exhaustive searches only).
    pub coverage: Option<Vec<ActionCoverage>>,
    /// What made the verdict "vacuous".
    pub unfired: Vec<String>,
}

/// One action's line of the checker's coverage.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ActionCoverage {
    pub action: String,
    pub fired: u64,
    pub distinct: u64,
}

/// How a run uses the model's reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reductions {
    /// As the cfg says (on, for a model that has them).
    On,
    /// Without them (`--no-reduction`).
    Off,
    /// Keeping one step's drops, over the whole graph, searched as the cfg
    /// says (`--keep-one`; depth-first keeps only fingerprints).
    KeepOne,
}

/// Runs the model of `target`'s module on its cfg, searched as the cfg
/// says; a simulation runs for `simulation_seconds`.
pub fn run(bin: &Path, target: &Target, simulation_seconds: u64, reductions: Reductions) -> Result<RustOutcome> {
    let mut cmd = Command::new(bin);
    cmd.arg("check");
    match &target.spec {
        Some(spec) => cmd.arg(spec),
        None => cmd.arg(&target.module),
    };
    cmd.arg("--config").arg(&target.cfg_path).args(["--json", "--progress"]);
    if target.search == "simulation" {
        cmd.args(["--seconds", &simulation_seconds.to_string()]);
    }
    let label = match reductions {
        Reductions::On => format!("{RUST} {}", target.cfg_name()),
        Reductions::Off => format!("{RUST} {}", target.unreduced_name()),
        Reductions::KeepOne => format!("{RUST} {}", target.keep_one_name()),
    };
    match reductions {
        Reductions::On => {}
        Reductions::Off => {
            cmd.arg("--no-reduction");
        }
        Reductions::KeepOne => {
            cmd.arg("--keep-one");
        }
    }
    let out = stream::run(cmd, &label, |line| line.contains("distinct states,").then(|| line.trim().to_string()))?;
    let last_error = || out.stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
    Ok(match out.code {
        Some(0) | Some(1) => {
            let v: serde_json::Value =
                serde_json::from_str(&out.stdout).context("the checker printed no JSON report")?;
            RustOutcome {
                verdict: v["verdict"].as_str().unwrap_or("error").to_string(),
                unique_states: v["unique_states"].as_u64(),
                max_depth: v["max_depth"].as_u64(),
                depth_bound: v["depth_bound"].as_u64(),
                ended_within_bound: v["ended_within_bound"].as_bool().unwrap_or(false),
                reduction: v["reduction"].as_str().map(str::to_string),
                seconds: v["seconds"].as_f64(),
                violated: v["violated"].as_str().map(str::to_string),
                message: None,
                coverage: serde_json::from_value(v["coverage"].clone()).ok(),
                unfired: serde_json::from_value(v["unfired"].clone()).unwrap_or_default(),
            }
        }
        Some(3) => RustOutcome { verdict: "no model".into(), message: Some(last_error()), ..RustOutcome::default() },
        _ => RustOutcome { verdict: "error".into(), message: Some(last_error()), ..RustOutcome::default() },
    })
}
