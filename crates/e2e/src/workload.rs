//! A workload of clients that PUT, GET and DELETE a few keys of one
//! namespace, some of the writes conditional (`If-Match` with the ETag of
//! the value the client last read of that key, or `If-None-Match: *`), and
//! record every operation's invocation and answer for the
//! history check (`crate::history`): an acknowledged write took effect
//! while it ran, a refused one (503 `recovering`, `overloaded`) never did,
//! an ambiguous one (503 `not_committed`, `superseded`,
//! `replica_unavailable`, a transport error) may have, at any later time.
//! A third of the writes carry a time to live far longer than a run
//! ([`TTL_MS`]): none expires while the history is recorded, and every
//! read checks that the value's expiry travelled with it through the
//! evictions and reseeds (`Log::check_reads`).
//! Used by the tests that check linearizability under evictions, crashes
//! and rolling restarts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::history::{Call, Op, Outcome, Val};
use crate::{Ack, Found, Resp, Store};

/// One client: sequential operations on random keys until told to stop.
pub struct Client {
    pub id: usize,
    pub store: Store,
    pub ns: String,
    pub start: Instant,
    pub rng: u64,
    /// Keys it uses: `k0`, `k1`, ...
    pub keys: u64,
}

/// The time to live of the writes that carry one: ten minutes, longer
/// than any run, so that no value expires while the register (which has
/// no clock) is checked.
pub const TTL_MS: u64 = 600_000;

/// A PUT as sent, and its expiry if it was acknowledged.
pub struct Written {
    pub key: String,
    pub value: Vec<u8>,
    /// Sent with `Handoff-TTL-Ms: TTL_MS`.
    pub ttl: bool,
    /// The acknowledgment's `expires_at`.
    pub acked_expiry: Option<u64>,
}

#[derive(Default)]
pub struct Log {
    pub ops: Vec<Op>,
    /// Write id -> every PUT sent.
    pub written: HashMap<String, Written>,
    /// Every value read, with its key.
    pub reads: Vec<(String, Found)>,
    /// Answers the API does not promise.
    pub unexpected: Vec<String>,
}

impl Client {
    pub async fn run(mut self, stop: &AtomicBool, done: &AtomicUsize) -> Log {
        let mut log = Log::default();
        // Per key, the ETag and write id of the value this client last read.
        let mut last_read: HashMap<String, (String, String)> = HashMap::new();
        while !stop.load(Ordering::SeqCst) {
            let key = format!("k{}", self.below(self.keys));
            let path = Store::kv_path(&self.ns, &key);
            let wid = crate::new_wid();
            let value = format!("{wid} from client {}", self.id).into_bytes();
            let mut headers = vec![("handoff-write-id", wid.clone())];
            let (call, method) = match self.below(100) {
                0..45 => {
                    headers.clear();
                    (Call::Read, "GET")
                }
                45..75 => (Call::Write(Val::Put(wid.clone())), "PUT"),
                75..90 => {
                    let expect = match last_read.get(&key) {
                        Some((etag, read)) => {
                            headers.push(("if-match", etag.clone()));
                            Val::Put(read.clone())
                        }
                        None => {
                            headers.push(("if-none-match", "*".to_string()));
                            Val::Absent
                        }
                    };
                    (Call::CondWrite { expect, write: Val::Put(wid.clone()) }, "PUT")
                }
                _ => (Call::Write(Val::Absent), "DELETE"),
            };
            let ttl = method == "PUT" && self.below(3) == 0;
            if ttl {
                headers.push(("handoff-ttl-ms", TTL_MS.to_string()));
            }
            let body = (method == "PUT").then(|| {
                let written = Written { key: key.clone(), value: value.clone(), ttl, acked_expiry: None };
                log.written.insert(wid.clone(), written);
                value
            });
            let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let invoked = self.start.elapsed();
            let answer = self.store.try_request(method, &path, body, &headers).await;
            let returned = self.start.elapsed();
            let (outcome, shown, stamp) = match classify(&call, &key, &wid, &answer) {
                Ok(Classified { outcome, found, stamp, expires_at }) => {
                    if let Some(written) = log.written.get_mut(&wid).filter(|_| outcome == Outcome::Written) {
                        written.acked_expiry = expires_at;
                    }
                    if let Some(found) = found {
                        let etag = format!("\"{}.{}.{}\"", found.ep, found.ver, found.wid);
                        last_read.insert(key.clone(), (etag, found.wid.clone()));
                        log.reads.push((key.clone(), found));
                    } else if outcome == Outcome::Read(Val::Absent) {
                        last_read.remove(&key);
                    }
                    (outcome, status_of(&answer), stamp)
                }
                Err(what) => {
                    log.unexpected.push(format!("{method} {key}: {what}"));
                    (Outcome::Ambiguous, what, None)
                }
            };
            let refused = outcome == Outcome::Refused;
            log.ops.push(Op { client: self.id, key, call, invoked, returned, outcome, answer: shown, stamp });
            done.fetch_add(1, Ordering::SeqCst);
            // Back off while the coordinator recovers; otherwise a few
            // milliseconds between operations, so that keys go quiet now
            // and then.
            let pause = if refused { 50 } else { self.below(5) };
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        log
    }

    /// xorshift: a different sequence per client and run.
    fn below(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n
    }
}

/// What an answer says about the operation's effect, the value a read
/// returned, and the `(epoch, version)` it showed of the key's record (a
/// read's, a 404's for a deleted key, an acknowledgment's, a 412's ETag:
/// `history::stamps`).
struct Classified {
    outcome: Outcome,
    found: Option<Found>,
    stamp: Option<(u64, u64)>,
    /// An acknowledged write's `expires_at`.
    expires_at: Option<u64>,
}

impl Classified {
    fn of(outcome: Outcome) -> Result<Classified, String> {
        Ok(Classified { outcome, found: None, stamp: None, expires_at: None })
    }
}

/// What an answer says (docs/operating.md 4.2: which 503 comes before a
/// write is accepted); `Err` for an answer the API does not promise.
fn classify(call: &Call, key: &str, wid: &str, answer: &Result<Resp, reqwest::Error>) -> Result<Classified, String> {
    let resp = match answer {
        Ok(resp) => resp,
        // Sent, perhaps served, no answer.
        Err(_) => return Classified::of(Outcome::Ambiguous),
    };
    let number = |s: Option<&str>| s.and_then(|s| s.parse::<u64>().ok());
    match (call, resp.status) {
        (Call::Read, 200) => {
            let found = Found::parse(resp);
            let (stamp, outcome) = (Some(found.stamp()), Outcome::Read(Val::Put(found.wid.clone())));
            Ok(Classified { outcome, found: Some(found), stamp, expires_at: None })
        }
        // A deleted key's 404 names its deletion's stamp; a key never
        // written (or whose tombstone was collected) names none.
        (Call::Read, 404) if resp.error_code() == "key_not_found" => {
            let stamp = number(resp.header("handoff-epoch")).zip(number(resp.header("handoff-version")));
            Ok(Classified { outcome: Outcome::Read(Val::Absent), found: None, stamp, expires_at: None })
        }
        (Call::Write(_) | Call::CondWrite { .. }, 200) => {
            let ack = Ack::parse(resp);
            if ack.key != key || ack.wid != wid {
                return Err(format!("acknowledged as {ack:?}"));
            }
            Ok(Classified {
                outcome: Outcome::Written,
                found: None,
                stamp: Some(ack.stamp()),
                expires_at: ack.expires_at,
            })
        }
        // Nothing written; the key held the write of the ETag the answer
        // names (`"ep.ver.wid"`, a visible value), or nothing.
        (Call::CondWrite { .. }, 412) if resp.error_code() == "precondition_failed" => match resp.header("etag") {
            None => Classified::of(Outcome::PreconditionFailed(Val::Absent)),
            Some(etag) => match etag.trim_matches('"').splitn(3, '.').collect::<Vec<_>>()[..] {
                [ep, ver, current] => Ok(Classified {
                    outcome: Outcome::PreconditionFailed(Val::Put(current.to_string())),
                    found: None,
                    stamp: number(Some(ep)).zip(number(Some(ver))),
                    expires_at: None,
                }),
                _ => Err(format!("412 with the ETag {etag}")),
            },
        },
        // Wrangler's own plain-text answer when the Worker was reloaded or
        // restarted under the request: it may have been served.
        (_, 503) if resp.is_runtime_restart() => Classified::of(Outcome::Ambiguous),
        (_, 503) => match resp.error_code().as_str() {
            // Answered before the write entered the protocol.
            "recovering" | "overloaded" => Classified::of(Outcome::Refused),
            // Pending, pushed, or the object reset while serving it.
            "not_committed" | "superseded" | "replica_unavailable" => Classified::of(Outcome::Ambiguous),
            code => Err(format!("503 {code}: {}", resp.text())),
        },
        (_, status) => Err(format!("{status}: {}", resp.text())),
    }
}

fn status_of(answer: &Result<Resp, reqwest::Error>) -> String {
    match answer {
        Ok(resp) if resp.status == 200 || resp.status == 404 => resp.status.to_string(),
        Ok(resp) if resp.is_runtime_restart() => format!("{} runtime restart", resp.status),
        Ok(resp) => format!("{} {}", resp.status, resp.error_code()),
        Err(e) => format!("transport error: {e}"),
    }
}

impl Log {
    /// Every value read was the one its write id's PUT wrote, to that key,
    /// with the expiry it was written with: one if and only if the PUT had
    /// a time to live, the acknowledged one if it was acknowledged (what
    /// the register abstracts away). Returns how many reads had an
    /// expiry to check.
    pub fn check_reads(&self) -> usize {
        for (wid, w) in self.written.iter().filter(|(_, w)| w.acked_expiry.is_some()) {
            assert!(w.ttl, "{}: write {wid} sent without a time to live, acknowledged with an expiry", w.key);
        }
        for (key, found) in &self.reads {
            let Some(w) = self.written.get(&found.wid) else {
                panic!("{key}: read write id {}, which no client wrote", found.wid)
            };
            assert_eq!(&w.key, key, "write {} was to {}, read under {key}", found.wid, w.key);
            assert_eq!(found.value, w.value, "{key}: a value other than write {} wrote", found.wid);
            assert_eq!(
                found.expires_at.is_some(),
                w.ttl,
                "{key}: write {} read with expiry {:?}",
                found.wid,
                found.expires_at
            );
            if let Some(acked) = w.acked_expiry {
                assert_eq!(
                    found.expires_at,
                    Some(acked),
                    "{key}: write {} acknowledged to expire at {acked}",
                    found.wid
                );
            }
        }
        self.reads.iter().filter(|(_, found)| found.expires_at.is_some()).count()
    }

    /// The logs of several clients as one.
    pub fn merge(logs: impl IntoIterator<Item = Log>) -> Log {
        let mut all = Log::default();
        for log in logs {
            all.ops.extend(log.ops);
            all.written.extend(log.written);
            all.reads.extend(log.reads);
            all.unexpected.extend(log.unexpected);
        }
        all
    }

    /// The longest time without an acknowledged write, from the first
    /// operation to the last.
    pub fn longest_write_gap(&self) -> Duration {
        let mut done: Vec<Duration> =
            self.ops.iter().filter(|o| o.outcome == Outcome::Written).map(|o| o.returned).collect();
        done.sort();
        let first = self.ops.iter().map(|o| o.invoked).min().unwrap_or_default();
        let last = self.ops.iter().map(|o| o.returned).max().unwrap_or_default();
        let mut edges = vec![first];
        edges.extend(done);
        edges.push(last);
        edges.windows(2).map(|w| w[1].saturating_sub(w[0])).max().unwrap_or_default()
    }

    /// How many answers of each kind (`200`, `503 recovering`, ...).
    pub fn answers(&self) -> std::collections::BTreeMap<String, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for op in &self.ops {
            *counts.entry(op.answer.clone()).or_default() += 1;
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of one PUT of `k` (with a time to live or not, acknowledged
    /// to expire at `acked`) and one read of it showing `read_expiry`.
    fn log(ttl: bool, acked: Option<u64>, read_expiry: Option<u64>) -> Log {
        let mut log = Log::default();
        let value = b"v".to_vec();
        log.written.insert("w".into(), Written { key: "k".into(), value: value.clone(), ttl, acked_expiry: acked });
        let found = Found { value, ep: 1, ver: 1, wid: "w".into(), expires_at: read_expiry };
        log.reads.push(("k".into(), found));
        log
    }

    #[test]
    fn a_read_shows_the_expiry_its_write_was_acknowledged_with() {
        assert_eq!(log(true, Some(9), Some(9)).check_reads(), 1);
        assert_eq!(log(false, None, None).check_reads(), 0);
        assert_eq!(log(true, None, Some(9)).check_reads(), 1, "an ambiguous write: any expiry");
    }

    #[test]
    #[should_panic(expected = "read with expiry None")]
    fn a_value_that_lost_its_expiry_is_refused() {
        log(true, Some(9), None).check_reads();
    }

    #[test]
    #[should_panic(expected = "acknowledged to expire at 9")]
    fn a_value_with_another_expiry_is_refused() {
        log(true, Some(9), Some(10)).check_reads();
    }

    #[test]
    #[should_panic(expected = "read with expiry Some(9)")]
    fn a_value_written_without_a_time_to_live_that_expires_is_refused() {
        log(false, None, Some(9)).check_reads();
    }
}
