//! Multi-replica tests on a deterministic simulated network.

mod cond;
mod net;
mod properties;
mod scale;
mod scenarios;
