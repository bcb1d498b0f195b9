//! A rolling restart of a deployment, one script at a time, never two
//! replicas of a namespace down at once: r1's script, then r2's, then r0's
//! (the coordinator last: while it recovers, clients get 503s), then the
//! front. After each role, every live namespace's replica of that role
//! must be a new instance and ready again (`GET /v1/{ns}/status`) before
//! the next script goes; a step that does not recover in time stops the
//! roll with the namespace and the status it last saw. The same plan for
//! `cargo xtask dev roll` (restarting local processes) and `cargo xtask
//! deploy` (uploading scripts): only the step that replaces a script
//! differs.

use std::collections::BTreeMap;
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use protocol::handoff::{MIN_PROTOCOL_VERSION, PROTOCOL_VERSION};

use super::http;
use super::scripts::{Role, Script};

/// The order of a roll: the peers one at a time, the coordinator, the front.
pub const PLAN: [Script; 4] = [Script::Role(Role::R1), Script::Role(Role::R2), Script::Role(Role::R0), Script::Front];

/// The replicas' wire versions of the deployment at `base`: (the newest
/// its build reads, the one it writes), from `/health`; a build older than
/// that field is taken to be the oldest version this one reads.
pub fn live_versions(base: &str) -> Result<(u16, u16)> {
    let (status, body) = http::get(&format!("{base}/health"), None)?;
    if status != 200 {
        bail!("GET {base}/health answered {status}: {body}");
    }
    let health: Value = serde_json::from_str(&body).context("GET /health's answer")?;
    let field = |name: &str| health[name].as_u64().and_then(|v| u16::try_from(v).ok());
    let reads = field("protocol_version").unwrap_or(MIN_PROTOCOL_VERSION);
    Ok((reads, field("wire_version").unwrap_or(reads)))
}

/// The rolls that bring a deployment whose build reads up to `live` (and
/// writes `live_writes`) onto this build, each as the wire version its
/// scripts are told to write (`None`: their own). A build that reads a
/// newer version than the live one rolls twice: first still writing the
/// version the live replicas read, then, once every replica reads the new
/// one, writing it. A build older than the one before this one cannot be
/// rolled onto without a gap (this one does not read what it writes).
pub fn wire_phases(live: u16, live_writes: u16) -> Result<Vec<Option<u16>>> {
    if live_writes < MIN_PROTOCOL_VERSION {
        bail!(
            "the live replicas write wire version {live_writes}, which this build (reading {MIN_PROTOCOL_VERSION}..={PROTOCOL_VERSION}) cannot read: deploy the release in between first"
        );
    }
    Ok(if live < PROTOCOL_VERSION { vec![Some(live.max(MIN_PROTOCOL_VERSION)), None] } else { vec![None] })
}

/// What one step of a roll took.
pub struct Step {
    /// Replacing the script (restart, upload).
    pub replaced_in: Duration,
    /// From then until every live namespace's replica was ready again.
    pub recovered_in: Duration,
    /// The namespaces whose replica it waited for.
    pub namespaces: usize,
}

/// Rolls the deployment at `base` (admin `token`): `replace` replaces one
/// script; each role must recover within `timeout`.
pub fn roll(
    base: &str,
    token: &str,
    timeout: Duration,
    mut replace: impl FnMut(Script) -> Result<()>,
) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    for script in PLAN {
        println!("roll: replacing {}", script.label());
        let step = roll_one(base, token, timeout, script, &mut replace)?;
        println!(
            "roll: {} replaced in {:.1} s, its replicas in {} namespaces ready again {:.1} s later",
            script.label(),
            step.replaced_in.as_secs_f64(),
            step.namespaces,
            step.recovered_in.as_secs_f64()
        );
        steps.push(step);
    }
    Ok(steps)
}

/// Replaces one script, then waits as [`roll`] does after it.
pub fn roll_one(
    base: &str,
    token: &str,
    timeout: Duration,
    script: Script,
    replace: impl FnOnce(Script) -> Result<()>,
) -> Result<Step> {
    let before = match script {
        Script::Role(role) => instances(base, token, role)?,
        Script::Front => BTreeMap::new(),
    };
    let started = Instant::now();
    replace(script).with_context(|| format!("replacing {}", script.label()))?;
    let replaced_in = started.elapsed();
    let recovered = Instant::now();
    match script {
        Script::Role(role) => wait_recovered(base, token, role, &before, timeout)?,
        Script::Front => wait_front(base, timeout)?,
    }
    Ok(Step { replaced_in, recovered_in: recovered.elapsed(), namespaces: before.len() })
}

/// Every live namespace's replica of `role`: its object id, or `None` if
/// it does not run (it need not recover: it holds nothing).
fn instances(base: &str, token: &str, role: Role) -> Result<BTreeMap<String, Option<String>>> {
    let (status, body) = http::get(&format!("{base}/v1"), Some(token))?;
    if status != 200 {
        bail!("GET {base}/v1 answered {status}: {body}");
    }
    let list: Value = serde_json::from_str(&body).context("GET /v1's answer")?;
    let mut out = BTreeMap::new();
    for info in list["namespaces"].as_array().into_iter().flatten() {
        let (Some(ns), Some("active")) = (info["namespace"].as_str(), info["state"].as_str()) else { continue };
        let line = replica_line(base, token, ns, role)?;
        let running = line.as_ref().filter(|l| l["status"].as_str().is_some_and(|s| s != "stopped"));
        out.insert(ns.to_string(), running.and_then(|l| l["object"].as_str().map(str::to_string)));
    }
    Ok(out)
}

/// The status line of `ns`'s replica of `role`, if the namespace still exists.
fn replica_line(base: &str, token: &str, ns: &str, role: Role) -> Result<Option<Value>> {
    let url = format!("{base}/v1/{}/status", encode(ns));
    let (status, body) = http::get(&url, Some(token))?;
    match status {
        200 => {}
        404 => return Ok(None),
        _ => bail!("GET {url} answered {status}: {body}"),
    }
    let status: Value = serde_json::from_str(&body).context("a status answer")?;
    let line = status["replicas"].as_array().into_iter().flatten().find(|l| l["name"].as_str() == Some(role.name()));
    Ok(line.cloned())
}

/// Waits until each namespace of `before` whose replica of `role` ran has
/// one again that is another instance and ready (or the namespace is gone).
fn wait_recovered(
    base: &str,
    token: &str,
    role: Role,
    before: &BTreeMap<String, Option<String>>,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    for (ns, old) in before {
        let Some(old) = old else { continue };
        loop {
            let line = replica_line(base, token, ns, role).unwrap_or(None);
            let Some(line) = line else { break };
            let new = line["object"].as_str().is_some_and(|o| o != old);
            if new && line["status"].as_str() == Some("ready") {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "{ns}:{role} did not recover within {} s after its script was replaced; its last status: {line}",
                    timeout.as_secs()
                );
            }
            sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

fn wait_front(base: &str, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while !matches!(http::get(&format!("{base}/health"), None), Ok((200, _))) {
        if Instant::now() > deadline {
            bail!("the front did not answer /health within {} s after it was replaced", timeout.as_secs());
        }
        sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// A namespace as one path segment.
fn encode(ns: &str) -> String {
    ns.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_protocol_rolls_once_in_its_own_version() {
        assert_eq!(wire_phases(PROTOCOL_VERSION, PROTOCOL_VERSION).ok(), Some(vec![None]));
    }

    #[test]
    fn a_newer_protocol_rolls_first_writing_the_old_version_then_its_own() {
        let old = PROTOCOL_VERSION - 1;
        assert_eq!(wire_phases(old, old).ok(), Some(vec![Some(old), None]));
    }

    #[test]
    fn a_half_done_upgrade_finishes_with_the_second_roll() {
        // The first roll ran (the live build is this one, writing the old
        // version): one roll writing the new version is what is left.
        assert_eq!(wire_phases(PROTOCOL_VERSION, PROTOCOL_VERSION - 1).ok(), Some(vec![None]));
    }

    #[test]
    fn a_build_too_old_to_be_read_is_refused() {
        assert!(wire_phases(MIN_PROTOCOL_VERSION - 1, MIN_PROTOCOL_VERSION - 1).is_err());
    }
}
