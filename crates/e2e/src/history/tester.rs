//! One question to stateright's `LinearizabilityTester`: can these
//! operations, started from this register value, be linearized (ending
//! with this value)?

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use stateright::semantics::register::{Register, RegisterOp, RegisterRet};
use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

use super::Val;
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

/// A value, with the operation that writes or reads it: the register
/// compares values; the memo tells operations apart.
#[derive(Clone, Debug, PartialEq)]
struct Tagged {
    value: Val,
    op: usize,
}

/// One operation of the question, numbered.
#[derive(Clone, Copy, Debug)]
struct Numbered {
    /// Its value's number.
    value: usize,
    /// For a read, its place among the reads of its value, by invocation.
    rank: Option<u32>,
    /// For a write that never returned, its place among those, by
    /// invocation.
    flight: Option<u32>,
}

/// What every branch of one search shares: the question, numbered.
#[derive(Debug, Default)]
struct Question {
    values: HashMap<Val, usize>,
    /// Per value: how many reads see it.
    reads: Vec<u32>,
    /// How many writes never returned.
    flights: u32,
    ops: Vec<Numbered>,
}

impl Question {
    fn number(&mut self, v: &Val) -> usize {
        let next = self.values.len();
        let i = *self.values.entry(v.clone()).or_insert(next);
        if i == self.reads.len() {
            self.reads.push(0);
        }
        i
    }

    /// Numbers an operation reading or writing `v`, in the order of
    /// invocation; returns its tag.
    fn op(&mut self, v: &Val, read: bool, in_flight: bool) -> Tagged {
        let value = self.number(v);
        let rank = read.then(|| {
            self.reads[value] += 1;
            self.reads[value] - 1
        });
        let flight = in_flight.then(|| {
            self.flights += 1;
            self.flights - 1
        });
        self.ops.push(Numbered { value, rank, flight });
        Tagged { value: v.clone(), op: self.ops.len() - 1 }
    }
}

/// Configurations entered so far: the operations placed, and the
/// register's value.
type Memo = HashSet<(Vec<u64>, usize)>;

/// stateright's register, searched with four additions that change the
/// search's cost, never its answer (stateright's tester searches depth
/// first and remembers nothing between branches, so on its own it is
/// exponential in the operations that overlap):
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
///   B, was invoked).
/// - **Writes in flight in one order** (ambiguous DELETEs, which all write
///   the same value and never return), by invocation, for the same reason:
///   swapping two of them changes nothing but where each is placed, and the
///   earlier invoked may go wherever the later one could.
/// - **Pruning.** A write that overwrites a value some read still waits for,
///   while no write of that value remains, ends the branch at once.
/// - **A budget of steps**: once spent, no step is valid, so the search
///   unwinds quickly. A serialization found is still a real one (each of
///   its steps was checked).
#[derive(Clone, Debug)]
struct Search {
    register: Register<Val>,
    /// The operations placed, as a bit set.
    placed: Vec<u64>,
    /// Per value: reads of it placed so far.
    reads_placed: Vec<u32>,
    /// Per value: writes of it not yet placed (in-flight ones included).
    writes_left: Vec<u32>,
    /// Writes in flight placed so far.
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
            register: Register(init.clone()),
            placed: vec![0; question.ops.len().div_ceil(64)],
            reads_placed: vec![0; question.reads.len()],
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

    /// Places a write; false if that is a dead end.
    fn write(&mut self, tag: &Tagged) -> bool {
        let Some(op) = self.question.ops.get(tag.op).copied() else { return false };
        if let Some(flight) = op.flight {
            if flight != self.flights_placed {
                return false;
            }
            self.flights_placed += 1;
        }
        self.writes_left[op.value] = self.writes_left[op.value].saturating_sub(1);
        let stranded = self.current().is_some_and(|c| {
            c != op.value && self.reads_placed[c] < self.question.reads[c] && self.writes_left[c] == 0
        });
        self.register.0 = tag.value.clone();
        !stranded && self.enter(tag.op)
    }

    /// Places a read; false unless it sees the register's value and is the
    /// next read of that value, or if that is a dead end.
    fn read(&mut self, tag: &Tagged) -> bool {
        let Some(Numbered { value, rank: Some(rank), .. }) = self.question.ops.get(tag.op).copied() else {
            return false;
        };
        if self.register.0 != tag.value || self.reads_placed[value] != rank {
            return false;
        }
        self.reads_placed[value] += 1;
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

impl SequentialSpec for Search {
    type Op = RegisterOp<Tagged>;
    type Ret = RegisterRet<Tagged>;

    /// The tester calls this only for operations still in flight when it
    /// searches, and [`linearizable`] returns every one first: the
    /// register's own answer, unpruned.
    fn invoke(&mut self, op: &Self::Op) -> Self::Ret {
        match op {
            RegisterOp::Write(tag) => {
                self.register.0 = tag.value.clone();
                RegisterRet::WriteOk
            }
            RegisterOp::Read => RegisterRet::ReadOk(Tagged { value: self.register.0.clone(), op: usize::MAX }),
        }
    }

    fn is_valid_step(&mut self, op: &Self::Op, ret: &Self::Ret) -> bool {
        if !self.spend() {
            return false;
        }
        // stateright's register decides what a step may return; the rest
        // only cuts the search short.
        let (plain_op, plain_ret) = match (op, ret) {
            (RegisterOp::Write(tag), RegisterRet::WriteOk) => {
                (RegisterOp::Write(tag.value.clone()), RegisterRet::WriteOk)
            }
            (RegisterOp::Read, RegisterRet::ReadOk(tag)) => (RegisterOp::Read, RegisterRet::ReadOk(tag.value.clone())),
            _ => return false,
        };
        let mut register = self.register.clone();
        if !register.is_valid_step(&plain_op, &plain_ret) {
            return false;
        }
        match (op, ret) {
            (RegisterOp::Write(tag), _) => self.write(tag),
            (_, RegisterRet::ReadOk(tag)) => self.read(tag),
            _ => false,
        }
    }
}

/// Whether `ops` (ambiguous DELETEs among them, with no return), after
/// `carried` ambiguous DELETEs invoked before all of them, can be linearized
/// from `init`, ending with a read of `last` if given.
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
    // and the ambiguous DELETEs.
    let mut question = Question::default();
    question.number(init);
    let carried_count = carried;
    let carried: Vec<Tagged> = (0..carried).map(|_| question.op(&Val::Absent, false, true)).collect();
    let mut tags: Vec<Option<Tagged>> = vec![None; ops.len()];
    for &(_, what, i) in &events {
        if what == 1 {
            let (v, read) = match &ops[i].kind {
                Kind::Read(v) => (v, true),
                Kind::Write(v) => (v, false),
            };
            tags[i] = Some(question.op(v, read, ops[i].returned.is_none()));
        }
    }
    let final_read = last.map(|v| question.op(v, true, false));
    let budget = Rc::new(Cell::new(steps));
    let mut tester = LinearizabilityTester::new(Search::new(init, question, budget.clone()));
    let malformed = |e: String| -> ! { panic!("malformed history: {e}") };
    for (i, tag) in carried.into_iter().enumerate() {
        tester.on_invoke(CARRIED + i as u32, RegisterOp::Write(tag)).unwrap_or_else(|e| malformed(e));
    }
    for (_, what, i) in events {
        let t = &ops[i];
        let Some(tag) = tags[i].clone() else { malformed(format!("operation {i} returned before it was invoked")) };
        let result = match (what, &t.kind) {
            (1, Kind::Read(_)) => tester.on_invoke(t.thread, RegisterOp::Read),
            (1, Kind::Write(_)) => tester.on_invoke(t.thread, RegisterOp::Write(tag)),
            (_, Kind::Read(_)) => tester.on_return(t.thread, RegisterRet::ReadOk(tag)),
            (_, Kind::Write(_)) => tester.on_return(t.thread, RegisterRet::WriteOk),
        };
        result.unwrap_or_else(|e| malformed(e));
    }
    if let Some(tag) = final_read {
        tester.on_invret(FINAL_READ, RegisterOp::Read, RegisterRet::ReadOk(tag)).unwrap_or_else(|e| malformed(e));
    }
    let in_flight = (0..carried_count).map(|i| CARRIED + i as u32);
    for thread in in_flight.chain(ops.iter().filter(|t| t.returned.is_none()).map(|t| t.thread)) {
        tester.on_return(thread, RegisterRet::WriteOk).unwrap_or_else(|e| malformed(e));
    }
    match tester.serialized_history() {
        Some(_) => Decision::Yes,
        None if budget.get() == 0 => Decision::Undecided,
        None => Decision::No,
    }
}
