//! From one key's operations to the tester's inputs: what had no effect
//! left out, ambiguous PUTs resolved by the reads that saw them, and the
//! history cut where nothing runs (module docs).

use std::time::Duration;

use super::{Call, Op, Outcome, Val};

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
    Read(Val),
    Write(Val),
}

/// Threads of ambiguous operations come after the clients' (the tester
/// tries threads in order, so it tries them last: lazily).
const AMBIGUOUS_PUTS: u32 = 1_000;
const FLOATING: u32 = 1_000_000;

/// A stretch of the history between two moments when nothing ran.
#[derive(Clone, Debug)]
pub(super) struct Segment {
    /// The operations that returned, by invocation.
    pub ops: Vec<Timed>,
    /// Ambiguous DELETEs invoked while it ran, by invocation.
    pub floating: Vec<Timed>,
    /// Ambiguous DELETEs invoked in the quiet gap before it.
    pub floating_before: usize,
}

/// One key's history, ready for the tester.
pub(super) struct Prepared {
    pub ops: Vec<Op>,
    pub segments: Vec<Segment>,
}

impl Prepared {
    pub fn new(ops: &[&Op]) -> Prepared {
        let ops: Vec<Op> = ops.iter().map(|&op| op.clone()).collect();
        let mut timed = Vec::new();
        let mut floating = Vec::new();
        for (source, op) in ops.iter().enumerate() {
            let returned = Some(op.returned);
            let client = u32::try_from(op.client).unwrap_or(u32::MAX);
            match (&op.call, &op.outcome) {
                (Call::Read, Outcome::Read(v)) => timed.push(Timed {
                    source,
                    kind: Kind::Read(v.clone()),
                    invoked: op.invoked,
                    returned,
                    thread: client,
                }),
                (Call::Write(v), Outcome::Written) => timed.push(Timed {
                    source,
                    kind: Kind::Write(v.clone()),
                    invoked: op.invoked,
                    returned,
                    thread: client,
                }),
                (Call::Write(Val::Absent), Outcome::Ambiguous) => floating.push(Timed {
                    source,
                    kind: Kind::Write(Val::Absent),
                    invoked: op.invoked,
                    returned: None,
                    thread: FLOATING + floating.len() as u32,
                }),
                (Call::Write(v), Outcome::Ambiguous) => {
                    // It took effect iff a read saw it, and then before the
                    // first such read returned.
                    let seen = ops
                        .iter()
                        .filter(|r| r.outcome == Outcome::Read(v.clone()))
                        .map(|r| r.returned.max(op.invoked))
                        .min();
                    if let Some(seen) = seen {
                        let thread = AMBIGUOUS_PUTS + source as u32;
                        timed.push(Timed {
                            source,
                            kind: Kind::Write(v.clone()),
                            invoked: op.invoked,
                            returned: Some(seen),
                            thread,
                        });
                    }
                }
                (_, Outcome::Refused | Outcome::Ambiguous) => {}
                (call, outcome) => panic!("a {call:?} cannot end {outcome:?}: {op:?}"),
            }
        }
        timed.sort_by_key(|t| t.invoked);
        floating.sort_by_key(|t| t.invoked);
        Prepared { segments: segments(timed, floating), ops }
    }

    /// Operations that may have had an effect.
    pub fn effective_ops(&self) -> usize {
        self.segments.iter().map(|s| s.ops.len() + s.floating.len()).sum()
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

    fn end(&self) -> Duration {
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
        let writes: Vec<&Timed> = self.ops.iter().filter(|t| matches!(t.kind, Kind::Write(_))).collect();
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
            [w] => match &w.kind {
                Kind::Write(v) => Some(v.clone()),
                Kind::Read(_) => None,
            },
            _ => None,
        }
    }
}
