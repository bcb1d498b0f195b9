//! Multi-replica tests on a deterministic simulated network.

mod cond;
mod convergence;
mod net;
mod properties;
mod scale;
mod scenarios;
