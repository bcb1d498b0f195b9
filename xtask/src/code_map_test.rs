//! docs/ARCHITECTURE.md's code map stays honest (rust-analyzer keeps its
//! own the same way): every source file and module directory of the
//! workspace is named in it, and every path it names exists.
//!
//! What counts, both ways, is the text between backticks:
//!
//! - A file or directory is *mentioned* by a span that is its path from
//!   the repository's root, or the tail of that path from a `/` on
//!   (`replica/lifecycle.rs`, `tokens.rs`, `namespaces/`), as long as that
//!   tail names only one file (one directory) of the workspace: `state.rs`
//!   names none, since ten files have that name; `replica/state.rs` names
//!   one. A directory's span may end in `/` or not, but must contain a `/`.
//! - Needed: every `.rs` file under `crates/*/src`, `crates/*/tests` and
//!   `xtask/src`, and every directory below those roots holding one. A
//!   directory module's `mod.rs` (and a test binary's `main.rs` below a
//!   root) is covered by its directory; a crate's `src/lib.rs` or
//!   `src/main.rs` by the crate's directory (`crates/checker`, `xtask/`).
//! - Every span that looks like a path (it has a `/`, or ends in a file
//!   extension of this repository) and is no URL, pattern or command (no
//!   space, `{`, `<`, `*`, `$`, `~`, `::`, no leading `/`) must be a file or
//!   directory of the repository, by its path or a tail of it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Where the sources are: each `*` one directory of `crates/`.
const SOURCE_ROOTS: [&str; 3] = ["crates/*/src", "crates/*/tests", "xtask/src"];

/// The extensions that make a span without a `/` a file name.
const EXTENSIONS: [&str; 9] = [".rs", ".md", ".tla", ".cfg", ".toml", ".json", ".mjs", ".snap", ".png"];

/// Directories never walked for the existence check (built, installed or
/// hidden).
const SKIP_DIRS: [&str; 2] = ["target", "node_modules"];

/// The spans between backticks of a Markdown text (code blocks' fences
/// included as text: a fenced block's lines are not spans).
fn spans(doc: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let Some(span) = parts.next() {
            if parts.next().is_none() {
                break; // an unclosed backtick
            }
            out.push(span);
        }
    }
    out
}

/// Whether `span` names `path` (a path from the root, `/`-separated): the
/// path itself, or its tail from a `/` on.
fn names(span: &str, path: &str) -> bool {
    let span = span.trim_end_matches('/');
    !span.is_empty() && (path == span || path.ends_with(&format!("/{span}")))
}

/// What a map must mention: every source file that is not covered by its
/// directory, and every directory. Given the `.rs` files (paths from the
/// root, below the source roots), returns (files, directories), where a
/// covered file maps to the directory that covers it.
fn needed(rs_files: &[String], roots: &[String]) -> (BTreeMap<String, Option<String>>, BTreeSet<String>) {
    let mut files = BTreeMap::new();
    let mut dirs = BTreeSet::new();
    for file in rs_files {
        let Some(root) = roots.iter().find(|r| file.starts_with(&format!("{r}/"))) else { continue };
        let (dir, name) = file.rsplit_once('/').unwrap_or(("", file));
        let at_root = dir == root;
        if !at_root {
            // every directory from the root down to this one
            let mut d = dir;
            while d != root && d.len() > root.len() {
                dirs.insert(d.to_string());
                d = d.rsplit_once('/').map_or(root.as_str(), |(p, _)| p);
            }
        }
        let covered_by = match (at_root, name) {
            (false, "mod.rs" | "main.rs") => Some(dir.to_string()),
            (true, "lib.rs" | "main.rs") if root.ends_with("/src") => Some(root.trim_end_matches("/src").to_string()),
            _ => None,
        };
        files.insert(file.clone(), covered_by);
    }
    (files, dirs)
}

/// The source files and directories the map does not mention, each with
/// what the map should say. `rs_files` are paths from the root.
fn unmentioned(doc: &str, rs_files: &[String], roots: &[String]) -> Vec<String> {
    let (files, dirs) = needed(rs_files, roots);
    let spans = spans(doc);
    // A span mentions a candidate only if it names exactly one of its kind.
    let named = |candidates: &mut dyn Iterator<Item = &String>, is_dir: bool| -> BTreeSet<String> {
        let candidates: Vec<&String> = candidates.collect();
        let mut out = BTreeSet::new();
        for span in &spans {
            if is_dir && !span.contains('/') {
                continue;
            }
            let hits: Vec<&&String> = candidates.iter().filter(|c| names(span, c)).collect();
            if let [one] = hits.as_slice() {
                out.insert((**one).clone());
            }
        }
        out
    };
    let named_files = named(&mut files.keys(), false);
    // A crate's directory is not below a source root, so it is a candidate
    // of its own.
    let crate_dirs: BTreeSet<String> = files.values().flatten().filter(|d| !dirs.contains(*d)).cloned().collect();
    let named_dirs = named(&mut dirs.iter().chain(crate_dirs.iter()), true);
    let mut missing = Vec::new();
    for dir in &dirs {
        if !named_dirs.contains(dir) {
            missing.push(format!("{dir}/ (a module directory)"));
        }
    }
    for (file, covered_by) in &files {
        let ok = match covered_by {
            Some(dir) => named_dirs.contains(dir),
            None => named_files.contains(file),
        };
        if !ok {
            match covered_by {
                Some(dir) => missing.push(format!("{file} (covered by naming `{dir}/`)")),
                None => missing.push(file.clone()),
            }
        }
    }
    missing
}

/// Whether a span is meant as a path of this repository.
fn looks_like_path(span: &str) -> bool {
    let plain = !span.is_empty()
        && !span.starts_with('/')
        && !span.contains("::")
        && !span.chars().any(|c| c.is_whitespace() || "{}<>*$~|=,()[]".contains(c));
    plain && (span.contains('/') || EXTENSIONS.iter().any(|e| span.ends_with(e) && span.len() > e.len()))
}

/// The spans that look like paths and name nothing in `existing` (every
/// file and directory of the repository, paths from the root).
fn dangling<'a>(doc: &'a str, existing: &BTreeSet<String>) -> Vec<&'a str> {
    let mut out: Vec<&str> = spans(doc)
        .into_iter()
        .filter(|s| looks_like_path(s))
        .filter(|s| !existing.iter().any(|p| names(s, p)))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Every file and directory below `dir` (paths from `root`), hidden and
/// built ones left out.
fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if (name.starts_with('.') && name != ".ci") || SKIP_DIRS.contains(&name.as_str()) {
            continue;
        }
        let Ok(rel) = path.strip_prefix(root) else { continue };
        out.insert(rel.to_string_lossy().replace('\\', "/"));
        if path.is_dir() {
            walk(root, &path, out);
        }
    }
}

/// The source roots that exist, `crates/*` expanded.
fn source_roots(root: &Path) -> Vec<String> {
    let mut crates: Vec<String> = fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    let mut roots = Vec::new();
    for pattern in SOURCE_ROOTS {
        if pattern.contains('*') {
            roots.extend(crates.iter().map(|c| pattern.replace('*', c)));
        } else {
            roots.push(pattern.to_string());
        }
    }
    roots.retain(|r| root.join(r).is_dir());
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask has a parent").to_path_buf()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn architecture_md_names_every_module_and_only_real_paths() {
        let root = root();
        let doc = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
        let mut existing = BTreeSet::new();
        walk(&root, &root, &mut existing);
        let roots = source_roots(&root);
        let rs: Vec<String> = existing
            .iter()
            .filter(|p| p.ends_with(".rs") && roots.iter().any(|r| p.starts_with(&format!("{r}/"))))
            .cloned()
            .collect();
        assert!(rs.len() > 100, "the walk found only {} source files under {roots:?}", rs.len());
        let missing = unmentioned(&doc, &rs, &roots);
        let dangling = dangling(&doc, &existing);
        assert!(
            missing.is_empty() && dangling.is_empty(),
            "docs/ARCHITECTURE.md is out of date.\n\nNot in its code map (name each in backticks, by its \
             path or a tail of it that names only it):\n  {}\n\nNamed in backticks but not in the \
             repository:\n  {}\n",
            missing.join("\n  "),
            dangling.join("\n  "),
        );
    }

    const ROOTS: [&str; 2] = ["crates/a/src", "crates/a/tests"];

    #[test]
    fn an_unmentioned_file_or_directory_is_reported() {
        let files = strings(&[
            "crates/a/src/lib.rs",
            "crates/a/src/used.rs",
            "crates/a/src/forgotten.rs",
            "crates/a/src/net/mod.rs",
            "crates/a/src/net/socket.rs",
            "crates/a/tests/it/main.rs",
        ]);
        let doc = "`crates/a`: the crate. `used.rs` is used; `net/socket.rs` talks.";
        let missing = unmentioned(doc, &files, &strings(&ROOTS));
        assert_eq!(
            missing,
            [
                "crates/a/src/net/ (a module directory)",
                "crates/a/tests/it/ (a module directory)",
                "crates/a/src/forgotten.rs",
                "crates/a/src/net/mod.rs (covered by naming `crates/a/src/net/`)",
                "crates/a/tests/it/main.rs (covered by naming `crates/a/tests/it/`)",
            ]
        );
        let doc = format!("{doc} `forgotten.rs`, `net/`, `tests/it/`.");
        assert!(unmentioned(&doc, &files, &strings(&ROOTS)).is_empty());
    }

    #[test]
    fn a_name_shared_by_two_files_mentions_neither() {
        let files = strings(&["crates/a/src/x/state.rs", "crates/a/src/y/state.rs", "crates/a/src/lib.rs"]);
        let doc = "`crates/a/`, `x/`, `y/`: each has a `state.rs`.";
        let missing = unmentioned(doc, &files, &strings(&ROOTS));
        assert_eq!(missing, ["crates/a/src/x/state.rs", "crates/a/src/y/state.rs"]);
        let doc = format!("{doc} `x/state.rs` and `crates/a/src/y/state.rs`.");
        assert!(unmentioned(&doc, &files, &strings(&ROOTS)).is_empty());
    }

    #[test]
    fn a_path_that_does_not_exist_is_reported() {
        let existing: BTreeSet<String> =
            strings(&["docs", "docs/handoff.md", "crates", "crates/a", "crates/a/src", "crates/a/src/lib.rs"])
                .into_iter()
                .collect();
        let doc = "`docs/handoff.md`, `handoff.md`, `a/src/`, `crates/a/src/gone.rs`, `gone/`, `old.tla`;\n\
                   not paths: `/v1/{ns}/kv/{key}`, `GET /link`, `durable::apply`, `Input`, `~/.cache/x/`.\n\
                   ```\nnot/a/span.rs\n```";
        assert_eq!(dangling(doc, &existing), ["crates/a/src/gone.rs", "gone/", "old.tla"]);
    }
}
