//! Sans-IO protocol state machines shared by the model checker and the
//! Durable Object worker: no I/O, no clock, no randomness inside; time and
//! ids are passed in, outputs are returned.
#![forbid(unsafe_code)]

pub mod claim;

pub mod handoff;
