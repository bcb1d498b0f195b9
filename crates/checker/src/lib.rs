//! Model checking for the Handoff and Remora protocols.
//!
//! - [`cfg`]: the TLC `.cfg` parser (the one source of constants).
//! - [`spec`]: the interface every model offers ([`spec::Mirror`]).
//! - [`compact`]: the pieces compact states are made of, and their names.
//! - [`mirror`]: 1:1 stateright mirrors of the TLA+ specs in `tla/`.
//! - [`model`]: models that run the real protocol code and refine a spec.
//! - [`registry`]: which model checks which TLA+ module.
//! - [`search`]: how a run explores (breadth-first, depth-first, random walks).
//! - [`engine`]: the exhaustive search (breadth- and depth-first, threaded).
//! - [`run`]: runs a model and reports in one shape.
//! - [`validate`]: checks the traces of a live run against the implementation model.

pub mod cfg;
pub mod compact;
pub mod engine;
pub mod mirror;
pub mod model;
pub mod properties;
pub mod registry;
pub mod run;
pub mod search;
pub mod spec;
pub mod validate;
