//! The one way xtask runs cargo.

use std::process::Command;

/// What `cargo run` sets for the binary it runs (the `CARGO_PKG_*` family,
/// the manifest's path, the crate's names) beside `CARGO` itself.
fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || matches!(name, "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE")
}

/// cargo (the one running xtask, `$CARGO`), in the environment of a shell:
/// `cargo xtask` (`cargo run`) describes xtask to it in `CARGO_PKG_NAME`,
/// `CARGO_MANIFEST_DIR` and the like, and the build script of one of
/// xtask's own dependencies (ring) watches some of them, so a build
/// started from here and the next `cargo xtask` from the shell each
/// rebuilt ring and the crates above it for the other (20 s of every
/// `check` on the 2-core machine).
pub fn command() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            cmd.env_remove(name);
        }
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_cargo_run_describes_its_binary_with_is_removed() {
        // cargo sets these for this test binary as `cargo run` does for
        // xtask's.
        let removed: Vec<_> = command()
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .filter_map(|(k, _)| k.to_str().map(String::from))
            .collect();
        for name in ["CARGO_PKG_NAME", "CARGO_PKG_VERSION", "CARGO_MANIFEST_DIR"] {
            assert!(removed.iter().any(|r| r == name), "{name} is passed on: {removed:?}");
        }
        assert!(!set_by_cargo_run("CARGO_HOME") && !set_by_cargo_run("CARGO_TARGET_DIR"));
    }
}
