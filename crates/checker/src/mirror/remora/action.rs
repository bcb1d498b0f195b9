//! The disjuncts of `Next`: one variant per TLA+ action, with its
//! parameters, printed as the action instance (`BindOperation(o1, c1, f1, w1)`).

use std::fmt::{self, Display};

use super::values::ModelValue;

type Op = ModelValue;
type Claim = ModelValue;
type Fence = ModelValue;
type Worker = ModelValue;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    BindOperation(Op, Claim, Fence, Worker),
    RejectOperationReuse(Op, Claim, Fence, Worker),
    StartActivation(Op, Claim, Fence, Worker),
    CreateLease(Claim),
    AcquireActivationLock(Claim),
    LoseActivatorLock(Claim),
    CommitActivation(Claim),
    ReplayActivation(Op, Claim, Fence, Worker),
    RejectPrecondition(Op, Claim, Fence, Worker),
    ExpireReservation(Claim),
    ExpireLease(Claim),
    AcquireRecoveryLock(Claim),
    FinishRecovery(Claim),
    CompensateRejectedActivation(Claim),
    Done,
}

impl Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Action::*;
        let (name, args) = match *self {
            BindOperation(op, c, fe, w) => ("BindOperation", vec![op, c, fe, w]),
            RejectOperationReuse(op, c, fe, w) => ("RejectOperationReuse", vec![op, c, fe, w]),
            StartActivation(op, c, fe, w) => ("StartActivation", vec![op, c, fe, w]),
            CreateLease(c) => ("CreateLease", vec![c]),
            AcquireActivationLock(c) => ("AcquireActivationLock", vec![c]),
            LoseActivatorLock(c) => ("LoseActivatorLock", vec![c]),
            CommitActivation(c) => ("CommitActivation", vec![c]),
            ReplayActivation(op, c, fe, w) => ("ReplayActivation", vec![op, c, fe, w]),
            RejectPrecondition(op, c, fe, w) => ("RejectPrecondition", vec![op, c, fe, w]),
            ExpireReservation(c) => ("ExpireReservation", vec![c]),
            ExpireLease(c) => ("ExpireLease", vec![c]),
            AcquireRecoveryLock(c) => ("AcquireRecoveryLock", vec![c]),
            FinishRecovery(c) => ("FinishRecovery", vec![c]),
            CompensateRejectedActivation(c) => ("CompensateRejectedActivation", vec![c]),
            Done => ("Done", vec![]),
        };
        f.write_str(name)?;
        if !args.is_empty() {
            let args: Vec<String> = args.iter().map(ModelValue::to_string).collect();
            write!(f, "({})", args.join(", "))?;
        }
        Ok(())
    }
}
