//! `cargo xtask tidy`: one format and no lint debt (rust-analyzer runs its
//! formatting check as a test; this is the same gate, run first by
//! `cargo xtask test`).
//!
//! 1. `cargo fmt --all --check`;
//! 2. `cargo clippy --workspace --all-targets -- -D warnings` on the host;
//! 3. clippy for the code the Worker links (`do-worker`, `protocol`) on
//!    `wasm32-unknown-unknown`, where the no-panic deny list of both crates'
//!    `lib.rs` (`unwrap_used`, `expect_used`, `panic`, `indexing_slicing`, …)
//!    applies to exactly what runs in the isolate.
//!
//! A failure names the files and the command that fixes them.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

/// The crates linked into the Worker's wasm.
const WASM_CRATES: [&str; 2] = ["do-worker", "protocol"];

/// Runs the three gates; `Ok(false)` if any fails (each one runs, so one
/// report lists every problem).
pub fn run(root: &Path) -> Result<bool> {
    let fmt = format(root)?;
    let host = clippy(root, &["--workspace", "--all-targets"], "host")?;
    let mut wasm_args = vec!["--target", "wasm32-unknown-unknown"];
    for krate in WASM_CRATES {
        wasm_args.extend(["-p", krate]);
    }
    let wasm = clippy(root, &wasm_args, "wasm32-unknown-unknown")?;
    let ok = fmt && host && wasm;
    eprintln!("tidy: {}", if ok { "clean (rustfmt, clippy host, clippy wasm32)" } else { "FAILED (see above)" });
    Ok(ok)
}

/// Installs rustfmt and clippy when the toolchain lacks them (a minimal
/// rustup profile has neither); `cargo xtask setup` calls this.
pub fn ensure_components(root: &Path) -> Result<()> {
    for (sub, component) in [("fmt", "rustfmt"), ("clippy", "clippy")] {
        let present = cargo()
            .current_dir(root)
            .args([sub, "--version"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if present {
            println!("tidy: {component}: installed");
            continue;
        }
        println!("tidy: adding the {component} component (missing; `cargo xtask tidy` needs it)");
        let status = Command::new("rustup")
            .current_dir(root)
            .args(["component", "add", component])
            .status()
            .context("running rustup (is it on PATH?)")?;
        anyhow::ensure!(status.success(), "`rustup component add {component}` failed ({status})");
    }
    Ok(())
}

fn cargo() -> Command {
    crate::cargo::command()
}

fn format(root: &Path) -> Result<bool> {
    eprintln!("tidy: cargo fmt --all --check");
    let out = cargo()
        .current_dir(root)
        .args(["fmt", "--all", "--check"])
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run cargo fmt (is rustfmt installed? `rustup component add rustfmt`)")?;
    if out.status.success() {
        return Ok(true);
    }
    let files = unformatted_files(&String::from_utf8_lossy(&out.stdout), root);
    eprintln!("tidy: not rustfmt-clean ({} files):", files.len());
    for f in &files {
        eprintln!("  {f}");
    }
    eprintln!("tidy: fix with `cargo fmt --all`");
    Ok(false)
}

/// The files of `cargo fmt --check` output (`Diff in /abs/path.rs:12:`).
fn unformatted_files(stdout: &str, root: &Path) -> BTreeSet<String> {
    let prefix = format!("{}/", root.display());
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Diff in "))
        .filter_map(|rest| rest.split(".rs:").next())
        .map(|path| format!("{}.rs", path.strip_prefix(prefix.as_str()).unwrap_or(path)))
        .collect()
}

fn clippy(root: &Path, scope: &[&str], label: &str) -> Result<bool> {
    eprintln!("tidy: cargo clippy {} -- -D warnings", scope.join(" "));
    let status = cargo()
        .current_dir(root)
        .arg("clippy")
        .args(scope)
        .args(["--", "-D", "warnings"])
        .status()
        .context("cannot run cargo clippy (is clippy installed? `rustup component add clippy`)")?;
    if !status.success() {
        eprintln!(
            "tidy: clippy ({label}) found problems (files and lines above); fix them, or try `cargo clippy --fix {} --allow-dirty` then `cargo fmt --all`",
            scope.join(" ")
        );
    }
    Ok(status.success())
}

#[cfg(test)]
mod unit {
    use std::path::Path;

    #[test]
    fn names_the_files_rustfmt_would_change() {
        let out = "Diff in /repo/crates/a/src/lib.rs:3:\n-x\n+y\nDiff in /repo/xtask/src/main.rs:40:\nDiff in /repo/crates/a/src/lib.rs:9:\n";
        let files: Vec<_> = super::unformatted_files(out, Path::new("/repo")).into_iter().collect();
        assert_eq!(files, ["crates/a/src/lib.rs", "xtask/src/main.rs"]);
    }
}
