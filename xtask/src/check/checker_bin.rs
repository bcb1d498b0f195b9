//! The `checker` binary (crates/checker): built once in release mode,
//! then asked what each cfg is for and run on it. xtask does not link the
//! checker: the first `cargo xtask` command compiles no model checker.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// Builds the checker in release mode and returns its path.
pub fn build(root: &Path) -> Result<PathBuf> {
    let status = crate::cargo::command()
        .current_dir(root)
        .args(["build", "--release", "--quiet", "-p", "checker", "--bin", "checker"])
        .status()
        .context("cannot run cargo build")?;
    if !status.success() {
        bail!("building the checker failed");
    }
    Ok(root.join("target/release/checker"))
}

/// What a cfg says, as `checker cfg` prints it.
#[derive(Clone, Debug, Deserialize)]
pub struct CfgInfo {
    /// The module it configures (its `\* MODULE` line, else its file name).
    pub module: String,
    /// How the Rust checker explores it: `"bfs"`, `"dfs"` or `"simulation"`.
    pub search: String,
    /// The constants it gives values to.
    pub constants: Vec<String>,
    pub invariants: Vec<String>,
    pub properties: Vec<String>,
    /// Whether a Rust model checks that module.
    pub rust_model: bool,
    /// The property its `\* EXPECT violated Name` line names: the cfg is a
    /// counterexample, which every checker must find violated.
    #[serde(default)]
    pub expect_violated: Option<String>,
    /// Whether the module's model has reductions (`--no-reduction`).
    /// Required: read as `false` when missing, `--unreduced` would run
    /// nothing and pass.
    pub reductions: bool,
    /// Why the cfg cannot be explored without them (`\* REDUCTION needed`).
    #[serde(default)]
    pub reduction_needed: Option<String>,
    /// How deep its unreduced run goes, breadth-first (`\* UNREDUCED depth N`).
    #[serde(default)]
    pub unreduced_depth: Option<u64>,
    /// Where its run keeping one step's drops goes when not beside its
    /// bounded unreduced run (`\* KEEP ONE deep: why` or `never: why`).
    #[serde(default)]
    pub keep_one: Option<KeepOne>,
    /// Why its module has no Rust model (`\* NO MIRROR: why`).
    pub no_mirror: Option<String>,
    /// The actions it declares never fire (`\* UNFIRED Action: why`).
    /// Required, like `reductions`: read as none when missing, a TLA-only
    /// row's declarations would go unchecked.
    pub unfired: Vec<String>,
}

/// Where a cfg's run keeping one step's drops goes when not beside its
/// bounded unreduced run, and why (`checker cfg`'s `keep_one`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeepOne {
    /// In the deep tier only (`\* KEEP ONE deep: why`).
    Deep(String),
    /// Nowhere: out of reach at its bounds (`\* KEEP ONE never: why`).
    Never(String),
}

/// Asks the checker what `cfg` says; a malformed cfg is an error naming
/// the line.
pub fn describe(bin: &Path, cfg: &Path) -> Result<CfgInfo> {
    let out = Command::new(bin).arg("cfg").arg(cfg).output().context("cannot run the checker")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!("{}", stderr.trim().trim_start_matches("error: "));
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("the checker described {} in no JSON", cfg.display()))
}
