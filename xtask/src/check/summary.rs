//! The summary of `cargo xtask check`: one row per cfg, printed as a table
//! or as JSON, and the overall verdict.

use serde::Serialize;

use super::outcome::{CheckerUsed, Outcome, format_trace};
use super::rust_stage::RustOutcome;
use super::target::Target;
use crate::workspace_tests::TestsOutcome;

/// One cfg's results across the stages.
#[derive(Debug, Serialize)]
pub struct Row {
    pub spec: String,
    pub cfg: String,
    pub tla: Option<Outcome>,
    pub rust: Option<RustOutcome>,
}

impl Row {
    pub fn new(t: &Target) -> Row {
        Row { spec: t.module.clone(), cfg: t.cfg_name(), tla: None, rust: None }
    }

    /// `Some(true)` when both checkers counted and agree, `Some(false)`
    /// when they disagree, `None` when there is nothing to compare.
    pub fn parity(&self) -> Option<bool> {
        let tla = self.tla.as_ref()?.distinct_states?;
        let rust = self.rust.as_ref()?.unique_states?;
        let both_pass = self.tla.as_ref()?.verdict == "pass" && self.rust.as_ref()?.verdict == "pass";
        both_pass.then_some(tla == rust)
    }

    fn ok(&self) -> bool {
        let tla_ok = self.tla.as_ref().is_none_or(|o| o.verdict == "pass");
        let rust_ok = self.rust.as_ref().is_none_or(|r| r.verdict == "pass" || r.verdict == "no model");
        tla_ok && rust_ok && self.parity() != Some(false)
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
                Some(o) if o.verdict == "no model" => "TLA+ only".into(),
                Some(o) => o.verdict.clone(),
                None => "-".into(),
            };
            let parity = match r.parity() {
                Some(true) => "equal".into(),
                Some(false) => "MISMATCH".into(),
                None => "-".into(),
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
        v => v.to_string(),
    }
}

/// One line per cfg as the TLA+ stage finishes it, with the
/// counterexample or the error when there is one.
pub fn print_tla_line(t: &Target, o: &Outcome) {
    eprintln!(
        "  {}: {}, {} distinct states, depth {}, {:.1} s",
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
    let Some(o) = o else { return };
    match o.verdict.as_str() {
        "pass" | "violation" => eprintln!(
            "  {}: {}{}, {} distinct states, depth {}, {:.1} s",
            t.cfg_name(),
            o.verdict,
            o.violated.as_deref().map(|v| format!(" of {v}")).unwrap_or_default(),
            opt(o.unique_states),
            opt(o.max_depth),
            o.seconds.unwrap_or(0.0)
        ),
        "vacuous" => eprintln!("  {}: vacuous: {}", t.cfg_name(), o.unfired.join("; ")),
        _ => eprintln!("  {}: {}: {}", t.cfg_name(), o.verdict, o.message.as_deref().unwrap_or("")),
    }
}

/// `--coverage`: per cfg, each action's steps and the distinct states it
/// reached first, from the Rust checker's exhaustive runs, beside TLC's
/// `-coverage` figures for the same action where TLC ran (TLC's actions
/// that the mirror does not name, `Init` among them, follow).
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
            .filter(|t| !rust.iter().any(|c| c.action == t.action))
            .map(|t| (format!("{} (line {})", t.action, t.line), t))
            .collect();
        let names = rust.iter().map(|c| c.action.len()).chain(tlc_only.iter().map(|(name, _)| name.len()));
        let width = names.chain(["action".len()]).max().unwrap_or(0);
        let of_tlc = |action: &str| {
            let found = tlc?.iter().find(|t| t.action == action)?;
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
