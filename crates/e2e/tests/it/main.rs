//! End-to-end tests of the Handoff Worker on workerd, one binary (`cargo
//! xtask test` starts `wrangler dev` and sets HANDOFF_URL and
//! HANDOFF_TOKEN). `kv`, `claims`, `namespaces` and `client` (the
//! `handoff-client` crate against the Worker) run in parallel, each test in
//! its own namespace; `serial` runs after them, alone and one test at a time
//! (`cargo xtask e2e` runs `--skip serial::`, then `serial::`).

mod claims;
mod client;
mod kv;
mod namespaces;
mod serial;
