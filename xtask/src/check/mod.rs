//! `cargo xtask check`: the TLA+ stage (TLC, or the `tla` fallback), the
//! Rust stage (the stateright models, with state-count parity against the
//! TLA+ checker), and the snapshot stage (the workspace tests), then one
//! summary table.

pub(crate) mod checker_bin;
mod fallback;
pub(crate) mod outcome;
mod rust_stage;
pub(crate) mod stream;
mod summary;
mod target;
pub(crate) mod tla_rs;
pub(crate) mod tlc;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};

use checker_bin::KeepOne;
use outcome::{CheckerUsed, Outcome};
use rust_stage::Reductions;
use summary::{Row, Summary};

/// Cfgs of the models of the implementation (Rust only: no TLA+ module of
/// their own; each refines a spec inside the model).
const MODELS_DIR: &str = "crates/checker/models";

/// Larger bounds of those models, explored by random walks for a time
/// budget (`\* SEARCH simulation`).
const SIMULATION_DIR: &str = "simulation";

/// The slow tier, under `tla/` and the models directory: cfgs that CI
/// checks (`--slow`, which `cargo xtask test` sets) but the default check,
/// kept within its time budget, leaves out.
const SLOW_DIR: &str = "slow";

/// The deep tier, under `tla/` and the models directory: the exhaustive
/// implementation model and the larger bounds, checked with `--deep` or
/// `--cfg` only, because they take minutes to hours.
const LARGE_DIR: &str = "large";

/// Counterexamples, under `tla/` and the models directory: cfgs that must
/// fail, each with the property its `\* EXPECT violated Name` line names,
/// in every checker that runs them.
const COUNTEREXAMPLES_DIR: &str = "counterexamples";

/// The simulations' time budget in the default check and with `--deep`.
const QUICK_SIMULATION_SECONDS: u64 = 5;
const DEEP_SIMULATION_SECONDS: u64 = 60;
pub use checker_bin::{build as build_checker, describe as describe_cfg};
pub use fallback::test as test_fallback;
pub use target::{cfgs_in, declarations, resolve};

/// The `tla` fallback checker, installed on first use.
pub fn locate_tla(root: &Path) -> Result<PathBuf> {
    tla_rs::locate(root).map(|t| t.exe)
}

/// Which TLA+ checker to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckerChoice {
    Tlc,
    Tla,
}

/// Options of `cargo xtask check`.
#[derive(Clone, Debug, clap::Args)]
pub struct CheckArgs {
    /// Check one cfg (it may live outside tla/); default: every cfg in tla/.
    #[arg(long)]
    pub cfg: Option<PathBuf>,
    /// Also the deep tier: tla/large/ and crates/checker/models/large/ (the exhaustive implementation
    /// model, larger bounds: minutes to hours), and longer simulations.
    #[arg(long, alias = "all", conflicts_with = "cfg")]
    pub deep: bool,
    /// Force a TLA+ checker (default: TLC when Java and the jar can be had, else tla).
    #[arg(long, value_enum)]
    pub checker: Option<CheckerChoice>,
    /// Only the TLA+ stage.
    #[arg(long, conflicts_with = "rust_only")]
    pub tla_only: bool,
    /// Only the Rust stage.
    #[arg(long)]
    pub rust_only: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also print, per cfg, how often each action fired in the Rust checker and how many distinct
    /// states it reached first (the JSON summary always has it).
    #[arg(long)]
    pub coverage: bool,
    /// Time budget of each simulation cfg (`\* SEARCH simulation`), in seconds (default: 10, with --deep 60).
    #[arg(long)]
    pub simulation_seconds: Option<u64>,
    /// Also check every exhaustive cfg of an implementation model without the model's reductions
    /// (`checker check --no-reduction`: every pruned message kept, the pruning argument checked on
    /// every state), unless the cfg says `\* REDUCTION needed: why`. `cargo xtask test` sets it.
    #[arg(long)]
    pub unreduced: bool,
    /// Also the slow tier, which CI runs: the cfgs in tla/slow/ and crates/checker/models/slow/, and
    /// the snapshot stage's test modules named `slow` (model checks of larger cfgs, seconds to a
    /// minute each). `cargo xtask test` and `--deep` set it.
    #[arg(long, conflicts_with = "cfg")]
    pub slow: bool,
}

/// Runs the check; `Ok(false)` when anything failed.
pub fn run(root: &Path, args: &CheckArgs) -> Result<bool> {
    run_with_tests(root, args).map(|(ok, _)| ok)
}

/// Runs the check and also returns the workspace test totals (when the
/// snapshot stage ran).
pub fn run_with_tests(root: &Path, args: &CheckArgs) -> Result<(bool, Option<crate::workspace_tests::TestsOutcome>)> {
    let started = std::time::Instant::now();
    let tla_dir = root.join("tla");
    let models = root.join(MODELS_DIR);
    let deep_cfgs = || -> Result<Vec<PathBuf>> {
        let mut deep = cfgs_in(&tla_dir.join(LARGE_DIR))?;
        if models.join(LARGE_DIR).is_dir() {
            deep.extend(cfgs_in(&models.join(LARGE_DIR))?);
        }
        Ok(deep)
    };
    let cfgs = match &args.cfg {
        Some(c) => vec![c.clone()],
        None => {
            let mut all = cfgs_in(&tla_dir)?;
            if models.is_dir() {
                all.extend(cfgs_in(&models)?);
            }
            if args.slow || args.deep {
                for dir in [tla_dir.join(SLOW_DIR), models.join(SLOW_DIR)] {
                    if dir.is_dir() {
                        all.extend(cfgs_in(&dir)?);
                    }
                }
            }
            if args.deep {
                all.extend(deep_cfgs()?);
            }
            for dir in
                [tla_dir.join(COUNTEREXAMPLES_DIR), models.join(COUNTEREXAMPLES_DIR), models.join(SIMULATION_DIR)]
            {
                if dir.is_dir() {
                    all.extend(cfgs_in(&dir)?);
                }
            }
            all
        }
    };
    let simulation_seconds =
        args.simulation_seconds.unwrap_or(if args.deep { DEEP_SIMULATION_SECONDS } else { QUICK_SIMULATION_SECONDS });
    if cfgs.is_empty() {
        bail!("no .cfg files in {}", tla_dir.display());
    }
    // The checker reads the cfgs (and runs the Rust stage): build it first.
    eprintln!("Building the Rust checker (release) ...");
    let bin = checker_bin::build(root)?;
    let targets = cfgs.iter().map(|c| resolve(&bin, c, &tla_dir)).collect::<Result<Vec<_>>>()?;
    for t in targets.iter().filter(|t| t.expect.is_none()) {
        if t.cfg_path.parent().and_then(Path::file_name).is_some_and(|d| d == COUNTEREXAMPLES_DIR) {
            bail!(
                "{} is a counterexample but says not what it violates (`\\* EXPECT violated Name`)",
                t.cfg_path.display()
            );
        }
    }
    let mut summary = Summary::default();
    let mut rows: Vec<Row> = targets.iter().map(Row::new).collect();
    let tla = if args.rust_only { None } else { Some(choose_checker(root, args.checker)?) };

    // The TLA+ stage runs beside the Rust and snapshot stages: TLC spends
    // much of each cfg starting the JVM and parsing, on one core, and the
    // Rust stage's simulations and the tests' last long test leave a core
    // idle; together they finish far sooner than one after the other.
    let (tla_outcomes, tests) = std::thread::scope(|s| -> Result<_> {
        let tla_stage = tla.map(|(checker, runner)| {
            let targets = &targets;
            let coverage = args.coverage || args.json;
            s.spawn(move || tla_stage(checker, &runner, targets, coverage))
        });
        let mut tests = None;
        if !args.tla_only {
            eprintln!("Rust stage: stateright models");
            for (target, row) in targets.iter().zip(&mut rows) {
                row.rust = Some(rust_stage::run(&bin, target, simulation_seconds, Reductions::On)?);
                summary::print_rust_line(target, row.rust.as_ref());
            }
            if args.unreduced {
                rows.extend(unreduced(&bin, &targets, args.deep)?);
            }
            if !args.rust_only && args.cfg.is_none() {
                eprintln!("Snapshot stage: cargo test (unit and insta snapshot tests)");
                tests = Some(crate::workspace_tests::workspace(root, args.slow || args.deep)?);
            }
        }
        let tla_outcomes = match tla_stage {
            Some(handle) => Some(handle.join().map_err(|_| anyhow::anyhow!("the TLA+ stage panicked"))??),
            None => None,
        };
        Ok((tla_outcomes, tests))
    })?;
    if let Some((checker, outcomes)) = tla_outcomes {
        for (row, outcome) in rows.iter_mut().zip(outcomes) {
            row.tla = outcome;
        }
        summary.tla_checker = Some(checker);
    }
    summary.tests = tests;

    // A row no checker ran is left out of a partial run (named here), and
    // fails a full one: it would otherwise pass unchecked.
    let (rows, unchecked): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(Row::checked);
    for row in &unchecked {
        eprintln!("check: {} not checked in this run (no verdict from either checker)", row.cfg);
    }
    let partial = args.rust_only || args.tla_only;
    ensure!(partial || unchecked.is_empty(), "{} cfgs were checked by neither checker", unchecked.len());
    summary.rows = rows;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        if args.coverage {
            summary::print_coverage(&summary.rows);
        }
        summary.print_table();
    }
    if args.cfg.is_none() && !args.deep {
        if !args.slow {
            let slow = [tla_dir.join(SLOW_DIR), models.join(SLOW_DIR)];
            let cfgs = slow.iter().filter(|d| d.is_dir()).map(|d| cfgs_in(d)).collect::<Result<Vec<_>>>()?;
            print_slow_tier(root, &cfgs.concat());
        }
        print_deep_tier(root, &deep_cfgs()?);
    }
    eprintln!("check: {:.0} s in all", started.elapsed().as_secs_f64());
    Ok((summary.ok(), summary.tests.clone()))
}

/// Checks every target that has a TLA+ module with the chosen checker, as
/// many cfgs at once as there are cores, each TLC on one worker thread
/// (measured on 2 cores: about a tenth less CPU than one cfg at a time on
/// two workers, whose threads wait on each other and on the JIT); an
/// outcome per target (`None`: no module).
fn tla_stage(
    checker: CheckerUsed,
    runner: &Runner,
    targets: &[target::Target],
    coverage: bool,
) -> Result<(CheckerUsed, Vec<Option<Outcome>>)> {
    eprintln!("TLA+ stage: {}", checker.describe());
    let lanes = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let outcomes = std::sync::Mutex::new((0..targets.len()).map(|_| None).collect::<Vec<Option<Outcome>>>());
    std::thread::scope(|s| -> Result<()> {
        let lane = || -> Result<()> {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(target) = targets.get(i) else { return Ok(()) };
                let Some(spec) = &target.spec else { continue };
                let outcome = runner.run(spec, target, coverage || target.tlc_judges_actions())?;
                summary::print_tla_line(checker.name, target, &outcome);
                if let Some(slot) = outcomes.lock().map_err(|_| anyhow::anyhow!("a TLA+ lane panicked"))?.get_mut(i) {
                    *slot = Some(outcome);
                }
            }
        };
        let handles = (0..lanes).map(|_| s.spawn(lane)).collect::<Vec<_>>();
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("a TLA+ lane panicked"))??;
        }
        Ok(())
    })?;
    let outcomes = outcomes.into_inner().map_err(|_| anyhow::anyhow!("a TLA+ lane panicked"))?;
    Ok((checker, outcomes))
}

/// The unreduced runs (`--unreduced`): a row per exhaustive cfg of a model
/// with reductions, except counterexamples (their reduced run shows the
/// violation) and cfgs that say why they need the reductions; where that
/// run is bounded in depth, a second row keeping one step's drops over the
/// whole graph (`Target::has_keep_one_run`; `deep`: the deep tier).
fn unreduced(bin: &Path, targets: &[target::Target], deep: bool) -> Result<Vec<Row>> {
    eprintln!("Rust stage, unreduced: the implementation models without their reductions");
    let mut rows = Vec::new();
    for target in targets.iter().filter(|t| has_unreduced_run(t)) {
        if let Some(why) = &target.reduction_needed {
            eprintln!("  {}: kept reduced (REDUCTION needed: {why})", target.cfg_name());
            continue;
        }
        let mut row = Row::new(target);
        row.cfg = target.unreduced_name();
        let mut outcome = rust_stage::run(bin, target, 0, Reductions::Off)?;
        ran_as_named(target, &mut outcome);
        summary::print_rust_line_as(&row.cfg, Some(&outcome));
        row.rust = Some(outcome);
        rows.push(row);
        if target.has_keep_one_run(deep) {
            let mut row = Row::new(target);
            row.cfg = target.keep_one_name();
            let mut outcome = rust_stage::run(bin, target, 0, Reductions::KeepOne)?;
            kept_one_whole(&mut outcome);
            summary::print_rust_line_as(&row.cfg, Some(&outcome));
            row.rust = Some(outcome);
            rows.push(row);
        } else {
            match &target.keep_one {
                Some(KeepOne::Never(why)) => {
                    eprintln!("  {}: not kept one (KEEP ONE never: {why})", target.file_name())
                }
                Some(KeepOne::Deep(why)) => eprintln!("  {}: not kept one (--deep runs it: {why})", target.file_name()),
                None => {}
            }
        }
    }
    Ok(rows)
}

/// Fails a passing run named as keeping one step's drops that did not, or
/// did not explore the whole graph.
fn kept_one_whole(outcome: &mut rust_stage::RustOutcome) {
    if outcome.verdict == "pass" && (outcome.reduction.as_deref() != Some("keep-one") || outcome.depth_bound.is_some())
    {
        outcome.verdict = "error".into();
        outcome.message = Some(format!(
            "the run was to keep one step's drops over the whole graph; the checker reports reduction {:?}, depth bound {:?}",
            outcome.reduction, outcome.depth_bound
        ));
    }
}

/// Fails a passing unreduced run that did not go as far as its row's name
/// says (`Target::unreduced_name`): bounded in depth where the cfg declares
/// a bound, and to that bound; exhaustive where it declares none. A bound
/// the graph ends above is an error too: the whole unreduced run fits, and
/// run whole it would check the liveness properties the bound leaves out.
fn ran_as_named(target: &target::Target, outcome: &mut rust_stage::RustOutcome) {
    if outcome.verdict != "pass" {
        return;
    }
    if outcome.depth_bound != target.unreduced_depth {
        outcome.verdict = "error".into();
        outcome.message = Some(format!(
            "the cfg's UNREDUCED depth is {:?}, the checker's depth bound was {:?}",
            target.unreduced_depth, outcome.depth_bound
        ));
    } else if outcome.ended_within_bound {
        outcome.verdict = "error".into();
        outcome.message = Some(format!(
            "the unreduced graph ends at depth {:?}, within the cfg's UNREDUCED depth {:?}: drop the line, the whole run fits",
            outcome.max_depth, target.unreduced_depth
        ));
    }
}

/// Whether `--unreduced` checks `t` a second time: an exhaustive cfg of a
/// model with reductions that is no counterexample.
fn has_unreduced_run(t: &target::Target) -> bool {
    t.reductions && t.search != "simulation" && t.expect.is_none()
}

/// A chosen TLA+ checker, ready to run.
enum Runner {
    Tlc(tlc::Tlc),
    Tla(PathBuf),
}

impl Runner {
    /// Checks `spec` on the target's cfg. TLC checks liveness properties
    /// whenever a cfg lists them; `tla` only when asked.
    fn run(&self, spec: &Path, target: &target::Target, coverage: bool) -> Result<Outcome> {
        let cfg = &target.cfg_path;
        match self {
            Runner::Tlc(t) => {
                let how = tlc::How { workers: 1, liveness: target.liveness };
                tlc::run(t, spec, cfg, &format!("tlc {}", target.cfg_name()), coverage, how)
            }
            Runner::Tla(bin) => tla_rs::run(bin, spec, cfg, &format!("tla {}", target.cfg_name()), target.liveness),
        }
    }
}

fn choose_checker(root: &Path, choice: Option<CheckerChoice>) -> Result<(CheckerUsed, Runner)> {
    let tla = |why: String| -> Result<(CheckerUsed, Runner)> {
        let t = tla_rs::locate(root)?;
        let used = CheckerUsed {
            name: "tla",
            version: t.version_line,
            path: t.exe.display().to_string(),
            sha256: t.sha256,
            why,
        };
        Ok((used, Runner::Tla(t.exe)))
    };
    let tlc = |t: tlc::Tlc, why: &str| -> (CheckerUsed, Runner) {
        let why = format!("{why}; {}", t.found);
        let used = CheckerUsed {
            name: "tlc",
            version: t.version.clone(),
            path: t.jar.display().to_string(),
            sha256: t.sha256.clone(),
            why,
        };
        (used, Runner::Tlc(t))
    };
    match choice {
        Some(CheckerChoice::Tlc) => {
            Ok(tlc(tlc::locate().context("--checker tlc, but TLC cannot run")?, "requested with --checker tlc"))
        }
        Some(CheckerChoice::Tla) => tla("requested with --checker tla".into()),
        None => match tlc::locate() {
            Ok(t) => Ok(tlc(t, "Java and tla2tools.jar found")),
            Err(e) => tla(format!("TLC unavailable: {e:#}")),
        },
    }
}

/// What `--slow` would add to a default check.
fn print_slow_tier(root: &Path, slow: &[PathBuf]) {
    eprintln!("\n--slow (CI sets it) would add the tests in `slow` modules and {} cfgs:", slow.len());
    for cfg in slow {
        eprintln!("  {}", cfg.strip_prefix(root).unwrap_or(cfg).display());
    }
}

/// What `--deep` would add to a default check.
fn print_deep_tier(root: &Path, deep: &[PathBuf]) {
    eprintln!(
        "\n--deep would add {} cfgs (the exhaustive implementation model and larger bounds; minutes to hours) \
         and {DEEP_SIMULATION_SECONDS} s instead of {QUICK_SIMULATION_SECONDS} s per simulation:",
        deep.len()
    );
    for cfg in deep {
        eprintln!("  {}", cfg.strip_prefix(root).unwrap_or(cfg).display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(reductions: bool, search: &str, expect: Option<&str>) -> target::Target {
        target::Target {
            module: "HandoffImpl".into(),
            spec: None,
            cfg_path: PathBuf::from("X.cfg"),
            search: search.into(),
            liveness: false,
            temporal: Vec::new(),
            expect: expect.map(str::to_string),
            reductions,
            reduction_needed: None,
            unreduced_depth: None,
            keep_one: None,
            no_mirror: None,
            unfired: Vec::new(),
        }
    }

    #[test]
    fn only_exhaustive_cfgs_of_models_with_reductions_run_unreduced() {
        assert!(has_unreduced_run(&target(true, "bfs", None)));
        assert!(has_unreduced_run(&target(true, "dfs", None)));
        assert!(!has_unreduced_run(&target(false, "bfs", None)), "a mirror has nothing to switch off");
        assert!(!has_unreduced_run(&target(true, "simulation", None)));
        assert!(!has_unreduced_run(&target(true, "bfs", Some("RollLosesNothing"))));
    }

    #[test]
    fn an_unreduced_row_says_how_far_it_went_and_went_that_far() {
        let whole = target(true, "dfs", None);
        assert_eq!(whole.unreduced_name(), "X.cfg (dfs) (unreduced)");
        let bounded = target::Target { unreduced_depth: Some(18), ..target(true, "dfs", None) };
        assert_eq!(bounded.unreduced_name(), "X.cfg (unreduced, bfs to depth 18 only)");
        let ran = |depth_bound, ended_within_bound| rust_stage::RustOutcome {
            verdict: "pass".into(),
            depth_bound,
            ended_within_bound,
            ..Default::default()
        };
        for (t, depth_bound, ended, verdict) in [
            (&bounded, Some(18), false, "pass"),
            (&bounded, Some(18), true, "error"),
            (&bounded, None, false, "error"),
            (&bounded, Some(12), false, "error"),
            (&whole, None, false, "pass"),
            (&whole, Some(18), false, "error"),
        ] {
            let mut outcome = ran(depth_bound, ended);
            ran_as_named(t, &mut outcome);
            assert_eq!(
                outcome.verdict,
                verdict,
                "{} ran to {depth_bound:?}, ended within: {ended}",
                t.unreduced_name()
            );
        }
    }

    #[test]
    fn a_keep_one_row_runs_where_the_unreduced_one_is_bounded_and_keeps_one_whole() {
        let whole = target(true, "bfs", None);
        let bounded = target::Target { unreduced_depth: Some(18), ..target(true, "dfs", None) };
        let deep = target::Target { keep_one: Some(KeepOne::Deep("400 s".into())), ..bounded.clone() };
        let never = target::Target { keep_one: Some(KeepOne::Never("50M states".into())), ..bounded.clone() };
        assert!(!whole.has_keep_one_run(true), "the whole unreduced run covers more");
        assert!(bounded.has_keep_one_run(false) && bounded.has_keep_one_run(true));
        assert!(!deep.has_keep_one_run(false) && deep.has_keep_one_run(true));
        assert!(!never.has_keep_one_run(false) && !never.has_keep_one_run(true), "out of reach, even deep");
        assert_eq!(bounded.keep_one_name(), "X.cfg (dfs) (one step's drops kept)");
        // The shape `checker cfg` prints (its test `cfg_says_what_a_cfg_is_for`).
        let said: KeepOne = serde_json::from_str(r#"{"never": "50M states"}"#).unwrap();
        assert_eq!(said, KeepOne::Never("50M states".into()));
        for (reduction, depth_bound, verdict) in [
            (Some("keep-one"), None, "pass"),
            (Some("off"), None, "error"),
            (None, None, "error"),
            (Some("keep-one"), Some(9), "error"),
        ] {
            let mut outcome = rust_stage::RustOutcome {
                verdict: "pass".into(),
                reduction: reduction.map(str::to_string),
                depth_bound,
                ..Default::default()
            };
            kept_one_whole(&mut outcome);
            assert_eq!(outcome.verdict, verdict, "{reduction:?} to {depth_bound:?}");
        }
    }
}
