//! Reading a run's traces: every file of a directory is pages of frames
//! (`protocol::handoff::trace`); the rows of one host object form one
//! stream, in the order the object took its steps. An `*.end` file beside
//! them names where a host object's trace stood when the run was paused
//! (`{"object": <16 hex digits>, "steps": n}`, the pause hook's answer):
//! its stream must hold at least those steps, so a trace cut at its end is
//! found, not validated as its prefix.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use protocol::handoff::ReplicaId;
use protocol::handoff::trace::{self, Entry, Row, Step};

/// The steps one host object (one Durable Object instance) took.
pub struct Stream {
    pub object: u64,
    pub replica: ReplicaId,
    pub coordinator: ReplicaId,
    pub entries: Vec<Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("reading {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: a frame is cut short (a page was not fetched whole)")]
    Truncated { path: PathBuf },
    #[error("{path}: a row does not decode: {source}")]
    Decode { path: PathBuf, source: postcard::Error },
    #[error("object {object:016x}: {steps} steps were taken but not recorded; the trace is incomplete")]
    Lost { object: u64, steps: u64 },
    #[error("object {object:016x}: its first recorded step is not a boot")]
    NoBoot { object: u64 },
    #[error("object {object:016x}: step {expected} is missing (found {found} after it)")]
    Gap { object: u64, expected: u64, found: u64 },
    #[error("object {object:016x}: step {seq} is at host time {now} ms, before its previous step ({before} ms)")]
    TimeBack { object: u64, seq: u64, now: u64, before: u64 },
    #[error("object {object:016x}: step {seq} ends in an older instance than its previous step")]
    InstanceBack { object: u64, seq: u64 },
    #[error("{path}: not a trace end ({{\"object\": hex, \"steps\": n}}): {reason}")]
    BadEnd { path: PathBuf, reason: String },
    #[error("object {object:016x}: the trace holds {held} steps, but the object had taken {steps} when paused")]
    CutShort { object: u64, held: u64, steps: u64 },
    #[error("no trace rows in {0}")]
    Empty(PathBuf),
}

/// Where a host object's trace stood when the run was paused.
#[derive(serde::Deserialize)]
struct End {
    object: String,
    steps: u64,
}

/// The streams of every `*.trace` file in `dir`.
pub fn load_dir(dir: &Path) -> Result<Vec<Stream>, LoadError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LoadError::Io { path, source }
    };
    let files = files_with(dir, "trace")?;
    let mut rows: BTreeMap<u64, Vec<Entry>> = BTreeMap::new();
    for path in &files {
        let bytes = fs::read(path).map_err(io(path))?;
        for frame in trace::frames(&bytes) {
            let (object, row) = frame.ok_or_else(|| LoadError::Truncated { path: path.clone() })?;
            match Row::decode(row).map_err(|source| LoadError::Decode { path: path.clone(), source })? {
                Row::Step(entry) => rows.entry(object).or_default().push(*entry),
                Row::Lost { steps } => return Err(LoadError::Lost { object, steps }),
            }
        }
    }
    if rows.is_empty() {
        return Err(LoadError::Empty(dir.to_path_buf()));
    }
    let streams: Vec<Stream> =
        rows.into_iter().map(|(object, entries)| stream(object, entries)).collect::<Result<_, _>>()?;
    for path in files_with(dir, "end")? {
        let bad = |reason: String| LoadError::BadEnd { path: path.clone(), reason };
        let text = fs::read_to_string(&path).map_err(io(&path))?;
        let end: End = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let object = u64::from_str_radix(&end.object, 16).map_err(|e| bad(e.to_string()))?;
        let held = streams.iter().find(|s| s.object == object).map_or(0, |s| s.entries.len() as u64);
        if held < end.steps {
            return Err(LoadError::CutShort { object, held, steps: end.steps });
        }
    }
    Ok(streams)
}

/// The files of `dir` named `*.{extension}`, in name order.
fn files_with(dir: &Path, extension: &str) -> Result<Vec<PathBuf>, LoadError> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|source| LoadError::Io { path: dir.to_path_buf(), source })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == extension))
        .collect();
    files.sort();
    Ok(files)
}

fn stream(object: u64, mut entries: Vec<Entry>) -> Result<Stream, LoadError> {
    entries.sort_by_key(|e| e.seq);
    for (expected, e) in (0u64..).zip(&entries) {
        if e.seq != expected {
            return Err(LoadError::Gap { object, expected, found: e.seq });
        }
    }
    // The code assumes host time never goes back (timers, instances born
    // at their boot time) and an instance is replaced only by a newer one
    // (a reboot into a newer generation); the model's clock only moves on.
    for pair in entries.windows(2) {
        let [before, e] = pair else { continue };
        if e.now < before.now {
            return Err(LoadError::TimeBack { object, seq: e.seq, now: e.now.0, before: before.now.0 });
        }
        if e.instance < before.instance {
            return Err(LoadError::InstanceBack { object, seq: e.seq });
        }
    }
    let Some(Entry { step: Step::Boot { config, me, .. }, .. }) = entries.first() else {
        return Err(LoadError::NoBoot { object });
    };
    let (replica, coordinator) = (*me, config.coordinator());
    Ok(Stream { object, replica, coordinator, entries })
}
