//! Runs a checker process, keeps its whole output, and shows its progress
//! lines live (at most one every few seconds) so long runs are not silent.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

const EVERY: Duration = Duration::from_secs(5);

/// A finished process's output.
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

/// Runs `cmd`; every stdout or stderr line for which `progress` returns
/// text is a candidate progress line, printed to stderr as `label: text`.
pub fn run(mut cmd: Command, label: &str, progress: impl Fn(&str) -> Option<String>) -> Result<Output> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let (tx, rx) = mpsc::channel::<(bool, String)>();
    let readers = [
        child.stdout.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child.stderr.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .enumerate()
    .filter_map(|(i, r)| r.map(|r| (i == 0, r)))
    .map(|(is_stdout, r)| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(r).lines().map_while(Result::ok) {
                if tx.send((is_stdout, line)).is_err() {
                    break;
                }
            }
        })
    })
    .collect::<Vec<_>>();
    drop(tx);

    let mut out = Output { stdout: String::new(), stderr: String::new(), code: None };
    let mut last_shown = Instant::now();
    for (is_stdout, line) in rx {
        if let Some(text) = progress(&line)
            && last_shown.elapsed() >= EVERY
        {
            eprintln!("  {label}: {text}");
            last_shown = Instant::now();
        }
        let buf = if is_stdout { &mut out.stdout } else { &mut out.stderr };
        buf.push_str(&line);
        buf.push('\n');
    }
    for r in readers {
        let _ = r.join();
    }
    out.code = child.wait().with_context(|| format!("waiting for {program}"))?.code();
    Ok(out)
}
