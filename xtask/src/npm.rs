//! The npm packages package.json pins (wrangler, which runs the Worker on
//! workerd; playwright-core, which drives Chromium in the explorer's browser
//! test), installed into `node_modules/` by `npm ci` from package-lock.json
//! when any of them is missing or at another version.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

/// Runs `npm ci` unless every package of package.json is installed at the
/// version package-lock.json pins.
pub fn ensure(root: &Path) -> Result<()> {
    require_program("node")?;
    let manifest = read_json(&root.join("package.json"))?;
    let lock = read_json(&root.join("package-lock.json"))?;
    let mut stale = Vec::new();
    let mut pinned = Vec::new();
    for name in
        ["dependencies", "devDependencies"].iter().filter_map(|k| manifest[k].as_object()).flat_map(|d| d.keys())
    {
        let wanted = lock["packages"][format!("node_modules/{name}")]["version"]
            .as_str()
            .with_context(|| format!("package-lock.json pins no {name}; run `npm install` and commit the lockfile"))?;
        let installed = root.join("node_modules").join(name).join("package.json");
        let have = read_json(&installed).ok().and_then(|v| v["version"].as_str().map(str::to_string));
        if have.as_deref() != Some(wanted) {
            stale.push(format!(
                "{name} {wanted} ({})",
                have.map_or("not installed".into(), |v| format!("{v} installed"))
            ));
        }
        pinned.push(format!("{name} {wanted}"));
    }
    if stale.is_empty() {
        println!("npm: {}: node_modules (package-lock.json)", pinned.join(", "));
        return Ok(());
    }
    println!("npm: npm ci (package-lock.json pins {}; ~1 min)", stale.join(", "));
    require_program("npm")?;
    let status = Command::new("npm")
        .args(["ci", "--no-fund", "--no-audit"])
        .current_dir(root)
        .status()
        .context("running npm ci")?;
    ensure!(status.success(), "`npm ci` failed ({status})");
    Ok(())
}

fn read_json(file: &Path) -> Result<Value> {
    let text = fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))
}

/// Fails clearly when Node.js tooling is absent.
fn require_program(program: &str) -> Result<()> {
    match Command::new(program).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => bail!("`{program} --version` failed ({})", out.status),
        Err(e) if e.kind() == ErrorKind::NotFound => bail!(
            "`{program}` is not on PATH: wrangler (which runs the worker locally and deploys it) and the explorer's \
             browser test need Node.js >= 20.3 with npm (e.g. `apt-get install nodejs npm`, or https://nodejs.org)"
        ),
        Err(e) => Err(e).with_context(|| format!("running {program}")),
    }
}
