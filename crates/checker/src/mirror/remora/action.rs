//! The disjuncts of `Next`: one variant per TLA+ action, with its
//! parameters, printed as the action instance (`BindOperation(o1, c1, f1, w1)`).

use super::values::{Claim, Constants, Fence, Op, Worker};

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

    /// The action instance in TLA+ notation, with the cfg's names.
    pub fn show(&self, k: &Constants) -> String {
        use Action::*;
        let args = match *self {
            BindOperation(op, c, f, w)
            | RejectOperationReuse(op, c, f, w)
            | StartActivation(op, c, f, w)
            | ReplayActivation(op, c, f, w)
            | RejectPrecondition(op, c, f, w) => vec![k.name(op), k.name(c), k.name(f), k.name(w)],
            CreateLease(c)
            | AcquireActivationLock(c)
            | LoseActivatorLock(c)
            | CommitActivation(c)
            | ExpireReservation(c)
            | ExpireLease(c)
            | AcquireRecoveryLock(c)
            | FinishRecovery(c)
            | CompensateRejectedActivation(c) => vec![k.name(c)],
            Done => vec![],
        };
        let name = Action::NAMES[self.kind()];
        if args.is_empty() { name.to_string() } else { format!("{name}({})", args.join(", ")) }
    }
}
