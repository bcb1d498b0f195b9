//! `checker`: runs the stateright models of the TLA+ specs.
//!
//! ```text
//! checker check   <CFG | SPEC.tla [--config CFG] | MODEL --config CFG> [--threads N] [--mutation NAME]
//!                 [--json] [--progress] [--coverage] [--search bfs|dfs|simulation] [--seconds S] [--seed N] [--max-depth D]
//!                 [--no-reduction]
//! checker explore <CFG | SPEC.tla [--config CFG] | MODEL --config CFG> [--port N] [--mutation NAME]
//! checker models
//! checker cfg     <CFG>
//! checker validate <RUN_DIR>...
//! ```
//!
//! The search is the cfg's (`\* SEARCH` line, breadth-first without one)
//! unless `--search` overrides it.
//!
//! Exit codes: 0 pass, 1 a property is violated, 2 bad input, 3 no Rust
//! model checks that module.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use checker::cfg::{KeepOneLine, Reduction, TlcConfig};
use checker::registry::{self, MirrorVisitor};
use checker::run::{self, RunOptions, Walks};
use checker::search::Search;
use checker::spec::Mirror;
use clap::{Parser, Subcommand};

/// The models clone and drop states by the million; the system allocator
/// spent about half the time of a run of the implementation model.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "checker", about = "stateright models of the Handoff and Remora TLA+ specs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a spec's Rust model on a TLC cfg.
    Check {
        /// A cfg (its `\* MODULE` line or file name picks the model), a
        /// TLA+ module file (its MODULE name does), or the name of a model
        /// of the implementation (e.g. HandoffImpl).
        spec: PathBuf,
        /// The TLC cfg with the constants (default: SPEC with .cfg).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Checker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Check a named protocol mutation instead of the spec.
        #[arg(long)]
        mutation: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Print progress to stderr every few seconds.
        #[arg(long)]
        progress: bool,
        /// Print how often each action fired and how many distinct states
        /// it reached first (exhaustive searches).
        #[arg(long)]
        coverage: bool,
        /// How to explore: exhaustively breadth-first (shortest
        /// counterexamples), exhaustively depth-first (less memory), or by
        /// random walks for a time budget (bounds too large to exhaust).
        /// Default: the cfg's `\* SEARCH` line, else bfs.
        #[arg(long, value_enum)]
        search: Option<Search>,
        /// Simulation: the time budget in seconds.
        #[arg(long, default_value_t = Walks::default().budget.as_secs())]
        seconds: u64,
        /// Simulation: the random seed (the same seed and budget replay the
        /// same walks only with one thread).
        #[arg(long, default_value_t = Walks::default().seed)]
        seed: u64,
        /// Simulation: a walk ends after about this many tried actions.
        #[arg(long, default_value_t = Walks::default().max_depth)]
        max_depth: usize,
        /// Turn the model's reductions off: keep every message and state
        /// they would drop, and check on every state reached that what they
        /// drop changes nothing (models of the implementation; mirrors have
        /// no reductions).
        #[arg(long)]
        no_reduction: bool,
        /// Check the reductions' argument over the whole unreduced graph
        /// without exploring it: the model reduces, except that any one
        /// step may keep what it would drop, and then what follows from
        /// that, and every step is checked as with --no-reduction (models
        /// of the implementation; docs/verification.md 1.8 says why this
        /// covers every unreduced state).
        #[arg(long, conflicts_with = "no_reduction")]
        keep_one: bool,
        /// Breadth-first only: explore the states at most this deep (an
        /// initial state has depth 1) and no further. The run is complete
        /// for them (every one met, every step between them checked) and
        /// says nothing beyond; no coverage is judged. For graphs too large
        /// to exhaust, where a depth-first run's count would only be a
        /// lower bound. It checks no liveness property (they need the whole
        /// graph) and names those it left unchecked.
        #[arg(long)]
        depth_bound: Option<usize>,
    },
    /// Serve the stateright web explorer for a spec's Rust model.
    Explore {
        spec: PathBuf,
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long, default_value_t = 3000)]
        port: u16,
        #[arg(long)]
        mutation: Option<String>,
    },
    /// List the modules that have a Rust model, with their mutations.
    Models,
    /// Print what a cfg says, as JSON: its module, its search, the names it
    /// gives values to and checks, and whether a Rust model checks that
    /// module (`cargo xtask check` pairs cfgs with TLA+ modules from it).
    Cfg { cfg: PathBuf },
    /// Validate the traces of live runs: each directory holds the `*.trace`
    /// files of one namespace's replicas (docs/verification.md 1.6).
    Validate {
        #[arg(required = true)]
        runs: Vec<PathBuf>,
    },
}

/// What `checker cfg` prints.
#[derive(serde::Serialize)]
struct CfgSummary<'a> {
    module: String,
    search: Search,
    constants: Vec<&'a str>,
    invariants: &'a [String],
    properties: &'a [String],
    /// The property its `\* EXPECT violated` line names: a counterexample.
    expect_violated: Option<&'a str>,
    rust_model: bool,
    /// Whether the module's model has reductions (`--no-reduction`).
    reductions: bool,
    /// Why the cfg cannot be explored without them (`\* REDUCTION needed`).
    reduction_needed: Option<&'a str>,
    /// How deep an unreduced run goes, breadth-first (`\* UNREDUCED depth N`).
    unreduced_depth: Option<usize>,
    /// Where its run keeping one step's drops goes, and why, when not
    /// beside its bounded unreduced run (`\* KEEP ONE deep` or `never`):
    /// `{"deep": why}` or `{"never": why}`.
    keep_one: Option<&'a KeepOneLine>,
    /// Why its module has no Rust model (`\* NO MIRROR`).
    no_mirror: Option<&'a str>,
    /// The actions its `\* UNFIRED Action: why` lines declare never fire.
    unfired: &'a [String],
}

/// Failure kinds that map to distinct exit codes.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("no Rust model checks module {0} (models exist for: {1})")]
    NoModel(String, String),
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(err) => {
            let code = if matches!(err.downcast_ref::<CliError>(), Some(CliError::NoModel(..))) { 3 } else { 2 };
            eprintln!("error: {err:#}");
            ExitCode::from(code)
        }
    }
}

fn real_main() -> Result<ExitCode> {
    match Cli::parse().command {
        Command::Check {
            spec,
            config,
            threads,
            mutation,
            json,
            progress,
            coverage,
            search,
            seconds,
            seed,
            max_depth,
            no_reduction,
            keep_one,
            depth_bound,
        } => {
            let mut target = Target::resolve(&spec, config.as_deref())?;
            if no_reduction {
                target.cfg.reduction = Reduction::Off;
            }
            if keep_one {
                target.cfg.reduction = Reduction::KeepOne;
            }
            // Unreduced, a cfg too large to exhaust says how deep to go
            // (`\* UNREDUCED depth N`), unless the command line says
            // otherwise.
            let cfg_bound = target
                .cfg
                .unreduced_depth
                .filter(|_| no_reduction && depth_bound.is_none() && search.is_none_or(|s| s == Search::Bfs));
            let opts = RunOptions {
                threads: threads.unwrap_or_else(default_threads),
                progress_every: progress.then_some(Duration::from_secs(5)),
                search: search.unwrap_or(if cfg_bound.is_some() { Search::Bfs } else { target.cfg.search }),
                walks: Walks { seed, max_depth, budget: Duration::from_secs(seconds) },
                depth_bound: depth_bound.or(cfg_bound),
            };
            ensure!(depth_bound != Some(0), "--depth-bound 0: an initial state has depth 1");
            ensure!(
                opts.depth_bound.is_none() || opts.search == Search::Bfs,
                "--depth-bound needs a breadth-first search (--search bfs), not {}",
                opts.search.name()
            );
            let mut report =
                target.dispatch(CheckVisitor { target: &target, mutation: mutation.as_deref(), opts })??;
            report.reduction = target.cfg.reduction;
            let mut unfired = target.cfg.unfired.clone();
            if target.cfg.reduction == Reduction::On {
                unfired.extend(target.cfg.unfired_reduced.iter().cloned());
            }
            report.judge_coverage(&unfired);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{}", report.summary());
                if coverage {
                    print!("\n{}", report.coverage_table());
                }
                if report.violated.is_some() {
                    print!("\n{}", run::format_trace(&report));
                }
            }
            Ok(if report.verdict == "pass" { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Command::Explore { spec, config, port, mutation } => {
            let target = Target::resolve(&spec, config.as_deref())?;
            target.dispatch(ExploreVisitor { target: &target, mutation: mutation.as_deref(), port })??;
            Ok(ExitCode::SUCCESS)
        }
        Command::Models => {
            for module in registry::MODULES {
                registry::dispatch(module, ListVisitor);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Cfg { cfg: path } => {
            let cfg = TlcConfig::load(&path).with_context(|| format!("malformed cfg {}", path.display()))?;
            let module = cfg.module_of(&path);
            let summary = CfgSummary {
                rust_model: registry::MODULES.contains(&module.as_str()),
                reductions: registry::dispatch(&module, Reductions).unwrap_or(false),
                reduction_needed: cfg.reduction_needed.as_deref(),
                unreduced_depth: cfg.unreduced_depth,
                keep_one: cfg.keep_one.as_ref(),
                no_mirror: cfg.no_mirror.as_deref(),
                unfired: &cfg.unfired,
                module,
                search: cfg.search,
                constants: cfg.constants.iter().map(|(name, _)| name.as_str()).collect(),
                invariants: &cfg.invariants,
                properties: &cfg.properties,
                expect_violated: cfg.expect_violated.as_deref(),
            };
            println!("{}", serde_json::to_string_pretty(&summary)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate { runs } => {
            let mut failed = 0;
            for dir in &runs {
                match checker::validate::validate_dir(dir) {
                    Ok(f) => println!(
                        "{}: fits the implementation model: {} steps of {} replica instances (boots r0 {}, r1 {}, \
                         r2 {}, {} of them with no other replica ready; {} zombie steps), {} messages delivered \
                         ({} refused, of an older generation), {} timers fired, {} client requests ({} refused), \
                         {} acknowledged writes; {} hold at every step",
                        dir.display(),
                        f.steps,
                        f.instances,
                        f.boots[0],
                        f.boots[1],
                        f.boots[2],
                        f.evictions_alone,
                        f.zombie_steps,
                        f.delivered,
                        f.refused_messages,
                        f.timers,
                        f.client,
                        f.refused_client,
                        f.acked,
                        checker::validate::CHECKED.join(", ")
                    ),
                    Err(e) => {
                        failed += 1;
                        println!("{}: does NOT fit: {e}", dir.display());
                    }
                }
            }
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A spec file (or a model's name), its module name and its parsed cfg.
struct Target {
    module: String,
    spec: PathBuf,
    config: PathBuf,
    cfg: TlcConfig,
}

impl Target {
    fn resolve(spec: &Path, config: Option<&Path>) -> Result<Target> {
        if spec.extension().is_some_and(|e| e == "cfg") {
            if let Some(config) = config {
                bail!("{} is a cfg; give either a cfg or a spec with --config {}", spec.display(), config.display());
            }
            let cfg = TlcConfig::load(spec)?;
            let module = cfg.module_of(spec);
            return Ok(Target { spec: PathBuf::from(&module), module, config: spec.to_path_buf(), cfg });
        }
        let is_model_name = spec.extension().is_none() && registry::MODULES.iter().any(|m| Path::new(m) == spec);
        let module = if is_model_name {
            spec.display().to_string()
        } else {
            let text = std::fs::read_to_string(spec).with_context(|| format!("cannot read spec {}", spec.display()))?;
            module_name(&text).with_context(|| format!("{} has no `---- MODULE Name ----` header", spec.display()))?
        };
        let config = match config {
            Some(c) => c.to_path_buf(),
            None if is_model_name => bail!("give the cfg of model {module} with --config"),
            None => spec.with_extension("cfg"),
        };
        let cfg = TlcConfig::load(&config)?;
        if let Some(named) = &cfg.module
            && *named != module
        {
            bail!("{} says it is for module {named}, but {} is module {module}", config.display(), spec.display());
        }
        Ok(Target { module, spec: spec.to_path_buf(), config, cfg })
    }

    fn dispatch<V: MirrorVisitor>(&self, visitor: V) -> Result<V::Output> {
        registry::dispatch(&self.module, visitor)
            .ok_or_else(|| CliError::NoModel(self.module.clone(), registry::MODULES.join(", ")).into())
    }

    fn build<M: Mirror>(&self, mutation: Option<&str>) -> Result<M> {
        M::from_cfg(&self.cfg, mutation).with_context(|| format!("{} with {}", self.module, self.config.display()))
    }
}

/// The name in `---- MODULE Name ----`.
fn module_name(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim().trim_start_matches('-').trim_start();
        let rest = rest.strip_prefix("MODULE")?;
        let name = rest.trim().trim_end_matches('-').trim();
        (!name.is_empty()).then(|| name.to_string())
    })
}

struct CheckVisitor<'a> {
    target: &'a Target,
    mutation: Option<&'a str>,
    opts: RunOptions,
}

impl MirrorVisitor for CheckVisitor<'_> {
    type Output = Result<run::Report>;
    fn visit<M: Mirror>(self) -> Self::Output {
        let model: M = self.target.build(self.mutation)?;
        Ok(run::check(
            model,
            &self.target.spec.display().to_string(),
            &self.target.config.display().to_string(),
            self.mutation,
            &self.opts,
        ))
    }
}

struct ExploreVisitor<'a> {
    target: &'a Target,
    mutation: Option<&'a str>,
    port: u16,
}

impl MirrorVisitor for ExploreVisitor<'_> {
    type Output = Result<()>;
    fn visit<M: Mirror>(self) -> Self::Output {
        let model: M = self.target.build(self.mutation)?;
        let addr = format!("127.0.0.1:{}", self.port);
        // stateright's server panics on a busy port: find out first.
        drop(
            std::net::TcpListener::bind(&addr)
                .with_context(|| format!("cannot listen on {addr}; pick another --port"))?,
        );
        println!("explorer for {} ({}) on http://{addr}/", self.target.module, self.target.config.display());
        model.checker().serve(addr);
        Ok(())
    }
}

struct ListVisitor;

/// Whether a model has reductions.
struct Reductions;

impl MirrorVisitor for Reductions {
    type Output = bool;
    fn visit<M: Mirror>(self) -> bool {
        M::REDUCTIONS
    }
}

impl MirrorVisitor for ListVisitor {
    type Output = ();
    fn visit<M: Mirror>(self) {
        println!("{}: mutations {}", M::MODULE, M::MUTATIONS.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::module_name;

    #[test]
    fn reads_the_module_header() {
        assert_eq!(module_name("---- MODULE Handoff ----\n").as_deref(), Some("Handoff"));
        assert_eq!(
            module_name("\n---------------------- MODULE RemoraClaimActivation ----------------------").as_deref(),
            Some("RemoraClaimActivation")
        );
        assert_eq!(module_name("EXTENDS Naturals"), None);
    }
}
