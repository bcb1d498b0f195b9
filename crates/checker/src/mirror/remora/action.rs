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

impl Action {
    /// The spec's actions, in `Next` order.
    pub const NAMES: [&'static str; 15] = [
        "BindOperation",
        "RejectOperationReuse",
        "StartActivation",
        "CreateLease",
        "AcquireActivationLock",
        "LoseActivatorLock",
        "CommitActivation",
        "ReplayActivation",
        "RejectPrecondition",
        "ExpireReservation",
        "ExpireLease",
        "AcquireRecoveryLock",
        "FinishRecovery",
        "CompensateRejectedActivation",
        "Done",
    ];

    /// The position of this action's name in [`Action::NAMES`].
    pub fn kind(&self) -> usize {
        use Action::*;
        match self {
            BindOperation(..) => 0,
            RejectOperationReuse(..) => 1,
            StartActivation(..) => 2,
            CreateLease(_) => 3,
            AcquireActivationLock(_) => 4,
            LoseActivatorLock(_) => 5,
            CommitActivation(_) => 6,
            ReplayActivation(..) => 7,
            RejectPrecondition(..) => 8,
            ExpireReservation(_) => 9,
            ExpireLease(_) => 10,
            AcquireRecoveryLock(_) => 11,
            FinishRecovery(_) => 12,
            CompensateRejectedActivation(_) => 13,
            Done => 14,
        }
    }
}

impl Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Action::*;
        let args = match *self {
            BindOperation(op, c, fe, w)
            | RejectOperationReuse(op, c, fe, w)
            | StartActivation(op, c, fe, w)
            | ReplayActivation(op, c, fe, w)
            | RejectPrecondition(op, c, fe, w) => vec![op, c, fe, w],
            CreateLease(c)
            | AcquireActivationLock(c)
            | LoseActivatorLock(c)
            | CommitActivation(c)
            | ExpireReservation(c)
            | ExpireLease(c)
            | AcquireRecoveryLock(c)
            | FinishRecovery(c)
            | CompensateRejectedActivation(c) => vec![c],
            Done => vec![],
        };
        f.write_str(Action::NAMES[self.kind()])?;
        if !args.is_empty() {
            let args: Vec<String> = args.iter().map(ModelValue::to_string).collect();
            write!(f, "({})", args.join(", "))?;
        }
        Ok(())
    }
}
