//! The verdicts of a check (per history, per key, the violation found),
//! the effort that bounds it, and the register's state at a cut, which a
//! violation starts from.

use std::collections::BTreeMap;
use std::time::Duration;

use super::op::{Op, Val};

/// Bounds on the work of the search, so that a check always ends.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    /// Steps of the register one tester run may take.
    pub steps_per_run: u64,
    /// How long the minimiser may shrink a violation.
    pub minimiser_time: Duration,
}

impl Default for Effort {
    fn default() -> Self {
        Effort { steps_per_run: 2_000_000, minimiser_time: Duration::from_secs(60) }
    }
}

/// The verdict on a whole history.
#[derive(Debug)]
pub struct Report {
    /// Per key.
    pub keys: BTreeMap<String, KeyReport>,
    /// Answers that showed a stamp below one acknowledged before they were
    /// asked (`stamps`), one line each.
    pub stamp_regressions: Vec<String>,
}

/// The verdict on one key's history.
#[derive(Debug)]
pub struct KeyReport {
    /// Operations of the key that may have had an effect.
    pub ops: usize,
    pub segments: usize,
    /// Operations in the longest segment.
    pub longest_segment: usize,
    pub tester_runs: usize,
    /// Tester runs that ran out of steps (their question counted as "yes",
    /// which can only hide a violation): a check with any is undecided.
    pub undecided: usize,
    pub violation: Option<Violation>,
}

/// A sub-history that no linearization explains.
#[derive(Debug)]
pub struct Violation {
    /// The register's possible states before it: the value, and how many
    /// ambiguous DELETEs invoked earlier may still take effect.
    pub before: Vec<(Val, usize)>,
    /// The writes of the values before it and of the values it read, when
    /// they are not among its operations.
    pub context: Vec<Op>,
    /// The offending operations, by invocation; ambiguous PUTs that a read
    /// saw are shown with that read's return as their return.
    pub ops: Vec<Op>,
    /// Operations in the segment it was cut from.
    pub segment_ops: usize,
    /// No single operation can be removed (false: the minimiser ran out of
    /// time first).
    pub minimal: bool,
}

impl Report {
    pub fn linearizable(&self) -> bool {
        self.keys.values().all(|k| k.violation.is_none()) && self.stamp_regressions.is_empty()
    }

    pub fn undecided(&self) -> usize {
        self.keys.values().map(|k| k.undecided).sum()
    }
}

/// The register's state at a cut: its value, and how many unconditional
/// ambiguous DELETEs invoked before the cut have not taken effect (each
/// still may). The ambiguous conditional DELETEs that may still take effect
/// are those that expect the value: one that took effect would have
/// replaced it for good.
pub(super) type State = (Val, usize);
