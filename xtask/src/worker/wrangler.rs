//! A wrangler child process serving the worker on workerd (`wrangler dev`,
//! or `serve.mjs` through wrangler's API without the inspector), its process
//! group, and Ctrl-C handling.
//!
//! wrangler starts workerd and, on rebuilds, a shell running worker-build.
//! It is spawned as the leader of a new process group so that stopping it
//! stops all of them (no orphaned workerd holding a port). Being outside the
//! terminal's foreground group, it no longer receives the terminal's Ctrl-C
//! itself: a handler forwards SIGINT to the group instead.

use std::fs::{self, File};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::Tools;

/// Process group of the running wrangler (0: none), for the Ctrl-C handler.
static GROUP: AtomicI32 = AtomicI32::new(0);
/// Set once Ctrl-C (or SIGTERM/SIGHUP) has been received.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// How long wrangler gets to shut down before the group is killed.
const GRACE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(250);

/// Where wrangler's output goes.
pub(crate) enum Output {
    /// The terminal (interactive `dev`).
    Inherit,
    /// A log file, whose tail is quoted in errors (`smoke`).
    File(PathBuf),
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
    /// The admin token it was started with (empty if the caller kept it).
    pub token: String,
    log: Option<PathBuf>,
    /// Set by [`Dev::stop`], so Drop does not signal a group id that may
    /// since have been reused.
    stopped: bool,
}

impl Dev {
    /// Serves the worker on 127.0.0.1:`port`, with or without the
    /// `inspector`. `env_files` are passed as `--env-file`, later ones
    /// overriding earlier ones; wrangler then reads only those (not
    /// `.dev.vars` by itself), so callers list `.dev.vars` first (see
    /// [`super::dev_env_files`]). Both ways take the same flags, and run the
    /// `[build] command` of wrangler.toml before serving.
    pub fn start(
        tools: &Tools,
        port: u16,
        persist_to: Option<&Path>,
        output: Output,
        env_files: &[PathBuf],
        inspector: Inspector,
    ) -> Result<Self> {
        install_ctrlc_handler();
        let mut cmd = match inspector {
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
        cmd.args(["--ip", "127.0.0.1", "--port", &port.to_string()]).stdin(Stdio::null());
        if let Some(dir) = persist_to {
            cmd.arg("--persist-to").arg(dir);
        }
        for file in env_files {
            cmd.arg("--env-file").arg(file);
        }
        let log = match output {
            Output::Inherit => None,
            Output::File(path) => {
                let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
                cmd.stdout(file.try_clone()?).stderr(file).env("FORCE_COLOR", "0");
                Some(path)
            }
        };
        own_group(&mut cmd);
        let child = cmd.spawn().with_context(|| format!("starting {:?}", cmd.get_program()))?;
        GROUP.store(child_pid(&child), Ordering::SeqCst);
        Ok(Self { child, base: format!("http://127.0.0.1:{port}"), token: String::new(), log, stopped: false })
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

    /// Waits for wrangler to exit (interactive dev); after Ctrl-C it gets
    /// [`GRACE`] to shut down, then the group is killed.
    pub fn wait(mut self) -> Result<()> {
        let mut interrupted_at = None;
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.stop()?;
                return exit_result(status, INTERRUPTED.load(Ordering::SeqCst));
            }
            if INTERRUPTED.load(Ordering::SeqCst) {
                let since = *interrupted_at.get_or_insert_with(Instant::now);
                if since.elapsed() > GRACE {
                    self.stop()?;
                    return Ok(());
                }
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
        GROUP.store(0, Ordering::SeqCst);
        self.stopped = true;
        Ok(())
    }

    /// The process group of wrangler and everything it started (workerd
    /// included): the benchmarks read its processes' CPU time and memory.
    pub fn group(&self) -> i32 {
        child_pid(&self.child)
    }

    /// Lines of the log file containing any of `needles`.
    pub fn log_matches(&self, needles: &[&str]) -> Vec<String> {
        let Some(path) = &self.log else { return Vec::new() };
        let text = fs::read_to_string(path).unwrap_or_default();
        text.lines().filter(|line| needles.iter().any(|n| line.contains(n))).map(str::to_string).collect()
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

fn exit_result(status: ExitStatus, interrupted: bool) -> Result<()> {
    if status.success() || interrupted { Ok(()) } else { bail!("wrangler exited with {status}") }
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
            match GROUP.load(Ordering::SeqCst) {
                0 => std::process::exit(130),
                pgid => signal_pgid(pgid, Sig::Int),
            }
        });
        if let Err(e) = result {
            // Someone else (xtask main) owns Ctrl-C; wrangler is still
            // stopped by `Dev`'s Drop when that handler unwinds or exits.
            eprintln!("worker: not forwarding Ctrl-C to wrangler: {e}");
        }
    });
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
