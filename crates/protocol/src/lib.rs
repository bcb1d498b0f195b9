//! Sans-IO protocol state machines shared by the model checker and the
//! Durable Object worker: no I/O, no clock, no randomness inside; time and
//! ids are passed in, outputs are returned.
#![forbid(unsafe_code)]
// The Worker links this crate: a panic there wipes every Durable Object in
// the isolate, so the Worker's no-panic deny list holds here too (tests may
// unwrap). `cargo xtask tidy` checks it on wasm32.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

pub mod claim;

pub mod handoff;
