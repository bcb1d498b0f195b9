//! The disjuncts of `JobsNext`: RemoraClaimLeaseLoss's `LossNext` (that
//! mirror's [`LossAction`]) and the five actions of the module.

use crate::mirror::remora::{Claim, Constants, Fence, Worker};
use crate::mirror::remora_loss::LossAction;

use super::state::Outcome;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobsAction {
    /// A disjunct of `LossNext`, with `outcome` and `usedFences` unchanged.
    Loss(LossAction),
    /// `Complete(c, w, o)`, `o \in {Succeeded, Failed}`.
    Complete(Claim, Worker, Outcome),
    /// `CompleteWithLostLease(c, w, o)`, `o \in {Succeeded, Failed}`.
    CompleteWithLostLease(Claim, Worker, Outcome),
    ReapExecuting(Claim),
    CompensateEndedAttempt(Claim),
    AuthorizeRetry(Claim, Fence, Worker),
}

const LOSS: usize = LossAction::NAMES.len();

impl JobsAction {
    /// The module's actions, in `JobsNext` order.
    pub const NAMES: [&'static str; LOSS + 5] = {
        let mut names = [""; LOSS + 5];
        let mut i = 0;
        while i < LOSS {
            names[i] = LossAction::NAMES[i];
            i += 1;
        }
        names[LOSS] = "Complete";
        names[LOSS + 1] = "CompleteWithLostLease";
        names[LOSS + 2] = "ReapExecuting";
        names[LOSS + 3] = "CompensateEndedAttempt";
        names[LOSS + 4] = "AuthorizeRetry";
        names
    };

    /// The position of this action's name in [`JobsAction::NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            JobsAction::Loss(a) => a.kind(),
            JobsAction::Complete(..) => LOSS,
            JobsAction::CompleteWithLostLease(..) => LOSS + 1,
            JobsAction::ReapExecuting(_) => LOSS + 2,
            JobsAction::CompensateEndedAttempt(_) => LOSS + 3,
            JobsAction::AuthorizeRetry(..) => LOSS + 4,
        }
    }

    /// The action instance in TLA+ notation, with the cfg's names.
    pub fn show(&self, k: &Constants) -> String {
        let name = JobsAction::NAMES[self.kind()];
        match *self {
            JobsAction::Loss(a) => a.show(k),
            JobsAction::Complete(c, w, o) | JobsAction::CompleteWithLostLease(c, w, o) => {
                format!("{name}({}, {}, {})", k.name(c), k.name(w), crate::mirror::remora::string_of(o))
            }
            JobsAction::ReapExecuting(c) | JobsAction::CompensateEndedAttempt(c) => format!("{name}({})", k.name(c)),
            JobsAction::AuthorizeRetry(c, f, w) => format!("{name}({}, {}, {})", k.name(c), k.name(f), k.name(w)),
        }
    }
}
