//! The benchmark baselines `cargo xtask bench kv` compares the replicated
//! store against, reached through the same Worker code path
//! (`/_bench/{mem|sql|echo}/{ns}/kv/{key}`, test hooks only):
//!
//! - [`MemBaseline`]: one Durable Object per namespace holding the map in
//!   memory. No replication, no keepalive: it loses everything when idle
//!   (the e2e idle test uses it as the control that hibernation happens).
//! - [`SqlBaseline`]: one Durable Object per namespace writing every value
//!   to its SQLite storage; a write is answered once durable (the output
//!   gate holds the response until the storage write is confirmed).
//! - [`EchoBaseline`] (`echo.rs`, PUT only): the floor of one hop, one
//!   object sending a replica-sized message to a second that just answers.
//!
//! All answer like the replicated store (`{"key","ep","ver","wid"}` on a
//! write, raw bytes and `handoff-*` headers on a read) with `ep` = 0 and a
//! per-key version, so the client side of the benchmark is identical.

mod echo;
mod maps;
mod request;

pub use echo::EchoBaseline;
pub(crate) use echo::front as echo_front;
pub use maps::{MemBaseline, SqlBaseline};
