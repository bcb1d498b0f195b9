//! Model checking for the Handoff and Remora protocols.
//!
//! - [`cfg`]: the TLC `.cfg` parser (the one source of constants).
//! - [`spec`]: the interface a spec mirror offers ([`spec::Mirror`]).
//! - [`handoff`], [`remora`]: 1:1 stateright mirrors of `tla/Handoff.tla`
//!   and `tla/RemoraClaimActivation.tla`.
//! - [`run`]: runs a mirror exhaustively and reports in one shape.

pub mod cfg;
pub mod claim;
pub mod handoff;
pub mod handoff_impl;
pub mod registry;
pub mod remora;
pub mod run;
pub mod spec;
