//! A segment that no state explains, shrunk: stretches of operations, then
//! single ones, are removed while the rest stays unexplained (delta
//! debugging), until no single operation can be, or the time budget
//! ([`Effort::minimiser_time`]) is spent. A PUT whose value a remaining
//! operation observed is kept: without it the read (or the 412, or the
//! conditional write that took effect) would have observed a value nobody
//! wrote, a violation that says nothing about the store.

use std::collections::BTreeSet;
use std::time::Instant;

use super::op::{Call, Op, Val};
use super::prepare::{Kind, Prepared, Segment, Timed};
use super::report::{Effort, KeyReport, State, Violation};
use super::tester::{self, Decision};

pub(super) fn violation(
    prepared: &Prepared,
    segment: &Segment,
    inputs: &[State],
    effort: Effort,
    report: &mut KeyReport,
) -> Violation {
    let deadline = Instant::now() + effort.minimiser_time;
    let mut all: Vec<Timed> = segment.ops.iter().chain(segment.floating()).cloned().collect();
    // The ambiguous conditional DELETEs that may take effect from any of
    // the states (one that expects another state's value never does here).
    for (value, _) in inputs {
        for m in prepared.maybe_in(segment, value) {
            if !all.iter().any(|t| t.source == m.source) {
                all.push(m);
            }
        }
    }
    let written_here: BTreeSet<&Val> = all.iter().filter_map(|t| written(t)).collect();
    let mut runs = 0;
    // Unexplained from every state: each tester run a "no" (running out of
    // steps counts as "maybe explained").
    let mut fails = |ops: &[Timed], inputs: &[State]| {
        inputs.iter().all(|(value, carried)| {
            runs += 1;
            tester::linearizable(ops, value, *carried, None, effort.steps_per_run) == Decision::No
        })
    };
    // Every value observed that the segment wrote is still written.
    let closed = |ops: &[Timed]| {
        ops.iter()
            .all(|t| observed(t).is_none_or(|v| !written_here.contains(v) || ops.iter().any(|w| written(w) == Some(v))))
    };
    let mut ops = all.clone();
    let mut inputs = inputs.to_vec();
    let mut chunk = ops.len().div_ceil(2).max(1);
    let mut minimal = false;
    while Instant::now() < deadline {
        let mut removed = false;
        let mut i = 0;
        while i < ops.len() && Instant::now() < deadline {
            let mut fewer = ops.clone();
            fewer.drain(i..(i + chunk).min(ops.len()));
            if closed(&fewer) && fails(&fewer, &inputs) {
                ops = fewer;
                removed = true;
            } else {
                i += chunk;
            }
        }
        for j in 0..inputs.len() {
            while inputs[j].1 > 0 && Instant::now() < deadline {
                let mut fewer = inputs.clone();
                fewer[j].1 -= 1;
                if !fails(&ops, &fewer) {
                    break;
                }
                inputs = fewer;
                removed = true;
            }
        }
        if chunk == 1 && !removed {
            minimal = Instant::now() < deadline;
            break;
        }
        if !removed {
            chunk = chunk.div_ceil(2);
        }
    }
    report.tester_runs += runs;
    ops.sort_by_key(|t| t.invoked);
    // Where the values before it, and those it observed, were written.
    let mut context: Vec<Op> = Vec::new();
    let values = inputs.iter().map(|(v, _)| v).chain(ops.iter().filter_map(observed));
    for value in values {
        let writes = |call: &Call| match call {
            Call::Write(v) | Call::CondWrite { write: v, .. } => v == value,
            Call::Read => false,
        };
        let writer = prepared.ops.iter().find(|op| value != &Val::Absent && writes(&op.call));
        if let Some(op) = writer
            && !ops.iter().any(|t| written(t) == Some(value))
            && !context.iter().any(|c| writes(&c.call))
        {
            context.push(op.clone());
        }
    }
    Violation {
        before: inputs,
        context,
        ops: ops.iter().map(|t| shown(prepared, t)).collect(),
        segment_ops: all.len(),
        minimal,
    }
}

/// The value `t` writes, if it is a PUT.
fn written(t: &Timed) -> Option<&Val> {
    t.writes().filter(|v| matches!(v, Val::Put(_)))
}

/// The value `t` shows the key held, if any: what a read or a failed
/// conditional write saw, what a conditional write that took effect
/// expected.
fn observed(t: &Timed) -> Option<&Val> {
    match &t.kind {
        Kind::Read { value, .. } => Some(value),
        Kind::Write { .. } if t.returned.is_some() => t.expects(),
        Kind::Write { .. } => None,
    }
}

/// The client's operation, with the return the check gave an ambiguous PUT
/// that a read saw.
fn shown(prepared: &Prepared, t: &Timed) -> Op {
    let mut op = prepared.ops[t.source].clone();
    if let Some(seen) = t.returned.filter(|&r| r != op.returned) {
        op.answer = format!("{} (seen by a read that returned at {:.3} s)", op.answer, seen.as_secs_f64());
        op.returned = seen;
    }
    op
}
