//! The summary of `cargo xtask check`: one row per cfg, printed as a table
//! or as JSON, and the overall verdict.

use serde::Serialize;

use super::outcome::{CheckerUsed, Outcome, format_trace};
use super::rust_stage::{RUST, RustOutcome};
use super::target::Target;
use super::tlc;
use crate::workspace_tests::TestsOutcome;

/// One cfg's results across the stages.
#[derive(Debug, Serialize)]
pub struct Row {
    pub spec: String,
    pub cfg: String,
    /// The property a counterexample cfg must be found to violate.
    pub expect: Option<String>,
    /// The cfg's liveness properties (TLC 2.19 names none it finds
    /// violated).
    #[serde(skip)]
    temporal: Vec<String>,
    /// Why the module has no Rust model, as the cfg says.
    #[serde(skip)]
    no_mirror: Option<String>,
    /// The actions the cfg declares never fire (`\* UNFIRED`), and
    /// whether TLC's coverage judges them ([`Target::tlc_judges_actions`]).
    #[serde(skip)]
    unfired: Vec<String>,
    #[serde(skip)]
    tlc_judges_actions: bool,
    pub tla: Option<Outcome>,
    pub rust: Option<RustOutcome>,
}

impl Row {
    pub fn new(t: &Target) -> Row {
        Row {
            spec: t.module.clone(),
            cfg: t.cfg_name(),
            expect: t.expect.clone(),
            temporal: t.temporal.clone(),
            no_mirror: t.no_mirror.clone(),
            unfired: t.unfired.clone(),
            tlc_judges_actions: t.tlc_judges_actions(),
            tla: None,
            rust: None,
        }
    }

    /// `Some(true)` when both checkers counted and agree, `Some(false)`
    /// when they disagree, `None` when there is nothing to compare.
    pub fn parity(&self) -> Option<bool> {
        let tla = self.tla.as_ref()?.distinct_states?;
        let rust = self.rust.as_ref()?.unique_states?;
        let both_pass = self.tla.as_ref()?.verdict == "pass" && self.rust.as_ref()?.verdict == "pass";
        both_pass.then_some(tla == rust)
    }

    /// Whether any checker gave this row a verdict (a partial run,
    /// `--rust-only` or `--tla-only`, leaves some rows to the other one).
    pub fn checked(&self) -> bool {
        self.tla.is_some() || self.rust.as_ref().is_some_and(|r| r.verdict != "no model")
    }

    /// The module has no Rust model: the row is checked by the TLA+
    /// checker alone, with no parity.
    pub fn no_rust_model(&self) -> bool {
        self.rust.as_ref().is_some_and(|r| r.verdict == "no model")
    }

    /// Why the row fails, if it does.
    pub fn problem(&self) -> Option<String> {
        if let Some(why) = self.unreadable() {
            return Some(why.into());
        }
        // A row without parity must say why, so that a mirror that went
        // missing fails rather than pass with the TLA+ checker alone.
        match (self.no_rust_model(), &self.no_mirror) {
            (true, None) => return Some("no Rust model, and the cfg does not say why (`\\* NO MIRROR: why`)".into()),
            (false, Some(_)) if self.rust.is_some() => {
                return Some("the cfg says NO MIRROR, but a Rust model checked it".into());
            }
            _ => {}
        }
        if let Some(name) = &self.expect {
            return self.unexpected(name);
        }
        if let Some(o) = self.tla.as_ref().filter(|o| o.verdict != "pass") {
            return Some(format!("TLA+ checker: {}", tla_verdict(o)));
        }
        if let Some(r) = self.rust.as_ref().filter(|r| r.verdict != "pass" && r.verdict != "no model") {
            return Some(format!("Rust checker: {}", rust_verdict(r)));
        }
        if let Some(why) = self.tlc_vacuity() {
            return Some(why);
        }
        (self.parity() == Some(false)).then(|| "the distinct-state counts differ".into())
    }

    /// For a row TLC alone checks: the actions that never fired though the
    /// cfg does not declare them (`\* UNFIRED Action: why`), and the
    /// declarations of actions that fired or that TLC does not name, from
    /// TLC's coverage. Nothing to judge without coverage (the `tla`
    /// checker reports none; the summary says so).
    fn tlc_vacuity(&self) -> Option<String> {
        if !self.tlc_judges_actions {
            return None;
        }
        let coverage = self.tla.as_ref().filter(|o| o.verdict == "pass")?.coverage.as_deref()?;
        let mut wrong = Vec::new();
        for c in coverage {
            let label = c.label();
            let declared = self.unfired.contains(&label);
            if c.found == 0 && !declared {
                wrong.push(format!("{label} never fired"));
            } else if c.found > 0 && declared {
                wrong.push(format!("{label} is declared UNFIRED but fired {} times", c.found));
            }
        }
        for name in self.unfired.iter().filter(|n| !coverage.iter().any(|c| &c.label() == *n)) {
            wrong.push(format!("UNFIRED {name} names no action of TLC's coverage"));
        }
        (!wrong.is_empty()).then(|| format!("vacuous (TLC's coverage): {}", wrong.join("; ")))
    }

    fn ok(&self) -> bool {
        self.problem().is_none()
    }

    /// A passing run whose count could not be read gives no parity: it
    /// fails rather than pass uncompared.
    fn unreadable(&self) -> Option<&'static str> {
        if self.tla.as_ref().is_some_and(|o| o.verdict == "pass" && o.distinct_states.is_none()) {
            return Some("the TLA+ checker passed, but its distinct-state count could not be read");
        }
        if self.rust.as_ref().is_some_and(|r| r.verdict == "pass" && r.unique_states.is_none()) {
            return Some("the Rust checker passed, but its distinct-state count could not be read");
        }
        None
    }

    /// For a counterexample cfg: why not every checker that ran found
    /// `name` violated, if not (a checker that has no model of the module
    /// does not run it).
    fn unexpected(&self, name: &str) -> Option<String> {
        if let Some(o) = &self.tla {
            let named = |v: &str| v == name || (v == tlc::UNNAMED_TEMPORAL && self.temporal == [name]);
            match (o.verdict, o.violated.as_deref()) {
                ("violation", Some(v)) if named(v) => {}
                _ => return Some(format!("expected {name} violated; TLA+ checker: {}", tla_verdict(o))),
            }
        }
        if let Some(r) = &self.rust {
            match (r.verdict.as_str(), r.violated.as_deref()) {
                ("violation", Some(v)) if v == name => {}
                ("no model", _) => {}
                _ => return Some(format!("expected {name} violated; Rust checker: {}", rust_verdict(r))),
            }
        }
        // Nobody ran it: no checker found the violation either.
        (!self.checked()).then(|| format!("expected {name} violated; no checker ran this cfg"))
    }
}

/// Everything `cargo xtask check` found.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub tla_checker: Option<CheckerUsed>,
    pub rows: Vec<Row>,
    pub tests: Option<TestsOutcome>,
}

impl Summary {
    pub fn ok(&self) -> bool {
        self.rows.iter().all(Row::ok) && self.tests.as_ref().is_none_or(|t| t.ok)
    }

    pub fn print_table(&self) {
        let header =
            ["spec", "cfg", "checker", "distinct states", "depth", "verdict", "seconds", "rust states", "parity"];
        let mut lines: Vec<[String; 9]> = Vec::new();
        for r in &self.rows {
            let checker = match (&r.tla, &self.tla_checker) {
                (Some(_), Some(c)) => c.name,
                _ => "-",
            };
            let (distinct, depth, verdict, secs) = match &r.tla {
                Some(o) => (opt(o.distinct_states), opt(o.depth), tla_verdict(o), format!("{:.1}", o.seconds)),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            let rust = match &r.rust {
                Some(o) if o.verdict == "pass" => opt(o.unique_states),
                Some(o) if o.verdict == "violation" => {
                    format!("{} ({})", opt(o.unique_states), o.violated.as_deref().unwrap_or("violation"))
                }
                // A module without a stateright model, e.g. one with
                // liveness properties (stateright has no fairness).
                Some(o) if o.verdict == "no model" => "no Rust model".into(),
                Some(o) => o.verdict.clone(),
                None => "-".into(),
            };
            let parity = match (&r.expect, r.problem(), r.parity()) {
                (Some(_), None, _) if r.tla.is_some() || r.rust.is_some() => "violated as expected".into(),
                (Some(_), Some(_), _) => "NOT AS EXPECTED".into(),
                (None, Some(_), _) if r.unreadable().is_some() => "COUNT UNREADABLE".into(),
                (_, _, Some(true)) => "equal".into(),
                (_, _, Some(false)) => "MISMATCH".into(),
                _ if r.no_rust_model() => "none: no Rust model".into(),
                _ => "-".into(),
            };
            lines.push([r.spec.clone(), r.cfg.clone(), checker.into(), distinct, depth, verdict, secs, rust, parity]);
        }
        let widths: Vec<usize> = (0..header.len())
            .map(|i| lines.iter().map(|l| l[i].len()).chain([header[i].len()]).max().unwrap_or(0))
            .collect();
        let fmt_row = |cells: Vec<&str>| {
            cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect::<Vec<_>>().join(" | ")
        };
        println!();
        println!("{}", fmt_row(header.to_vec()));
        println!("{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-|-"));
        for l in &lines {
            println!("{}", fmt_row(l.iter().map(String::as_str).collect()));
        }
        for r in &self.rows {
            if let Some(why) = r.problem() {
                println!("{} ({}): FAIL: {why}", r.cfg, r.spec);
            }
        }
        let unjudged: Vec<&str> = self
            .rows
            .iter()
            .filter(|r| r.tlc_judges_actions && r.tla.as_ref().is_some_and(|o| o.coverage.is_none()))
            .map(|r| r.cfg.as_str())
            .collect();
        if !unjudged.is_empty() {
            println!(
                "not judged for actions that never fire (no Rust model, and the TLA+ checker reported no coverage): {}",
                unjudged.join(", ")
            );
        }
        if let Some(c) = &self.tla_checker {
            println!("\nTLA+ checker: {}", c.describe());
        }
        if let Some(t) = &self.tests {
            println!(
                "tests: {} passed, {} failed{}",
                t.passed,
                t.failed,
                if t.ok { "" } else { " (cargo test failed)" }
            );
        }
        println!("{}", if self.ok() { "check: PASS" } else { "check: FAIL" });
    }
}

fn opt(n: Option<u64>) -> String {
    n.map_or("-".into(), |n| n.to_string())
}

fn tla_verdict(o: &Outcome) -> String {
    match o.verdict {
        "violation" => format!("violated: {}", o.violated.as_deref().unwrap_or("?")),
        "error" => format!("error: {}", o.error.as_deref().unwrap_or("?")),
        v => v.to_string(),
    }
}

fn rust_verdict(r: &RustOutcome) -> String {
    match r.verdict.as_str() {
        "violation" => format!("violated: {}", r.violated.as_deref().unwrap_or("?")),
        "vacuous" => format!("vacuous: {}", r.unfired.join("; ")),
        v => match &r.message {
            Some(m) => format!("{v}: {m}"),
            None => v.to_string(),
        },
    }
}

/// One line per cfg as the TLA+ stage finishes it, named after the
/// `checker` (the stages run side by side), with the counterexample or the
/// error when there is one.
pub fn print_tla_line(checker: &str, t: &Target, o: &Outcome) {
    eprintln!(
        "  {checker} {}: {}, {} distinct states, depth {}, {:.1} s",
        t.cfg_name(),
        tla_verdict(o),
        opt(o.distinct_states),
        opt(o.depth),
        o.seconds
    );
    if let Some(e) = &o.error {
        eprintln!("    error: {e}");
    }
    if !o.trace.is_empty() {
        eprintln!("    counterexample:\n{}", format_trace(&o.trace));
    }
}

pub fn print_rust_line(t: &Target, o: Option<&RustOutcome>) {
    print_rust_line_as(&t.cfg_name(), o);
}

/// The Rust checker's line for a row labelled `cfg`.
pub fn print_rust_line_as(cfg: &str, o: Option<&RustOutcome>) {
    let Some(o) = o else { return };
    let cfg = format!("{RUST} {cfg}");
    match o.verdict.as_str() {
        "pass" | "violation" => eprintln!(
            "  {cfg}: {}{}, {} distinct states, depth {}, {:.1} s",
            o.verdict,
            o.violated.as_deref().map(|v| format!(" of {v}")).unwrap_or_default(),
            opt(o.unique_states),
            opt(o.max_depth),
            o.seconds.unwrap_or(0.0)
        ),
        "vacuous" => eprintln!("  {cfg}: vacuous: {}", o.unfired.join("; ")),
        _ => eprintln!("  {cfg}: {}: {}", o.verdict, o.message.as_deref().unwrap_or("")),
    }
}

/// `--coverage`: per cfg, each action's steps and the distinct states it
/// reached first, from the Rust checker's exhaustive runs, beside TLC's
/// `-coverage` figures for the same action where TLC ran (by
/// [`super::outcome::TlcActionCoverage::label`]; TLC's actions that the mirror does not
/// name, `Init` among them, follow).
pub fn print_coverage(rows: &[Row]) {
    for r in rows {
        let rust = r.rust.as_ref().and_then(|o| o.coverage.as_deref()).unwrap_or_default();
        let tlc = r.tla.as_ref().and_then(|o| o.coverage.as_deref());
        if rust.is_empty() && tlc.is_none() {
            continue;
        }
        let tlc_only: Vec<_> = tlc
            .unwrap_or_default()
            .iter()
            .filter(|t| !rust.iter().any(|c| c.action == t.label()))
            .map(|t| (t.label(), t))
            .collect();
        let names = rust.iter().map(|c| c.action.len()).chain(tlc_only.iter().map(|(name, _)| name.len()));
        let width = names.chain(["action".len()]).max().unwrap_or(0);
        let of_tlc = |action: &str| {
            let found = tlc?.iter().find(|t| t.label() == action)?;
            Some((found.found.to_string(), found.distinct.to_string()))
        };
        let dash = || ("-".to_string(), "-".to_string());
        println!("\n{} ({})", r.cfg, r.spec);
        println!(
            "  {:<width$}  {:>12}  {:>12}  {:>12}  {:>12}",
            "action", "fired", "distinct", "TLC found", "TLC distinct"
        );
        for c in rust {
            let never = if c.fired == 0 { "  never fired" } else { "" };
            let (found, distinct) = of_tlc(&c.action).unwrap_or_else(dash);
            println!("  {:<width$}  {:>12}  {:>12}  {found:>12}  {distinct:>12}{never}", c.action, c.fired, c.distinct);
        }
        for (name, t) in tlc_only {
            println!("  {name:<width$}  {:>12}  {:>12}  {:>12}  {:>12}", "-", "-", t.found, t.distinct);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::outcome::TlcActionCoverage;
    use super::*;

    fn row(expect: Option<&str>, temporal: &[&str]) -> Row {
        Row {
            spec: "M".into(),
            cfg: "M.cfg".into(),
            expect: expect.map(str::to_string),
            temporal: temporal.iter().map(|s| s.to_string()).collect(),
            no_mirror: None,
            unfired: Vec::new(),
            tlc_judges_actions: false,
            tla: None,
            rust: None,
        }
    }

    fn tla(verdict: &'static str, count: Option<u64>, violated: Option<&str>) -> Option<Outcome> {
        let mut o = Outcome::error(String::new(), 1.0);
        (o.verdict, o.distinct_states, o.violated, o.error) = (verdict, count, violated.map(str::to_string), None);
        Some(o)
    }

    fn rust(verdict: &str, count: Option<u64>, violated: Option<&str>) -> Option<RustOutcome> {
        Some(RustOutcome {
            verdict: verdict.into(),
            unique_states: count,
            violated: violated.map(str::to_string),
            ..RustOutcome::default()
        })
    }

    #[test]
    fn parity_passes_only_equal_counts() {
        let mut r = row(None, &[]);
        (r.tla, r.rust) = (tla("pass", Some(7), None), rust("pass", Some(7), None));
        assert_eq!(r.problem(), None);
        r.rust = rust("pass", Some(8), None);
        assert_eq!(r.problem().as_deref(), Some("the distinct-state counts differ"));
    }

    #[test]
    fn a_count_that_cannot_be_read_fails_the_row() {
        let mut r = row(None, &[]);
        (r.tla, r.rust) = (tla("pass", None, None), rust("pass", Some(7), None));
        assert!(r.problem().is_some_and(|p| p.contains("TLA+ checker passed, but its distinct-state count")));
        (r.tla, r.rust) = (tla("pass", Some(7), None), rust("pass", None, None));
        assert!(r.problem().is_some_and(|p| p.contains("Rust checker passed, but its distinct-state count")));
    }

    /// TLC's coverage of one action (`disjunct`: the line of a disjunct
    /// that calls no one action).
    fn fired(action: &str, disjunct: Option<u32>, found: u64) -> TlcActionCoverage {
        TlcActionCoverage {
            action: action.into(),
            line: 1,
            module: "M".into(),
            disjunct: disjunct.map(|l| [l, 1, l, 9]),
            calls: None,
            distinct: found.min(1),
            found,
        }
    }

    #[test]
    fn a_tla_only_row_fails_on_an_action_that_never_fired_unless_declared() {
        let mut r = row(None, &[]);
        (r.no_mirror, r.tlc_judges_actions) = (Some("liveness under fairness".into()), true);
        r.rust = rust("no model", None, None);
        r.tla = tla("pass", Some(7), None);
        assert_eq!(r.problem(), None, "no coverage (the `tla` checker): nothing to judge");
        let coverage = vec![fired("Write", None, 5), fired("Decline", None, 0), fired("Next", Some(30), 0)];
        if let Some(o) = r.tla.as_mut() {
            o.coverage = Some(coverage);
        }
        let problem = r.problem().unwrap_or_default();
        assert!(problem.contains("Decline never fired") && problem.contains("Next (line 30) never fired"), "{problem}");
        r.unfired = vec!["Decline".into(), "Next (line 30)".into()];
        assert_eq!(r.problem(), None, "both declared");
        r.unfired.push("Write".into());
        assert!(r.problem().is_some_and(|p| p.contains("Write is declared UNFIRED but fired 5 times")));
        r.unfired = vec!["Decline".into(), "Next (line 30)".into(), "Gossip".into()];
        assert!(r.problem().is_some_and(|p| p.contains("UNFIRED Gossip names no action")));
        r.tlc_judges_actions = false;
        assert_eq!(r.problem(), None, "a row with a Rust model is judged by the Rust checker");
    }

    #[test]
    fn a_row_without_a_rust_model_is_marked_and_must_say_why() {
        let mut r = row(None, &[]);
        r.no_mirror = Some("liveness under fairness".into());
        (r.tla, r.rust) = (tla("pass", Some(7), None), rust("no model", None, None));
        assert_eq!((r.problem(), r.parity(), r.no_rust_model()), (None, None, true));
        r.no_mirror = None;
        assert!(r.problem().is_some_and(|p| p.contains("does not say why")), "a mirror that went missing fails");
        r.no_mirror = Some("stale".into());
        r.rust = rust("pass", Some(7), None);
        assert!(r.problem().is_some_and(|p| p.contains("says NO MIRROR")));
    }

    #[test]
    fn a_counterexample_must_be_found_by_every_checker_that_runs_it() {
        let mut r = row(Some("Inv"), &[]);
        (r.tla, r.rust) = (tla("violation", Some(3), Some("Inv")), rust("violation", Some(4), Some("Inv")));
        assert_eq!(r.problem(), None);
        // One passes.
        r.rust = rust("pass", Some(9), None);
        assert!(r.problem().is_some_and(|p| p.contains("expected Inv violated; Rust checker: pass")));
        r.rust = None;
        r.tla = tla("pass", Some(9), None);
        assert!(r.problem().is_some_and(|p| p.contains("expected Inv violated; TLA+ checker: pass")));
        // Something else is violated.
        r.tla = tla("violation", Some(3), Some("Other"));
        assert!(r.problem().is_some_and(|p| p.contains("TLA+ checker: violated: Other")));
        r.tla = tla("violation", Some(3), Some("Inv"));
        r.rust = rust("violation", Some(3), Some("Other"));
        assert!(r.problem().is_some_and(|p| p.contains("Rust checker: violated: Other")));
        // A module only the TLA+ checker has.
        r.no_mirror = Some("liveness under fairness".into());
        r.rust = rust("no model", None, None);
        assert_eq!(r.problem(), None);
        // ...and that checker did not run (`--rust-only`): nobody found it.
        r.tla = None;
        assert!(!r.checked());
        assert!(r.problem().is_some_and(|p| p.contains("no checker ran this cfg")));
    }

    /// TLC 2.19 names no temporal property it finds violated: that is the
    /// expected one only when the cfg has no other.
    #[test]
    fn an_unnamed_temporal_violation_is_the_expected_one_only_when_alone() {
        let mut r = row(Some("Live"), &["Live"]);
        r.tla = tla("violation", Some(3), Some(tlc::UNNAMED_TEMPORAL));
        assert_eq!(r.problem(), None);
        let mut r = row(Some("Live"), &["Live", "Other"]);
        r.tla = tla("violation", Some(3), Some(tlc::UNNAMED_TEMPORAL));
        assert!(r.problem().is_some());
    }
}
