//! Histories of client operations on the store, checked for
//! linearizability per key with stateright's `LinearizabilityTester` over a
//! compare-and-set register (`cas`: stateright's register plus the
//! conditional write).
//!
//! A history is what clients saw: for each operation its invocation, its
//! response and what the response said. Three outcomes of a write matter
//! (docs/operating.md section 4, docs/handoff.md section 5):
//!
//! - acknowledged (200): it took effect between invocation and response;
//! - refused before it was accepted (503 `recovering` or `overloaded`): it
//!   had no effect, so it is left out;
//! - ambiguous (a transport error, 503 `not_committed`, `superseded`,
//!   `replica_unavailable`): it may or may not have taken effect, at any
//!   time after its invocation -- an invocation without a return.
//!
//! A conditional write (`If-Match` an ETag, `If-None-Match: *`) writes only
//! if the key holds what it expects. Acknowledged, it took effect while the
//! key held that; answered 412 (precondition failed), it wrote nothing and
//! saw what the key held (the write of the ETag the answer carried, or
//! nothing): a read with a condition that did not hold. Ambiguous, it took
//! effect at some moment after its invocation at which the key held what it
//! expects, or never.
//!
//! A failed read has no effect and is left out. Every PUT writes a value of
//! its own, named by its write id, and a read reports the write id of what
//! it returns, so a read says which write it saw; an ETag names a write the
//! same way, so a condition says which write it expects. A read of a
//! deleted key (404) does not say which DELETE it saw: every DELETE writes
//! the same value, [`Val::Absent`], the key's initial value.
//!
//! An operation *observes* a value when its answer shows the key held it: a
//! read that returned it, a 412 that reported it, an acknowledged
//! conditional write that expected it. A client learns an ETag only from
//! such an answer (or from its own acknowledged write), so a condition
//! names a value that the history shows some operation observed or wrote;
//! the check relies on that (below).
//!
//! The tester searches depth-first and remembers nothing, so on its own it
//! is exponential in the operations that overlap; the register it searches
//! (`tester`) adds a memo of configurations, one order for reads of one
//! value and for ambiguous DELETEs, and pruning, none of which changes an
//! answer (a test compares them with the bare tester). Three exact
//! transformations keep its inputs small (`prepare`):
//!
//! - An ambiguous PUT (conditional or not) that nothing observed is left
//!   out: a write of a value nobody observed can be dropped from any
//!   linearization, since the operation after it is a write or would have
//!   observed its value -- or is an ambiguous conditional DELETE that
//!   expects it, which no client issues without having seen the value (this
//!   is where the check relies on conditions naming observed values).
//! - One that something observed took effect before the first observer
//!   returned, which becomes its return. An ambiguous conditional PUT that
//!   is itself observed took effect, so it observed what it expected: these
//!   resolve each other.
//! - Each key's history is cut where no operation is running (every
//!   operation before the cut precedes every operation after it).
//!   Ambiguous DELETEs stay in flight across cuts: what crosses a cut is
//!   the register's value and how many unconditional ones are still
//!   unused. An ambiguous conditional DELETE can take effect only while the
//!   key holds the value it expects, which one write wrote: it joins the
//!   tester's question in each segment where that value may be the key's,
//!   as long as the value carried across the cuts is that one (had it taken
//!   effect, the value would be gone for good).
//!
//! [`check`] carries the set of such states from segment to segment, asking
//! the tester which final values each segment can end with; a segment that
//! no state can explain is a violation, which `minimise` shrinks to a
//! sub-history from which no single operation can be removed.

mod cas;
mod minimise;
mod op;
mod prepare;
mod report;
mod stamps;
mod tester;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

pub use op::{Call, Op, Outcome, Val};
use prepare::{Prepared, Segment};
use report::State;
pub use report::{Effort, KeyReport, Report, Violation};
use tester::Decision;

/// Checks `ops` for linearizability, each key on its own (a store is
/// linearizable iff each key is: linearizability is local).
pub fn check(ops: &[Op], effort: Effort) -> Report {
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in ops {
        by_key.entry(op.key.as_str()).or_default().push(op);
    }
    let keys = by_key.into_iter().map(|(key, ops)| (key.to_string(), check_key(&ops, effort))).collect();
    Report { keys, stamp_regressions: stamps::regressions(ops) }
}

fn check_key(ops: &[&Op], effort: Effort) -> KeyReport {
    let prepared = Prepared::new(ops);
    let mut report = KeyReport {
        ops: prepared.effective_ops(),
        segments: prepared.segments.len(),
        longest_segment: prepared.segments.iter().map(|s| s.ops.len()).max().unwrap_or(0),
        tester_runs: 0,
        undecided: 0,
        violation: None,
    };
    let mut states: Vec<State> = vec![(Val::Absent, 0)];
    for segment in &prepared.segments {
        let inputs: Vec<State> = states.iter().map(|(v, n)| (v.clone(), n + segment.floating_before)).collect();
        match successors(&prepared, segment, &inputs, effort, &mut report) {
            Some(next) => states = next,
            None => {
                report.violation = Some(minimise::violation(&prepared, segment, &inputs, effort, &mut report));
                return report;
            }
        }
    }
    report
}

/// The states a segment can leave the register in, from any of `inputs`;
/// `None` if it cannot be linearized from any. From each input the segment
/// ends with its last write's value ([`Segment::final_value`]), or with
/// nothing if an ambiguous DELETE (or an ambiguous conditional DELETE that
/// expects that value) takes effect after that write; each with as few
/// ambiguous DELETEs used as will do (every one left may still take effect
/// later). The tester is asked with a read of that value appended, so its
/// answer is "yes" whenever the history is linearizable: only a violation,
/// or ambiguous DELETEs that did take effect, make it search exhaustively.
fn successors(
    prepared: &Prepared,
    segment: &Segment,
    inputs: &[State],
    effort: Effort,
    report: &mut KeyReport,
) -> Option<Vec<State>> {
    let internal = segment.floating().count();
    let mut feasible = false;
    let mut out: Vec<State> = Vec::new();
    for (value, carried) in inputs {
        let last = segment.final_value(value);
        let maybe = prepared.maybe_in(segment, value);
        let deletes_last = maybe.iter().any(|m| m.expects() == last.as_ref());
        let mut found: Vec<Option<Val>> = Vec::new();
        for used in 0..=carried + internal {
            let mut ends = vec![last.clone()];
            if (used > 0 || deletes_last) && last.is_some() && last != Some(Val::Absent) {
                ends.push(Some(Val::Absent));
            }
            ends.retain(|e| !found.contains(e));
            for end in ends {
                let (mut ops, carried_used) = segment.with_floating(*carried, used);
                ops.extend(maybe.iter().cloned());
                report.tester_runs += 1;
                let decision = tester::linearizable(&ops, value, carried_used, end.as_ref(), effort.steps_per_run);
                if decision == Decision::No {
                    continue;
                }
                if decision == Decision::Undecided {
                    report.undecided += 1;
                }
                feasible = true;
                if let Some(v) = &end {
                    out.push((v.clone(), carried + internal - used));
                }
                found.push(end);
            }
            // Ending with the last write's value leaving m unused is as good
            // as ending with nothing leaving m - 1: one may take effect first
            // in the next segment.
            if found.contains(&last) {
                break;
            }
        }
    }
    feasible.then(|| undominated(out))
}

/// The states no other state is as good as: same value and more unused
/// ambiguous DELETEs, or any value and one more (which can make it nothing).
fn undominated(states: Vec<State>) -> Vec<State> {
    let beats = |(v, m): &State, (w, n): &State| (v == w && m > n) || (*w == Val::Absent && *m > *n);
    let mut out: Vec<State> = Vec::new();
    for s in &states {
        if !states.iter().any(|t| beats(t, s)) && !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (key, k) in &self.keys {
            let verdict = match (&k.violation, k.undecided) {
                (Some(_), _) => "NOT linearizable".to_string(),
                (None, 0) => "linearizable".to_string(),
                (None, n) => format!("undecided ({n} tester runs out of steps)"),
            };
            writeln!(
                f,
                "key {key:?}: {} operations in {} segments (longest {}), {} tester runs: {verdict}",
                k.ops, k.segments, k.longest_segment, k.tester_runs
            )?;
            if let Some(v) = &k.violation {
                write!(f, "{v}")?;
            }
        }
        for line in &self.stamp_regressions {
            writeln!(f, "stamp regression: {line}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let minimal = if self.minimal {
            "no single operation can be removed"
        } else {
            "the minimiser ran out of time: not minimal"
        };
        writeln!(
            f,
            "  a sub-history no linearization explains ({} of the {} operations of its segment; {minimal}):",
            self.ops.len(),
            self.segment_ops
        )?;
        let states: Vec<String> = self
            .before
            .iter()
            .map(|(v, n)| match n {
                0 => format!("{}", ShowVal(v)),
                n => format!("{} ({n} ambiguous DELETEs may still take effect)", ShowVal(v)),
            })
            .collect();
        writeln!(f, "  before it the key holds {}", states.join(", or "))?;
        for op in &self.context {
            writeln!(f, "    (earlier: {})", ShowOp(op))?;
        }
        for op in &self.ops {
            writeln!(f, "    {}", ShowOp(op))?;
        }
        Ok(())
    }
}

struct ShowVal<'a>(&'a Val);

impl fmt::Display for ShowVal<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Val::Absent => f.write_str("nothing"),
            Val::Put(wid) => write!(f, "{}", wid.get(..8).unwrap_or(wid)),
        }
    }
}

/// `[12.345 s, 12.360 s] client 3 PUT "k1" 5f3a0c1e -> 200`
struct ShowOp<'a>(&'a Op);

impl fmt::Display for ShowOp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = self.0;
        let write = |v: &Val| match v {
            Val::Absent => "DELETE".to_string(),
            v => format!("PUT {}", ShowVal(v)),
        };
        let call = match &op.call {
            Call::Read => "GET".to_string(),
            Call::Write(v) => write(v),
            Call::CondWrite { expect: Val::Absent, write: v } => format!("{} if-none-match *", write(v)),
            Call::CondWrite { expect, write: v } => format!("{} if-match {}", write(v), ShowVal(expect)),
        };
        let result = match &op.outcome {
            Outcome::Read(v) => format!("{} ({})", op.answer, ShowVal(v)),
            Outcome::PreconditionFailed(v) => format!("{} (the key holds {})", op.answer, ShowVal(v)),
            Outcome::Ambiguous => format!("{}: may or may not have taken effect", op.answer),
            _ => op.answer.clone(),
        };
        write!(
            f,
            "[{:.3} s, {:.3} s] client {} {call} {:?} -> {result}",
            op.invoked.as_secs_f64(),
            op.returned.as_secs_f64(),
            op.client,
            op.key
        )
    }
}

/// [`check`] with the default effort on a thread of its own with a large
/// stack: the tester recurses once per operation of a segment.
pub fn check_on_large_stack(ops: Vec<Op>) -> Report {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || check(&ops, Effort::default()))
        .expect("checker thread")
        .join()
        .expect("the check")
}
