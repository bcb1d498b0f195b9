//! The disjuncts of `LossNext`: the base module's actions (with
//! `ReplayActivation` restated as `ReplayOfUnrejected`), `RenewLease`, and
//! the five actions of the loss.

use std::fmt::{self, Display};

use crate::mirror::remora::{Action, ModelValue};

type Claim = ModelValue;
type Worker = ModelValue;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossAction {
    /// A disjunct of `BaseNext` from RemoraClaimActivation; its
    /// `ReplayActivation(op, c, f, w)` stands for `ReplayOfUnrejected`.
    Base(Action),
    RenewLease(Claim, Worker),
    /// `LoseLease(c)` with the witness of `\E restorable \in BOOLEAN`.
    LoseLease(Claim, bool),
    RestoreLease(Claim, Worker),
    ExpireLostLease(Claim),
    RecreateLease(Claim),
    CommitActivationWithLostLease(Claim),
}

impl Display for LossAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LossAction::Base(Action::ReplayActivation(op, c, fence, w)) => {
                write!(f, "ReplayOfUnrejected({op}, {c}, {fence}, {w})")
            }
            LossAction::Base(a) => write!(f, "{a}"),
            LossAction::RenewLease(c, w) => write!(f, "RenewLease({c}, {w})"),
            LossAction::LoseLease(c, restorable) => {
                write!(f, "LoseLease({c}) \\* restorable = {}", if *restorable { "TRUE" } else { "FALSE" })
            }
            LossAction::RestoreLease(c, w) => write!(f, "RestoreLease({c}, {w})"),
            LossAction::ExpireLostLease(c) => write!(f, "ExpireLostLease({c})"),
            LossAction::RecreateLease(c) => write!(f, "RecreateLease({c})"),
            LossAction::CommitActivationWithLostLease(c) => write!(f, "CommitActivationWithLostLease({c})"),
        }
    }
}
