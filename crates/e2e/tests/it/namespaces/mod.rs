//! End-to-end tests of authentication and of namespaces' lives on workerd
//! (`cargo xtask test` starts `wrangler dev` and sets HANDOFF_URL and
//! HANDOFF_TOKEN): tokens and rights, creating, reading, listing and
//! deleting namespaces, requests to unknown namespaces, idle expiry. Each
//! test uses its own namespaces.

mod access;
mod expiry;
mod lifecycle;
