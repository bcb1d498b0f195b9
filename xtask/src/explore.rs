//! `cargo xtask explore <spec>`: the stateright web explorer.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::check::resolve;

#[derive(Clone, Debug, clap::Args)]
pub struct ExploreArgs {
    /// A module name in tla/ (e.g. Handoff) or a path to a .tla file.
    pub spec: String,
    /// The cfg (default: tla/<spec>.cfg).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Port on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
    /// Explore a named protocol mutation.
    #[arg(long)]
    pub mutation: Option<String>,
}

pub fn run(root: &Path, args: &ExploreArgs) -> Result<()> {
    let status = command(root, args)?.status().context("cannot start the checker")?;
    if !status.success() {
        bail!("the explorer stopped ({status})");
    }
    Ok(())
}

/// The checker's `explore` command for `args` (building the checker first);
/// the browser test starts it the same way.
pub fn command(root: &Path, args: &ExploreArgs) -> Result<Command> {
    let tla = root.join("tla");
    let spec =
        if args.spec.ends_with(".tla") { PathBuf::from(&args.spec) } else { tla.join(format!("{}.tla", args.spec)) };
    if !spec.is_file() {
        bail!("no spec {}; give a module name in tla/ or a .tla path", spec.display());
    }
    let cfg = args.config.clone().unwrap_or_else(|| spec.with_extension("cfg"));
    let bin = crate::check::build_checker(root)?;
    let target = resolve(&bin, &cfg, &tla)?;
    let mut cmd = Command::new(bin);
    cmd.arg("explore");
    match &target.spec {
        Some(spec) => cmd.arg(spec),
        None => cmd.arg(&target.module),
    };
    cmd.arg("--config").arg(&target.cfg_path).arg("--port").arg(args.port.to_string());
    if let Some(m) = &args.mutation {
        cmd.arg("--mutation").arg(m);
    }
    Ok(cmd)
}
