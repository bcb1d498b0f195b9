//! From one key's operations to the tester's inputs: what had no effect
//! left out, ambiguous PUTs resolved by what observed them, ambiguous
//! conditional DELETEs set apart, and the history cut where nothing runs
//! (module docs).

use std::collections::HashMap;
use std::time::Duration;

use super::op::{Call, Op, Outcome, Val};

/// An operation as the tester sees it.
#[derive(Clone, Debug)]
pub(super) struct Timed {
    /// Index of the operation in [`Prepared::ops`].
    pub source: usize,
    pub kind: Kind,
    pub invoked: Duration,
    /// `None` for an ambiguous DELETE: in flight forever.
    pub returned: Option<Duration>,
    /// The tester's thread: the client for an operation that returned;
    /// one thread of its own for an ambiguous one (its client went on).
    pub thread: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Sees `value`: a read that returned it, or (`failed`: what it
    /// expected) a conditional write answered 412.
    Read { value: Val, failed: Option<Val> },
    /// Writes `value`; only if the key holds `expect`, when given.
    Write { value: Val, expect: Option<Val> },
}

impl Timed {
    /// What a conditional write expects.
    pub fn expects(&self) -> Option<&Val> {
        match &self.kind {
            Kind::Write { expect, .. } => expect.as_ref(),
            Kind::Read { .. } => None,
        }
    }

    /// The value a write writes.
    pub fn writes(&self) -> Option<&Val> {
        match &self.kind {
            Kind::Write { value, .. } => Some(value),
            Kind::Read { .. } => None,
        }
    }
}

/// Threads of ambiguous operations come after the clients' (the tester
/// tries threads in order, so it tries them last: lazily).
const AMBIGUOUS_PUTS: u32 = 1_000;
const MAYBE: u32 = 600_000;
const FLOATING: u32 = 1_000_000;

/// A stretch of the history between two moments when nothing ran.
#[derive(Clone, Debug)]
pub(super) struct Segment {
    /// The operations that returned, by invocation.
    pub ops: Vec<Timed>,
    /// Unconditional ambiguous DELETEs invoked while it ran, by invocation.
    pub floating: Vec<Timed>,
    /// Unconditional ambiguous DELETEs invoked in the quiet gap before it.
    pub floating_before: usize,
}

/// One key's history, ready for the tester.
pub(super) struct Prepared {
    pub ops: Vec<Op>,
    pub segments: Vec<Segment>,
    /// Ambiguous conditional DELETEs, by invocation: in flight forever, each
    /// taking effect at most once, while the key holds what it expects.
    pub maybe: Vec<Timed>,
}

impl Prepared {
    pub fn new(ops: &[&Op]) -> Prepared {
        let ops: Vec<Op> = ops.iter().map(|&op| op.clone()).collect();
        let resolved = resolve(&ops);
        let mut timed = Vec::new();
        let mut floating = Vec::new();
        let mut maybe = Vec::new();
        for (source, op) in ops.iter().enumerate() {
            let at = |kind, returned, thread| Timed { source, kind, invoked: op.invoked, returned, thread };
            let client = u32::try_from(op.client).unwrap_or(u32::MAX);
            let returned = Some(op.returned);
            match (&op.call, &op.outcome) {
                (Call::Read, Outcome::Read(v)) => {
                    timed.push(at(Kind::Read { value: v.clone(), failed: None }, returned, client));
                }
                (Call::CondWrite { expect, .. }, Outcome::PreconditionFailed(v)) => {
                    let kind = Kind::Read { value: v.clone(), failed: Some(expect.clone()) };
                    timed.push(at(kind, returned, client));
                }
                (Call::Write(v), Outcome::Written) => {
                    timed.push(at(Kind::Write { value: v.clone(), expect: None }, returned, client));
                }
                (Call::CondWrite { expect, write }, Outcome::Written) => {
                    let kind = Kind::Write { value: write.clone(), expect: Some(expect.clone()) };
                    timed.push(at(kind, returned, client));
                }
                (Call::Write(Val::Absent), Outcome::Ambiguous) => {
                    let thread = FLOATING + floating.len() as u32;
                    floating.push(at(Kind::Write { value: Val::Absent, expect: None }, None, thread));
                }
                (Call::CondWrite { expect, write: Val::Absent }, Outcome::Ambiguous) => {
                    let thread = MAYBE + maybe.len() as u32;
                    let kind = Kind::Write { value: Val::Absent, expect: Some(expect.clone()) };
                    maybe.push(at(kind, None, thread));
                }
                (Call::Write(v) | Call::CondWrite { write: v, .. }, Outcome::Ambiguous) => {
                    // It took effect iff something observed it, and then
                    // before the first that did returned.
                    if let Some(&seen) = resolved.get(&source) {
                        let expect = match &op.call {
                            Call::CondWrite { expect, .. } => Some(expect.clone()),
                            _ => None,
                        };
                        let thread = AMBIGUOUS_PUTS + source as u32;
                        timed.push(at(Kind::Write { value: v.clone(), expect }, Some(seen), thread));
                    }
                }
                (_, Outcome::Refused | Outcome::Ambiguous) => {}
                (call, outcome) => panic!("a {call:?} cannot end {outcome:?}: {op:?}"),
            }
        }
        timed.sort_by_key(|t| t.invoked);
        floating.sort_by_key(|t| t.invoked);
        maybe.sort_by_key(|t| t.invoked);
        Prepared { segments: segments(timed, floating), ops, maybe }
    }

    /// Operations that may have had an effect.
    pub fn effective_ops(&self) -> usize {
        self.segments.iter().map(|s| s.ops.len() + s.floating.len()).sum::<usize>() + self.maybe.len()
    }

    /// The ambiguous conditional DELETEs that may take effect in `segment`
    /// when the key holds `value` as it begins: invoked before it ended,
    /// expecting `value` or a value it writes (another value is gone for
    /// good, or is written later).
    pub fn maybe_in(&self, segment: &Segment, value: &Val) -> Vec<Timed> {
        let end = segment.end();
        let relevant = |e: &Val| e == value || segment.ops.iter().any(|t| t.writes() == Some(e));
        self.maybe.iter().filter(|m| m.invoked < end && m.expects().is_some_and(relevant)).cloned().collect()
    }
}

/// When each ambiguous PUT (conditional or not) that something observed had
/// taken effect by: the first return of an operation that observed its
/// value, by index in `ops`. An ambiguous conditional PUT that took effect
/// observed what it expected, so these resolve each other, until nothing
/// changes.
fn resolve(ops: &[Op]) -> HashMap<usize, Duration> {
    let ambiguous_put = |op: &Op| match (&op.call, &op.outcome) {
        (Call::Write(v @ Val::Put(_)) | Call::CondWrite { write: v @ Val::Put(_), .. }, Outcome::Ambiguous) => {
            Some(v.clone())
        }
        _ => None,
    };
    let writer: HashMap<Val, usize> =
        ops.iter().enumerate().filter_map(|(i, op)| ambiguous_put(op).map(|v| (v, i))).collect();
    // Observers of each value: definite ones with their return, and the
    // ambiguous conditional PUTs that expect it (by index).
    let mut definite: HashMap<usize, Duration> = HashMap::new();
    let mut expected_by: Vec<(usize, usize)> = Vec::new();
    for (j, op) in ops.iter().enumerate() {
        let observed = match (&op.call, &op.outcome) {
            (_, Outcome::Read(v) | Outcome::PreconditionFailed(v)) => Some(v),
            (Call::CondWrite { expect, .. }, Outcome::Written) => Some(expect),
            (Call::CondWrite { expect, write: Val::Put(_) }, Outcome::Ambiguous) => {
                if let Some(&i) = writer.get(expect) {
                    expected_by.push((i, j));
                }
                None
            }
            _ => None,
        };
        if let Some(&i) = observed.and_then(|v| writer.get(v)) {
            let seen = op.returned.max(ops[i].invoked);
            definite.entry(i).and_modify(|t| *t = (*t).min(seen)).or_insert(seen);
        }
    }
    let mut resolved = definite;
    loop {
        let mut changed = false;
        for &(i, j) in &expected_by {
            let Some(&seen) = resolved.get(&j) else { continue };
            let seen = seen.max(ops[i].invoked);
            if resolved.get(&i).is_none_or(|&t| seen < t) {
                resolved.insert(i, seen);
                changed = true;
            }
        }
        if !changed {
            return resolved;
        }
    }
}

/// Cuts operations sorted by invocation where none runs (an operation
/// invoked when, or after, every earlier one returned starts a segment;
/// equal times count as "before": the client's clock read the return
/// before the invocation, so it happened no later), then joins each
/// stretch to the next until the value it leaves is known: until at most
/// one of its writes is followed by no other (that write is last in every
/// linearization).
fn segments(timed: Vec<Timed>, floating: Vec<Timed>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut open = false;
    let mut end = Duration::ZERO;
    for t in timed {
        let returned = t.returned.unwrap_or(t.invoked);
        match out.last_mut() {
            Some(seg) if open || t.invoked < end => seg.ops.push(t),
            _ => out.push(Segment { ops: vec![t], floating: Vec::new(), floating_before: 0 }),
        }
        end = end.max(returned);
        open = out.last().is_some_and(|seg| seg.last_writes().len() > 1);
    }
    // Each ambiguous DELETE joins the segment running when it was invoked,
    // or counts as "before" the next one; after the last it changes nothing.
    for f in floating {
        let running = out.iter().position(|s| s.start() <= f.invoked && f.invoked < s.end());
        let next = out.iter().position(|s| f.invoked < s.start());
        match (running, next) {
            (Some(i), _) => out[i].floating.push(f),
            (None, Some(i)) => out[i].floating_before += 1,
            (None, None) => {}
        }
    }
    out
}

impl Segment {
    fn start(&self) -> Duration {
        self.ops.first().map_or(Duration::ZERO, |t| t.invoked)
    }

    pub fn end(&self) -> Duration {
        self.ops.iter().filter_map(|t| t.returned).max().unwrap_or(Duration::ZERO)
    }

    pub fn floating(&self) -> impl Iterator<Item = &Timed> {
        self.floating.iter()
    }

    /// The operations with `used` ambiguous DELETEs available, the ones
    /// that constrain least: first of the `carried` ones invoked before
    /// the segment, then the earliest invoked in it. Returns the
    /// operations and how many carried ones are among the `used`.
    pub fn with_floating(&self, carried: usize, used: usize) -> (Vec<Timed>, usize) {
        let from_before = used.min(carried);
        let mut ops = self.ops.clone();
        ops.extend(self.floating.iter().take(used - from_before).cloned());
        (ops, from_before)
    }

    /// The writes of the segment that no other write of it follows in real
    /// time: one of them is last in every linearization.
    fn last_writes(&self) -> Vec<&Timed> {
        let writes: Vec<&Timed> = self.ops.iter().filter(|t| t.writes().is_some()).collect();
        writes
            .iter()
            .filter(|w| !writes.iter().any(|x| x.source != w.source && w.returned.is_some_and(|r| x.invoked >= r)))
            .copied()
            .collect()
    }

    /// The value the register holds after the segment, started at `value`,
    /// unless an ambiguous DELETE takes effect after its last write; `None`
    /// when more than one write may be last (only the history's last
    /// segment ends so).
    pub fn final_value(&self, value: &Val) -> Option<Val> {
        match self.last_writes().as_slice() {
            [] => Some(value.clone()),
            [w] => w.writes().cloned(),
            _ => None,
        }
    }
}
