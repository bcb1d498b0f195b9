//! No module of any crate of the workspace imports a module that imports it
//! back: the modules form layers (e.g. the protocol's `handoff`: ids →
//! record → memory → message → interface → node → roles → replica →
//! driver), which is what lets a reader start at the bottom. Every crate's
//! `src/` is walked (`crates/*/src`, `xtask/src`); a crate whose `src/` has
//! both `lib.rs` and `main.rs` is read from `lib.rs` (the binary is a crate
//! of its own that reaches the library only by its name).
//!
//! An edge A → B is
//!
//! - a `crate::`/`super::`/`self::` path in A's non-test code that names
//!   module B (walking down as far as the path names modules; for
//!   `super::item`, the parent itself; a macro's `$crate::` is the
//!   expanding module's, not A's), or
//! - a path in A whose first segment is a child module B of A, named
//!   without `self::` (`pub use child::Item;`, `child::f()`).
//!
//! A parent's `mod child;` is not an edge. Test code is left out: a
//! `#[cfg(test)]` module (`mod x;` or `mod x { .. }`, of any visibility),
//! inline or in its own files, and comment lines. An inline module ends at
//! the first line that is its opening line's indentation and `}` (as
//! rustfmt writes it).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module's path below its crate's root (`[]` is the root).
type Module = Vec<String>;

/// For each module A, the modules it imports, each with the first line of
/// A's file that does.
type Graph = BTreeMap<Module, BTreeMap<Module, usize>>;

/// Where the crates' sources are: each `*` one directory of `crates/`.
const CRATE_SOURCES: [&str; 2] = ["crates/*/src", "xtask/src"];

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `line`'s module name if it declares a module (`mod x;`, `pub(crate) mod
/// x {`, ...).
fn declared_module(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let line = match line.strip_prefix("pub") {
        Some(rest) if rest.starts_with('(') => rest.split_once(')')?.1.trim_start(),
        Some(rest) if rest.starts_with(' ') => rest.trim_start(),
        _ => line,
    };
    let name = line.strip_prefix("mod ")?.split(|c: char| !is_ident(c)).next()?;
    (!name.is_empty()).then_some(name)
}

/// The `.rs` files below `dir`, as (module, file name from the crate's
/// `src/`, text). A directory `d/` holds the children of `d.rs` or of
/// `d/mod.rs`.
fn collect(dir: &Path, prefix: &mut Module, out: &mut Vec<(Module, String, String)>) {
    let mut entries: Vec<_> =
        fs::read_dir(dir).expect("a source directory").map(|e| e.expect("an entry").path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_stem().expect("a file name").to_string_lossy().into_owned();
        if path.is_dir() {
            prefix.push(name);
            collect(&path, prefix, out);
            prefix.pop();
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = prefix.clone();
            let root = prefix.is_empty() && (name == "lib" || name == "main");
            if name != "mod" && !root {
                module.push(name.clone());
            }
            let file = [prefix.clone(), vec![format!("{name}.rs")]].concat().join("/");
            out.push((module, file, fs::read_to_string(&path).expect("a source file")));
        }
    }
}

/// A crate's non-test modules: for each, its file (from `src/`) and its
/// source with test code and comment lines blanked (line numbers kept).
fn modules(src: &Path) -> BTreeMap<Module, (String, String)> {
    let mut files = Vec::new();
    collect(src, &mut Vec::new(), &mut files);
    if src.join("lib.rs").is_file() {
        files.retain(|(_, file, _)| file != "main.rs");
    }
    modules_of(files)
}

/// [`modules`] on files already read.
fn modules_of(files: Vec<(Module, String, String)>) -> BTreeMap<Module, (String, String)> {
    let test_only: BTreeSet<Module> = files
        .iter()
        .flat_map(|(m, _, text)| {
            let lines: Vec<&str> = text.lines().collect();
            lines
                .windows(2)
                .filter(|pair| pair[0].trim() == "#[cfg(test)]")
                .filter_map(|pair| declared_module(pair[1]))
                .map(|name| [m.clone(), vec![name.to_string()]].concat())
                .collect::<Vec<_>>()
        })
        .collect();
    files
        .into_iter()
        .filter(|(m, _, _)| !(1..=m.len()).any(|n| test_only.contains(&m[..n])))
        .map(|(m, file, text)| (m, (file, without_tests(&text))))
        .collect()
}

/// `text` with comment lines, `#[cfg(test)] mod x;` declarations and
/// inline `#[cfg(test)] mod x { .. }` modules blanked.
fn without_tests(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut code: Vec<&str> = Vec::with_capacity(lines.len());
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        let item = lines.get(at + 1).copied().unwrap_or("");
        if line.trim() == "#[cfg(test)]" && declared_module(item).is_some() {
            let end = if item.trim_end().ends_with(';') {
                at + 1
            } else {
                let indent = &item[..item.len() - item.trim_start().len()];
                let close = format!("{indent}}}");
                (at + 2..lines.len()).find(|&i| lines[i].trim_end() == close).unwrap_or(lines.len() - 1)
            };
            code.extend(std::iter::repeat_n("", end + 1 - at));
            at = end + 1;
            continue;
        }
        code.push(if line.trim_start().starts_with("//") { "" } else { line });
        at += 1;
    }
    code.join("\n")
}

/// The modules `code` (of module `me`) imports, each with the first line
/// (1-based) that does.
fn imports(me: &Module, code: &str, all: &BTreeMap<Module, (String, String)>) -> BTreeMap<Module, usize> {
    let mut out = BTreeMap::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    for root in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(root) {
            // `$crate::` in a macro's body is resolved where the macro is
            // expanded: an import of the expanding module, not this one.
            if code[..at].chars().next_back().is_some_and(|c| is_ident(c) || c == '$') {
                continue;
            }
            let mut base: Module = match root {
                "crate::" => Vec::new(),
                "super::" => me[..me.len().saturating_sub(1)].to_vec(),
                _ => me.clone(),
            };
            let mut rest = &code[at + root.len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            for target in targets(&base, rest, all) {
                if target != *me {
                    out.entry(target).or_insert(line_of(at));
                }
            }
        }
    }
    // A child module named without `self::` (2018 paths): `use child::..`,
    // `pub use child::{..}`, `child::f(..)`.
    let children = all.keys().filter(|m| m.len() == me.len() + 1 && m.starts_with(me));
    for child in children {
        let name = format!("{}::", child[me.len()]);
        for (at, _) in code.match_indices(&name) {
            if !within_a_path(&code[..at]) {
                for target in targets(me, &code[at..], all) {
                    out.entry(target).or_insert(line_of(at));
                }
            }
        }
    }
    out
}

/// Whether what follows `before` continues a longer path: it follows `::`
/// or an identifier, or it is in a group of one (`a::{b, child::c}`).
fn within_a_path(before: &str) -> bool {
    if before.ends_with("::") || before.chars().next_back().is_some_and(|c| is_ident(c) || c == '$') {
        return true;
    }
    let mut depth = 0;
    for (i, c) in before.char_indices().rev() {
        match c {
            '}' => depth += 1,
            '{' if depth == 0 => return before[..i].trim_end().ends_with("::"),
            '{' => depth -= 1,
            c if is_ident(c) || c.is_whitespace() || c == ',' || c == ':' => {}
            _ => return false,
        }
    }
    false
}

/// The modules below `base` that `path` (what follows `base::`) names:
/// `a::{b, c::d}` names `a::b` and `a::c::d`; `a::b::Item` names `a::b`.
/// `base` itself when the path names no module below it.
fn targets(base: &Module, path: &str, all: &BTreeMap<Module, (String, String)>) -> Vec<Module> {
    let mut target = base.clone();
    let mut rest = path;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth < 0
                })
                .map_or(group.len(), |(i, _)| i);
            let mut out = Vec::new();
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group[..end].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.extend(targets(&target, group[start..i].trim(), all));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            out.extend(targets(&target, group[start..end].trim(), all));
            return out;
        }
        let ident: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        let next = [target.clone(), vec![ident.clone()]].concat();
        if ident.is_empty() || !all.contains_key(&next) {
            return vec![target];
        }
        target = next;
        match rest[ident.len()..].strip_prefix("::") {
            Some(r) => rest = r,
            None => return vec![target],
        }
    }
}

/// The import graph of `all`.
fn graph(all: &BTreeMap<Module, (String, String)>) -> Graph {
    all.iter().map(|(m, (_, code))| (m.clone(), imports(m, code, all))).collect()
}

/// A cycle through `from`, if any, as the modules on it (`from` first and
/// last).
fn cycle(graph: &Graph, from: &Module) -> Option<Vec<Module>> {
    let mut stack = vec![(from.clone(), vec![from.clone()])];
    let mut seen = BTreeSet::new();
    while let Some((m, path)) = stack.pop() {
        for next in graph.get(&m).into_iter().flat_map(BTreeMap::keys) {
            let path = [path.clone(), vec![next.clone()]].concat();
            if next == from {
                return Some(path);
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), path));
            }
        }
    }
    None
}

/// Every cycle of `graph`, one per set of modules, each edge shown with
/// the file and line that makes it (`a (a.rs:3) → b (b.rs:7) → a`).
fn cycles(graph: &Graph, all: &BTreeMap<Module, (String, String)>) -> Vec<String> {
    let name = |m: &Module| if m.is_empty() { "crate".to_string() } else { m.join("::") };
    let mut sets = BTreeSet::new();
    let mut out = Vec::new();
    for m in graph.keys() {
        let Some(path) = cycle(graph, m) else { continue };
        if !sets.insert(path.iter().cloned().collect::<BTreeSet<_>>()) {
            continue;
        }
        let mut text = name(&path[0]);
        for pair in path.windows(2) {
            let line = graph[&pair[0]][&pair[1]];
            text += &format!(" ({}:{line}) → {}", all[&pair[0]].0, name(&pair[1]));
        }
        out.push(text);
    }
    out
}

#[test]
fn no_module_of_any_crate_imports_one_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask has a parent");
    let mut sources = Vec::new();
    for pattern in CRATE_SOURCES {
        match pattern.split_once('*') {
            Some((before, after)) => {
                for entry in fs::read_dir(root.join(before)).expect("crates/") {
                    let src = entry.expect("an entry").path().join(after.trim_start_matches('/'));
                    if src.is_dir() {
                        sources.push(src);
                    }
                }
            }
            None => sources.push(root.join(pattern)),
        }
    }
    sources.sort();
    let names: Vec<String> =
        sources.iter().map(|s| s.strip_prefix(root).expect("below the root").display().to_string()).collect();
    for expected in [
        "crates/protocol/src",
        "crates/checker/src",
        "crates/client/src",
        "crates/do-worker/src",
        "crates/e2e/src",
        "xtask/src",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected} not walked: {names:?}");
    }
    let mut found = Vec::new();
    for (src, name) in sources.iter().zip(&names) {
        let all = modules(src);
        assert!(all.len() > 1, "{name}: only {} modules found", all.len());
        found.extend(cycles(&graph(&all), &all).into_iter().map(|c| format!("{name}: {c}")));
    }
    assert!(found.is_empty(), "{} import cycles:\n{}", found.len(), found.join("\n"));
}

/// The modules of a synthetic crate: (module, text) pairs.
fn files(files: &[(&[&str], &str)]) -> BTreeMap<Module, (String, String)> {
    modules_of(
        files
            .iter()
            .map(|(m, text)| {
                let module: Module = m.iter().map(|s| s.to_string()).collect();
                let file = if module.is_empty() { "lib.rs".to_string() } else { format!("{}.rs", module.join("/")) };
                (module, file, text.to_string())
            })
            .collect(),
    )
}

#[test]
fn the_check_sees_a_cycle() {
    let all = files(&[
        (&[], "mod a;\nmod b;\nmod c;"),
        (&["a"], "use super::b::X;"),
        (&["b"], "pub(crate) fn f() -> crate::a::Y {\n    todo!()\n}"),
        (&["c"], "use super::{a, b};"),
    ]);
    let graph = graph(&all);
    let c: Module = vec!["c".into()];
    assert_eq!(graph[&c].keys().cloned().collect::<Vec<_>>(), [vec!["a".to_string()], vec!["b".to_string()]]);
    assert_eq!(cycles(&graph, &all), ["a (a.rs:1) → b (b.rs:1) → a"]);
}

#[test]
fn a_parent_that_re_exports_or_uses_a_child_imports_it() {
    let all = files(&[
        (&[], "mod m;"),
        (&["m"], "mod state;\nmod actions;\npub use state::State;\npub(crate) use actions::{next, x::{Y}};"),
        (&["m", "state"], "pub struct State;"),
        (&["m", "actions"], "use super::State;\npub fn next() {}"),
    ]);
    let graph = graph(&all);
    let m: Module = vec!["m".into()];
    let keys: Vec<Module> = graph[&m].keys().cloned().collect();
    assert_eq!(keys, [vec!["m".to_string(), "actions".to_string()], vec!["m".to_string(), "state".to_string()]]);
    assert_eq!(cycles(&graph, &all), ["m (m.rs:4) → m::actions (m/actions.rs:1) → m"]);
}

#[test]
fn test_modules_make_no_edges() {
    let all = files(&[
        (&[], "mod a;\nmod b;"),
        (&["a"], "use super::b::X;\n\n#[cfg(test)]\npub(crate) mod tests {\n    use super::*;\n}\n\npub struct Y;"),
        (
            &["b"],
            "pub struct X;\n#[cfg(test)]\nmod unit;\n#[cfg(test)]\nmod tests {\n    fn f() {\n        let _ = crate::a::Y;\n    }\n}\n// crate::a::Y in a comment",
        ),
        (&["b", "unit"], "use crate::a::Y;"),
    ]);
    assert!(!all.contains_key(&vec!["b".to_string(), "unit".to_string()]));
    let graph = graph(&all);
    assert!(cycles(&graph, &all).is_empty(), "{graph:?}");
    // the code after an inline test module is still read
    let a: Module = vec!["a".into()];
    assert_eq!(graph[&a].keys().cloned().collect::<Vec<_>>(), [vec!["b".to_string()]]);
}

#[test]
fn a_child_named_without_self_is_an_edge_only_at_the_start_of_a_path() {
    let all = files(&[
        (&[], "mod p;\nmod r;"),
        (&["p"], "mod q;\nuse std::{fmt, q::Z};\nfn f() -> other::q::Z {\n    todo!()\n}"),
        (&["p", "q"], ""),
        (&["r"], "mod q;\nfn f() {\n    let _ = Some(q::g());\n}"),
        (&["r", "q"], ""),
    ]);
    let graph = graph(&all);
    assert!(graph[&vec!["p".to_string()]].is_empty(), "{graph:?}");
    let r: Module = vec!["r".into()];
    assert_eq!(graph[&r].keys().cloned().collect::<Vec<_>>(), [vec!["r".to_string(), "q".to_string()]]);
}
