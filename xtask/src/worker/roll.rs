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

use super::http;
use super::scripts::{Role, Script};

/// The order of a roll: the peers one at a time, the coordinator, the front.
pub const PLAN: [Script; 4] = [Script::Role(Role::R1), Script::Role(Role::R2), Script::Role(Role::R0), Script::Front];

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
