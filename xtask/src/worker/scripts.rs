//! The Worker scripts of one deployment, each its own failure domain: the
//! front (`handoff`: the public Worker, the namespace registry, the claim
//! stores, the benchmark baselines) and one script per replica role
//! (`handoff-r0`, `handoff-r1`, `handoff-r2`: the `Replica` objects of that
//! role for every namespace). All four run the same bundle; a role script
//! knows its role from `HANDOFF_ROLE`. Objects of different scripts never
//! share an isolate, so no isolate holds two replicas of one namespace, and
//! deploying (restarting) one script restarts one role only
//! (docs/operating.md 4.8, "Failure domains").
//!
//! crates/do-worker/wrangler.toml is the front's configuration and the one
//! source: the role scripts' configurations are derived from it here (its
//! name, compatibility date and variables; their bindings to each other and
//! to the front's registry), for `dev`, the tests, the benchmarks and
//! `deploy` alike.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use toml::{Table, Value};

/// One script of the deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Script {
    Front,
    Role(Role),
}

/// A replica role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    R0,
    R1,
    R2,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::R0, Role::R1, Role::R2];

    pub fn name(self) -> &'static str {
        match self {
            Role::R0 => "r0",
            Role::R1 => "r1",
            Role::R2 => "r2",
        }
    }

    pub fn parse(s: &str) -> Result<Role> {
        Role::ALL.into_iter().find(|r| r.name() == s).with_context(|| format!("no role {s:?}: r0, r1 or r2"))
    }

    /// Its Durable Object binding (crates/do-worker/src/internal.rs).
    pub fn binding(self) -> String {
        format!("REPLICA_{}", self.name().to_uppercase())
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Script {
    /// The front first, then the roles: the order to start them in (the
    /// replicas ask the front's registry before they boot).
    pub const ALL: [Script; 4] =
        [Script::Front, Script::Role(Role::R0), Script::Role(Role::R1), Script::Role(Role::R2)];

    /// The script's name for a deployment whose front is `front`.
    pub fn name(self, front: &str) -> String {
        match self {
            Script::Front => front.to_string(),
            Script::Role(role) => format!("{front}-{role}"),
        }
    }

    /// A short label for logs and files: `front`, `r0`, ...
    pub fn label(self) -> &'static str {
        match self {
            Script::Front => "front",
            Script::Role(role) => role.name(),
        }
    }
}

/// The front's configuration, read from crates/do-worker/wrangler.toml.
pub struct Front {
    table: Table,
    pub name: String,
}

impl Front {
    pub fn load(wrangler_toml: &Path) -> Result<Front> {
        let text = fs::read_to_string(wrangler_toml).with_context(|| format!("reading {}", wrangler_toml.display()))?;
        let table: Table = toml::from_str(&text).with_context(|| format!("parsing {}", wrangler_toml.display()))?;
        let name = table.get("name").and_then(Value::as_str).context("wrangler.toml has no name")?.to_string();
        let front = Front { table, name };
        front.check_replica_bindings()?;
        Ok(front)
    }

    /// The front binds each role's `Replica` class in that role's script.
    fn check_replica_bindings(&self) -> Result<()> {
        for role in Role::ALL {
            let binding = bindings(&self.table)
                .find(|b| b.get("name").and_then(Value::as_str) == Some(&role.binding()))
                .with_context(|| format!("wrangler.toml binds no {}", role.binding()))?;
            let script = Script::Role(role).name(&self.name);
            ensure!(
                binding.get("class_name").and_then(Value::as_str) == Some("Replica")
                    && binding.get("script_name").and_then(Value::as_str) == Some(script.as_str()),
                "wrangler.toml's {} must bind class Replica of script {script:?}",
                role.binding()
            );
        }
        Ok(())
    }

    /// The configuration of `script` with `main` as its entry point. For
    /// `local` runs (dev, tests, benchmarks) the front's `[build]` goes: the
    /// bundle is built once, before any script starts, and copied for each
    /// (a rebuild must not restart every script at once).
    pub fn config(&self, script: Script, main: &str, local: bool) -> Result<Table> {
        let mut config = match script {
            Script::Front => self.table.clone(),
            Script::Role(role) => self.role_config(role)?,
        };
        config.insert("main".into(), Value::String(main.into()));
        if local {
            config.remove("build");
        }
        Ok(config)
    }

    fn role_config(&self, role: Role) -> Result<Table> {
        let mut config = Table::new();
        config.insert("name".into(), Value::String(Script::Role(role).name(&self.name)));
        for key in ["compatibility_date", "send_metrics", "build"] {
            if let Some(value) = self.table.get(key) {
                config.insert(key.into(), value.clone());
            }
        }
        let mut vars = self.table.get("vars").and_then(Value::as_table).cloned().unwrap_or_default();
        vars.insert("HANDOFF_ROLE".into(), Value::String(role.name().into()));
        config.insert("vars".into(), Value::Table(vars));
        let mut list = Vec::new();
        for other in Role::ALL {
            let mut binding = Table::new();
            binding.insert("name".into(), Value::String(other.binding()));
            binding.insert("class_name".into(), Value::String("Replica".into()));
            if other != role {
                binding.insert("script_name".into(), Value::String(Script::Role(other).name(&self.name)));
            }
            list.push(Value::Table(binding));
        }
        // Replicas ask the front's registry whether their namespace exists.
        let registry = bindings(&self.table)
            .find(|b| b.get("class_name").and_then(Value::as_str) == Some("Registry"))
            .context("wrangler.toml binds no Registry")?;
        let mut registry = registry.clone();
        registry.insert("script_name".into(), Value::String(self.name.clone()));
        list.push(Value::Table(registry));
        let mut objects = Table::new();
        objects.insert("bindings".into(), Value::Array(list));
        config.insert("durable_objects".into(), Value::Table(objects));
        let mut migration = Table::new();
        migration.insert("tag".into(), Value::String("v1".into()));
        migration.insert("new_sqlite_classes".into(), Value::Array(vec![Value::String("Replica".into())]));
        config.insert("migrations".into(), Value::Array(vec![Value::Table(migration)]));
        Ok(config)
    }

    /// Writes every script's configuration into `dir`, each with `main`
    /// (relative paths are relative to `dir`): the paths, by script.
    pub fn write_all(&self, dir: &Path, main: &str, local: bool) -> Result<Vec<(Script, PathBuf)>> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Script::ALL
            .into_iter()
            .map(|script| {
                let path = dir.join(format!("{}.toml", script.label()));
                let text = toml::to_string(&self.config(script, main, local)?)?;
                fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
                Ok((script, path))
            })
            .collect()
    }
}

fn bindings(table: &Table) -> impl Iterator<Item = &Table> {
    table
        .get("durable_objects")
        .and_then(|d| d.get("bindings"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_table)
}

/// Copies the built Worker (`build`: crates/do-worker/build) to a fresh
/// directory `to`; its `index.js` is the scripts' `main`.
pub fn copy_bundle(build: &Path, to: &Path) -> Result<PathBuf> {
    if to.exists() {
        fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    copy_dir(build, to)?;
    let main = to.join("index.js");
    if !main.is_file() {
        bail!("{} has no index.js: build the Worker first", build.display());
    }
    Ok(main)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target).with_context(|| format!("copying to {}", target.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn front() -> Front {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/do-worker/wrangler.toml");
        Front::load(&path).expect("crates/do-worker/wrangler.toml")
    }

    #[test]
    fn a_role_script_binds_its_own_replicas_and_the_others_in_their_scripts() {
        let front = front();
        let config = front.config(Script::Role(Role::R1), "bundle/index.js", true).expect("config");
        assert_eq!(config["name"].as_str(), Some(format!("{}-r1", front.name).as_str()));
        assert_eq!(config["vars"]["HANDOFF_ROLE"].as_str(), Some("r1"));
        assert_eq!(config["vars"]["HANDOFF_TEST_HOOKS"].as_str(), Some("0"));
        let bindings: Vec<(String, Option<String>)> = bindings(&config)
            .map(|b| {
                let name = b["name"].as_str().unwrap_or_default().to_string();
                (name, b.get("script_name").and_then(Value::as_str).map(str::to_string))
            })
            .collect();
        let n = &front.name;
        assert_eq!(
            bindings,
            [
                ("REPLICA_R0".to_string(), Some(format!("{n}-r0"))),
                ("REPLICA_R1".to_string(), None),
                ("REPLICA_R2".to_string(), Some(format!("{n}-r2"))),
                ("REGISTRY".to_string(), Some(n.clone())),
            ]
        );
        assert!(config.get("build").is_none(), "a local run builds once, before any script starts");
        assert!(front.config(Script::Role(Role::R1), "x", false).expect("config").get("build").is_some());
    }

    #[test]
    fn the_front_must_bind_each_role_in_its_script() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/xtask-scripts-test");
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("wrangler.toml");
        let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/do-worker/wrangler.toml"))
            .expect("read");
        fs::write(&path, text.replace("script_name = \"handoff-r2\"", "script_name = \"handoff\"")).expect("write");
        let error = Front::load(&path).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("REPLICA_R2"), "{error}");
    }
}
