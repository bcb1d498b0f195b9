//! The deployment's plain variables (`[vars]` in wrangler.toml, `.dev.vars`
//! and `--var` locally), read in one place.

use worker::Env;

use crate::names::ReplicaName;

/// "1" turns the test hooks on: only `wrangler dev` sets it (from
/// `.dev.vars`); deployed workers get "0" from `[vars]`. Missing means off.
const TEST_HOOKS: &str = "HANDOFF_TEST_HOOKS";
/// "1" (with the test hooks) makes replicas record their steps.
const TRACE: &str = "HANDOFF_TRACE";
/// The default memory budget of a namespace created without one.
const BUDGET_BYTES: &str = "HANDOFF_BUDGET_BYTES";
/// The bytes the replicas of one isolate may hold together.
const ISOLATE_CAP_BYTES: &str = "HANDOFF_ISOLATE_CAP_BYTES";
/// The replica role a role script serves (`r0`, `r1`, `r2`).
const ROLE: &str = "HANDOFF_ROLE";
/// The wire version replicas write (the first roll of a deploy that raises
/// the protocol version sets the old one: `replica/versions.rs`).
pub const WIRE_VERSION: &str = "HANDOFF_WIRE_VERSION";

fn flag(env: &Env, name: &str) -> bool {
    env.var(name).is_ok_and(|v| v.to_string() == "1")
}

/// Whether the test hooks are on.
pub fn test_hooks(env: &Env) -> bool {
    flag(env, TEST_HOOKS)
}

/// Whether replicas record their steps for trace validation (test hooks only).
pub fn trace(env: &Env) -> bool {
    test_hooks(env) && flag(env, TRACE)
}

/// The deployment's default memory budget of a namespace, if set.
pub fn budget_bytes(env: &Env) -> Option<u64> {
    env.var(BUDGET_BYTES).ok().and_then(|v| v.to_string().parse().ok())
}

/// The bytes the replicas of one isolate may hold together
/// ([`crate::isolate::CAP_BYTES`] unless set).
pub fn isolate_cap_bytes(env: &Env) -> usize {
    env.var(ISOLATE_CAP_BYTES).ok().and_then(|v| v.to_string().parse().ok()).unwrap_or(crate::isolate::CAP_BYTES)
}

/// The replica role this script serves, if it is a role script: its
/// `Replica` objects must all be of that role.
pub fn role(env: &Env) -> Option<ReplicaName> {
    env.var(ROLE).ok().and_then(|v| ReplicaName::parse(&v.to_string()))
}

/// [`WIRE_VERSION`], if set (checked by `replica::versions`).
pub fn wire_version(env: &Env) -> Option<String> {
    env.var(WIRE_VERSION).ok().map(|v| v.to_string())
}
