//! A parser for TLC model configuration files (`.cfg`).
//!
//! The `.cfg` is the single source of constants for both checkers: TLC (or
//! the `tla` fallback) reads it, and the stateright mirrors read it through
//! this module. It understands the subset of the TLC grammar that model
//! configurations use: `SPECIFICATION`, `INIT`, `NEXT`, `CONSTANT(S)`
//! (`Name = value`), `INVARIANT(S)`, `PROPERTY`/`PROPERTIES`,
//! `CHECK_DEADLOCK`, line comments `\*` and block comments `(* *)`.
//! Two comments, which TLC ignores, are read too: `\* MODULE Name` on the
//! first line pairs the cfg with a module whose name differs from the
//! cfg's file name, and a line `\* SEARCH bfs|dfs|simulation` says how the
//! Rust checker explores it (breadth-first without one), so that every way
//! of running a cfg explores it the same way. A line `\* UNFIRED Action:
//! why` declares that an action cannot fire at these bounds; an exhaustive
//! run fails any other action that never fires (see `run::Report::judge_coverage`);
//! `\* UNFIRED Action (reduced): why` declares it only for runs with the
//! model's reductions on (a reduction can make a step a self-loop). A line
//! `\* EXPECT violated Name` makes the cfg a counterexample: both checkers
//! must report `Name` violated (`cargo xtask check` fails the cfg if one
//! passes or reports something else). A line `\* REDUCTION needed: why`
//! says that the cfg's model cannot be explored without its reductions;
//! `checker list` reports it beside whether the model has reductions. A line
//! `\* UNREDUCED depth N: why` says that without them the graph is too large
//! to exhaust: an unreduced run explores it breadth-first to depth N, which
//! is complete to that depth only (`checker check --depth-bound`);
//! `\* KEEP ONE deep: why` or `\* KEEP ONE never: why` beside it moves
//! the run keeping one step's drops to the deep tier, or to none.
//! Anything else (`SYMMETRY`, `VIEW`, `CONSTRAINT`, `<-` substitutions) is
//! refused with an error rather than silently ignored, because it would
//! change the state count that the mirrors must reproduce.

use std::fmt;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::search::Search;

/// A constant's value as written in a `.cfg`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// A natural or integer literal.
    Int(i64),
    /// A string literal.
    Str(String),
    /// `TRUE` or `FALSE`.
    Bool(bool),
    /// A model value: an identifier that names only itself.
    ModelValue(String),
    /// A finite set `{a, b, ...}`.
    Set(Vec<Value>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Bool(b) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
            Value::ModelValue(m) => f.write_str(m),
            Value::Set(items) => {
                f.write_str("{")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// Everything that can be wrong with a `.cfg` or with the constants it
/// gives a particular spec.
#[derive(Debug, thiserror::Error)]
pub enum CfgError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("constant {0} is not given a value in the cfg")]
    MissingConstant(String),
    #[error("the cfg gives unknown constant {name}; {module} declares {known}")]
    UnknownConstant { name: String, module: String, known: String },
    #[error("constant {name} must be {expected}, the cfg gives {found}")]
    WrongType { name: String, expected: &'static str, found: String },
    #[error("{module} has no invariant or property named {name}")]
    UnknownDefinition { module: String, name: String },
    #[error("{0}")]
    Unsupported(String),
}

/// A parsed TLC model configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TlcConfig {
    /// The module named by a first-line comment (`\* MODULE Name`), if any.
    pub module: Option<String>,
    /// How the Rust checker explores it (a `\* SEARCH` line; breadth-first
    /// without one).
    pub search: Search,
    /// `SPECIFICATION` formula name.
    pub specification: Option<String>,
    /// `INIT` formula name.
    pub init: Option<String>,
    /// `NEXT` formula name.
    pub next: Option<String>,
    /// `CONSTANT(S)` assignments, in file order.
    pub constants: Vec<(String, Value)>,
    /// `INVARIANT(S)` names, in file order.
    pub invariants: Vec<String>,
    /// `PROPERTY`/`PROPERTIES` names, in file order.
    pub properties: Vec<String>,
    /// `CHECK_DEADLOCK` (TLC's default is `TRUE`).
    pub check_deadlock: bool,
    /// The actions its `\* UNFIRED Action: why` lines declare unable to
    /// fire at these bounds.
    pub unfired: Vec<String>,
    /// Those its `\* UNFIRED Action (reduced): why` lines declare unable to
    /// fire while the model's reductions are on.
    pub unfired_reduced: Vec<String>,
    /// The property its `\* EXPECT violated Name` line says a check must
    /// find violated: a counterexample cfg.
    pub expect_violated: Option<String>,
    /// Why the model cannot be explored without its reductions at these
    /// bounds (a `\* REDUCTION needed: why` line).
    pub reduction_needed: Option<String>,
    /// How deep an unreduced run explores, breadth-first, a graph too large
    /// to exhaust without the reductions (a `\* UNREDUCED depth N: why`
    /// line).
    pub unreduced_depth: Option<usize>,
    /// Whether the run that keeps one step's drops (`Reduction::KeepOne`,
    /// which `--unreduced` adds where the cfg declares an UNREDUCED depth)
    /// belongs to the deep tier or to no tier, and why (a
    /// `\* KEEP ONE deep: why` or `\* KEEP ONE never: why` line).
    pub keep_one: Option<KeepOneLine>,
    /// Why its module has no Rust model (a `\* NO MIRROR: why` line):
    /// `cargo xtask check` fails a cfg without one whose module has none.
    pub no_mirror: Option<String>,
    /// Whether a model of the implementation may use its reductions
    /// (`checker check --no-reduction` turns them off). Not part of the
    /// cfg's text: set by whoever runs it.
    pub reduction: Reduction,
}

/// Whether a model's reductions (state-space savings that rest on an
/// argument, such as dropping messages whose delivery changes nothing) are
/// used. Off, the model keeps everything and checks every such argument on
/// the states it reaches (docs/verification.md 1.8). Mirrors have none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reduction {
    #[default]
    On,
    Off,
    /// On, except that any one step may keep what it would drop, and then
    /// everything that follows from that: every state of the unreduced
    /// model is, for each thing it holds that the reductions would drop,
    /// a state of this one, so checking the argument here checks it over
    /// the whole unreduced graph (docs/verification.md 1.8).
    #[serde(rename = "keep-one")]
    KeepOne,
}

impl Reduction {
    /// Whether the model keeps (some of) what the reductions drop, and so
    /// checks their argument on every step (`ReductionSound`).
    pub fn checks_argument(self) -> bool {
        self != Reduction::On
    }

    /// `KeepOne`'s rule for one step, the same in every model: `keep_one`
    /// drops what the step made droppable unless told to keep it, and says
    /// whether it kept anything new. It keeps when the step is a `Keep`
    /// step (`keep`) of a state that kept nothing yet (`kept`), or a step on
    /// what was kept (`dropped`: what follows from it). Returns the
    /// successor's `kept`, or `None` where a `Keep` step kept nothing (it
    /// is then the plain step, already taken).
    pub fn keeping(keep: bool, kept: bool, dropped: bool, keep_one: impl FnOnce(bool) -> bool) -> Option<bool> {
        let new = keep_one(dropped || (keep && !kept));
        if keep && !new {
            return None;
        }
        Some(kept || new)
    }
}

impl TlcConfig {
    /// Reads and parses a `.cfg` file.
    pub fn load(path: &Path) -> Result<Self, CfgError> {
        let text = std::fs::read_to_string(path).map_err(|source| CfgError::Io { path: path.to_path_buf(), source })?;
        Self::parse(&text)
    }

    /// Parses the text of a `.cfg`.
    pub fn parse(text: &str) -> Result<Self, CfgError> {
        let mut cfg = TlcConfig {
            module: first_line_module(text),
            search: search_line(text)?,
            unfired: unfired_lines(text, false)?,
            unfired_reduced: unfired_lines(text, true)?,
            expect_violated: expect_line(text)?,
            reduction_needed: reason_line(text, "REDUCTION", "needed")?,
            unreduced_depth: unreduced_depth_line(text)?,
            keep_one: keep_one_line(text)?,
            no_mirror: reason_line(text, "NO", "MIRROR")?,
            check_deadlock: true,
            ..TlcConfig::default()
        };
        let tokens = tokenize(text)?;
        let mut p = Parser { tokens, pos: 0 };
        let mut section: Option<Section> = None;
        while let Some(tok) = p.peek().cloned() {
            if let Tok::Ident(word) = &tok.kind
                && let Some(s) = Section::keyword(word)
            {
                p.pos += 1;
                section = Some(s);
                match s {
                    Section::Specification => cfg.specification = Some(p.ident()?),
                    Section::Init => cfg.init = Some(p.ident()?),
                    Section::Next => cfg.next = Some(p.ident()?),
                    Section::CheckDeadlock => match p.value()? {
                        Value::Bool(b) => cfg.check_deadlock = b,
                        other => {
                            return Err(syntax(tok.line, format!("CHECK_DEADLOCK takes TRUE or FALSE, not {other}")));
                        }
                    },
                    Section::Unsupported => {
                        return Err(CfgError::Unsupported(format!(
                            "line {}: {word} is not supported by the Rust checker \
                                 (it would change the state count the mirror must match)",
                            tok.line
                        )));
                    }
                    _ => {}
                }
                continue;
            }
            match section {
                Some(Section::Constants) => {
                    let name = p.ident()?;
                    let eq = p.next_tok()?;
                    match eq.kind {
                        Tok::Eq => {}
                        Tok::Subst => {
                            return Err(CfgError::Unsupported(format!(
                                "line {}: substitution `{name} <- ...` is not supported; \
                                 give the constant a value with `=`",
                                eq.line
                            )));
                        }
                        _ => return Err(syntax(eq.line, format!("expected `=` after {name}"))),
                    }
                    let value = p.value()?;
                    if cfg.constants.iter().any(|(n, _)| *n == name) {
                        return Err(syntax(eq.line, format!("constant {name} is given twice")));
                    }
                    cfg.constants.push((name, value));
                }
                Some(Section::Invariants) => cfg.invariants.push(p.ident()?),
                Some(Section::Properties) => cfg.properties.push(p.ident()?),
                _ => {
                    return Err(syntax(tok.line, format!("unexpected {} outside a section", tok.kind)));
                }
            }
        }
        Ok(cfg)
    }

    /// The module this cfg configures: the one its first-line comment
    /// names, else the one its file name names (`Handoff.cfg`: `Handoff`).
    pub fn module_of(&self, path: &Path) -> String {
        self.module
            .clone()
            .unwrap_or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default())
    }

    /// The value of constant `name`.
    pub fn constant(&self, name: &str) -> Result<&Value, CfgError> {
        self.constants
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| CfgError::MissingConstant(name.to_string()))
    }

    /// Constant `name` as a model value (`NoVal = NoVal`, `Coordinator = r0`).
    pub fn model_value(&self, name: &str) -> Result<String, CfgError> {
        match self.constant(name)? {
            Value::ModelValue(m) => Ok(m.clone()),
            other => Err(wrong_type(name, "a model value", other)),
        }
    }

    /// Constant `name` as a non-empty set of distinct model values, in
    /// file order.
    pub fn model_value_set(&self, name: &str) -> Result<Vec<String>, CfgError> {
        let v = self.constant(name)?;
        let Value::Set(items) = v else {
            return Err(wrong_type(name, "a set of model values", v));
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::ModelValue(m) if !out.contains(m) => out.push(m.clone()),
                Value::ModelValue(m) => {
                    return Err(wrong_type(name, "a set of distinct model values", &Value::ModelValue(m.clone())));
                }
                _ => return Err(wrong_type(name, "a set of model values", v)),
            }
        }
        if out.is_empty() {
            return Err(wrong_type(name, "a non-empty set of model values", v));
        }
        Ok(out)
    }

    /// Constant `name` as a natural number.
    pub fn nat(&self, name: &str) -> Result<u32, CfgError> {
        match self.constant(name)? {
            Value::Int(n) if *n >= 0 && *n <= i64::from(u32::MAX) => Ok(*n as u32),
            other => Err(wrong_type(name, "a natural number", other)),
        }
    }

    /// Constant `name` as `TRUE` or `FALSE`; `default` when the cfg does
    /// not give it (a model's optional constant).
    pub fn boolean_or(&self, name: &str, default: bool) -> Result<bool, CfgError> {
        match self.constants.iter().find(|(n, _)| n == name) {
            None => Ok(default),
            Some((_, Value::Bool(b))) => Ok(*b),
            Some((_, other)) => Err(wrong_type(name, "TRUE or FALSE", other)),
        }
    }

    /// Fails on any constant the module does not declare, and on a
    /// declared one the cfg does not give.
    pub fn expect_constants(&self, module: &str, declared: &[&str]) -> Result<(), CfgError> {
        self.expect_constants_optional(module, declared, &[])
    }

    /// As [`Self::expect_constants`], with constants the cfg may leave out
    /// (`optional`; the model has a default for each).
    pub fn expect_constants_optional(
        &self,
        module: &str,
        declared: &[&str],
        optional: &[&str],
    ) -> Result<(), CfgError> {
        for (name, _) in &self.constants {
            if !declared.contains(&name.as_str()) && !optional.contains(&name.as_str()) {
                return Err(CfgError::UnknownConstant {
                    name: name.clone(),
                    module: module.to_string(),
                    known: declared.iter().chain(optional).copied().collect::<Vec<_>>().join(", "),
                });
            }
        }
        for name in declared {
            self.constant(name)?;
        }
        Ok(())
    }

    /// Fails on any invariant or property the module does not define.
    pub fn expect_definitions(&self, module: &str, invariants: &[&str], properties: &[&str]) -> Result<(), CfgError> {
        let unknown = |name: &String, known: &[&str]| {
            (!known.contains(&name.as_str()))
                .then(|| CfgError::UnknownDefinition { module: module.to_string(), name: name.clone() })
        };
        for name in &self.invariants {
            if let Some(e) = unknown(name, invariants) {
                return Err(e);
            }
        }
        for name in &self.properties {
            if let Some(e) = unknown(name, properties) {
                return Err(e);
            }
        }
        Ok(())
    }
}

fn wrong_type(name: &str, expected: &'static str, found: &Value) -> CfgError {
    CfgError::WrongType { name: name.to_string(), expected, found: found.to_string() }
}

fn syntax(line: usize, message: String) -> CfgError {
    CfgError::Syntax { line, message }
}

/// `\* MODULE Name` (or `\* module: Name`) on the first non-blank line
/// pairs a cfg with a module whose name differs from the cfg's file name.
fn first_line_module(text: &str) -> Option<String> {
    let line = text.lines().find(|l| !l.trim().is_empty())?.trim();
    let rest = line.strip_prefix("\\*")?.trim();
    let lower = rest.to_ascii_lowercase();
    let name = if lower.starts_with("module:") {
        &rest["module:".len()..]
    } else if lower.starts_with("module ") {
        &rest["module ".len()..]
    } else {
        return None;
    };
    let name = name.trim();
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then(|| name.to_string())
}

/// `\* SEARCH bfs|dfs|simulation` on any comment line; breadth-first
/// without one.
fn search_line(text: &str) -> Result<Search, CfgError> {
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let Some(value) = line.trim().strip_prefix("\\*").and_then(|rest| rest.trim().strip_prefix("SEARCH ")) else {
            continue;
        };
        let value = value.trim();
        let search = Search::from_str(value, false)
            .map_err(|_| syntax(i + 1, format!("`SEARCH {value}`: expected bfs, dfs or simulation")))?;
        if found.replace(search).is_some() {
            return Err(syntax(i + 1, "a second SEARCH line".into()));
        }
    }
    Ok(found.unwrap_or_default())
}

/// `\* UNFIRED Action: why` lines: the action's name as the checker's
/// coverage prints it, and the reason, which must be given; with `reduced`,
/// those of `\* UNFIRED Action (reduced): why` lines instead.
fn unfired_lines(text: &str, reduced: bool) -> Result<Vec<String>, CfgError> {
    let mut names = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("\\*").and_then(|rest| rest.trim().strip_prefix("UNFIRED ")) else {
            continue;
        };
        match rest.split_once(':') {
            Some((name, why)) if !name.trim().is_empty() && !why.trim().is_empty() => {
                let name = name.trim();
                match (name.strip_suffix("(reduced)"), reduced) {
                    (Some(action), true) => names.push(action.trim().to_string()),
                    (None, false) => names.push(name.to_string()),
                    _ => {}
                }
            }
            _ => return Err(syntax(i + 1, format!("`UNFIRED {}`: expected `UNFIRED Action: why`", rest.trim()))),
        }
    }
    Ok(names)
}

/// `\* EXPECT violated Name`: the property a counterexample cfg must be
/// found to violate.
fn expect_line(text: &str) -> Result<Option<String>, CfgError> {
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("\\*").and_then(|rest| rest.trim().strip_prefix("EXPECT ")) else {
            continue;
        };
        let name = match rest.split_whitespace().collect::<Vec<_>>()[..] {
            ["violated", name] if name.chars().all(|c| c.is_alphanumeric() || c == '_') => name.to_string(),
            _ => return Err(syntax(i + 1, format!("`EXPECT {}`: expected `EXPECT violated Name`", rest.trim()))),
        };
        if found.replace(name).is_some() {
            return Err(syntax(i + 1, "a second EXPECT line".into()));
        }
    }
    Ok(found)
}

/// A `\* <word> <what>: why` line (`REDUCTION needed: why`, `NO MIRROR:
/// why`): the reason, which must be given, at most once.
fn reason_line(text: &str, word: &str, what: &str) -> Result<Option<String>, CfgError> {
    Ok(reason_line_of(text, word, &[what])?.map(|(_, _, why)| why))
}

/// The same for a line that may say any one of `whats` (`KEEP ONE deep`,
/// `KEEP ONE never`): its line number, which it says (an index into
/// `whats`), and why.
fn reason_line_of(text: &str, word: &str, whats: &[&str]) -> Result<Option<(usize, usize, String)>, CfgError> {
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("\\*").and_then(|rest| rest.trim().strip_prefix(word)) else {
            continue;
        };
        if !rest.starts_with(' ') {
            continue;
        }
        let said = whats.iter().enumerate().find_map(|(k, what)| {
            let why = rest.trim().strip_prefix(what)?.strip_prefix(':')?.trim();
            (!why.is_empty()).then(|| (k, why.to_string()))
        });
        let Some((k, why)) = said else {
            let expected: Vec<String> = whats.iter().map(|what| format!("`{word} {what}: why`")).collect();
            return Err(syntax(i + 1, format!("`{word} {}`: expected {}", rest.trim(), expected.join(" or "))));
        };
        if found.replace((i + 1, k, why)).is_some() {
            return Err(syntax(i + 1, format!("a second {word} line")));
        }
    }
    Ok(found)
}

/// A `\* UNREDUCED depth N: why` line (N at least 2: a bound of one
/// state explores nothing), at most once, and not in a cfg that needs its
/// reductions (`REDUCTION needed`), which has no unreduced run.
fn unreduced_depth_line(text: &str) -> Result<Option<usize>, CfgError> {
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("\\*").and_then(|rest| rest.trim().strip_prefix("UNREDUCED ")) else {
            continue;
        };
        let depth = rest
            .trim()
            .strip_prefix("depth ")
            .and_then(|r| r.split_once(':'))
            .filter(|(_, why)| !why.trim().is_empty())
            .and_then(|(n, _)| n.trim().parse::<usize>().ok())
            .filter(|&n| n >= 2);
        let Some(depth) = depth else {
            return Err(syntax(
                i + 1,
                format!("`UNREDUCED {}`: expected `UNREDUCED depth N: why`, N at least 2", rest.trim()),
            ));
        };
        if found.replace((i + 1, depth)).is_some() {
            return Err(syntax(i + 1, "a second UNREDUCED line".into()));
        }
    }
    if let Some((line, _)) = found
        && reason_line(text, "REDUCTION", "needed")?.is_some()
    {
        let why = "UNREDUCED beside REDUCTION needed: a cfg that needs its reductions has no unreduced run";
        return Err(syntax(line, why.into()));
    }
    Ok(found.map(|(_, depth)| depth))
}

/// Where the run keeping one step's drops goes, when not beside every
/// unreduced run bounded in depth: a `\* KEEP ONE deep: why` or
/// `\* KEEP ONE never: why` line, at most one, only beside an
/// `UNREDUCED depth` line (elsewhere the whole unreduced run covers more).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeepOneLine {
    /// In the deep tier only.
    Deep(String),
    /// Nowhere: out of reach at these bounds (its reduced graph is already
    /// large, and keeping drops multiplies it).
    Never(String),
}

fn keep_one_line(text: &str) -> Result<Option<KeepOneLine>, CfgError> {
    let Some((line, which, why)) = reason_line_of(text, "KEEP", &["ONE deep", "ONE never"])? else {
        return Ok(None);
    };
    if unreduced_depth_line(text)?.is_none() {
        let why = "KEEP ONE without UNREDUCED depth: the whole unreduced run covers what it would";
        return Err(syntax(line, why.into()));
    }
    Ok(Some(if which == 0 { KeepOneLine::Deep(why) } else { KeepOneLine::Never(why) }))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    Specification,
    Init,
    Next,
    Constants,
    Invariants,
    Properties,
    CheckDeadlock,
    Unsupported,
}

impl Section {
    fn keyword(word: &str) -> Option<Section> {
        Some(match word {
            "SPECIFICATION" => Section::Specification,
            "INIT" => Section::Init,
            "NEXT" => Section::Next,
            "CONSTANT" | "CONSTANTS" => Section::Constants,
            "INVARIANT" | "INVARIANTS" => Section::Invariants,
            "PROPERTY" | "PROPERTIES" => Section::Properties,
            "CHECK_DEADLOCK" => Section::CheckDeadlock,
            "SYMMETRY" | "VIEW" | "CONSTRAINT" | "CONSTRAINTS" | "ACTION_CONSTRAINT" | "ACTION_CONSTRAINTS"
            | "POSTCONDITION" | "ALIAS" => Section::Unsupported,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
enum TokKind {
    Ident(String),
    Int(i64),
    Str(String),
    Eq,
    Subst,
    LBrace,
    RBrace,
    Comma,
}
use TokKind as Tok;

impl fmt::Display for TokKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Int(n) => write!(f, "`{n}`"),
            Tok::Str(s) => write!(f, "{s:?}"),
            Tok::Eq => f.write_str("`=`"),
            Tok::Subst => f.write_str("`<-`"),
            Tok::LBrace => f.write_str("`{`"),
            Tok::RBrace => f.write_str("`}`"),
            Tok::Comma => f.write_str("`,`"),
        }
    }
}

#[derive(Clone, Debug)]
struct Token {
    kind: TokKind,
    line: usize,
}

fn tokenize(text: &str) -> Result<Vec<Token>, CfgError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '\\' if next == Some('*') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '(' if next == Some('*') => {
                let start = line;
                let mut depth = 0usize;
                loop {
                    match (chars.get(i), chars.get(i + 1)) {
                        (Some('('), Some('*')) => {
                            depth += 1;
                            i += 2;
                        }
                        (Some('*'), Some(')')) => {
                            depth -= 1;
                            i += 2;
                            if depth == 0 {
                                break;
                            }
                        }
                        (Some('\n'), _) => {
                            line += 1;
                            i += 1;
                        }
                        (Some(_), _) => i += 1,
                        (None, _) => return Err(syntax(start, "unterminated (* comment".into())),
                    }
                }
            }
            '=' => {
                out.push(Token { kind: Tok::Eq, line });
                i += 1;
            }
            '<' if next == Some('-') => {
                out.push(Token { kind: Tok::Subst, line });
                i += 2;
            }
            '{' => {
                out.push(Token { kind: Tok::LBrace, line });
                i += 1;
            }
            '}' => {
                out.push(Token { kind: Tok::RBrace, line });
                i += 1;
            }
            ',' => {
                out.push(Token { kind: Tok::Comma, line });
                i += 1;
            }
            '"' => {
                let start = line;
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        Some('"') => break,
                        Some('\n') | None => {
                            return Err(syntax(start, "unterminated string literal".into()));
                        }
                        Some(ch) => s.push(*ch),
                    }
                    i += 1;
                }
                i += 1;
                out.push(Token { kind: Tok::Str(s), line });
            }
            c if c.is_ascii_digit() || (c == '-' && next.is_some_and(|d| d.is_ascii_digit())) => {
                let start = i;
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
                let digits: String = chars[start..i].iter().collect();
                let n = digits.parse().map_err(|_| syntax(line, format!("number {digits} is out of range")))?;
                out.push(Token { kind: Tok::Int(n), line });
            }
            c if c.is_alphanumeric() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push(Token { kind: Tok::Ident(chars[start..i].iter().collect()), line });
            }
            other => return Err(syntax(line, format!("unexpected character {other:?}"))),
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn last_line(&self) -> usize {
        self.tokens.last().map_or(1, |t| t.line)
    }

    fn next_tok(&mut self) -> Result<Token, CfgError> {
        let tok = self
            .tokens
            .get(self.pos)
            .cloned()
            .ok_or_else(|| syntax(self.last_line(), "unexpected end of file".into()))?;
        self.pos += 1;
        Ok(tok)
    }

    fn ident(&mut self) -> Result<String, CfgError> {
        let tok = self.next_tok()?;
        match tok.kind {
            Tok::Ident(s) if Section::keyword(&s).is_none() => Ok(s),
            other => Err(syntax(tok.line, format!("expected a name, found {other}"))),
        }
    }

    fn value(&mut self) -> Result<Value, CfgError> {
        let tok = self.next_tok()?;
        Ok(match tok.kind {
            Tok::Int(n) => Value::Int(n),
            Tok::Str(s) => Value::Str(s),
            Tok::Ident(s) if s == "TRUE" => Value::Bool(true),
            Tok::Ident(s) if s == "FALSE" => Value::Bool(false),
            Tok::Ident(s) if Section::keyword(&s).is_none() => Value::ModelValue(s),
            Tok::LBrace => {
                let mut items = Vec::new();
                if matches!(self.peek().map(|t| &t.kind), Some(Tok::RBrace)) {
                    self.pos += 1;
                    return Ok(Value::Set(items));
                }
                loop {
                    let item = self.value()?;
                    if !items.contains(&item) {
                        items.push(item);
                    }
                    let sep = self.next_tok()?;
                    match sep.kind {
                        Tok::Comma => {}
                        Tok::RBrace => break,
                        other => {
                            return Err(syntax(sep.line, format!("expected `,` or `}}`, found {other}")));
                        }
                    }
                }
                Value::Set(items)
            }
            other => return Err(syntax(tok.line, format!("expected a value, found {other}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_handoff_cfg() {
        let cfg = TlcConfig::parse(include_str!("../../../tla/Handoff.cfg")).unwrap();
        assert_eq!(cfg.specification.as_deref(), Some("Spec"));
        assert_eq!(cfg.model_value_set("Replicas").unwrap(), ["r0", "r1", "r2"]);
        assert_eq!(cfg.model_value("Coordinator").unwrap(), "r0");
        assert_eq!(cfg.nat("MaxEvicts").unwrap(), 2);
        assert_eq!(cfg.invariants.len(), 5);
        assert_eq!(cfg.properties, ["NoServedRegression"]);
        assert!(!cfg.check_deadlock);
        assert_eq!(cfg.module, None);
    }

    #[test]
    fn parses_the_remora_cfg() {
        let cfg = TlcConfig::parse(include_str!("../../../tla/RemoraClaimActivation.cfg")).unwrap();
        assert_eq!(cfg.model_value_set("Fences").unwrap(), ["f1", "f2"]);
        assert_eq!(cfg.properties.len(), 2);
    }

    #[test]
    fn first_line_comment_names_the_module() {
        let cfg = TlcConfig::parse("\\* MODULE Handoff\nCONSTANT MaxEvicts = 3\n").unwrap();
        assert_eq!(cfg.module.as_deref(), Some("Handoff"));
        assert_eq!(cfg.nat("MaxEvicts").unwrap(), 3);
    }

    #[test]
    fn a_search_line_says_how_to_explore() {
        assert_eq!(TlcConfig::parse("CONSTANT A = 1\n").unwrap().search, Search::Bfs);
        let cfg =
            TlcConfig::parse("\\* MODULE HandoffImpl\n\\* bounds\n\\* SEARCH simulation\nCONSTANT A = 1\n").unwrap();
        assert_eq!((cfg.module.as_deref(), cfg.search), (Some("HandoffImpl"), Search::Simulation));
        let err = TlcConfig::parse("\\* SEARCH sideways\n").unwrap_err();
        assert_eq!(err.to_string(), "line 1: `SEARCH sideways`: expected bfs, dfs or simulation");
        let err = TlcConfig::parse("\\* SEARCH dfs\n\\* SEARCH bfs\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: a second SEARCH line");
        let cfg =
            TlcConfig::parse("\\* UNFIRED Timer(Gossip): MaxGossip = 0\n\\* UNFIRED Evict: no evictions\n").unwrap();
        assert_eq!(cfg.unfired, ["Timer(Gossip)", "Evict"]);
        let err = TlcConfig::parse("\\* UNFIRED Evict\n").unwrap_err();
        assert_eq!(err.to_string(), "line 1: `UNFIRED Evict`: expected `UNFIRED Action: why`");
        let cfg =
            TlcConfig::parse("\\* UNFIRED Evict: none\n\\* UNFIRED Timer(Heartbeat) (reduced): a self-loop\n").unwrap();
        assert_eq!(
            (cfg.unfired, cfg.unfired_reduced),
            (vec!["Evict".to_string()], vec!["Timer(Heartbeat)".to_string()])
        );
    }

    #[test]
    fn a_reduction_line_says_why() {
        assert_eq!(TlcConfig::parse("CONSTANT A = 1\n").unwrap().reduction_needed, None);
        let cfg = TlcConfig::parse("\\* REDUCTION needed: 10 GB unreduced\n").unwrap();
        assert_eq!(cfg.reduction_needed.as_deref(), Some("10 GB unreduced"));
        let err = TlcConfig::parse("\\* REDUCTION needed\n").unwrap_err();
        assert_eq!(err.to_string(), "line 1: `REDUCTION needed`: expected `REDUCTION needed: why`");
        let cfg = TlcConfig::parse("\\* NO MIRROR: liveness under fairness\n").unwrap();
        assert_eq!(cfg.no_mirror.as_deref(), Some("liveness under fairness"));
        let err = TlcConfig::parse("\\* NO MIRROR\n").unwrap_err();
        assert_eq!(err.to_string(), "line 1: `NO MIRROR`: expected `NO MIRROR: why`");
    }

    #[test]
    fn an_unreduced_depth_line_gives_a_bound_and_says_why() {
        assert_eq!(TlcConfig::parse("CONSTANT A = 1\n").unwrap().unreduced_depth, None);
        let cfg = TlcConfig::parse("\\* UNREDUCED depth 18: 9 GB of frontier\n").unwrap();
        assert_eq!(cfg.unreduced_depth, Some(18));
        for bad in ["\\* UNREDUCED depth 18\n", "\\* UNREDUCED depth 18:\n", "\\* UNREDUCED depth 1: too small\n"] {
            let err = TlcConfig::parse(bad).unwrap_err().to_string();
            assert!(err.contains("expected `UNREDUCED depth N: why`"), "{bad}: {err}");
        }
        let both = TlcConfig::parse("\\* UNREDUCED depth 9: big\n\\* REDUCTION needed: bigger\n").unwrap_err();
        assert!(both.to_string().contains("has no unreduced run"), "{both}");
    }

    #[test]
    fn keeping_keeps_one_step_s_drops_and_what_follows_from_them() {
        let told = |keep, kept, dropped| {
            let mut asked = None;
            let next = Reduction::keeping(keep, kept, dropped, |new| {
                asked = Some(new);
                new
            });
            (asked, next)
        };
        assert_eq!(told(false, false, false), (Some(false), Some(false)), "a plain step keeps nothing");
        assert_eq!(told(true, false, false), (Some(true), Some(true)), "the first Keep step keeps");
        assert_eq!(told(true, true, false), (Some(false), None), "a second kept step is none");
        assert_eq!(told(false, true, true), (Some(true), Some(true)), "a step on what was kept keeps what follows");
        assert_eq!(told(false, true, false), (Some(false), Some(true)), "once kept, always kept");
        assert_eq!(
            Reduction::keeping(true, false, false, |_| false),
            None,
            "a Keep step that kept nothing is the plain one"
        );
    }

    #[test]
    fn a_keep_one_line_puts_that_run_in_the_deep_tier_or_nowhere_beside_a_depth() {
        let cfg = TlcConfig::parse("\\* UNREDUCED depth 9: big\n\\* KEEP ONE deep: 400 s\n").unwrap();
        assert_eq!(cfg.keep_one, Some(KeepOneLine::Deep("400 s".into())));
        let cfg = TlcConfig::parse("\\* UNREDUCED depth 9: big\n\\* KEEP ONE never: 50M states\n").unwrap();
        assert_eq!(cfg.keep_one, Some(KeepOneLine::Never("50M states".into())));
        assert_eq!(TlcConfig::parse("\\* UNREDUCED depth 9: big\n").unwrap().keep_one, None);
        let alone = TlcConfig::parse("\\* KEEP ONE deep: 400 s\n").unwrap_err();
        assert!(alone.to_string().contains("without UNREDUCED depth"), "{alone}");
        let never_alone = TlcConfig::parse("\\* KEEP ONE never: big\n").unwrap_err();
        assert!(never_alone.to_string().contains("without UNREDUCED depth"), "{never_alone}");
        for bad in ["\\* KEEP ONE: 400 s", "\\* KEEP ONE deep:", "\\* KEEP ONE soon: 400 s"] {
            let err = TlcConfig::parse(&format!("\\* UNREDUCED depth 9: big\n{bad}\n")).unwrap_err();
            assert!(err.to_string().contains("expected `KEEP ONE deep: why` or `KEEP ONE never: why`"), "{bad}: {err}");
        }
        let two = "\\* UNREDUCED depth 9: big\n\\* KEEP ONE deep: a\n\\* KEEP ONE never: b\n";
        assert!(TlcConfig::parse(two).unwrap_err().to_string().contains("a second KEEP line"));
    }

    #[test]
    fn an_expect_line_makes_a_counterexample() {
        assert_eq!(TlcConfig::parse("CONSTANT A = 1\n").unwrap().expect_violated, None);
        let cfg = TlcConfig::parse("\\* EXPECT violated EpochVerUnique\nCONSTANT A = 1\n").unwrap();
        assert_eq!(cfg.expect_violated.as_deref(), Some("EpochVerUnique"));
        let err = TlcConfig::parse("\\* EXPECT EpochVerUnique\n").unwrap_err();
        assert_eq!(err.to_string(), "line 1: `EXPECT EpochVerUnique`: expected `EXPECT violated Name`");
        let err = TlcConfig::parse("\\* EXPECT violated A\n\\* EXPECT violated B\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: a second EXPECT line");
    }

    #[test]
    fn a_cfg_names_its_module_or_is_named_after_it() {
        let path = Path::new("tla/RemoraClaimActivationTwoClaims.cfg");
        assert_eq!(TlcConfig::parse("\\* MODULE Remora\n").unwrap().module_of(path), "Remora");
        assert_eq!(TlcConfig::parse("CONSTANT A = 1\n").unwrap().module_of(path), "RemoraClaimActivationTwoClaims");
    }

    #[test]
    fn comments_and_nested_sets() {
        let cfg =
            TlcConfig::parse("(* a (* nested *) comment *)\nCONSTANTS S = {a, {1, 2}, \"x\"} \\* tail\n").unwrap();
        assert_eq!(cfg.constant("S").unwrap().to_string(), "{a, {1, 2}, \"x\"}");
    }

    #[test]
    fn errors_name_the_line() {
        let err = TlcConfig::parse("CONSTANTS\n  A = {a, b\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: unexpected end of file");
        let err = TlcConfig::parse("CONSTANTS\n  A b\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: expected `=` after A");
        let err = TlcConfig::parse("SYMMETRY Perms\n").unwrap_err();
        assert!(err.to_string().contains("SYMMETRY is not supported"));
    }

    #[test]
    fn constant_checks() {
        let cfg = TlcConfig::parse("CONSTANTS A = 1 B = {x}\n").unwrap();
        assert!(matches!(cfg.expect_constants("M", &["A"]), Err(CfgError::UnknownConstant { .. })));
        assert!(matches!(cfg.expect_constants("M", &["A", "B", "C"]), Err(CfgError::MissingConstant(_))));
        assert!(matches!(cfg.nat("B"), Err(CfgError::WrongType { .. })));
        assert!(matches!(cfg.model_value_set("A"), Err(CfgError::WrongType { .. })));
    }
}
