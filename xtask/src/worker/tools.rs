//! Finds or installs the pinned toolchain the worker needs.
//!
//! Versions are never written here: worker-build and wasm-bindgen-cli are
//! read from Cargo.lock (the `worker` and `wasm-bindgen` libraries the worker
//! crate pins with `=`), wrangler from package-lock.json. Cargo tools go to
//! the shared tools cache (`crate::tools`) under `<name>-<version>/`, so a
//! version bump installs alongside instead of reusing a mismatched binary.

use std::env;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

/// Where the worker crate (and its wrangler.toml) lives, relative to the root.
pub(super) const WORKER_DIR: &str = "crates/do-worker";
const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// The node script behind [`super::wrangler::Inspector::Off`], relative to the root.
const SERVE_SCRIPT: &str = "xtask/src/worker/serve.mjs";

/// Resolved paths of everything `build`/`dev`/`deploy`/`smoke` run.
#[derive(Debug, Clone)]
pub struct Tools {
    /// `crates/do-worker`, where wrangler runs (it reads wrangler.toml and
    /// .dev.vars from its working directory).
    pub worker_dir: PathBuf,
    /// `<tools cache>/worker-build-<v>/bin/worker-build`.
    pub worker_build: PathBuf,
    /// `<tools cache>/wasm-bindgen-cli-<v>/bin/wasm-bindgen`, passed as WASM_BINDGEN_BIN.
    pub wasm_bindgen: PathBuf,
    /// `node_modules/.bin/wrangler`.
    pub wrangler: PathBuf,
    /// `xtask/src/worker/serve.mjs`: serves the worker through wrangler's API
    /// without the DevTools inspector (run by node, imports `wrangler`).
    pub serve_script: PathBuf,
}

/// Installs whatever is missing, printing one line per step, and returns
/// the resolved paths.
pub fn ensure_tools(root: &Path) -> Result<Tools> {
    ensure_wasm_target(root)?;
    let lock = fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    // worker-build is released in lockstep with the `worker` library and
    // rejects library versions it does not know.
    let worker_build = cargo_tool(
        root,
        "worker-build",
        &locked_version(&lock, "worker")?,
        "worker-build",
        "builds the worker to wasm",
    )?;
    // The wasm-bindgen CLI refuses any library version but its own.
    let wasm_bindgen = cargo_tool(
        root,
        "wasm-bindgen-cli",
        &locked_version(&lock, "wasm-bindgen")?,
        "wasm-bindgen",
        "worker-build's wasm-bindgen step; must equal the wasm-bindgen library in Cargo.lock",
    )?;
    let wrangler = ensure_wrangler(root)?;
    let serve_script = root.join(SERVE_SCRIPT);
    ensure!(serve_script.is_file(), "{} is missing", serve_script.display());
    Ok(Tools { worker_dir: root.join(WORKER_DIR), worker_build, wasm_bindgen, wrangler, serve_script })
}

impl Tools {
    /// A command for `program` that runs in the worker directory with the
    /// pinned tools first on PATH (wrangler's `[build] command` calls
    /// `worker-build` by name) and WASM_BINDGEN_BIN set (worker-build would
    /// otherwise try a GitHub download).
    pub fn command(&self, program: &Path) -> Result<Command> {
        let bin_dir = self.worker_build.parent().context("worker-build path has no parent")?;
        let mut paths = vec![bin_dir.to_path_buf()];
        paths.extend(env::split_paths(&env::var_os("PATH").unwrap_or_default()));
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.worker_dir)
            .env("PATH", env::join_paths(paths).context("PATH contains an invalid entry")?)
            .env("WASM_BINDGEN_BIN", &self.wasm_bindgen)
            // No usage metrics from dev machines or CI.
            .env("WRANGLER_SEND_METRICS", "false")
            // Local dev otherwise fetches a sample `request.cf` from
            // workers.cloudflare.com; the worker does not use it and the
            // fetch fails offline with a noisy stack trace.
            .env("CLOUDFLARE_CF_FETCH_ENABLED", "false");
        Ok(cmd)
    }
}

/// The version of `name` in Cargo.lock; exactly one must be locked, since the
/// tool has to match it.
pub(super) fn locked_version(lock: &str, name: &str) -> Result<String> {
    let versions: Vec<&str> = lock
        .split("[[package]]")
        .filter(|block| field(block, "name") == Some(name))
        .filter_map(|block| field(block, "version"))
        .collect();
    match versions[..] {
        [v] => Ok(v.to_string()),
        [] => bail!(
            "Cargo.lock has no `{name}` package; is {WORKER_DIR} a workspace member? (`cargo fetch` refreshes the lockfile)"
        ),
        _ => bail!("Cargo.lock has several `{name}` versions ({}); the worker needs exactly one", versions.join(", ")),
    }
}

/// `key = "value"` inside one Cargo.lock package block.
fn field<'a>(block: &'a str, key: &str) -> Option<&'a str> {
    block.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(key)?.trim_start().strip_prefix('=')?;
        rest.trim().strip_prefix('"')?.strip_suffix('"')
    })
}

fn ensure_wasm_target(root: &Path) -> Result<()> {
    // Ask rustc where the target's std would be: works with or without rustup.
    let out = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", WASM_TARGET])
        .current_dir(root)
        .output()
        .context("running rustc (is Rust installed?)")?;
    let libdir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if out.status.success() && libdir.is_dir() {
        println!("worker: rust target {WASM_TARGET}: installed");
        return Ok(());
    }
    println!("worker: adding rust target {WASM_TARGET} (missing; Workers run wasm32)");
    let status = Command::new("rustup").args(["target", "add", WASM_TARGET]).current_dir(root).status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => bail!("`rustup target add {WASM_TARGET}` failed ({s})"),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            bail!(
                "the {WASM_TARGET} standard library is missing and rustup is not on PATH; install that target for your toolchain"
            )
        }
        Err(e) => Err(e).context("running rustup"),
    }
}

/// The verified binary of a pinned cargo tool, installed on first use by
/// [`crate::tools::cargo_tool`] (which prints its own line then).
fn cargo_tool(root: &Path, krate: &str, version: &str, bin: &str, why: &str) -> Result<PathBuf> {
    let tool = crate::tools::cargo_tool(root, &crate::tools::CargoTool { krate, version, bin, why })?;
    println!("worker: {krate} {version}: {}", tool.exe.display());
    Ok(tool.exe)
}

/// `node_modules/.bin/wrangler` at the version package-lock.json pins
/// (`npm ci` when any pinned package is missing or different).
fn ensure_wrangler(root: &Path) -> Result<PathBuf> {
    crate::npm::ensure(root)?;
    let wrangler = root.join("node_modules/.bin/wrangler");
    ensure!(wrangler.is_file(), "{} is missing; is wrangler still in package.json?", wrangler.display());
    Ok(wrangler)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = r#"
[[package]]
name = "wasm-bindgen"
version = "0.2.130"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "wasm-bindgen-futures"
version = "0.4.80"

[[package]]
name = "worker"
version = "0.8.7"
dependencies = [
 "wasm-bindgen",
]
"#;

    #[test]
    fn reads_exact_package() -> Result<()> {
        assert_eq!(locked_version(LOCK, "wasm-bindgen")?, "0.2.130");
        assert_eq!(locked_version(LOCK, "worker")?, "0.8.7");
        Ok(())
    }

    #[test]
    fn missing_or_duplicate_is_an_error() {
        assert!(locked_version(LOCK, "wasm-opt").is_err());
        let twice = format!("{LOCK}\n[[package]]\nname = \"worker\"\nversion = \"0.7.0\"\n");
        assert!(locked_version(&twice, "worker").is_err());
    }
}
