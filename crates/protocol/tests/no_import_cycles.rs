//! No module of this crate imports a module that imports it back: the
//! modules form layers (e.g. `handoff`: ids → record → memory → message →
//! interface → node → roles → replica → driver), which is what lets a
//! reader start at the bottom.
//!
//! An edge A → B is a `crate::`/`super::`/`self::` path in A's non-test
//! code that names module B (or, for `super::item`, the parent itself); a
//! parent's `pub use child::…` is an edge to the child, its `mod child;`
//! is not. Test code (`#[cfg(test)]` modules and files) is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

type Module = Vec<String>;

/// Every non-test module of `src/`, with its source minus test code and
/// comments.
fn modules() -> BTreeMap<Module, String> {
    let mut files = Vec::new();
    collect(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut Vec::new(), &mut files);
    let test_only: BTreeSet<Module> = files
        .iter()
        .flat_map(|(m, text)| {
            let mut names = Vec::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find("#[cfg(test)]") {
                rest = rest[at + "#[cfg(test)]".len()..].trim_start();
                if let Some(name) = rest.strip_prefix("mod ").and_then(|r| r.split(|c: char| !is_ident(c)).next()) {
                    names.push([m.clone(), vec![name.to_string()]].concat());
                }
            }
            names
        })
        .collect();
    files
        .into_iter()
        .filter(|(m, _)| !(1..=m.len()).any(|n| test_only.contains(&m[..n])))
        .map(|(m, text)| (m, without_tests(&text)))
        .collect()
}

/// `text` without comment lines, `#[cfg(test)] mod x;` declarations and
/// (from there to the end of the file) an inline `#[cfg(test)] mod x {`.
fn without_tests(text: &str) -> String {
    let mut code = Vec::new();
    let mut lines = text.lines().filter(|l| !l.trim_start().starts_with("//"));
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            code.push(line);
            continue;
        }
        match lines.next() {
            Some(item) if item.trim_start().starts_with("mod ") && item.trim_end().ends_with(';') => {}
            Some(item) if item.trim_start().starts_with("mod ") => break,
            Some(item) => code.push(item),
            None => {}
        }
    }
    code.join("\n")
}

fn collect(dir: &Path, prefix: &mut Module, out: &mut Vec<(Module, String)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            prefix.push(name);
            collect(&path, prefix, out);
            prefix.pop();
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = prefix.clone();
            if name != "mod" && name != "lib" {
                module.push(name);
            }
            out.push((module, fs::read_to_string(&path).unwrap()));
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The modules `code` (of module `me`) names.
fn imports(me: &Module, code: &str, all: &BTreeMap<Module, String>) -> BTreeSet<Module> {
    let mut out = BTreeSet::new();
    for root in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(root) {
            if code[..at].chars().next_back().is_some_and(is_ident) {
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
            // `path::{a, b::c}` names each first segment; `path::x::y` walks down.
            let heads: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or("").split(',').map(str::trim).collect(),
                None => vec![rest],
            };
            for head in heads {
                let mut target = base.clone();
                for segment in head.split("::") {
                    let ident: String = segment.chars().take_while(|&c| is_ident(c)).collect();
                    let next = [target.clone(), vec![ident.clone()]].concat();
                    if ident.is_empty() || !all.contains_key(&next) {
                        break;
                    }
                    target = next;
                    if ident.len() != segment.len() {
                        break;
                    }
                }
                if target != *me {
                    out.insert(target);
                }
            }
        }
    }
    for line in code.lines() {
        if let Some(child) = line.trim_start().strip_prefix("pub use ").and_then(|r| r.split("::").next()) {
            let child = [me.clone(), vec![child.to_string()]].concat();
            if all.contains_key(&child) {
                out.insert(child);
            }
        }
    }
    out
}

/// A cycle through `from`, if any, as a path of module names.
fn cycle(graph: &BTreeMap<Module, BTreeSet<Module>>, from: &Module) -> Option<Vec<String>> {
    let mut stack = vec![(from.clone(), vec![from.join("::")])];
    let mut seen = BTreeSet::new();
    while let Some((m, path)) = stack.pop() {
        for next in graph.get(&m).into_iter().flatten() {
            let path = [path.clone(), vec![next.join("::")]].concat();
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

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let all = modules();
    assert!(all.contains_key(&vec!["handoff".to_string(), "replica".to_string()]), "found {:?}", all.keys());
    let graph: BTreeMap<Module, BTreeSet<Module>> =
        all.iter().map(|(m, code)| (m.clone(), imports(m, code, &all))).collect();
    let cycles: Vec<Vec<String>> = graph.keys().filter_map(|m| cycle(&graph, m)).collect();
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
}

#[test]
fn the_check_sees_a_cycle() {
    let all: BTreeMap<Module, String> = [
        (vec![], String::new()),
        (vec!["a".into()], "use super::b::X;".into()),
        (vec!["b".into()], "pub(crate) fn f() -> crate::a::Y { todo!() }".into()),
        (vec!["c".into()], "use super::{a, b};".into()),
    ]
    .into_iter()
    .collect();
    let graph: BTreeMap<Module, BTreeSet<Module>> =
        all.iter().map(|(m, code)| (m.clone(), imports(m, code, &all))).collect();
    assert_eq!(graph[&vec!["c".to_string()]], [vec!["a".to_string()], vec!["b".to_string()]].into());
    assert_eq!(cycle(&graph, &vec!["a".to_string()]), Some(vec!["a".into(), "b".into(), "a".into()]));
    assert_eq!(cycle(&graph, &vec!["c".to_string()]), None);
}
