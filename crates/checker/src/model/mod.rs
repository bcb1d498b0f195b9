//! Models that run the real code of `crates/protocol` and check it against
//! a spec by refinement: every state maps to a state of the spec, every
//! step to a step of the spec's mirror or a stutter.
//!
//! - [`handoff`] runs the Handoff replicas, refining `tla/HandoffZombie.tla`;
//! - [`claim`] runs the claim procedures, refining `tla/RemoraClaimHeartbeat.tla`.

pub mod claim;
pub mod generations;
pub mod handoff;
