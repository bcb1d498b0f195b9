//! End-to-end tests of the Handoff Worker on workerd (`cargo xtask test`
//! starts `wrangler dev` and sets HANDOFF_URL). Every test uses its own
//! namespace, so they run in parallel; none is skipped without the Worker.

mod api;
mod budget;
mod burst;
mod conditions;
mod evictions;
mod idle;
mod internal;
mod reads;
mod tombstones;
mod window;
