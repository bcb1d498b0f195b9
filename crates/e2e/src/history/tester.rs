//! One question to stateright's `LinearizabilityTester`: can these
//! operations, started from this register value, be linearized (ending
//! with this value)?

use std::cell::Cell;
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

/// stateright's register, giving up after a number of steps: once they are
/// spent no step is valid, so the search unwinds quickly. A serialization
/// found is still a real one (each of its steps was checked).
#[derive(Clone, Debug)]
struct Budgeted {
    register: Register<Val>,
    steps: Rc<Cell<u64>>,
}

impl Budgeted {
    fn spend(&self) -> bool {
        let left = self.steps.get();
        self.steps.set(left.saturating_sub(1));
        left > 0
    }
}

impl SequentialSpec for Budgeted {
    type Op = RegisterOp<Val>;
    type Ret = RegisterRet<Val>;

    fn invoke(&mut self, op: &Self::Op) -> Self::Ret {
        self.spend();
        self.register.invoke(op)
    }

    fn is_valid_step(&mut self, op: &Self::Op, ret: &Self::Ret) -> bool {
        self.spend() && self.register.is_valid_step(op, ret)
    }
}

/// Whether `ops` (ambiguous DELETEs among them as operations that never
/// return), after `carried` ambiguous DELETEs invoked before all of them,
/// can be linearized from `init`, ending with a read of `last` if given.
pub(super) fn linearizable(ops: &[Timed], init: &Val, carried: usize, last: Option<&Val>, steps: u64) -> Decision {
    let budget = Rc::new(Cell::new(steps));
    let mut tester = LinearizabilityTester::new(Budgeted { register: Register(init.clone()), steps: budget.clone() });
    let mut invoke = |thread: u32, op: RegisterOp<Val>| {
        if let Err(e) = tester.on_invoke(thread, op) {
            panic!("malformed history: {e}");
        }
    };
    for i in 0..carried {
        invoke(CARRIED + i as u32, RegisterOp::Write(Val::Absent));
    }
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
    for (_, what, i) in events {
        let t = &ops[i];
        let result = match (what, &t.kind) {
            (1, Kind::Read(_)) => tester.on_invoke(t.thread, RegisterOp::Read),
            (1, Kind::Write(v)) => tester.on_invoke(t.thread, RegisterOp::Write(v.clone())),
            (_, Kind::Read(v)) => tester.on_return(t.thread, RegisterRet::ReadOk(v.clone())),
            (_, Kind::Write(_)) => tester.on_return(t.thread, RegisterRet::WriteOk),
        };
        if let Err(e) = result {
            panic!("malformed history: {e}");
        }
    }
    if let Some(v) = last
        && let Err(e) = tester.on_invret(FINAL_READ, RegisterOp::Read, RegisterRet::ReadOk(v.clone()))
    {
        panic!("malformed history: {e}");
    }
    match tester.serialized_history() {
        Some(_) => Decision::Yes,
        None if budget.get() == 0 => Decision::Undecided,
        None => Decision::No,
    }
}
