//! End-to-end tests of the Handoff Worker on workerd, one binary (`cargo
//! xtask test` starts `wrangler dev` and sets HANDOFF_URL and
//! HANDOFF_TOKEN). `kv`, `claims`, `namespaces` and `client` (the
//! `handoff-client` crate against the Worker) run in parallel, each test in
//! its own namespace; `serial` runs after them, alone and one test at a
//! time (`cargo xtask e2e` runs `--skip serial:: --skip memory:: --skip
//! faults::`, then `serial::`); `faults::` and `memory::` each run on a
//! server of their own (xtask kills and rolls the first one's scripts; the
//! second has a small isolate cap).

mod claims;
mod client;
mod faults;
mod kv;
mod memory;
mod namespaces;
mod serial;
