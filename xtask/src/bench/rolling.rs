//! `cargo xtask bench scale`'s rolling restart: with the namespace at its
//! budget and clients overwriting keys it holds (a new key would get 507),
//! r1's, r2's and r0's scripts are
//! restarted in turn (each its own process: fresh memory), each once every
//! namespace's replica of the role before it is ready again — what `cargo
//! xtask dev roll` and a deploy do (the front, which holds no replica, is
//! left out: locally its restart is a port closed for a moment, on
//! Cloudflare a deploy of it is atomic). Measured: the roll's total time,
//! the 503s clients got, the longest time without a successful write, and
//! that every acknowledged write reads back afterwards. Issue 29's target:
//! that gap under 2 s at the default budget.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use serde::Serialize;

use super::shared::{Op, agent, request};
use crate::worker::roll;
use crate::worker::scripts::{Role, Script};
use crate::worker::{Cluster, Tools};

/// The longest write gap allowed (issue 29).
pub(super) const MAX_GAP: Duration = Duration::from_secs(2);
/// Clients overwriting keys during the roll, each its own keys.
const WRITERS: usize = 2;
const KEYS_PER_WRITER: usize = 8;
/// The keys the roll overwrites: as many, already written, no smaller
/// than a [`value`].
pub(super) const KEYS: usize = WRITERS * KEYS_PER_WRITER;
/// Writing goes on this long before the roll and after it.
const MARGIN: Duration = Duration::from_secs(2);
const ROLE_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Serialize)]
pub(super) struct Rolled {
    /// Per role: seconds to restart its script, then until its replicas
    /// were ready again.
    pub(super) steps: Vec<(&'static str, f64, f64)>,
    pub(super) total_s: f64,
    pub(super) writes_ok: u64,
    pub(super) writes_503: u64,
    /// Any other failure (none expected), the first few.
    pub(super) other_failures: Vec<String>,
    pub(super) longest_gap_s: f64,
    /// Keys whose last acknowledged value did not read back.
    pub(super) lost: Vec<String>,
}

/// What one writer saw.
#[derive(Default)]
struct Seen {
    /// Per key: the last acknowledged sequence number.
    acked: Vec<Option<u64>>,
    ok: u64,
    unavailable: u64,
    other: Vec<String>,
}

/// Rolls r1, r2, r0 of `server` under writes to `keys` of `ns`.
pub(super) fn measure(server: &mut Cluster, tools: &Tools, ns: &str, keys: &[String]) -> Result<Rolled> {
    ensure!(keys.len() == KEYS, "the roll overwrites {KEYS} keys, not {}", keys.len());
    let (base, token) = (server.base.clone(), server.token.clone());
    let stop = Arc::new(AtomicBool::new(false));
    // The time of every successful write, for the gaps.
    let successes = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (base, token, ns) = (base.clone(), token.clone(), ns.to_string());
            let keys: Vec<String> = keys.iter().skip(w * KEYS_PER_WRITER).take(KEYS_PER_WRITER).cloned().collect();
            let (stop, successes) = (stop.clone(), successes.clone());
            thread::spawn(move || {
                let agent = agent();
                let mut seen = Seen { acked: vec![None; KEYS_PER_WRITER], ..Seen::default() };
                let mut seq = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    seq += 1;
                    let k = usize::try_from(seq).unwrap_or(0) % KEYS_PER_WRITER;
                    let Some(key) = keys.get(k) else { break };
                    let url = format!("{base}/v1/{ns}/kv/{key}");
                    let (status, body) = request(&agent, &token, Op::Put, &url, &value(seq));
                    match status {
                        200 => {
                            seen.ok += 1;
                            if let Some(slot) = seen.acked.get_mut(k) {
                                *slot = Some(seq);
                            }
                            if let Ok(mut s) = successes.lock() {
                                s.push(Instant::now());
                            }
                        }
                        503 => {
                            seen.unavailable += 1;
                            thread::sleep(Duration::from_millis(50));
                        }
                        _ => {
                            if seen.other.len() < 5 {
                                seen.other.push(format!("{status} {}", String::from_utf8_lossy(&body)));
                            }
                            thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
                seen
            })
        })
        .collect();
    thread::sleep(MARGIN);
    let started = Instant::now();
    let mut steps = Vec::new();
    let mut failed = None;
    for role in [Role::R1, Role::R2, Role::R0] {
        let step = roll::roll_one(&base, &token, ROLE_TIMEOUT, Script::Role(role), |script| {
            server.restart(tools, script, false).map(|_| ())
        });
        match step {
            Ok(s) => {
                println!(
                    "bench: roll: {role} restarted in {:.1} s, ready again {:.1} s later",
                    s.replaced_in.as_secs_f64(),
                    s.recovered_in.as_secs_f64()
                );
                steps.push((role.name(), s.replaced_in.as_secs_f64(), s.recovered_in.as_secs_f64()));
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let total_s = started.elapsed().as_secs_f64();
    thread::sleep(MARGIN);
    stop.store(true, Ordering::Relaxed);
    let seen: Vec<Seen> = writers.into_iter().filter_map(|w| w.join().ok()).collect();
    if let Some(e) = failed {
        return Err(e.context("the rolling restart"));
    }
    ensure!(seen.len() == WRITERS, "a writer thread panicked");
    let times = successes.lock().map(|s| s.clone()).unwrap_or_default();
    let longest_gap_s = longest_gap(&times, started).as_secs_f64();
    let mut lost = Vec::new();
    let agent = agent();
    for (w, s) in seen.iter().enumerate() {
        for (k, acked) in s.acked.iter().enumerate() {
            let (Some(acked), Some(key)) = (acked, keys.get(w * KEYS_PER_WRITER + k)) else { continue };
            let (status, body) = request(&agent, &token, Op::Get, &format!("{base}/v1/{ns}/kv/{key}"), &[]);
            // A later write may have committed unacknowledged: newer is fine.
            let read = (status == 200).then(|| sequence(&body)).flatten();
            if read.is_none_or(|r| r < *acked) {
                lost.push(format!("{key}: acknowledged {acked}, read {status} {read:?}"));
            }
        }
    }
    Ok(Rolled {
        steps,
        total_s,
        writes_ok: seen.iter().map(|s| s.ok).sum(),
        writes_503: seen.iter().map(|s| s.unavailable).sum(),
        other_failures: seen.into_iter().flat_map(|s| s.other).collect(),
        longest_gap_s,
        lost,
    })
}

/// The longest time without a success from `from` on (the successes are
/// in order of completion).
fn longest_gap(successes: &[Instant], from: Instant) -> Duration {
    let mut last = from;
    let mut longest = Duration::ZERO;
    for &t in successes.iter().filter(|t| **t >= from) {
        longest = longest.max(t.duration_since(last));
        last = t;
    }
    longest
}

/// A value that says which write it is.
fn value(seq: u64) -> Vec<u8> {
    format!("{seq:020}").into_bytes()
}

fn sequence(body: &[u8]) -> Option<u64> {
    std::str::from_utf8(body).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_gap_counts_from_the_start_and_between_successes() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(longest_gap(&[at(100), at(400), at(500)], t0), Duration::from_millis(300));
        assert_eq!(longest_gap(&[at(900)], t0), Duration::from_millis(900));
        assert_eq!(longest_gap(&[at(50), at(60)], at(55)), Duration::from_millis(5), "before the start: ignored");
    }

    #[test]
    fn values_carry_their_sequence() {
        assert_eq!(sequence(&value(42)), Some(42));
        assert_eq!(sequence(b"x"), None);
    }
}
