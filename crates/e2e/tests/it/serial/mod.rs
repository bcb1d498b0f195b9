//! End-to-end tests that must run alone (`cargo xtask test` runs this
//! binary after the others, one test at a time): the limit on namespaces
//! fills the deployment; the reaper test measures latencies, which other
//! tests running at the same time would disturb; the linearizability test
//! needs its operation and eviction counts within a time limit.

mod coordination;
mod limits;
mod linearizability;
mod reaper;
