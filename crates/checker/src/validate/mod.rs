//! Trace validation: the steps the replicas of one namespace took on the
//! real runtime (recorded by their hosts, `protocol::handoff::trace`),
//! merged into one run that must be a behaviour of the implementation
//! model, with the spec's invariants holding at every step
//! (docs/verification.md section 1.6).
//!
//! - `load`: the trace files of a run, one stream per host object;
//! - `merge`: the merge, the replay through the real code, the model's
//!   conditions on each step;
//! - `invariants`: the spec's invariants on the replayed replicas.

mod invariants;
mod load;
mod merge;

use std::path::Path;

pub use invariants::CHECKED;
pub(crate) use invariants::holds;
pub use load::LoadError;
pub use merge::{Fitted, Misfit};

/// Why a run did not validate.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("merged step {}: {}\n  {}\n  after:\n    {}", .0.at, .0.reason, .0.step, .0.context.join("\n    "))]
    Misfit(Box<Misfit>),
}

/// Validates the run whose traces are the `*.trace` files in `dir`.
pub fn validate_dir(dir: &Path) -> Result<Fitted, ValidateError> {
    let streams = load::load_dir(dir)?;
    merge::replay(&streams).map_err(|m| ValidateError::Misfit(Box::new(m)))
}

#[cfg(test)]
mod tests;
