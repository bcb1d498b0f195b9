//! Multi-replica tests on a deterministic simulated network.

mod net;
mod scenarios;
mod properties;
