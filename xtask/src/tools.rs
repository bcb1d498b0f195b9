//! Pinned command-line tools from crates.io, installed once per user and
//! shared by every clone: `<cache>/tools/<crate>-<version>/`, where
//! `<cache>` is [`user_cache`] (`$XDG_CACHE_HOME/handoff` or
//! `~/.cache/handoff`). When that cannot be written, the clone's own
//! `.tools/` is used instead, with a message.
//!
//! A tool is verified at every use: its binary must print its pinned
//! version and match the SHA-256 recorded when it was installed (the file
//! `handoff.sha256` beside `bin/`, in `sha256sum -c` format); otherwise it
//! is installed again. Threat model: this catches a cached binary that
//! changed after its install (an interrupted or concurrent install by
//! another clone, a file copied over it, a truncated write), not someone who
//! can write to your home directory, who could rewrite the record as well.

use std::fs::{self, File};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The record of an install, beside its `bin/`.
const RECORD: &str = "handoff.sha256";

/// A pinned cargo tool: binary `bin` of crate `krate` at `version`; `why`
/// tells the user what it is for while it builds.
pub struct CargoTool<'a> {
    pub krate: &'a str,
    pub version: &'a str,
    pub bin: &'a str,
    pub why: &'a str,
}

/// A verified installed tool.
#[derive(Clone, Debug)]
pub struct Installed {
    pub exe: PathBuf,
    /// The first line the binary prints for `--version`.
    pub version_line: String,
    pub sha256: String,
}

/// The per-user cache of this project: `$XDG_CACHE_HOME/handoff`, else
/// `~/.cache/handoff`.
pub fn user_cache() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => {
            PathBuf::from(std::env::var_os("HOME").context("neither XDG_CACHE_HOME nor HOME is set")?).join(".cache")
        }
    };
    Ok(base.join("handoff"))
}

/// The tool, verified, from the shared cache, installing it there first
/// when it is missing or changed (or into the clone's `.tools/` when the
/// cache cannot be written).
pub fn cargo_tool(root: &Path, tool: &CargoTool) -> Result<Installed> {
    let name = format!("{}-{}", tool.krate, tool.version);
    let shared = user_cache().map(|c| c.join("tools"));
    let problem = match &shared {
        Ok(dir) => match verify(&dir.join(&name), tool) {
            Ok(found) => return Ok(found),
            Err(problem) => problem,
        },
        Err(_) => Problem::Missing,
    };
    let writable = shared.and_then(|dir| writable(&dir).map(|()| dir));
    let (home, problem) = match writable {
        Ok(dir) => (dir, problem),
        Err(e) => {
            let local = root.join(".tools");
            eprintln!("tools: the shared tools cache cannot be written ({e:#}); using {} instead", local.display());
            match verify(&local.join(&name), tool) {
                Ok(found) => return Ok(found),
                Err(problem) => (local, problem),
            }
        }
    };
    let prefix = home.join(&name);
    match problem {
        Problem::Missing => eprintln!(
            "tools: installing {} {} into {} ({}; once per machine, takes a few minutes)",
            tool.krate,
            tool.version,
            prefix.display(),
            tool.why
        ),
        Problem::Changed(why) => {
            eprintln!("tools: {}: {why}; installing {} {} again", prefix.display(), tool.krate, tool.version)
        }
    }
    install(&home, &prefix, tool)
}

/// Why an install cannot be used.
enum Problem {
    Missing,
    Changed(String),
}

/// The install under `prefix`, when its binary is there, matches its
/// recorded SHA-256 and prints the pinned version.
fn verify(prefix: &Path, tool: &CargoTool) -> Result<Installed, Problem> {
    let exe = prefix.join("bin").join(tool.bin);
    if !exe.is_file() {
        return Err(Problem::Missing);
    }
    let changed = Problem::Changed;
    let record = fs::read_to_string(prefix.join(RECORD)).map_err(|e| changed(format!("no SHA-256 record ({e})")))?;
    let recorded = record.split_whitespace().next().unwrap_or_default();
    let sha256 = sha256_file(&exe).map_err(|e| changed(format!("cannot hash {} ({e:#})", exe.display())))?;
    if sha256 != recorded {
        return Err(changed(format!("{} has SHA-256 {sha256}, recorded {recorded}", tool.bin)));
    }
    let version_line = version_line(&exe).map_err(|e| changed(format!("{e:#}")))?;
    if !prints_version(&version_line, tool.version) {
        return Err(changed(format!("`{} --version` prints {version_line:?}, pinned {}", tool.bin, tool.version)));
    }
    Ok(Installed { exe, version_line, sha256 })
}

/// `cargo install` into a staging directory beside `prefix`, recorded,
/// then renamed into place, so that no other clone ever sees half an
/// install.
fn install(home: &Path, prefix: &Path, tool: &CargoTool) -> Result<Installed> {
    let file_name = prefix.file_name().context("tool prefix has no name")?.to_string_lossy();
    let staging = home.join(format!(".{file_name}.partial-{}", std::process::id()));
    remove_dir(&staging)?;
    let status = crate::cargo::command()
        .args(["install", tool.krate, "--version", tool.version, "--root"])
        .arg(&staging)
        .status()
        .with_context(|| format!("cannot run cargo install {}", tool.krate))?;
    let exe = staging.join("bin").join(tool.bin);
    if !status.success() || !exe.is_file() {
        bail!("cargo install {} --version {} failed ({status}); see the output above", tool.krate, tool.version);
    }
    let line = version_line(&exe)?;
    if !prints_version(&line, tool.version) {
        bail!("the freshly installed {} prints {line:?} for --version, not {}", exe.display(), tool.version);
    }
    let record = format!("{}  bin/{}\n", sha256_file(&exe)?, tool.bin);
    fs::write(staging.join(RECORD), record).context("writing the SHA-256 record")?;
    remove_dir(prefix)?;
    if let Err(e) = fs::rename(&staging, prefix) {
        // Another clone published the same tool meanwhile: use theirs.
        remove_dir(&staging)?;
        return verify(prefix, tool).map_err(|_| {
            anyhow::anyhow!("cannot move the install into {} ({e}); run the command again", prefix.display())
        });
    }
    verify(prefix, tool).map_err(|p| match p {
        Problem::Missing => anyhow::anyhow!("{} vanished after its install", prefix.display()),
        Problem::Changed(why) => anyhow::anyhow!("{} after its install: {why}", prefix.display()),
    })
}

/// Creates `dir` and writes and removes a file in it.
fn writable(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let probe = dir.join(format!(".write-test-{}", std::process::id()));
    fs::write(&probe, b"").with_context(|| format!("writing in {}", dir.display()))?;
    fs::remove_file(&probe).with_context(|| format!("removing {}", probe.display()))
}

fn remove_dir(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e).with_context(|| format!("removing {}", dir.display())),
        _ => Ok(()),
    }
}

/// The first line `exe --version` prints.
pub fn version_line(exe: &Path) -> Result<String> {
    let out = Command::new(exe).arg("--version").output().with_context(|| format!("cannot run {}", exe.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().next().map(str::trim) {
        Some(line) if out.status.success() && !line.is_empty() => Ok(line.to_string()),
        _ => bail!("`{} --version` failed ({})", exe.display(), out.status),
    }
}

/// `tla 0.24.11` and `0.8.7` both print version 0.24.11 and 0.8.7: the
/// line's last word.
fn prints_version(line: &str, version: &str) -> bool {
    line.split_whitespace().last() == Some(version)
}

/// Hex SHA-256 of a file's contents.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher).with_context(|| format!("reading {}", path.display()))?;
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_as_the_tools_print_it() {
        assert!(prints_version("tla 0.24.11", "0.24.11"));
        assert!(prints_version("0.8.7", "0.8.7"));
        assert!(prints_version("wasm-bindgen 0.2.130", "0.2.130"));
        assert!(!prints_version("wasm-bindgen 0.2.131", "0.2.130"));
        assert!(!prints_version("tla 0.24.11-rc1", "0.24.11"));
    }

    /// An install stands or falls with its record: a changed binary, a
    /// missing record and a wrong version are each caught, and say which.
    #[cfg(unix)]
    #[test]
    fn verify_catches_a_changed_install() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("handoff-tools-test-{}", std::process::id()));
        let prefix = dir.join("fake-1.2.3");
        fs::create_dir_all(prefix.join("bin"))?;
        let exe = prefix.join("bin/fake");
        fs::write(&exe, "#!/bin/sh\necho fake 1.2.3\n")?;
        set_executable(&exe)?;
        let tool = CargoTool { krate: "fake", version: "1.2.3", bin: "fake", why: "a test" };
        let reason = |r: Result<Installed, Problem>| match r {
            Ok(_) => "ok".to_string(),
            Err(Problem::Missing) => "missing".to_string(),
            Err(Problem::Changed(why)) => why,
        };

        assert!(reason(verify(&prefix, &tool)).starts_with("no SHA-256 record"));
        fs::write(prefix.join(RECORD), format!("{}  bin/fake\n", sha256_file(&exe)?))?;
        let found = verify(&prefix, &tool).map_err(|p| anyhow::anyhow!(reason(Err(p))))?;
        assert_eq!((found.version_line.as_str(), found.exe), ("fake 1.2.3", exe.clone()));

        let other = CargoTool { version: "1.2.4", ..tool };
        assert!(reason(verify(&prefix, &other)).contains("pinned 1.2.4"));

        fs::write(&exe, "#!/bin/sh\necho fake 1.2.3 # changed\n")?;
        assert!(reason(verify(&prefix, &tool)).contains("recorded"));

        assert_eq!(reason(verify(&dir.join("absent-1.0.0"), &tool)), "missing");
        fs::remove_dir_all(&dir)?;
        Ok(())
    }

    #[cfg(unix)]
    fn set_executable(path: &Path) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
        Ok(())
    }
}
