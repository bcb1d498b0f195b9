//! A wrangler child process serving one Worker script on workerd (`wrangler
//! dev`, or `serve.mjs` through wrangler's API without the inspector), its
//! process group, and Ctrl-C handling.
//!
//! wrangler starts workerd and, on rebuilds, a shell running worker-build.
//! It is spawned as the leader of a new process group so that stopping it
//! stops all of them (no orphaned workerd holding a port). Being outside the
//! terminal's foreground group, it no longer receives the terminal's Ctrl-C
//! itself: a handler forwards SIGINT to the group instead.

use std::fs::{self, File};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::tools::Tools;

/// Process groups of the running wranglers, for the Ctrl-C handler (0:
/// free slot): one per script of a run, and a benchmark may run two runs.
static GROUPS: [AtomicI32; 8] = [const { AtomicI32::new(0) }; 8];
/// Set once Ctrl-C (or SIGTERM/SIGHUP) has been received.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// How long wrangler gets to shut down before the group is killed.
const GRACE: Duration = Duration::from_secs(10);
/// How often a start or a stop looks again: short, because a role's
/// restart (`dev restart`, `dev roll`) waits on both, and every moment
/// between the old process exiting and the new one starting is a moment
/// without that role.
const POLL: Duration = Duration::from_millis(25);

/// How to start one script's wrangler.
pub(crate) struct Launch<'a> {
    pub config: &'a Path,
    pub port: u16,
    pub persist_to: Option<&'a Path>,
    /// Where its output goes (appended to: a restarted script keeps one
    /// log); the terminal if `None` (interactive `dev`).
    pub log: Option<PathBuf>,
    pub env_files: &'a [PathBuf],
    pub inspector: Inspector,
    pub registry: &'a Path,
}

/// Whether wrangler attaches its DevTools inspector to workerd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inspector {
    /// `wrangler dev`, as developers run it (`dev`, smoke, e2e): DevTools can
    /// attach, and uncaught exceptions outside a request are logged.
    On,
    /// `serve.mjs` (`unstable_startWorker` with `inspector: false`), for the
    /// benchmarks: the inspector's `Network` events make every request between
    /// objects cost milliseconds of CPU that Cloudflare does not spend.
    Off,
}

/// A running wrangler; dropping it stops the whole process group.
pub(crate) struct Dev {
    child: Child,
    /// Base URL, `http://127.0.0.1:<port>`.
    pub base: String,
    log: Option<PathBuf>,
    /// Set by [`Dev::stop`], so Drop does not signal a group id that may
    /// since have been reused.
    stopped: bool,
}

impl Dev {
    /// Serves the script configured in `launch.config` on
    /// 127.0.0.1:`launch.port`, with or without the inspector. `env_files`
    /// are passed as `--env-file`, later ones overriding earlier ones;
    /// wrangler then reads only those (not `.dev.vars` by itself), so
    /// callers list `.dev.vars` first (see [`super::dev_env_files`]). The
    /// scripts of one run find each other through the dev registry in
    /// `launch.registry` (one per run: two runs sharing one would reach each
    /// other's scripts). Both ways take the same flags.
    pub fn start(tools: &Tools, launch: &Launch<'_>) -> Result<Self> {
        install_ctrlc_handler();
        let mut cmd = match launch.inspector {
            Inspector::On => {
                let mut cmd = tools.command(&tools.wrangler)?;
                cmd.arg("dev")
                    // An explicit free port: the default 9229 clashes when
                    // several wrangler instances share a machine.
                    .args(["--inspector-ip", "127.0.0.1", "--inspector-port", &free_port()?.to_string()])
                    // The hotkey prompt reads the TTY, which a background
                    // process group may not do (it would be stopped by SIGTTIN).
                    .arg("--show-interactive-dev-session=false");
                cmd
            }
            Inspector::Off => {
                let mut cmd = tools.command(Path::new("node"))?;
                cmd.arg(&tools.serve_script);
                cmd
            }
        };
        cmd.arg("--config").arg(launch.config);
        cmd.args(["--ip", "127.0.0.1", "--port", &launch.port.to_string()]).stdin(Stdio::null());
        cmd.env("WRANGLER_REGISTRY_PATH", launch.registry).env("WRANGLER_SEND_METRICS", "false");
        if let Some(dir) = launch.persist_to {
            cmd.arg("--persist-to").arg(dir);
        }
        for file in launch.env_files {
            cmd.arg("--env-file").arg(file);
        }
        let log = match &launch.log {
            None => None,
            Some(path) => {
                let file = File::options()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening {}", path.display()))?;
                cmd.stdout(file.try_clone()?).stderr(file).env("FORCE_COLOR", "0");
                Some(path.clone())
            }
        };
        own_group(&mut cmd);
        let child = cmd.spawn().with_context(|| format!("starting {:?}", cmd.get_program()))?;
        register_group(child_pid(&child));
        Ok(Self { child, base: format!("http://127.0.0.1:{}", launch.port), log, stopped: false })
    }

    /// Polls `GET /health` until it answers 200, wrangler exits, or `timeout`.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        let url = format!("{}/health", self.base);
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("wrangler exited ({status}) before {url} answered{}", self.log_tail());
            }
            if INTERRUPTED.load(Ordering::SeqCst) {
                bail!("interrupted while waiting for {url}");
            }
            if matches!(super::http::get(&url, None), Ok((200, _))) {
                return Ok(());
            }
            if start.elapsed() > timeout {
                bail!("{url} did not answer 200 within {}s{}", timeout.as_secs(), self.log_tail());
            }
            sleep(POLL);
        }
    }

    /// Stops the group: SIGTERM, up to [`GRACE`] for wrangler to exit, then
    /// SIGKILL for anything left in the group (workerd included).
    pub fn stop(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        let deadline = Instant::now() + GRACE;
        if self.child.try_wait()?.is_none() {
            signal_group(&self.child, Sig::Term);
            while self.child.try_wait()?.is_none() && Instant::now() < deadline {
                sleep(POLL);
            }
        }
        signal_group(&self.child, Sig::Kill);
        // Covers platforms without process groups; a no-op once it exited.
        let _ = self.child.kill();
        self.child.wait().context("waiting for wrangler")?;
        unregister_group(child_pid(&self.child));
        self.stopped = true;
        Ok(())
    }

    /// Leaves the process running when this is dropped (another invocation
    /// will stop it through its process group).
    pub fn detach(mut self) {
        unregister_group(child_pid(&self.child));
        self.stopped = true;
    }

    /// Kills the group at once (SIGKILL), as a crash would: wrangler gets no
    /// chance to clean up (its dev registry entry stays behind).
    pub fn kill(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        signal_group(&self.child, Sig::Kill);
        let _ = self.child.kill();
        self.child.wait().context("waiting for wrangler")?;
        unregister_group(child_pid(&self.child));
        self.stopped = true;
        Ok(())
    }

    /// The process group of wrangler and everything it started (workerd
    /// included): the benchmarks read its processes' CPU time and memory.
    pub fn group(&self) -> i32 {
        child_pid(&self.child)
    }

    /// The last lines of the log file, formatted for an error message.
    pub fn log_tail(&self) -> String {
        let Some(path) = &self.log else { return String::new() };
        let text = fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!("\n--- last lines of {} ---\n{tail}", path.display())
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("worker: stopping wrangler: {e:#}");
        }
    }
}

/// Whether Ctrl-C was received while wrangler ran.
pub(super) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// A port that was free a moment ago on 127.0.0.1.
pub(super) fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0 to find a free port")?;
    Ok(listener.local_addr()?.port())
}

/// Forwards Ctrl-C to wrangler's group while one runs; exits 130 otherwise
/// (installing a handler replaces the default "terminate" action).
fn install_ctrlc_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let result = ctrlc::set_handler(|| {
            INTERRUPTED.store(true, Ordering::SeqCst);
            let groups: Vec<i32> = GROUPS.iter().map(|g| g.load(Ordering::SeqCst)).filter(|&g| g != 0).collect();
            if groups.is_empty() {
                std::process::exit(130);
            }
            for pgid in groups {
                signal_pgid(pgid, Sig::Int);
            }
        });
        if let Err(e) = result {
            // Someone else (xtask main) owns Ctrl-C; wrangler is still
            // stopped by `Dev`'s Drop when that handler unwinds or exits.
            eprintln!("worker: not forwarding Ctrl-C to wrangler: {e}");
        }
    });
}

/// Remembers a running group for the Ctrl-C handler.
fn register_group(pgid: i32) {
    // Beyond the slots a group is still stopped by `Dev`'s Drop.
    let _ = GROUPS.iter().find(|g| g.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst).is_ok());
}

fn unregister_group(pgid: i32) {
    for g in &GROUPS {
        let _ = g.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

#[derive(Clone, Copy)]
enum Sig {
    Int,
    Term,
    Kill,
}

fn child_pid(child: &Child) -> i32 {
    i32::try_from(child.id()).unwrap_or(0)
}

fn signal_group(child: &Child, sig: Sig) {
    signal_pgid(child_pid(child), sig);
}

#[cfg(unix)]
fn own_group(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

#[cfg(unix)]
fn signal_pgid(pgid: i32, sig: Sig) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    if pgid <= 0 {
        return;
    }
    let sig = match sig {
        Sig::Int => Signal::SIGINT,
        Sig::Term => Signal::SIGTERM,
        Sig::Kill => Signal::SIGKILL,
    };
    // ESRCH (group already gone) is the expected outcome of a clean stop.
    let _ = killpg(Pid::from_raw(pgid), sig);
}

// Without process groups only wrangler itself can be stopped; workerd may
// outlive it.
#[cfg(not(unix))]
fn own_group(_cmd: &mut std::process::Command) {}

#[cfg(not(unix))]
fn signal_pgid(_pgid: i32, _sig: Sig) {}
