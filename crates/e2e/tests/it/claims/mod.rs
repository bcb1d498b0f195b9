//! End-to-end tests of the claims service (Remora on Durable Objects) on
//! workerd (`cargo xtask test` starts `wrangler dev` and sets HANDOFF_URL).
//! Each test uses its own namespace. Timings are generous (seconds where
//! the code needs milliseconds): the machine is small and shared.

mod api;
mod evictions;
mod heartbeat;
mod hygiene;
mod jobs;
mod link;
mod races;
mod restore;
