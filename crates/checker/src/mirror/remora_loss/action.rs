//! The disjuncts of `LossNext`: the base module's actions (with
//! `ReplayActivation` restated as `ReplayOfUnrejected`), `RenewLease`, and
//! the five actions of the loss.

use crate::mirror::remora::{Action, Claim, Constants, Worker};

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

/// The base module's action names, with `ReplayOfUnrejected` in the place
/// of `ReplayActivation`.
const BASE: usize = Action::NAMES.len();

impl LossAction {
    /// The module's actions, in `LossNext` order (`BaseNext`'s, then the
    /// loss's).
    pub const NAMES: [&'static str; BASE + 6] = {
        let mut names = [""; BASE + 6];
        let mut i = 0;
        while i < BASE {
            names[i] = Action::NAMES[i];
            i += 1;
        }
        // ReplayActivation's place (`Action::kind`).
        names[7] = "ReplayOfUnrejected";
        names[BASE] = "RenewLease";
        names[BASE + 1] = "LoseLease";
        names[BASE + 2] = "RestoreLease";
        names[BASE + 3] = "ExpireLostLease";
        names[BASE + 4] = "RecreateLease";
        names[BASE + 5] = "CommitActivationWithLostLease";
        names
    };

    /// The position of this action's name in [`LossAction::NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            LossAction::Base(a) => a.kind(),
            LossAction::RenewLease(..) => BASE,
            LossAction::LoseLease(..) => BASE + 1,
            LossAction::RestoreLease(..) => BASE + 2,
            LossAction::ExpireLostLease(_) => BASE + 3,
            LossAction::RecreateLease(_) => BASE + 4,
            LossAction::CommitActivationWithLostLease(_) => BASE + 5,
        }
    }

    /// The action instance in TLA+ notation, with the cfg's names.
    pub fn show(&self, k: &Constants) -> String {
        let name = LossAction::NAMES[self.kind()];
        match *self {
            LossAction::Base(a @ Action::ReplayActivation(..)) => a.show(k).replacen(Action::NAMES[a.kind()], name, 1),
            LossAction::Base(a) => a.show(k),
            LossAction::RenewLease(c, w) | LossAction::RestoreLease(c, w) => {
                format!("{name}({}, {})", k.name(c), k.name(w))
            }
            LossAction::LoseLease(c, restorable) => {
                format!("{name}({}) \\* restorable = {}", k.name(c), if restorable { "TRUE" } else { "FALSE" })
            }
            LossAction::ExpireLostLease(c)
            | LossAction::RecreateLease(c)
            | LossAction::CommitActivationWithLostLease(c) => format!("{name}({})", k.name(c)),
        }
    }
}
