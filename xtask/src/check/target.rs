//! Pairs each `.cfg` with its TLA+ module and validates the pair before a
//! checker sees it, so that bad input gets one clear line instead of a
//! checker's stack trace (or, worse, a silently ignored constant: the `tla`
//! checker ignores constants the module does not declare). The checker
//! reads the cfg (`checker cfg`); this module reads the TLA+ modules.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::checker_bin::{self, CfgInfo, KeepOne};

/// A cfg and the module it configures.
#[derive(Clone, Debug)]
pub struct Target {
    /// Module name, e.g. `Handoff`.
    pub module: String,
    /// Path of `<module>.tla`; `None` for a model of the implementation,
    /// which has no TLA+ module of its own (it is checked against one by
    /// refinement inside the Rust model).
    pub spec: Option<PathBuf>,
    /// Path of the cfg.
    pub cfg_path: PathBuf,
    /// How the Rust checker explores it (the cfg's `\* SEARCH` line):
    /// `"bfs"`, `"dfs"` or `"simulation"`.
    pub search: String,
    /// Some PROPERTY is a liveness property (its definition says `<>` or
    /// `~>`): the `tla` checker must be asked for it (`--check-liveness`);
    /// TLC checks it anyway.
    pub liveness: bool,
    /// The cfg's PROPERTY names that are liveness properties.
    pub temporal: Vec<String>,
    /// The property a counterexample cfg must be found to violate (its
    /// `\* EXPECT violated Name` line).
    pub expect: Option<String>,
    /// Whether the model has reductions to switch off (`--unreduced`), and
    /// why this cfg cannot be explored without them (`\* REDUCTION
    /// needed: why`).
    pub reductions: bool,
    pub reduction_needed: Option<String>,
    /// How deep the unreduced run goes, breadth-first, where the whole
    /// unreduced graph is out of reach (`\* UNREDUCED depth N: why`).
    pub unreduced_depth: Option<u64>,
    /// Whether its run keeping one step's drops belongs to `--deep` or to
    /// no tier, and why (`\* KEEP ONE deep: why`, `\* KEEP ONE never:
    /// why`); without it `--unreduced` runs it wherever the cfg declares an
    /// UNREDUCED depth.
    pub keep_one: Option<KeepOne>,
    /// Why the module has no Rust model (`\* NO MIRROR: why`).
    pub no_mirror: Option<String>,
    /// The actions the cfg declares never fire (`\* UNFIRED Action: why`):
    /// the Rust checker judges them where it has a model, the summary from
    /// TLC's coverage where only TLC checks the cfg.
    pub unfired: Vec<String>,
}

impl Target {
    /// Whether TLC's coverage judges which actions fire (`\* UNFIRED`):
    /// the cfg has no Rust model (which would judge them, with its own
    /// coverage), and is no counterexample (which stops at its violation).
    pub fn tlc_judges_actions(&self) -> bool {
        self.no_mirror.is_some() && self.expect.is_none()
    }

    /// The cfg's file name, for tables (with the search when it is not
    /// breadth-first).
    pub fn cfg_name(&self) -> String {
        let name = self.file_name();
        if self.search == "bfs" { name } else { format!("{name} ({})", self.search) }
    }

    /// The name of its unreduced run's row: a run bounded in depth says it
    /// is complete to that depth only (and searched breadth-first, whatever
    /// the cfg's SEARCH line says).
    pub fn unreduced_name(&self) -> String {
        match self.unreduced_depth {
            Some(depth) => format!("{} (unreduced, bfs to depth {depth} only)", self.file_name()),
            None => format!("{} (unreduced)", self.cfg_name()),
        }
    }

    /// The name of the row of its run that keeps one step's drops (the
    /// whole graph, searched as the cfg says).
    pub fn keep_one_name(&self) -> String {
        format!("{} (one step's drops kept)", self.cfg_name())
    }

    /// Whether `--unreduced` also runs it keeping one step's drops: where
    /// its unreduced run is bounded in depth, in the deep tier or unless
    /// the cfg puts that run there, and unless the cfg says it is out of
    /// reach.
    pub fn has_keep_one_run(&self, deep: bool) -> bool {
        self.unreduced_depth.is_some()
            && match self.keep_one {
                None => true,
                Some(KeepOne::Deep(_)) => deep,
                Some(KeepOne::Never(_)) => false,
            }
    }

    pub fn file_name(&self) -> String {
        self.cfg_path
            .file_name()
            .map_or_else(|| self.cfg_path.display().to_string(), |n| n.to_string_lossy().into_owned())
    }
}

/// Every `*.cfg` directly in `dir`, sorted by name.
pub fn cfgs_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cfg"))
        .collect();
    out.sort();
    Ok(out)
}

/// Resolves and validates the module of `cfg_path`, asking the checker
/// binary `checker` what the cfg says. Modules are looked up next to the
/// cfg first, then in `tla_dir`.
pub fn resolve(checker: &Path, cfg_path: &Path, tla_dir: &Path) -> Result<Target> {
    if !cfg_path.is_file() {
        bail!("cfg {} does not exist", cfg_path.display());
    }
    pair(cfg_path, checker_bin::describe(checker, cfg_path)?, tla_dir)
}

/// Pairs a cfg that says `info` with its module.
fn pair(cfg_path: &Path, info: CfgInfo, tla_dir: &Path) -> Result<Target> {
    let CfgInfo {
        module,
        search,
        constants,
        invariants,
        properties,
        rust_model,
        expect_violated,
        reductions,
        reduction_needed,
        unreduced_depth,
        keep_one,
        no_mirror,
        unfired,
    } = info;
    let target = |spec, temporal: Vec<String>| Target {
        module: module.clone(),
        spec,
        cfg_path: cfg_path.to_path_buf(),
        search: search.clone(),
        liveness: !temporal.is_empty(),
        temporal,
        expect: expect_violated.clone(),
        reductions,
        reduction_needed: reduction_needed.clone(),
        unreduced_depth,
        keep_one: keep_one.clone(),
        no_mirror: no_mirror.clone(),
        unfired: unfired.clone(),
    };
    if let Some(name) = &expect_violated
        && !invariants.contains(name)
        && !properties.contains(name)
    {
        bail!("cfg {} expects {name} violated, but checks no such INVARIANT or PROPERTY", cfg_path.display());
    }
    let dirs: Vec<PathBuf> =
        [cfg_path.parent().map(Path::to_path_buf).unwrap_or_default(), tla_dir.to_path_buf()].into();
    let Some(spec) = find_module(&module, &dirs) else {
        if rust_model {
            return Ok(target(None, Vec::new()));
        }
        bail!(
            "cfg {} is for module {module} (named by its first line `\\* MODULE Name`, else by its file name), \
             but {module}.tla is not in {} and no Rust model has that name",
            cfg_path.display(),
            dirs_list(&dirs)
        );
    };
    let declared = Declarations::of_module(&module, &dirs)?;
    for name in &constants {
        if !declared.constants.contains(name) {
            bail!(
                "cfg {} gives unknown constant {name}: module {module} declares {}",
                cfg_path.display(),
                declared.constants.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    for name in &declared.constants {
        if !constants.contains(name) {
            bail!("cfg {} gives no value to constant {name} of module {module}", cfg_path.display());
        }
    }
    for name in invariants.iter().chain(&properties) {
        if !declared.definitions.contains(name) {
            bail!("cfg {} checks {name}, which module {module} does not define", cfg_path.display());
        }
    }
    if search != "bfs" {
        bail!(
            "cfg {} asks for SEARCH {search}, which only models of the implementation use (the TLA+ checker explores breadth-first)",
            cfg_path.display(),
        );
    }
    let temporal = properties.iter().filter(|p| declared.temporal.contains(*p)).cloned().collect();
    Ok(target(Some(spec), temporal))
}

fn dirs_list(dirs: &[PathBuf]) -> String {
    let mut names: Vec<String> =
        dirs.iter().map(|d| if d.as_os_str().is_empty() { ".".into() } else { d.display().to_string() }).collect();
    names.dedup();
    names.join(" or ")
}

fn find_module(module: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(format!("{module}.tla"))).find(|p| p.is_file())
}

/// What the TLA+ module `module` in `tla_dir` declares, EXTENDS included.
pub fn declarations(module: &str, tla_dir: &Path) -> Result<Declarations> {
    Declarations::of_module(module, &[tla_dir.to_path_buf()])
}

/// The constants, variables and definitions of a module, including those
/// of the modules it EXTENDS that live beside it (standard modules are
/// skipped).
#[derive(Default)]
pub struct Declarations {
    pub constants: BTreeSet<String>,
    /// Those of the extended modules first, each in `VARIABLES` order.
    pub variables: Vec<String>,
    pub definitions: BTreeSet<String>,
    /// Definitions whose body says "eventually" (`<>`) or "leads to" (`~>`),
    /// or uses such a definition (`Live == PeersRecover /\ Converges`).
    pub temporal: BTreeSet<String>,
    /// The words of each definition's body: what it may use.
    uses: std::collections::BTreeMap<String, BTreeSet<String>>,
}

impl Declarations {
    fn of_module(module: &str, dirs: &[PathBuf]) -> Result<Declarations> {
        let mut out = Declarations::default();
        let mut seen = BTreeSet::new();
        out.collect(module, dirs, &mut seen)?;
        out.close_temporal();
        Ok(out)
    }

    /// Makes temporal every definition that uses a temporal one, until
    /// nothing changes (each round adds one, or stops).
    fn close_temporal(&mut self) {
        loop {
            let more: Vec<String> = self
                .uses
                .iter()
                .filter(|(name, words)| {
                    !self.temporal.contains(*name) && words.iter().any(|w| self.temporal.contains(w))
                })
                .map(|(name, _)| name.clone())
                .collect();
            if more.is_empty() {
                return;
            }
            self.temporal.extend(more);
        }
    }

    fn collect(&mut self, module: &str, dirs: &[PathBuf], seen: &mut BTreeSet<String>) -> Result<()> {
        if !seen.insert(module.to_string()) {
            return Ok(());
        }
        let Some(path) = find_module(module, dirs) else {
            return Ok(()); // a standard module such as Naturals
        };
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let text = strip_comments(&text);
        let words: Vec<&str> =
            text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
        // CONSTANT(S) a, b, c: the names up to the next keyword.
        let mut i = 0;
        while i < words.len() {
            if matches!(words[i], "CONSTANT" | "CONSTANTS") {
                i += 1;
                while i < words.len() && !is_keyword(words[i]) && !text_defines(&text, words[i]) {
                    self.constants.insert(words[i].to_string());
                    i += 1;
                }
            } else if matches!(words[i], "VARIABLE" | "VARIABLES") {
                i += 1;
                while i < words.len() && !is_keyword(words[i]) && !text_defines(&text, words[i]) {
                    self.variables.push(words[i].to_string());
                    i += 1;
                }
            } else if words[i] == "EXTENDS" {
                i += 1;
                while i < words.len() && !is_keyword(words[i]) && !text_defines(&text, words[i]) {
                    let extended = words[i].to_string();
                    self.collect(&extended, dirs, seen)?;
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        // A definition starts at the line's start (an indented `==` is a
        // LET's); its body is its first line and the indented lines after it.
        let mut current: Option<String> = None;
        for line in text.lines() {
            if let Some((lhs, _)) = line.split_once("==")
                && !line.starts_with(char::is_whitespace)
                && let Some(name) = lhs.split(|c: char| !(c.is_alphanumeric() || c == '_')).find(|w| !w.is_empty())
                && !line.trim_start().starts_with("/\\")
                && !line.trim_start().starts_with("\\/")
            {
                self.definitions.insert(name.to_string());
                current = Some(name.to_string());
            } else if !line.starts_with(char::is_whitespace) && !line.is_empty() {
                current = None;
            }
            if let Some(name) = &current {
                if line.contains("<>") || line.contains("~>") {
                    self.temporal.insert(name.clone());
                }
                let body = line.split_once("==").map_or(line, |(_, body)| body);
                let words = body.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty());
                self.uses.entry(name.clone()).or_default().extend(words.map(str::to_string));
            }
        }
        Ok(())
    }
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "CONSTANT"
            | "CONSTANTS"
            | "VARIABLE"
            | "VARIABLES"
            | "ASSUME"
            | "ASSUMPTION"
            | "EXTENDS"
            | "INSTANCE"
            | "LOCAL"
            | "THEOREM"
            | "RECURSIVE"
            | "MODULE"
    )
}

/// A word followed by `==` or `(` ... `==` starts a definition.
fn text_defines(text: &str, word: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim_start();
        t.starts_with(word) && t[word.len()..].trim_start().starts_with("==")
    })
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let two = (chars[i], chars.get(i + 1).copied());
        match two {
            ('(', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some(')')) if depth > 0 => {
                depth -= 1;
                i += 2;
            }
            ('\\', Some('*')) if depth == 0 => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            (c, _) => {
                if depth == 0 || c == '\n' {
                    out.push(c);
                }
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tla_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tla")
    }

    /// What `checker cfg` says about tla/Handoff.cfg.
    fn handoff() -> CfgInfo {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
        CfgInfo {
            module: "Handoff".into(),
            search: "bfs".into(),
            constants: names(&["Replicas", "Coordinator", "Keys", "MaxWrites", "MaxEvicts", "NoVal"]),
            invariants: names(&["TypeOK", "EpochVerUnique", "AckedImpliesHeldUnlessDoomed"]),
            properties: names(&["NoServedRegression"]),
            rust_model: true,
            expect_violated: None,
            reductions: false,
            reduction_needed: None,
            unreduced_depth: None,
            keep_one: None,
            no_mirror: None,
            unfired: Vec::new(),
        }
    }

    fn err(cfg: &str, info: CfgInfo) -> String {
        format!("{:#}", pair(&tla_dir().join(cfg), info, &tla_dir()).unwrap_err())
    }

    #[test]
    fn pairs_a_cfg_with_its_module_or_its_rust_model() {
        let t = pair(&tla_dir().join("Handoff.cfg"), handoff(), &tla_dir()).unwrap();
        assert_eq!((t.module.as_str(), t.spec), ("Handoff", Some(tla_dir().join("Handoff.tla"))));

        let models = tla_dir().join("../crates/checker/models");
        let info = CfgInfo { module: "HandoffImpl".into(), search: "dfs".into(), ..handoff() };
        let t = pair(&models.join("HandoffImpl.cfg"), info, &tla_dir()).unwrap();
        assert_eq!((t.cfg_name(), t.module, t.spec), ("HandoffImpl.cfg (dfs)".into(), "HandoffImpl".into(), None));
    }

    #[test]
    fn reads_variables_through_extends() -> Result<()> {
        let variables = |module| declarations(module, &tla_dir()).map(|d| d.variables);
        let remora = variables("RemoraClaimActivation")?;
        assert_eq!(remora.first().map(String::as_str), Some("durableState"));
        assert_eq!(remora.len(), 11);
        let zombie = variables("HandoffZombie")?;
        let acks = variables("HandoffAcks")?;
        assert_eq!(zombie[..acks.len()], acks[..]);
        assert_eq!(zombie[acks.len()..], ["zombies".to_string(), "supersedes".to_string()]);
        let v2 = variables("HandoffV2")?;
        assert!(acks.len() > v2.len() && acks[..v2.len()] == v2[..], "{acks:?} / {v2:?}");
        Ok(())
    }

    #[test]
    fn a_property_that_uses_a_liveness_property_is_one() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("handoff-temporal-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let module = "---- MODULE T ----\nVARIABLE x\nRecovers == x = 0 ~> x = 1\nBoth ==\n    /\\ Recovers\n    /\\ x \\in Nat\n\
                      Safe == [][x' >= x]_x\nLocal == LET Inner == <>(x = 1) IN x = 0\nUsesLocal == Local\n====\n";
        std::fs::write(dir.join("T.tla"), module)?;
        let temporal = declarations("T", &dir)?.temporal;
        std::fs::remove_dir_all(&dir)?;
        let names: Vec<&str> = temporal.iter().map(String::as_str).collect();
        assert_eq!(names, ["Both", "Local", "Recovers", "UsesLocal"], "a LET's name is no definition of its own");
        Ok(())
    }

    #[test]
    fn a_cfg_with_a_liveness_property_asks_for_liveness_checking() {
        let info = |module: &str, properties: &[&str]| CfgInfo {
            module: module.into(),
            rust_model: false,
            properties: properties.iter().map(|s| s.to_string()).collect(),
            constants: handoff().constants.into_iter().chain(["MaxGossip".to_string()]).collect(),
            invariants: vec![],
            ..handoff()
        };
        let live = info("HandoffLiveness", &["NoServedRegression", "PeersRecover"]);
        let t = pair(&tla_dir().join("HandoffLiveness.cfg"), live, &tla_dir()).unwrap();
        assert!(t.liveness);
        assert_eq!(t.temporal, ["PeersRecover"]);
        let safety = info("HandoffLiveness", &["NoServedRegression"]);
        assert!(!pair(&tla_dir().join("HandoffLiveness.cfg"), safety, &tla_dir()).unwrap().liveness);
    }

    #[test]
    fn bad_cfgs_get_one_clear_line() {
        let e = err("Nope.cfg", CfgInfo { module: "Nope".into(), rust_model: false, ..handoff() });
        assert!(e.contains("is for module Nope") && e.contains("Nope.tla is not in"), "{e}");

        let mut extra = handoff();
        extra.constants.push("Bogus".into());
        let e = err("Extra.cfg", extra);
        assert!(e.contains("unknown constant Bogus"), "{e}");

        let e = err("Missing.cfg", CfgInfo { constants: vec!["Keys".into()], ..handoff() });
        assert!(e.contains("gives no value to constant"), "{e}");

        let e = err("Inv.cfg", CfgInfo { invariants: vec!["NoSuchThing".into()], ..handoff() });
        assert!(e.contains("NoSuchThing, which module Handoff does not define"), "{e}");

        let e = err("Dfs.cfg", CfgInfo { search: "dfs".into(), ..handoff() });
        assert!(e.contains("asks for SEARCH dfs"), "{e}");

        let e = err("Expect.cfg", CfgInfo { expect_violated: Some("Nothing".into()), ..handoff() });
        assert!(e.contains("expects Nothing violated, but checks no such"), "{e}");
    }
}
