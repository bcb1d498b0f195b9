//! The one way xtask runs cargo.

use std::process::Command;

/// cargo (the one running xtask, `$CARGO`), in the environment of a shell:
/// `cargo xtask` (`cargo run`) sets `CARGO_MANIFEST_DIR` for xtask, and
/// the build script of one of xtask's own dependencies (ring) watches it,
/// so a build started from here and the next `cargo xtask` from the shell
/// each rebuilt ring and the crates above it for the other (13 s of every
/// `check`).
pub fn command() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.env_remove("CARGO_MANIFEST_DIR");
    cmd
}
