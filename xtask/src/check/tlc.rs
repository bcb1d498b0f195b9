//! TLC, the reference TLA+ checker: finding Java and `tla2tools.jar`,
//! running it, and reading its output.
//!
//! The jar is looked up in `$TLA2TOOLS_JAR`, then in the user cache
//! (`$XDG_CACHE_HOME/handoff` or `~/.cache/handoff`), then downloaded from
//! the pinned official release and verified by SHA-256. Whichever jar runs,
//! the summary reports the version it prints and its SHA-256.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use super::outcome::{Outcome, TlcActionCoverage, TraceStep};
use super::stream;
use crate::tools;

/// The pinned TLA+ tools release (TLC 2.19).
pub const RELEASE: &str = "v1.8.0";
const JAR_URL: &str = "https://github.com/tlaplus/tlaplus/releases/download/v1.8.0/tla2tools.jar";
/// SHA-256 of the v1.8.0 `tla2tools.jar` as pinned by other public projects.
const JAR_SHA256: &str = "cc4803dce2a8ffaf0f5920a9dc39df4b5ee34ab4cb53fb58ac557277a7e516b3";

/// A runnable TLC.
#[derive(Clone, Debug)]
pub struct Tlc {
    pub java: String,
    pub jar: PathBuf,
    /// The version line TLC prints, e.g. `TLC2 Version 2.19 of 08 August
    /// 2024 (rev: 5a47802)`.
    pub version: String,
    /// SHA-256 of the jar: a jar built from the sources without a release
    /// manifest prints the time it runs as its version, so this is what
    /// names it.
    pub sha256: String,
    /// Where the jar came from and which Java runs it.
    pub found: String,
}

/// Finds Java 11+ and the jar, downloading the jar into the cache when
/// neither the environment nor the cache has it. The error says what is
/// missing and what to do.
pub fn locate() -> Result<Tlc> {
    let java = java_major()
        .context("TLC needs Java 11 or newer on PATH (install a JDK, e.g. `apt-get install default-jre-headless`)")?;
    if java < 11 {
        bail!("TLC needs Java 11 or newer; `java -version` reports {java}");
    }
    let (jar, from) = match std::env::var_os("TLA2TOOLS_JAR") {
        Some(p) => {
            let p = PathBuf::from(p);
            if !p.is_file() {
                bail!("TLA2TOOLS_JAR={} does not exist; point it at tla2tools.jar or unset it", p.display());
            }
            (p, "$TLA2TOOLS_JAR".to_string())
        }
        None => {
            let cached = tools::user_cache()?.join(format!("tla2tools-{RELEASE}.jar"));
            if !cached.is_file() {
                download(&cached).with_context(|| {
                    format!(
                        "tla2tools.jar is not in $TLA2TOOLS_JAR nor in {} and could not be downloaded",
                        cached.display()
                    )
                })?;
            }
            (cached, format!("the user cache (release {RELEASE})"))
        }
    };
    // TLC runs in each spec's directory: a relative TLA2TOOLS_JAR must not break it.
    let jar = jar.canonicalize().with_context(|| format!("cannot resolve {}", jar.display()))?;
    let java_cmd = "java".to_string();
    let version = printed_version(&java_cmd, &jar)?;
    let sha256 = tools::sha256_file(&jar)?;
    let found = format!("Java {java}, tla2tools.jar from {from}");
    Ok(Tlc { java: java_cmd, jar, version, sha256, found })
}

/// The version line this TLC prints at start-up. Run without a module, TLC
/// prints it and then stops with a usage error.
fn printed_version(java: &str, jar: &Path) -> Result<String> {
    let out = Command::new(java)
        .arg("-cp")
        .arg(jar)
        .arg("tlc2.TLC")
        .output()
        .with_context(|| format!("cannot run TLC from {}", jar.display()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    version_line(&text).with_context(|| {
        format!("{} printed no `TLC2 Version` line; is it tla2tools.jar? It printed: {}", jar.display(), text.trim())
    })
}

/// `TLC2 Version ...`, the first line of every TLC run.
fn version_line(out: &str) -> Option<String> {
    out.lines().map(str::trim).find(|l| l.starts_with("TLC2 Version ")).map(str::to_string)
}

fn java_major() -> Result<u32> {
    let out = Command::new("java").arg("-version").output().context("no `java` on PATH")?;
    let text = String::from_utf8_lossy(&out.stderr);
    // `openjdk version "17.0.15" 2025-04-15` or `java version "1.8.0_392"`
    let quoted = text.split('"').nth(1).context("cannot read `java -version`")?;
    let mut parts = quoted.split('.');
    let first: u32 = parts.next().and_then(|p| p.parse().ok()).context("cannot read `java -version`")?;
    Ok(if first == 1 { parts.next().and_then(|p| p.parse().ok()).unwrap_or(1) } else { first })
}

fn download(dest: &Path) -> Result<()> {
    eprintln!("  downloading tla2tools.jar {RELEASE} from {JAR_URL}");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .timeout_connect(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut body = Vec::new();
    agent
        .get(JAR_URL)
        .call()
        .map_err(|e| anyhow::anyhow!("download failed: {e}"))?
        .into_body()
        .into_reader()
        .read_to_end(&mut body)
        .context("download interrupted")?;
    let digest = format!("{:x}", Sha256::digest(&body));
    if digest != JAR_SHA256 {
        bail!("tla2tools.jar from {JAR_URL} has SHA-256 {digest}, expected {JAR_SHA256}; not using it");
    }
    std::fs::create_dir_all(dest.parent().context("cache path has no parent")?)?;
    let tmp = dest.with_extension("part");
    std::fs::write(&tmp, &body)?;
    std::fs::rename(&tmp, dest)?;
    Ok(())
}

/// Runs TLC on one target, streaming its progress lines; with `coverage`,
/// also TLC's per-action coverage (`-coverage`, which costs TLC time, so
/// only when asked).
pub fn run(tlc: &Tlc, spec: &Path, cfg: &Path, label: &str, coverage: bool, how: How) -> Result<Outcome> {
    let meta = meta_dir(label);
    let mut cmd = command(tlc, spec, cfg, how, &meta)?;
    if coverage {
        // Every minute and at the end; the last report is the whole run's.
        cmd.args(["-coverage", "1"]);
    }
    let started = Instant::now();
    let output = stream::run(cmd, label, is_progress)?;
    let _ = std::fs::remove_dir_all(&meta);
    let mut outcome = parse(&output.stdout, started.elapsed().as_secs_f64());
    if let (Some(coverage), Some(dir)) = (outcome.coverage.as_mut(), spec.parent()) {
        name_disjuncts(coverage, dir);
    }
    Ok(outcome)
}

/// A fresh directory for TLC's states and fingerprints of one run.
pub fn meta_dir(label: &str) -> PathBuf {
    std::env::temp_dir().join(format!("handoff-tlc-{}-{}", std::process::id(), label.replace(['/', ' '], "_")))
}

/// How TLC runs one cfg.
#[derive(Clone, Copy, Debug)]
pub struct How {
    /// TLC's worker threads.
    pub workers: usize,
    /// The cfg has liveness properties.
    pub liveness: bool,
}

/// The TLC command line for one cfg, run from the spec's directory (so it
/// finds the modules the spec extends).
pub fn command(tlc: &Tlc, spec: &Path, cfg: &Path, how: How, meta: &Path) -> Result<Command> {
    let mut cmd = Command::new(&tlc.java);
    cmd.arg("-XX:+UseParallelGC");
    if how.liveness {
        // Measured on this project's cfgs (2 cores, 2026-12-06): its
        // liveness cfgs are small graphs (at most 6,080 states) whose run
        // ends before the JVM's optimising compiler pays for itself; without
        // it they take 25-75% less CPU. The safety cfgs, up to 290,000
        // states, run up to a third slower without it, so they keep it.
        cmd.arg("-XX:TieredStopAtLevel=1");
    }
    cmd.arg("-cp")
        .arg(&tlc.jar)
        .arg("tlc2.TLC")
        .args(["-workers", &how.workers.to_string(), "-noGenerateSpecTE", "-metadir"])
        .arg(meta)
        .arg("-config")
        .arg(cfg.canonicalize()?)
        .arg(spec.canonicalize()?);
    if let Some(dir) = spec.parent() {
        cmd.current_dir(dir);
    }
    Ok(cmd)
}

/// TLC's progress lines, shown while it runs.
pub fn is_progress(line: &str) -> Option<String> {
    line.starts_with("Progress(").then(|| line.to_string())
}

/// What a TLC that names no violated temporal property (2.19) is read as
/// having violated.
pub const UNNAMED_TEMPORAL: &str = "temporal property";

/// Reads TLC's plain-text output.
pub fn parse(out: &str, seconds: f64) -> Outcome {
    let number = |s: &str| s.trim().replace(',', "").parse::<u64>().ok();
    let mut distinct = None;
    let mut depth = None;
    let mut violated = None;
    let mut error = None;
    for line in out.lines() {
        let line = line.trim();
        if let Some((_, rest)) = line.split_once(" states generated, ") {
            if let Some((n, _)) = rest.split_once(" distinct states found") {
                distinct = number(n);
            }
        } else if let Some(rest) = line.strip_prefix("The depth of the complete state graph search is ") {
            depth = number(rest.trim_end_matches('.'));
        } else if let Some(rest) = line.strip_prefix("Error: Invariant ") {
            violated = rest.split_whitespace().next().map(str::to_string);
        } else if let Some(rest) = line.strip_prefix("Error: Action property ") {
            violated = rest.split_whitespace().next().map(str::to_string);
        } else if let Some(rest) = line.strip_prefix("Error: Temporal propert") {
            // `Error: Temporal property P was violated.`, `Error: Temporal
            // properties P and Q were violated.` (TLC 2.19: no names).
            let names = rest.strip_prefix("y ").or_else(|| rest.strip_prefix("ies ")).unwrap_or("");
            let names =
                names.split_once(" was violated").or_else(|| names.split_once(" were violated")).map_or("", |(n, _)| n);
            violated = Some(if names.is_empty() { UNNAMED_TEMPORAL.into() } else { names.to_string() });
        } else if line.starts_with("Error: Deadlock reached") {
            violated = Some("deadlock".into());
        } else if error.is_none()
            && (line.starts_with("Error:") || line.contains("***Parse Error***") || line.starts_with("Semantic error"))
            && !line.starts_with("Error: The behavior up to this point is")
            && !line.starts_with("Error: The following behavior")
        {
            error = Some(line.to_string());
        }
    }
    let completed = out.contains("Model checking completed. No error has been found.");
    let trace = parse_trace(out);
    let coverage = parse_coverage(out);
    let found = |verdict, violated| Outcome {
        distinct_states: distinct,
        depth,
        seconds,
        verdict,
        violated,
        trace,
        error: None,
        coverage,
    };
    match (violated, completed) {
        (Some(v), _) => found("violation", Some(v)),
        (None, true) => found("pass", None),
        (None, false) => Outcome::error(error.unwrap_or_else(|| "TLC stopped without a verdict".into()), seconds),
    }
}

/// Names each disjunct of `coverage` by the one action it calls (`\E d
/// \in digs : DigestRecvR(d)` is `DigestRecvR`), from its module's source
/// in `dir`; a disjunct that calls several (or whose source cannot be read)
/// keeps its line.
fn name_disjuncts(coverage: &mut [TlcActionCoverage], dir: &Path) {
    let mut sources = std::collections::BTreeMap::new();
    for c in coverage.iter_mut() {
        let Some([line, col, end_line, end_col]) = c.disjunct else { continue };
        let source = sources
            .entry(c.module.clone())
            .or_insert_with(|| std::fs::read_to_string(dir.join(format!("{}.tla", c.module))).ok());
        let Some(source) = source else { continue };
        let text: String = source
            .lines()
            .enumerate()
            .skip(line.saturating_sub(1) as usize)
            .take(end_line.saturating_sub(line) as usize + 1)
            .map(|(i, l)| {
                let from = if i + 1 == line as usize { col.saturating_sub(1) as usize } else { 0 };
                let to = if i + 1 == end_line as usize { end_col as usize } else { l.len() };
                l.get(from..to.min(l.len())).unwrap_or("")
            })
            .collect::<Vec<_>>()
            .join(" ");
        let called: std::collections::BTreeSet<&str> = text
            .match_indices('(')
            .filter_map(|(i, _)| {
                let before = text.get(..i)?;
                let start = before.rfind(|ch: char| !(ch.is_alphanumeric() || ch == '_')).map_or(0, |s| s + 1);
                before.get(start..).filter(|name| name.starts_with(|ch: char| ch.is_ascii_uppercase()))
            })
            .collect();
        if let [only] = called.into_iter().collect::<Vec<_>>()[..] {
            c.calls = Some(only.to_string());
        }
    }
}

/// The actions of TLC's last coverage report (`-coverage`): the lines
/// `<Name line L, col C to line L2, col C2 of module M>: distinct:found`
/// (a variable's line has one number; sub-expressions are indented).
fn parse_coverage(out: &str) -> Option<Vec<TlcActionCoverage>> {
    let (_, last) = out.rsplit_once("The coverage statistics at")?;
    let actions = last
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix('<')?.split_once(" line ")?;
            let (start, counts) = rest.split_once(">: ")?;
            let (distinct, found) = counts.trim().split_once(':')?;
            let number = |n: &str| n.trim().replace(',', "").parse().ok();
            // `... of module M (320 8 320 43)`: one disjunct of the operator.
            let (place, disjunct) = match start.strip_suffix(')').and_then(|s| s.rsplit_once(" (")) {
                Some((place, span)) => {
                    let n: Vec<u32> = span.split_whitespace().filter_map(|n| n.parse().ok()).collect();
                    (place, Some(<[u32; 4]>::try_from(n).ok()?))
                }
                None => (start, None),
            };
            Some(TlcActionCoverage {
                action: name.to_string(),
                line: start.split_once(',')?.0.trim().parse().ok()?,
                module: place.rsplit_once(" of module ")?.1.trim().to_string(),
                disjunct,
                calls: None,
                distinct: number(distinct)?,
                found: number(found)?,
            })
        })
        .collect();
    Some(actions)
}

/// `State N: <Action ...>` headers followed by `/\ var = value` lines
/// (values may continue on indented lines).
fn parse_trace(out: &str) -> Vec<TraceStep> {
    let mut steps: Vec<TraceStep> = Vec::new();
    for line in out.lines() {
        // A liveness counterexample ends in `State N: Stuttering` or in a
        // line `Back to state M: <Action ...>` (a cycle), forever.
        let lasso = line.strip_prefix("State ").and_then(|r| r.split_once(": ")).map_or(line, |(_, end)| end);
        if lasso == "Stuttering" || lasso.starts_with("Back to state") {
            let end = lasso.split(": <").next().unwrap_or(lasso);
            steps.push(TraceStep { action: Some(format!("{end} (forever)")), state: Vec::new() });
            continue;
        }
        if let Some(rest) = line.strip_prefix("State ")
            && let Some((_, header)) = rest.split_once(": <")
        {
            let name = header.trim_end_matches('>');
            let action = if name == "Initial predicate" {
                None
            } else {
                Some(name.split(" line ").next().unwrap_or(name).to_string())
            };
            steps.push(TraceStep { action, state: Vec::new() });
            continue;
        }
        let Some(step) = steps.last_mut() else { continue };
        if let Some(rest) = line.strip_prefix("/\\ ") {
            if let Some((name, value)) = rest.split_once(" = ") {
                step.state.push((name.to_string(), value.to_string()));
            }
        } else if line.starts_with("   ")
            && let Some((_, value)) = step.state.last_mut()
        {
            value.push(' ');
            value.push_str(line.trim());
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    // Shaped like TLC 2.19's output (abridged).
    const PASS: &str = "TLC2 Version 2.19 of 08 August 2024 (rev: 5a47802)
Running breadth-first search Model-Checking with fp 1 and seed 1 with 2 workers on 2 cores
Computing initial states...
Finished computing initial states: 1 distinct state generated at 2026-12-02 10:00:00.
Progress(12) at 2026-12-02 10:00:03: 301,822 states generated, 95,028 distinct states found, 0 states left on queue.
Model checking completed. No error has been found.
301822 states generated, 95028 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 27.
Finished in 23s at (2026-12-02 10:00:23)
";

    const VIOLATION: &str = "TLC2 Version 2.19 of 08 August 2024 (rev: 5a47802)
Error: Invariant EpochVerUnique is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ x = 0
/\\ s = {}

State 2: <Inc line 6, col 8 to line 6, col 30 of module Counter>
/\\ x = 1
/\\ s = { [a |-> 1,
     b |-> 2] }

12 states generated, 9 distinct states found, 3 states left on queue.
The depth of the complete state graph search is 3.
";

    #[test]
    fn reads_a_pass() {
        let o = parse(PASS, 23.0);
        assert_eq!((o.verdict, o.distinct_states, o.depth), ("pass", Some(95028), Some(27)));
    }

    #[test]
    fn reads_a_violation_and_its_trace() {
        let o = parse(VIOLATION, 1.0);
        assert_eq!(o.verdict, "violation");
        assert_eq!(o.violated.as_deref(), Some("EpochVerUnique"));
        assert_eq!(o.trace.len(), 2);
        assert_eq!(o.trace[1].action.as_deref(), Some("Inc"));
        assert_eq!(o.trace[1].state[1], ("s".into(), "{ [a |-> 1, b |-> 2] }".into()));
    }

    #[test]
    fn reads_the_version_tlc_prints() {
        let release = version_line(PASS);
        assert_eq!(release.as_deref(), Some("TLC2 Version 2.19 of 08 August 2024 (rev: 5a47802)"));
        // A jar built from the sources without a release manifest prints
        // the time it runs, then the usage error of a run without a module.
        let built = "TLC2 Version 2026.12.03.151218\nError: Error: Missing input TLA+ module.\nUsage: java tlc2.TLC";
        assert_eq!(version_line(built).as_deref(), Some("TLC2 Version 2026.12.03.151218"));
        assert_eq!(version_line("Error: Could not find or load main class tlc2.TLC\n"), None);
    }

    #[test]
    fn reads_a_liveness_violation() {
        let one = "Error: Temporal property AckedWritesReachEveryReplica was violated.\n\
                   Error: The following behavior constitutes a counter-example:\n\
                   State 1: <Initial predicate>\n/\\ x = 0\n\nState 2: Stuttering\n";
        let o = parse(one, 1.0);
        assert_eq!((o.verdict, o.violated.as_deref()), ("violation", Some("AckedWritesReachEveryReplica")));
        assert_eq!(o.trace.len(), 2);
        assert_eq!(o.trace[1].action.as_deref(), Some("Stuttering (forever)"));
        let two = "Error: Temporal properties P and Q were violated.\n";
        assert_eq!(parse(two, 1.0).violated.as_deref(), Some("P and Q"));
        let old = "Error: Temporal properties were violated.\n";
        assert_eq!(parse(old, 1.0).violated.as_deref(), Some("temporal property"));
    }

    #[test]
    fn a_disjunct_is_named_by_the_one_action_it_calls() {
        let dir = std::env::temp_dir().join(format!("handoff-disjuncts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let module = "Next ==\n    \\/ \\E d \\in digs, S \\in SUBSET Keys : Recv(d, S)\n    \\/ \\E s \\in snaps : A(s) \\/ B(s)\n";
        std::fs::write(dir.join("M.tla"), module).unwrap();
        let out = "The coverage statistics at 2026-12-07 08:00:00\n\
                   <Next line 1, col 1 to line 1, col 4 of module M (2 8 2 52)>: 0:0\n\
                   <Next line 1, col 1 to line 1, col 4 of module M (3 8 3 39)>: 2:5\n\
                   <Next line 1, col 1 to line 1, col 4 of module Gone (3 8 3 39)>: 2:5\n";
        let mut coverage = parse_coverage(out).unwrap();
        name_disjuncts(&mut coverage, &dir);
        let labels: Vec<String> = coverage.iter().map(TlcActionCoverage::label).collect();
        assert_eq!(labels, ["Recv", "Next (line 3)", "Next (line 3)"], "two calls, or no source: the line");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_the_last_coverage_report() {
        let out = "The coverage statistics at 2026-12-03 22:17:00\n\
                   <Init line 49, col 1 to line 49, col 4 of module M>: 1:1\n\
                   The coverage statistics at 2026-12-03 22:17:30\n\
                   <lease line 38, col 61 to line 38, col 65 of module M>: 2\n\
                   <Init line 49, col 1 to line 49, col 4 of module M>: 3:3\n\
                   \x20 line 50, col 23 to line 50, col 51 of module M: 1:1\n\
                   <Activate line 61, col 1 to line 61, col 8 of module M>: 1,234:56,789\n\
                   <Reap line 70, col 1 to line 70, col 4 of module M>: 0:7\n\
                   <Other line 80, col 1 to line 80, col 9 of module M (82 8 82 40)>: 0:0\n";
        let coverage = parse_coverage(out).unwrap();
        let names: Vec<_> = coverage.iter().map(|c| (c.label(), c.line, c.distinct, c.found)).collect();
        let label = |s: &str| s.to_string();
        assert_eq!(
            names,
            vec![
                (label("Init"), 49, 3, 3),
                (label("Activate"), 61, 1234, 56789),
                (label("Reap"), 70, 0, 7),
                (label("Other (line 82)"), 80, 0, 0)
            ]
        );
        assert_eq!(parse_coverage("no coverage here"), None);
    }

    #[test]
    fn reads_an_error() {
        let o = parse("Error: Could not find declaration or definition of symbol Foo\n", 0.1);
        assert_eq!(o.verdict, "error");
        assert!(o.error.unwrap().contains("Foo"));
    }
}
