//! Pairs each `.cfg` with its TLA+ module and validates the pair before a
//! checker sees it, so that bad input gets one clear line instead of a
//! checker's stack trace (or, worse, a silently ignored constant: the `tla`
//! checker ignores constants the module does not declare).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use checker::cfg::TlcConfig;

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
    /// How the Rust checker explores it (the cfg's `\* SEARCH` line).
    pub search: Search,
}

/// How the Rust checker explores a cfg, from a comment line of the cfg
/// (`\* SEARCH dfs`, `\* SEARCH simulation`); breadth-first without one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    #[default]
    Bfs,
    /// Exhaustive in less memory (no shortest counterexample).
    Dfs,
    /// Random walks for the time budget of `cargo xtask check`.
    Simulation,
}

impl Search {
    /// The checker's `--search` value.
    pub fn arg(self) -> &'static str {
        match self {
            Search::Bfs => "bfs",
            Search::Dfs => "dfs",
            Search::Simulation => "simulation",
        }
    }

    fn of_cfg(text: &str, cfg_path: &Path) -> Result<Search> {
        let mut found = None;
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("\\*").map(str::trim) else { continue };
            let Some(value) = rest.strip_prefix("SEARCH ") else { continue };
            let search = match value.trim() {
                "bfs" => Search::Bfs,
                "dfs" => Search::Dfs,
                "simulation" => Search::Simulation,
                other => bail!("cfg {} has `SEARCH {other}`: expected bfs, dfs or simulation", cfg_path.display()),
            };
            if found.replace(search).is_some() {
                bail!("cfg {} has more than one SEARCH line", cfg_path.display());
            }
        }
        Ok(found.unwrap_or_default())
    }
}

impl Target {
    /// The cfg's file name, for tables (with the search when it is not
    /// breadth-first).
    pub fn cfg_name(&self) -> String {
        let name = self
            .cfg_path
            .file_name()
            .map_or_else(|| self.cfg_path.display().to_string(), |n| n.to_string_lossy().into_owned());
        match self.search {
            Search::Bfs => name,
            s => format!("{name} ({})", s.arg()),
        }
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

/// Resolves and validates the module of `cfg_path`. Modules are looked up
/// next to the cfg first, then in `tla_dir`.
pub fn resolve(cfg_path: &Path, tla_dir: &Path) -> Result<Target> {
    if !cfg_path.is_file() {
        bail!("cfg {} does not exist", cfg_path.display());
    }
    let cfg = TlcConfig::load(cfg_path).with_context(|| format!("malformed cfg {}", cfg_path.display()))?;
    let text = std::fs::read_to_string(cfg_path).with_context(|| format!("cannot read {}", cfg_path.display()))?;
    let search = Search::of_cfg(&text, cfg_path)?;
    let stem = cfg_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let module = cfg.module.clone().unwrap_or(stem);
    let dirs: Vec<PathBuf> =
        [cfg_path.parent().map(Path::to_path_buf).unwrap_or_default(), tla_dir.to_path_buf()].into();
    let Some(spec) = find_module(&module, &dirs) else {
        if checker::registry::MODULES.contains(&module.as_str()) {
            return Ok(Target { module, spec: None, cfg_path: cfg_path.to_path_buf(), search });
        }
        let how = if cfg.module.is_some() {
            "named by its first-line comment"
        } else {
            "named after the cfg (add a first line `\\* MODULE Name` to pair it with another module)"
        };
        bail!(
            "cfg {} is for module {module} ({how}), but {module}.tla is not in {} and no Rust model has that name",
            cfg_path.display(),
            dirs_list(&dirs)
        );
    };
    let declared = Declarations::of_module(&module, &dirs)?;
    for (name, _) in &cfg.constants {
        if !declared.constants.contains(name) {
            bail!(
                "cfg {} gives unknown constant {name}: module {module} declares {}",
                cfg_path.display(),
                declared.constants.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    for name in &declared.constants {
        if cfg.constant(name).is_err() {
            bail!("cfg {} gives no value to constant {name} of module {module}", cfg_path.display());
        }
    }
    for name in cfg.invariants.iter().chain(&cfg.properties) {
        if !declared.definitions.contains(name) {
            bail!("cfg {} checks {name}, which module {module} does not define", cfg_path.display());
        }
    }
    if search != Search::Bfs {
        bail!(
            "cfg {} asks for SEARCH {}, which only models of the implementation use (the TLA+ checker explores breadth-first)",
            cfg_path.display(),
            search.arg()
        );
    }
    Ok(Target { module, spec: Some(spec), cfg_path: cfg_path.to_path_buf(), search })
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

/// The constants and definitions of a module, including those of the
/// modules it EXTENDS that live beside it (standard modules are skipped).
#[derive(Default)]
struct Declarations {
    constants: BTreeSet<String>,
    definitions: BTreeSet<String>,
}

impl Declarations {
    fn of_module(module: &str, dirs: &[PathBuf]) -> Result<Declarations> {
        let mut out = Declarations::default();
        let mut seen = BTreeSet::new();
        out.collect(module, dirs, &mut seen)?;
        Ok(out)
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
        for line in text.lines() {
            if let Some((lhs, _)) = line.split_once("==")
                && let Some(name) = lhs.split(|c: char| !(c.is_alphanumeric() || c == '_')).find(|w| !w.is_empty())
                && !line.trim_start().starts_with("/\\")
                && !line.trim_start().starts_with("\\/")
            {
                self.definitions.insert(name.to_string());
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

    #[test]
    fn pairs_the_shipped_cfgs() {
        let t = resolve(&tla_dir().join("Handoff.cfg"), &tla_dir()).unwrap();
        assert_eq!(t.module, "Handoff");
        let t = resolve(&tla_dir().join("RemoraClaimActivation.cfg"), &tla_dir()).unwrap();
        assert_eq!(t.module, "RemoraClaimActivation");
    }

    #[test]
    fn bad_cfgs_get_one_clear_line() {
        let dir = std::env::temp_dir().join(format!("xtask-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let err = |p: PathBuf| format!("{:#}", resolve(&p, &tla_dir()).unwrap_err());

        let e = err(write("Nope.cfg", "CONSTANT A = 1\n"));
        assert!(e.contains("is for module Nope") && e.contains("Nope.tla is not in"), "{e}");

        let handoff = std::fs::read_to_string(tla_dir().join("Handoff.cfg")).unwrap();
        let e = err(write("Extra.cfg", &format!("\\* MODULE Handoff\n{handoff}\nCONSTANT Bogus = 3\n")));
        assert!(e.contains("unknown constant Bogus"), "{e}");

        let e = err(write("Missing.cfg", "\\* MODULE Handoff\nCONSTANTS Keys = {k1}\n"));
        assert!(e.contains("gives no value to constant"), "{e}");

        let e = err(write("Broken.cfg", "\\* MODULE Handoff\nCONSTANTS Keys = {k1\n"));
        assert!(e.contains("malformed cfg") && e.contains("line 2"), "{e}");

        let e = err(write("Inv.cfg", &format!("\\* MODULE Handoff\n{handoff}\nINVARIANT NoSuchThing\n")));
        assert!(e.contains("NoSuchThing, which module Handoff does not define"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
