//! Pinned command-line tools installed from crates.io into the
//! project-local tools directory `.tools/<crate>-<version>/`, once.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The project-local tools directory.
pub fn dir(root: &Path) -> PathBuf {
    root.join(".tools")
}

/// Path of binary `bin` of crate `krate` at `version`, installing it with
/// `cargo install` first when it is not there yet. `why` tells the user
/// what the tool is for while it builds.
pub fn cargo_tool(root: &Path, krate: &str, version: &str, bin: &str, why: &str) -> Result<PathBuf> {
    let prefix = dir(root).join(format!("{krate}-{version}"));
    let path = prefix.join("bin").join(bin);
    if path.is_file() {
        return Ok(path);
    }
    eprintln!("installing {krate} {version} into {} ({why}; first run only, takes a few minutes)", prefix.display());
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["install", krate, "--version", version, "--root"])
        .arg(&prefix)
        .status()
        .with_context(|| format!("cannot run cargo install {krate}"))?;
    if !status.success() || !path.is_file() {
        bail!("cargo install {krate} --version {version} failed ({status}); see the output above");
    }
    Ok(path)
}
