//! A deployment served locally: the four Worker scripts (`scripts.rs`),
//! each by a wrangler of its own (its own workerd process, isolate and
//! process group), finding each other through a dev registry of this run's
//! own. One role can be restarted alone ([`Cluster::restart`]): its process
//! stops (or is killed, as a crash would), a new one starts with fresh
//! memory, and the others reach it without restarting.
//!
//! Everything of a run lives in one directory (`dir`): the bundles (one
//! copy per build, so that a rebuild restarts nothing by itself), the
//! generated configurations, the registry, the scripts' local storage and
//! logs, and `run.json`, which lets another `cargo xtask` invocation find
//! the running scripts (`cargo xtask dev restart|roll`).
//!
//! Two registry gotchas, measured (docs/operating.md 4.8, "Failure
//! domains"): a script killed without warning leaves its registry entry
//! behind, pointing at a dead port, so the entry is removed before the
//! script starts again; and wrangler writes an entry in place, so a reader
//! can catch it empty and forget the script until the next 30 s heartbeat,
//! so every entry is touched once the new script is ready.

use std::fs;
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use super::scripts::{Front, Script, copy_bundle};
use super::tools::Tools;
use super::wrangler::{Dev, Inspector, Launch, free_port};

/// The replicas' wire version (`crates/do-worker/src/vars.rs`).
pub const WIRE_VERSION_VAR: &str = "HANDOFF_WIRE_VERSION";

/// How long one script gets to answer `/health` after it starts.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// What a run is: written to `run.json` in its directory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunFile {
    pub token: String,
    pub inspector: bool,
    pub registry: PathBuf,
    pub env_files: Vec<PathBuf>,
    /// The bundle generation the last roll installed.
    pub generation: u32,
    pub members: Vec<MemberFile>,
}

/// One script of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MemberFile {
    pub label: String,
    pub port: u16,
    pub config: PathBuf,
    pub persist_to: PathBuf,
    pub log: Option<PathBuf>,
    /// Its process group.
    pub pgid: i32,
}

/// How to start a run.
pub struct Options<'a> {
    /// The run's directory (emptied of a previous run's storage).
    pub dir: PathBuf,
    /// The front's port (a free one if `None`).
    pub port: Option<u16>,
    pub inspector: Inspector,
    pub env_files: Vec<PathBuf>,
    pub token: String,
    /// Logs to files in `dir` (else the terminal).
    pub logs: bool,
    pub tools: &'a Tools,
}

/// A running deployment.
pub struct Cluster {
    pub dir: PathBuf,
    /// The front's base URL.
    pub base: String,
    pub token: String,
    run: RunFile,
    /// The processes this invocation started, by label (a restart by
    /// another invocation replaces one without its knowledge: it is then
    /// stopped through `run.json`'s process group).
    devs: Vec<(String, Dev)>,
}

impl Cluster {
    /// Builds nothing (the caller built the Worker): copies the bundle,
    /// writes the configurations and starts the front, then the roles, each
    /// once the previous answers.
    pub fn start(options: Options<'_>) -> Result<Cluster> {
        let dir = options.dir.clone();
        for sub in ["state", "registry", "bundles", "scripts"] {
            let path = dir.join(sub);
            if path.exists() {
                fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))?;
            }
        }
        fs::create_dir_all(dir.join("registry"))?;
        let configs = write_generation(options.tools, &dir, 1)?;
        let mut run = RunFile {
            token: options.token.clone(),
            inspector: options.inspector == Inspector::On,
            registry: dir.join("registry"),
            env_files: options.env_files.clone(),
            generation: 1,
            members: Vec::new(),
        };
        let mut devs = Vec::new();
        for (script, config) in configs {
            let port = match (script, options.port) {
                (Script::Front, Some(port)) => port,
                _ => free_port()?,
            };
            let member = MemberFile {
                label: script.label().to_string(),
                port,
                config,
                persist_to: dir.join("state").join(script.label()),
                log: options.logs.then(|| dir.join(format!("{}.log", script.label()))),
                pgid: 0,
            };
            let dev = start_member(options.tools, &run, &member)?;
            run.members.push(MemberFile { pgid: dev.group(), ..member });
            devs.push((script.label().to_string(), dev));
        }
        touch_registry(&run.registry);
        let base = format!("http://127.0.0.1:{}", run.members.first().map_or(0, |m| m.port));
        let cluster = Cluster { dir, base, token: options.token, run, devs };
        cluster.save()?;
        Ok(cluster)
    }

    /// The run in `dir`, started by another invocation.
    pub fn attach(dir: &Path) -> Result<Cluster> {
        let path = dir.join("run.json");
        let text = fs::read_to_string(&path)
            .with_context(|| format!("reading {} (is `cargo xtask dev` running there?)", path.display()))?;
        let run: RunFile = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let front = run.members.first().context("run.json names no script")?;
        ensure!(group_alive(front.pgid), "the run in {} is not running (its front's process is gone)", dir.display());
        let base = format!("http://127.0.0.1:{}", front.port);
        Ok(Cluster { dir: dir.to_path_buf(), base, token: run.token.clone(), run, devs: Vec::new() })
    }

    fn save(&self) -> Result<()> {
        let path = self.dir.join("run.json");
        fs::write(&path, serde_json::to_string_pretty(&self.run)?)
            .with_context(|| format!("writing {}", path.display()))
    }

    fn member(&self, label: &str) -> Result<&MemberFile> {
        self.run.members.iter().find(|m| m.label == label).with_context(|| format!("no script {label} in this run"))
    }

    /// The wire version the scripts restarted from now on write (`None`:
    /// their build's own): an env file after the run's, or none.
    pub fn set_wire_version(&mut self, wire: Option<u16>) -> Result<()> {
        let file = self.dir.join("wire.vars");
        self.run.env_files.retain(|f| *f != file);
        if let Some(v) = wire {
            fs::write(&file, format!("{WIRE_VERSION_VAR}={v}\n"))
                .with_context(|| format!("writing {}", file.display()))?;
            self.run.env_files.push(file);
        }
        self.save()
    }

    /// Builds a new bundle generation from crates/do-worker/build (the
    /// caller rebuilt it) for the scripts restarted from now on.
    pub fn new_generation(&mut self, tools: &Tools) -> Result<u32> {
        let generation = self.run.generation + 1;
        let configs = write_generation(tools, &self.dir, generation)?;
        for (script, config) in configs {
            if let Some(member) = self.run.members.iter_mut().find(|m| m.label == script.label()) {
                member.config = config;
            }
        }
        self.run.generation = generation;
        self.save()?;
        Ok(generation)
    }

    /// Restarts one script: its process group stops (`crash`: is killed at
    /// once, as a crash or an isolate's loss would), its stale registry
    /// entry goes, a new process starts with fresh memory and the current
    /// generation's bundle; returns once it answers and the registry is
    /// fresh. The new process outlives this invocation if it did not start
    /// the run (`cargo xtask dev restart`).
    pub fn restart(&mut self, tools: &Tools, script: Script, crash: bool) -> Result<Duration> {
        let started = Instant::now();
        let label = script.label();
        let member = self.member(label)?.clone();
        match self.devs.iter().position(|(l, _)| l == label) {
            Some(at) => {
                let (_, mut dev) = self.devs.remove(at);
                if crash { dev.kill()? } else { dev.stop()? }
            }
            None => stop_group(member.pgid, crash)?,
        }
        let stale = self.run.registry.join(script.name(&front_name(tools)?));
        let _ = fs::remove_file(stale);
        let dev = start_member(tools, &self.run, &member)?;
        let pgid = dev.group();
        if let Some(m) = self.run.members.iter_mut().find(|m| m.label == label) {
            m.pgid = pgid;
        }
        self.devs.push((label.to_string(), dev));
        touch_registry(&self.run.registry);
        self.save()?;
        Ok(started.elapsed())
    }

    /// Leaves the scripts this invocation started running when it ends
    /// (`cargo xtask dev restart` starts one for the run it attached to).
    pub fn detach(mut self) {
        for (_, dev) in self.devs.drain(..) {
            dev.detach();
        }
    }

    /// Stops every script of the run.
    pub fn stop(&mut self) -> Result<()> {
        let mut first_error = None;
        for (_, mut dev) in self.devs.drain(..) {
            if let Err(e) = dev.stop() {
                first_error.get_or_insert(e);
            }
        }
        // Scripts another invocation restarted.
        for member in &self.run.members {
            let _ = stop_group(member.pgid, false);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Serves until Ctrl-C, then stops every script of the run, those
    /// another invocation restarted meanwhile included (`run.json` names
    /// their process groups).
    pub fn wait(mut self) -> Result<()> {
        while !super::wrangler::interrupted() {
            sleep(Duration::from_millis(250));
        }
        if let Ok(text) = fs::read_to_string(self.dir.join("run.json"))
            && let Ok(run) = serde_json::from_str(&text)
        {
            self.run = run;
        }
        self.stop()
    }

    /// Every script's process group (the benchmarks read their processes).
    pub fn groups(&self) -> Vec<i32> {
        self.run.members.iter().map(|m| m.pgid).collect()
    }

    /// Lines of the scripts' logs containing any of `needles`.
    pub fn log_matches(&self, needles: &[&str]) -> Vec<String> {
        self.logs()
            .flat_map(|(label, text)| {
                text.lines()
                    .filter(|line| needles.iter().any(|n| line.contains(n)))
                    .map(|line| format!("{label}: {line}"))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The last lines of each script's log, for an error message.
    pub fn log_tail(&self) -> String {
        self.logs()
            .map(|(label, text)| {
                let lines: Vec<&str> = text.lines().collect();
                format!("\n--- last lines of {label}'s log ---\n{}", lines[lines.len().saturating_sub(25)..].join("\n"))
            })
            .collect()
    }

    fn logs(&self) -> impl Iterator<Item = (&str, String)> {
        self.run
            .members
            .iter()
            .filter_map(|m| Some((m.label.as_str(), fs::read_to_string(m.log.as_ref()?).unwrap_or_default())))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Only what this invocation started; `detach` empties it.
        for (_, dev) in &mut self.devs {
            if let Err(e) = dev.stop() {
                eprintln!("worker: stopping wrangler: {e:#}");
            }
        }
    }
}

fn front_name(tools: &Tools) -> Result<String> {
    Ok(Front::load(&tools.worker_dir.join("wrangler.toml"))?.name)
}

/// Copies the built Worker as bundle generation `generation` and writes
/// the scripts' configurations for it.
fn write_generation(tools: &Tools, dir: &Path, generation: u32) -> Result<Vec<(Script, PathBuf)>> {
    let front = Front::load(&tools.worker_dir.join("wrangler.toml"))?;
    let bundle = dir.join("bundles").join(generation.to_string());
    let main = copy_bundle(&tools.worker_dir.join("build"), &bundle)?;
    let main = main.to_str().context("the bundle's path is not UTF-8")?;
    front.write_all(&dir.join("scripts").join(generation.to_string()), main, true)
}

/// How often a script is started again when workerd could not bind a port.
const BIND_ATTEMPTS: u32 = 3;

/// Starts one script and waits until it answers `/health`. A port found
/// free a moment before (ours, the inspector's, or one wrangler picks for
/// workerd) can be taken by another process before workerd binds it: then
/// workerd exits with "Address already in use", and the script is started
/// again (wrangler and `Dev::start` pick their ports anew); any other
/// failure is final.
fn start_member(tools: &Tools, run: &RunFile, member: &MemberFile) -> Result<Dev> {
    let inspector = if run.inspector { Inspector::On } else { Inspector::Off };
    let launch = Launch {
        config: &member.config,
        port: member.port,
        persist_to: Some(&member.persist_to),
        log: member.log.clone(),
        env_files: &run.env_files,
        inspector,
        registry: &run.registry,
    };
    let mut attempt = 1;
    loop {
        let mut dev = Dev::start(tools, &launch)?;
        match dev.wait_ready(READY_TIMEOUT).with_context(|| format!("starting {}", member.label)) {
            Ok(()) => return Ok(dev),
            Err(e) if attempt < BIND_ATTEMPTS && format!("{e:#}").contains("Address already in use") => {
                eprintln!("worker: {} could not bind a port (attempt {attempt}); starting it again", member.label);
                drop(dev);
                attempt += 1;
                sleep(Duration::from_secs(1));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Marks every registry entry as written now: a reader that caught one
/// half-written (wrangler writes them in place) reads it again.
fn touch_registry(registry: &Path) {
    let Ok(entries) = fs::read_dir(registry) else { return };
    for entry in entries.flatten() {
        if let Ok(file) = fs::File::options().append(true).open(entry.path()) {
            let _ = file.set_modified(SystemTime::now());
        }
    }
}

/// Whether a process group still has a live process. Read from `/proc`:
/// a killed process that its parent (the invocation that started the run)
/// has not reaped yet is a zombie, still in the group, but gone.
fn group_alive(pgid: i32) -> bool {
    let Ok(dir) = fs::read_dir("/proc") else { return false };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .any(|stat| {
            // Fields after the command name (in parentheses): state, ppid, pgrp.
            let mut rest = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace();
            let state = rest.next();
            let pgrp = rest.nth(1).and_then(|p| p.parse::<i32>().ok());
            pgid > 0 && pgrp == Some(pgid) && state != Some("Z")
        })
}

/// Stops a process group this invocation did not start: SIGTERM (or
/// SIGKILL at once for a `crash`), SIGKILL after 10 s.
fn stop_group(pgid: i32, crash: bool) -> Result<()> {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        if !group_alive(pgid) {
            return Ok(());
        }
        let _ = killpg(Pid::from_raw(pgid), if crash { Signal::SIGKILL } else { Signal::SIGTERM });
        let deadline = Instant::now() + Duration::from_secs(10);
        while group_alive(pgid) {
            if Instant::now() > deadline {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
            if Instant::now() > deadline + Duration::from_secs(5) {
                bail!("process group {pgid} survived SIGKILL");
            }
            sleep(Duration::from_millis(100));
        }
    }
    #[cfg(not(unix))]
    let _ = (pgid, crash);
    Ok(())
}
