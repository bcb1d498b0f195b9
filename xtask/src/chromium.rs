//! Chromium for the explorer's browser test: Debian's `chromium` package
//! (`/usr/bin/chromium`), which `cargo xtask setup` installs with apt-get
//! when it is missing (as root, or through passwordless sudo). Otherwise
//! setup prints the command to run and goes on; the browser test then fails
//! saying the same. `$CHROMIUM` may point at another Chromium binary.

use std::env;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Result, bail};

const PACKAGE: &str = "chromium";
/// Fonts: Chromium's recommended ones (without them a minimal machine
/// renders no text) and the emoji the explorer marks properties with. Its
/// other recommendations (printing, avahi, upower) are left out.
const FONTS: [&str; 2] = ["fonts-liberation", "fonts-noto-color-emoji"];

/// The Chromium binary: `$CHROMIUM`, else `chromium` on PATH.
pub fn locate() -> Result<PathBuf> {
    if let Some(path) = env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("CHROMIUM={} does not exist; point it at a Chromium binary or unset it", path.display());
        }
        return Ok(path);
    }
    match on_path(PACKAGE) {
        Some(path) => Ok(path),
        None => bail!("Chromium is not installed: {}", HOW_TO_INSTALL),
    }
}

const HOW_TO_INSTALL: &str = "`cargo xtask setup` installs it as root (or with passwordless sudo); \
    otherwise run `sudo apt-get install chromium` (Debian's package; /usr/bin/chromium), \
    or set CHROMIUM to a Chromium binary";

/// Installs Debian's chromium when it is missing and this user may; says
/// what to do when not. Fails only when an install was tried and failed.
pub fn ensure() -> Result<()> {
    if let Ok(path) = locate() {
        println!("chromium: {}", path.display());
        return Ok(());
    }
    let Some(apt) = on_path("apt-get") else {
        println!("chromium: not installed and no apt-get here: install Chromium and set CHROMIUM to it");
        return Ok(());
    };
    let sudo = if is_root() {
        None
    } else if Command::new("sudo").args(["-n", "true"]).output().is_ok_and(|o| o.status.success()) {
        Some("sudo")
    } else {
        println!(
            "chromium: not installed, and installing it needs root: run `sudo apt-get install {PACKAGE}` \
             (the explorer's browser test in `cargo xtask test` fails until then)"
        );
        return Ok(());
    };
    println!("chromium: apt-get install {PACKAGE} (missing; the explorer's browser test drives it; ~1 min)");
    let apt_get = |args: &[&str]| -> Result<bool> {
        let mut cmd = match sudo {
            Some(s) => {
                let mut c = Command::new(s);
                c.arg("-n").arg(&apt);
                c
            }
            None => Command::new(&apt),
        };
        Ok(cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive").status()?.success())
    };
    let install = ["install", "-y", "-qq", "--no-install-recommends", PACKAGE, FONTS[0], FONTS[1]];
    // A fresh machine may have no package lists yet: update once, then retry.
    let installed = apt_get(&install)? || (apt_get(&["update", "-qq"])? && apt_get(&install)?);
    if !installed {
        bail!("`apt-get install {PACKAGE}` failed; see its output above ({HOW_TO_INSTALL})");
    }
    let path = locate()?;
    println!("chromium: {}", path.display());
    Ok(())
}

fn on_path(program: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?).map(|dir| dir.join(program)).find(|p| p.is_file())
}

#[cfg(unix)]
fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[cfg(not(unix))]
fn is_root() -> bool {
    false
}
