//! The result of one TLA+ checker run, whichever checker ran.

use serde::Serialize;

/// Which TLA+ checker ran, and why that one.
#[derive(Clone, Debug, Serialize)]
pub struct CheckerUsed {
    /// `"tlc"` or `"tla"`.
    pub name: &'static str,
    /// The version the checker prints (`TLC2 Version ...`, `tla 0.24.11`).
    pub version: String,
    /// The jar or binary that ran, and its SHA-256.
    pub path: String,
    pub sha256: String,
    /// Why this checker (e.g. "TLC unavailable: no java on PATH").
    pub why: String,
}

impl CheckerUsed {
    /// `tlc: TLC2 Version ... (<jar>, SHA-256 <digest>; <why>)`.
    pub fn describe(&self) -> String {
        format!("{}: {} ({}, SHA-256 {}; {})", self.name, self.version, self.path, self.sha256, self.why)
    }
}

/// One step of a counterexample.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TraceStep {
    pub action: Option<String>,
    pub state: Vec<(String, String)>,
}

/// What a TLA+ checker reported for one cfg.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub distinct_states: Option<u64>,
    pub depth: Option<u64>,
    pub seconds: f64,
    /// `"pass"`, `"violation"` or `"error"`.
    pub verdict: &'static str,
    pub violated: Option<String>,
    pub trace: Vec<TraceStep>,
    /// The checker's own error message, when `verdict` is `"error"`.
    pub error: Option<String>,
    /// Per action, as TLC's `-coverage` reports it (only TLC does, and
    /// only when `--coverage` or `--json` asked for it).
    pub coverage: Option<Vec<TlcActionCoverage>>,
}

/// One action of TLC's coverage statistics: `<Name line .. of module M>:
/// distinct:found`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TlcActionCoverage {
    pub action: String,
    /// Where the action starts in its module (TLC names a disjunct of
    /// `Next` that is no operator call `Next`: the line tells them apart).
    pub line: u32,
    /// The module the action is in.
    pub module: String,
    /// The span (line, column, end line, end column) of the disjunct, when
    /// TLC reports one disjunct of the operator rather than an action it
    /// calls (`<UnfencedA line 318, ... of module M (330 8 330 38)>`): it
    /// does so for `\E x \in S : A(x)` where S is a variable's value.
    pub disjunct: Option<[u32; 4]>,
    /// The one action the disjunct calls, read from its module's source
    /// (`tlc::name_disjuncts`).
    pub calls: Option<String>,
    /// Distinct states the action found first.
    pub distinct: u64,
    /// States the action generated (its steps).
    pub found: u64,
}

impl TlcActionCoverage {
    /// The name a cfg's `\* UNFIRED` line gives it: the action, the one
    /// action a disjunct calls, or `Operator (line L)` for a disjunct on
    /// line L that calls none or several.
    pub fn label(&self) -> String {
        match (&self.calls, self.disjunct) {
            (Some(action), _) => action.clone(),
            (None, Some([line, ..])) => format!("{} (line {line})", self.action),
            (None, None) => self.action.clone(),
        }
    }
}

impl Outcome {
    pub fn error(message: String, seconds: f64) -> Outcome {
        Outcome {
            distinct_states: None,
            depth: None,
            seconds,
            verdict: "error",
            violated: None,
            trace: Vec::new(),
            error: Some(message),
            coverage: None,
        }
    }
}

/// Prints a counterexample the way TLC does.
pub fn format_trace(trace: &[TraceStep]) -> String {
    let mut s = String::new();
    for (i, step) in trace.iter().enumerate() {
        let action = step.action.as_deref().unwrap_or("Initial predicate");
        s.push_str(&format!("State {}: <{action}>\n", i + 1));
        for (name, value) in &step.state {
            s.push_str(&format!("/\\ {name} = {value}\n"));
        }
        s.push('\n');
    }
    s
}
