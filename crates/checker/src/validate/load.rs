//! Reading a run's traces: every file of a directory is pages of frames
//! (`protocol::handoff::trace`); the rows of one host object form one
//! stream, in the order the object took its steps.

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
    #[error("no trace rows in {0}")]
    Empty(PathBuf),
}

/// The streams of every `*.trace` file in `dir`.
pub fn load_dir(dir: &Path) -> Result<Vec<Stream>, LoadError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LoadError::Io { path, source }
    };
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort();
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
    rows.into_iter().map(|(object, entries)| stream(object, entries)).collect()
}

fn stream(object: u64, mut entries: Vec<Entry>) -> Result<Stream, LoadError> {
    entries.sort_by_key(|e| e.seq);
    for (expected, e) in (0u64..).zip(&entries) {
        if e.seq != expected {
            return Err(LoadError::Gap { object, expected, found: e.seq });
        }
    }
    let Some(Entry { step: Step::Boot { config, me, .. }, .. }) = entries.first() else {
        return Err(LoadError::NoBoot { object });
    };
    let (replica, coordinator) = (*me, config.coordinator());
    Ok(Stream { object, replica, coordinator, entries })
}
