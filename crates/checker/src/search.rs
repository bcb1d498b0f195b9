//! How a model's state space is explored: one enum for a cfg's
//! `\* SEARCH` line, the CLI's `--search` and the report.

use serde::Serialize;

/// How to explore the state space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    /// Exhaustive, breadth-first: counterexamples are shortest. Keeps the
    /// frontier in memory.
    #[default]
    Bfs,
    /// Exhaustive, depth-first: keeps only fingerprints, for bounds whose
    /// breadth-first frontier does not fit in memory.
    Dfs,
    /// Random walks for a time budget (`run::Walks`): for bounds too large
    /// to explore exhaustively. Every step is checked as in an exhaustive
    /// run; finding nothing proves nothing.
    Simulation,
}

impl Search {
    /// `"bfs"`, `"dfs"` or `"simulation"`, as written in a cfg and on the
    /// command line.
    pub fn name(self) -> &'static str {
        match self {
            Search::Bfs => "bfs",
            Search::Dfs => "dfs",
            Search::Simulation => "simulation",
        }
    }
}
