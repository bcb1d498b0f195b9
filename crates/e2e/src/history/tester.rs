//! One question to stateright's `LinearizabilityTester`: can these
//! operations, started from this register value, be linearized (ending
//! with this value)?

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

use super::cas::{CasOp, CasRegister, CasRet};
use super::op::Val;
use super::prepare::{Kind, Timed};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Decision {
    Yes,
    No,
    /// The search ran out of steps.
    Undecided,
}

/// Threads of the question's own operations, after every other thread.
const FINAL_READ: u32 = 500_000;
const CARRIED: u32 = 2_000_000;

/// A value, with the operation that writes, reads or expects it: the
/// register compares values; the memo tells operations apart.
#[derive(Clone, Debug, PartialEq)]
struct Tagged {
    value: Val,
    op: usize,
}

/// An operation of the search: the register's own, or an ambiguous
/// conditional write (never returned), which, wherever it is placed, takes
/// effect iff the key holds what it expects. Placed after everything, it
/// never took effect.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Register(CasOp<Tagged>),
    Maybe { expect: Tagged, write: Tagged },
}

/// What a [`Step`] returned.
#[derive(Clone, Debug, PartialEq)]
enum Done {
    Register(CasRet<Tagged>),
    /// A [`Step::Maybe`], whatever the register answered it.
    Placed,
}

/// One operation of the question, numbered.
#[derive(Clone, Copy, Debug)]
struct Numbered {
    /// Its value's number: what it writes or reads.
    value: usize,
    /// For a read (a failed conditional write sees a value as a read
    /// does), its place among the reads of its value, by invocation.
    rank: Option<u32>,
    /// For an unconditional write that never returned, its place among
    /// those, by invocation.
    flight: Option<u32>,
    /// The value it shows the key held, if it must be placed where the key
    /// holds it: a read's, or what a conditional write that took effect
    /// expected.
    observes: Option<usize>,
}

/// What every branch of one search shares: the question, numbered.
#[derive(Debug, Default)]
struct Question {
    values: HashMap<Val, usize>,
    /// Per value: how many reads see it.
    reads: Vec<u32>,
    /// Per value: how many operations observe it (reads among them).
    observers: Vec<u32>,
    /// How many unconditional writes never returned.
    flights: u32,
    ops: Vec<Numbered>,
}

impl Question {
    fn number(&mut self, v: &Val) -> usize {
        let next = self.values.len();
        let i = *self.values.entry(v.clone()).or_insert(next);
        if i == self.reads.len() {
            self.reads.push(0);
            self.observers.push(0);
        }
        i
    }

    /// Numbers a read of `v`, in the order of invocation; returns its tag.
    fn read(&mut self, v: &Val) -> Tagged {
        let value = self.number(v);
        self.reads[value] += 1;
        self.observers[value] += 1;
        let rank = Some(self.reads[value] - 1);
        self.push(v, Numbered { value, rank, flight: None, observes: Some(value) })
    }

    /// Numbers a write of `v`, in the order of invocation: one that
    /// observes `observes` (a conditional write that returned), or an
    /// unconditional one `in_flight`; returns its tag.
    fn write(&mut self, v: &Val, observes: Option<&Val>, in_flight: bool) -> Tagged {
        let value = self.number(v);
        let observes = observes.map(|o| {
            let o = self.number(o);
            self.observers[o] += 1;
            o
        });
        let flight = in_flight.then(|| {
            self.flights += 1;
            self.flights - 1
        });
        self.push(v, Numbered { value, rank: None, flight, observes })
    }

    fn push(&mut self, v: &Val, op: Numbered) -> Tagged {
        self.ops.push(op);
        Tagged { value: v.clone(), op: self.ops.len() - 1 }
    }
}

/// Configurations entered so far: the operations placed, and the
/// register's value.
type Memo = HashSet<(Vec<u64>, usize)>;

/// The compare-and-set register ([`CasRegister`]), searched with four
/// additions that change the search's cost, never its answer (stateright's
/// tester searches depth first and remembers nothing between branches, so
/// on its own it is exponential in the operations that overlap):
///
/// - **A memo** (Lowe's addition to the Wing and Gong search): a
///   configuration is the set of operations placed and the register's
///   value. The search stops at its first success, so a configuration
///   entered again was searched before without one, and is refused.
/// - **Reads of one value in one order.** Reads of the same value are placed
///   in the order they were invoked: if a linearization places a read B
///   before a read A of the same value that was invoked no later than B,
///   moving A to just before B gives another (A sees the same value there,
///   and everything that had to precede A returned before A, hence before
///   B, was invoked). A conditional write answered 412 is such a read: its
///   condition does not hold on the value it saw, wherever it is placed (if
///   it did, no linearization places it at all).
/// - **Unconditional writes in flight in one order** (ambiguous DELETEs,
///   which all write the same value and never return), by invocation, for
///   the same reason: swapping two of them changes nothing but where each
///   is placed, and the earlier invoked may go wherever the later one
///   could. (An ambiguous conditional DELETE is no such write: it takes
///   effect only on the value it expects.)
/// - **Pruning.** A write that overwrites a value something still must
///   observe (a read, or a conditional write that took effect expecting
///   it), while no write of that value remains, ends the branch at once.
/// - **A budget of steps**: once spent, no step is valid, so the search
///   unwinds quickly. A serialization found is still a real one (each of
///   its steps was checked).
#[derive(Clone, Debug)]
struct Search {
    register: CasRegister<Val>,
    /// The operations placed, as a bit set.
    placed: Vec<u64>,
    /// Per value: reads of it placed so far.
    reads_placed: Vec<u32>,
    /// Per value: operations observing it placed so far.
    observed: Vec<u32>,
    /// Per value: writes of it not yet placed (in-flight ones included).
    writes_left: Vec<u32>,
    /// Unconditional writes in flight placed so far.
    flights_placed: u32,
    question: Rc<Question>,
    memo: Rc<RefCell<Memo>>,
    steps: Rc<Cell<u64>>,
}

impl Search {
    fn new(init: &Val, question: Question, steps: Rc<Cell<u64>>) -> Search {
        let mut writes_left = vec![0; question.reads.len()];
        for op in question.ops.iter().filter(|op| op.rank.is_none()) {
            writes_left[op.value] += 1;
        }
        Search {
            register: CasRegister(init.clone()),
            placed: vec![0; question.ops.len().div_ceil(64)],
            reads_placed: vec![0; question.reads.len()],
            observed: vec![0; question.reads.len()],
            writes_left,
            flights_placed: 0,
            question: Rc::new(question),
            memo: Rc::default(),
            steps,
        }
    }

    fn spend(&self) -> bool {
        let left = self.steps.get();
        self.steps.set(left.saturating_sub(1));
        left > 0
    }

    fn current(&self) -> Option<usize> {
        self.question.values.get(&self.register.0).copied()
    }

    /// Places a write, which takes effect unless `fires` is false (an
    /// ambiguous conditional write placed where its condition does not
    /// hold); false if that is a dead end.
    fn write(&mut self, tag: &Tagged, fires: bool) -> bool {
        let Some(op) = self.question.ops.get(tag.op).copied() else { return false };
        if let Some(flight) = op.flight {
            if flight != self.flights_placed {
                return false;
            }
            self.flights_placed += 1;
        }
        self.writes_left[op.value] = self.writes_left[op.value].saturating_sub(1);
        if let Some(o) = op.observes {
            self.observed[o] += 1;
        }
        if !fires {
            return self.enter(tag.op);
        }
        let stranded = self.current().is_some_and(|c| {
            c != op.value && self.observed[c] < self.question.observers[c] && self.writes_left[c] == 0
        });
        self.register.0 = tag.value.clone();
        !stranded && self.enter(tag.op)
    }

    /// Places a read (or a failed conditional write) of `tag`'s value;
    /// false unless it is the next read of that value, or if that is a dead
    /// end.
    fn read(&mut self, tag: &Tagged) -> bool {
        let Some(Numbered { value, rank: Some(rank), .. }) = self.question.ops.get(tag.op).copied() else {
            return false;
        };
        if self.reads_placed[value] != rank {
            return false;
        }
        self.reads_placed[value] += 1;
        self.observed[value] += 1;
        self.enter(tag.op)
    }

    /// Marks `op` placed; false if this configuration was entered before.
    fn enter(&mut self, op: usize) -> bool {
        if let Some(word) = self.placed.get_mut(op / 64) {
            *word |= 1 << (op % 64);
        }
        let value = self.current().unwrap_or(usize::MAX);
        self.memo.borrow_mut().insert((self.placed.clone(), value))
    }
}

/// The values of a register operation, without their tags.
fn plain_op(op: &CasOp<Tagged>) -> CasOp<Val> {
    match op {
        CasOp::Read => CasOp::Read,
        CasOp::Write(t) => CasOp::Write(t.value.clone()),
        CasOp::Cas { expect, write } => CasOp::Cas { expect: expect.value.clone(), write: write.value.clone() },
    }
}

fn plain_ret(ret: &CasRet<Tagged>) -> CasRet<Val> {
    match ret {
        CasRet::ReadOk(t) => CasRet::ReadOk(t.value.clone()),
        CasRet::WriteOk => CasRet::WriteOk,
        CasRet::CasOk => CasRet::CasOk,
        CasRet::CasFailed(t) => CasRet::CasFailed(t.value.clone()),
    }
}

impl SequentialSpec for Search {
    type Op = Step;
    type Ret = Done;

    /// The tester calls this only for operations still in flight when it
    /// searches, and [`linearizable`] returns every one first: the
    /// register's own answer, unpruned.
    fn invoke(&mut self, op: &Step) -> Done {
        match op {
            Step::Register(op) => {
                let tagged = |value| Tagged { value, op: usize::MAX };
                Done::Register(match self.register.invoke(&plain_op(op)) {
                    CasRet::ReadOk(v) => CasRet::ReadOk(tagged(v)),
                    CasRet::WriteOk => CasRet::WriteOk,
                    CasRet::CasOk => CasRet::CasOk,
                    CasRet::CasFailed(v) => CasRet::CasFailed(tagged(v)),
                })
            }
            Step::Maybe { expect, write } => {
                self.register.invoke(&CasOp::Cas { expect: expect.value.clone(), write: write.value.clone() });
                Done::Placed
            }
        }
    }

    fn is_valid_step(&mut self, op: &Step, ret: &Done) -> bool {
        if !self.spend() {
            return false;
        }
        match (op, ret) {
            (Step::Register(op), Done::Register(ret)) => {
                // The register decides what a step may return; the rest
                // only cuts the search short.
                let mut register = self.register.clone();
                if !register.is_valid_step(&plain_op(op), &plain_ret(ret)) {
                    return false;
                }
                match (op, ret) {
                    (CasOp::Write(tag), _) | (CasOp::Cas { write: tag, .. }, CasRet::CasOk) => self.write(tag, true),
                    (_, CasRet::ReadOk(tag) | CasRet::CasFailed(tag)) => self.read(tag),
                    _ => false,
                }
            }
            (Step::Maybe { expect, write }, Done::Placed) => {
                let fires = self.register.0 == expect.value;
                self.write(write, fires)
            }
            _ => false,
        }
    }
}

/// Whether `ops` (ambiguous DELETEs among them, with no return), after
/// `carried` unconditional ambiguous DELETEs invoked before all of them,
/// can be linearized from `init`, ending with a read of `last` if given.
///
/// The tester is given each ambiguous DELETE as an operation that returns
/// after everything else, the final read included: placed after that
/// read, it is one that never took effect. (Left in flight instead, the
/// tester would try every order of them at every step, unpruned.)
pub(super) fn linearizable(ops: &[Timed], init: &Val, carried: usize, last: Option<&Val>, steps: u64) -> Decision {
    // At equal times a return comes first (the client read its clock at
    // the return before it read it at the invocation), except the return
    // of an operation that took no time, which follows its invocation.
    let mut events: Vec<(Duration, u8, usize)> = Vec::new();
    for (i, t) in ops.iter().enumerate() {
        events.push((t.invoked, 1, i));
        if let Some(r) = t.returned {
            events.push((r, if r == t.invoked { 2 } else { 0 }, i));
        }
    }
    events.sort();
    // Operations numbered by invocation, which ranks the reads of a value
    // and the unconditional ambiguous DELETEs.
    let mut question = Question::default();
    question.number(init);
    let carried_count = carried;
    let carried: Vec<Tagged> = (0..carried).map(|_| question.write(&Val::Absent, None, true)).collect();
    let mut steps_of: Vec<Option<(Step, Done)>> = vec![None; ops.len()];
    for &(_, what, i) in &events {
        if what == 1 {
            steps_of[i] = Some(numbered(&mut question, &ops[i]));
        }
    }
    let final_read = last.map(|v| question.read(v));
    let budget = Rc::new(Cell::new(steps));
    let mut tester = LinearizabilityTester::new(Search::new(init, question, budget.clone()));
    let malformed = |e: String| -> ! { panic!("malformed history: {e}") };
    for (i, tag) in carried.into_iter().enumerate() {
        tester.on_invoke(CARRIED + i as u32, Step::Register(CasOp::Write(tag))).unwrap_or_else(|e| malformed(e));
    }
    for (_, what, i) in events {
        let t = &ops[i];
        let Some((step, done)) = steps_of[i].clone() else {
            malformed(format!("operation {i} returned before it was invoked"))
        };
        let result = if what == 1 { tester.on_invoke(t.thread, step) } else { tester.on_return(t.thread, done) };
        result.unwrap_or_else(|e| malformed(e));
    }
    if let Some(tag) = final_read {
        tester
            .on_invret(FINAL_READ, Step::Register(CasOp::Read), Done::Register(CasRet::ReadOk(tag)))
            .unwrap_or_else(|e| malformed(e));
    }
    let carried_threads = (0..carried_count).map(|i| CARRIED + i as u32);
    for thread in carried_threads {
        tester.on_return(thread, Done::Register(CasRet::WriteOk)).unwrap_or_else(|e| malformed(e));
    }
    for (i, t) in ops.iter().enumerate().filter(|(_, t)| t.returned.is_none()) {
        let Some((_, done)) = steps_of[i].clone() else { malformed(format!("operation {i} was never invoked")) };
        tester.on_return(t.thread, done).unwrap_or_else(|e| malformed(e));
    }
    match tester.serialized_history() {
        Some(_) => Decision::Yes,
        None if budget.get() == 0 => Decision::Undecided,
        None => Decision::No,
    }
}

/// Numbers `t` in `question`: the step the tester is given on its
/// invocation, and what it returned (for one that never did: what it is
/// given after everything else).
fn numbered(question: &mut Question, t: &Timed) -> (Step, Done) {
    let in_flight = t.returned.is_none();
    match &t.kind {
        Kind::Read { value, failed: None } => {
            let tag = question.read(value);
            (Step::Register(CasOp::Read), Done::Register(CasRet::ReadOk(tag)))
        }
        Kind::Read { value, failed: Some(expect) } => {
            let tag = question.read(value);
            // What it would have written plays no part in its failure.
            let expect = Tagged { value: expect.clone(), op: tag.op };
            let step = CasOp::Cas { expect: expect.clone(), write: expect };
            (Step::Register(step), Done::Register(CasRet::CasFailed(tag)))
        }
        Kind::Write { value, expect: None } => {
            let tag = question.write(value, None, in_flight);
            (Step::Register(CasOp::Write(tag)), Done::Register(CasRet::WriteOk))
        }
        Kind::Write { value, expect: Some(expect) } if in_flight => {
            let write = question.write(value, None, false);
            let expect = Tagged { value: expect.clone(), op: write.op };
            (Step::Maybe { expect, write }, Done::Placed)
        }
        Kind::Write { value, expect: Some(expect) } => {
            let write = question.write(value, Some(expect), false);
            let expect = Tagged { value: expect.clone(), op: write.op };
            (Step::Register(CasOp::Cas { expect, write }), Done::Register(CasRet::CasOk))
        }
    }
}
