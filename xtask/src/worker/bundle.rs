//! `cargo xtask deploy --dry-run`'s checks of what would be uploaded: the
//! bundle's compressed size against the platform's limit, the Durable
//! Object bindings against the classes the bundle exports, the bindings the
//! Worker's code uses and the migrations, and the variables; then what a
//! real deploy does.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use serde::Deserialize;

/// The Workers limit on a Worker's compressed (gzip) size on the Free plan
/// (the Paid plan allows 10 MiB); the bundle must fit the smaller one.
const SIZE_LIMIT: u64 = 3 * 1024 * 1024;

/// The Worker's code names its bindings here (`pub const *_BINDING`).
const BINDINGS_SOURCE: &str = "crates/do-worker/src/internal.rs";

/// The part of crates/do-worker/wrangler.toml the checks read.
#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    vars: std::collections::BTreeMap<String, String>,
    durable_objects: DurableObjects,
    #[serde(default)]
    migrations: Vec<Migration>,
}

#[derive(Deserialize)]
struct DurableObjects {
    bindings: Vec<Binding>,
}

#[derive(Deserialize)]
struct Binding {
    name: String,
    class_name: String,
    /// The script whose class it is, when not this one's.
    #[serde(default)]
    script_name: Option<String>,
}

#[derive(Deserialize)]
struct Migration {
    tag: String,
    #[serde(default)]
    new_sqlite_classes: Vec<String>,
    #[serde(default)]
    new_classes: Vec<String>,
    #[serde(default)]
    deleted_classes: Vec<String>,
}

/// Checks the bundle in `outdir` (index.js and one .wasm) against the
/// script's configuration `wrangler_toml` and, for the front (which serves
/// every route), the bindings the Worker's code uses; prints what it found.
pub fn check(root: &Path, wrangler_toml: &Path, outdir: &Path, files: &[(String, u64)], front: bool) -> Result<()> {
    let text = fs::read_to_string(wrangler_toml).with_context(|| format!("reading {}", wrangler_toml.display()))?;
    let config: Config = toml::from_str(&text).with_context(|| format!("parsing {}", wrangler_toml.display()))?;

    // Size: what Cloudflare measures is the gzip-compressed upload.
    let mut compressed = 0;
    for (name, _) in files.iter().filter(|(n, _)| n == "index.js" || n.ends_with(".wasm")) {
        compressed += gzip_len(&outdir.join(name))?;
    }
    ensure!(
        compressed <= SIZE_LIMIT,
        "the bundle is {} gzip-compressed, over the Workers limit of {}",
        kib(compressed),
        kib(SIZE_LIMIT)
    );
    println!("worker: check: size {} gzip-compressed (limit {})", kib(compressed), kib(SIZE_LIMIT));

    // Bindings: each class exported by the bundle and created by a migration.
    let js = fs::read_to_string(outdir.join("index.js")).context("reading the bundle's index.js")?;
    let exported = exports(&js);
    let mut created = BTreeSet::new();
    let mut tags = BTreeSet::new();
    for m in &config.migrations {
        ensure!(tags.insert(m.tag.as_str()), "migration tag {:?} appears twice in wrangler.toml", m.tag);
        for class in m.new_sqlite_classes.iter().chain(&m.new_classes) {
            ensure!(created.insert(class.as_str()), "migration {:?} creates {class}, created before", m.tag);
        }
        for class in &m.deleted_classes {
            ensure!(created.remove(class.as_str()), "migration {:?} deletes {class}, never created", m.tag);
        }
    }
    for b in config.durable_objects.bindings.iter().filter(|b| b.script_name.is_none()) {
        ensure!(
            exported.contains(b.class_name.as_str()),
            "binding {}: the bundle exports no class {}",
            b.name,
            b.class_name
        );
        ensure!(created.contains(b.class_name.as_str()), "binding {}: no migration creates {}", b.name, b.class_name);
    }
    for class in &created {
        ensure!(
            config.durable_objects.bindings.iter().any(|b| b.class_name == *class),
            "migrations create {class} but no binding names it"
        );
    }
    let source =
        fs::read_to_string(root.join(BINDINGS_SOURCE)).with_context(|| format!("reading {BINDINGS_SOURCE}"))?;
    let used = used_bindings(&source);
    ensure!(!used.is_empty(), "{BINDINGS_SOURCE} names no binding");
    // A role script serves replicas only: its bindings are derived
    // (scripts.rs, whose tests check them).
    for name in used.iter().filter(|_| front) {
        ensure!(
            config.durable_objects.bindings.iter().any(|b| b.name == *name),
            "the Worker uses the binding {name} ({BINDINGS_SOURCE}), which wrangler.toml does not declare"
        );
    }
    println!(
        "worker: check: {} Durable Object bindings ({}), each exported and created by the {} migrations ({})",
        config.durable_objects.bindings.len(),
        config
            .durable_objects
            .bindings
            .iter()
            .map(|b| format!("{}={}", b.name, b.class_name))
            .collect::<Vec<_>>()
            .join(", "),
        config.migrations.len(),
        config.migrations.iter().map(|m| m.tag.as_str()).collect::<Vec<_>>().join(", ")
    );

    // Variables: never the test hooks in a deployment.
    ensure!(
        config.vars.get("HANDOFF_TEST_HOOKS").map(String::as_str) == Some("0"),
        "wrangler.toml must set HANDOFF_TEST_HOOKS = \"0\" for deployments"
    );
    println!(
        "worker: check: vars {}",
        config.vars.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
    );
    Ok(())
}

/// What `cargo xtask deploy` (without --dry-run) does, printed after the
/// dry run.
pub fn explain() {
    for line in [
        "a real deploy (`cargo xtask deploy --url https://<the front> `, HANDOFF_ADMIN_TOKEN set, after `npx wrangler login`",
        "in crates/do-worker) is a rolling one: handoff-r1, then handoff-r2, then handoff-r0, then the front (handoff),",
        "  each once every live namespace's replica of the previous role is a new instance and ready again; it stops",
        "  with the namespace and status it waited for if one does not recover in time (--timeout, default 120 s)",
        "  - never two replicas of a namespace down at once: no acknowledged write is lost, clients see 503s with",
        "    Retry-After while the coordinator recovers (after handoff-r0's upload)",
        "  - one HANDOFF_INTERNAL_KEY for all four scripts, generated at the first deploy and kept in",
        "    target/worker-deploy/internal.key (old and new scripts must accept each other during the roll)",
        "  - needs the secret HANDOFF_ADMIN_TOKEN on the front, set once by hand: `npx wrangler secret put HANDOFF_ADMIN_TOKEN`",
        "  - the namespace registry and the claims (SQLite, in the front) are kept",
    ] {
        println!("worker: {line}");
    }
}

/// The names after `as` in the bundle's final `export { x as Name, ... }`.
fn exports(js: &str) -> BTreeSet<&str> {
    let Some(start) = js.rfind("export {") else { return BTreeSet::new() };
    let block = &js[start + "export {".len()..];
    let block = block.split('}').next().unwrap_or("");
    block.split(',').filter_map(|item| item.split(" as ").nth(1)).map(str::trim).collect()
}

/// The binding names in `pub const X_BINDING: &str = "NAME";` lines.
fn used_bindings(source: &str) -> Vec<&str> {
    source
        .lines()
        .filter(|l| l.starts_with("pub const ") && l.contains("_BINDING: &str = \""))
        .filter_map(|l| l.split('"').nth(1))
        .collect()
}

fn gzip_len(path: &Path) -> Result<u64> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&bytes)?;
    Ok(encoder.finish()?.len() as u64)
}

/// `bytes` in KiB, for people.
pub(super) fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bundles_exports_and_the_codes_bindings() {
        let js = "export { a as Early };\nvar x;\nexport {\n  Be as ClaimStore,\n  qe as default\n};\n//# map";
        assert_eq!(exports(js), BTreeSet::from(["ClaimStore", "default"]));
        let src = "/// docs\npub const REPLICA_BINDING: &str = \"REPLICA\";\npub const OTHER: &str = \"x\";\n";
        assert_eq!(used_bindings(src), vec!["REPLICA"]);
    }

    /// A bundle in a fresh directory under target/, checked against
    /// `toml`; the error, if any.
    fn check_with(name: &str, toml: &str, js: &str, code: &str) -> Option<String> {
        let dir = std::path::absolute(format!("../target/xtask-bundle-test/{name}")).expect("path");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("crates/do-worker/src")).expect("dir");
        fs::write(dir.join("wrangler.toml"), toml).expect("toml");
        fs::write(dir.join("index.js"), js).expect("js");
        fs::write(dir.join("w.wasm"), [0u8; 64]).expect("wasm");
        fs::write(dir.join(BINDINGS_SOURCE), code).expect("code");
        let files = vec![("index.js".to_string(), 0), ("w.wasm".to_string(), 64)];
        check(&dir, &dir.join("wrangler.toml"), &dir, &files, true).err().map(|e| e.to_string())
    }

    #[test]
    fn refuses_unexported_or_uncreated_classes_unknown_bindings_and_test_hooks() {
        let toml = |hooks: &str, class: &str, migrated: &str| {
            format!(
                "[vars]\nHANDOFF_TEST_HOOKS = \"{hooks}\"\n[[durable_objects.bindings]]\nname = \"A\"\n\
                 class_name = \"{class}\"\n[[migrations]]\ntag = \"v1\"\nnew_sqlite_classes = [\"{migrated}\"]\n"
            )
        };
        let js = "export {\n  x as Alpha,\n  y as default\n};";
        let code = "pub const A_BINDING: &str = \"A\";\n";
        assert_eq!(check_with("ok", &toml("0", "Alpha", "Alpha"), js, code), None);
        let err = |name, t: &str, c: &str| check_with(name, t, js, c).unwrap_or_default();
        assert!(err("unexported", &toml("0", "Beta", "Beta"), code).contains("exports no class Beta"));
        assert!(err("uncreated", &toml("0", "Alpha", "Other"), code).contains("no migration creates Alpha"));
        assert!(err("hooks", &toml("1", "Alpha", "Alpha"), code).contains("HANDOFF_TEST_HOOKS"));
        let unknown = "pub const B_BINDING: &str = \"B\";\n";
        assert!(err("unknown", &toml("0", "Alpha", "Alpha"), unknown).contains("binding B"));
    }
}
