//! Paths through the claims implementation models that several tests take.

use checker::mirror::remora::{Claim, Fence, Op, Worker};
use checker::model::claim::Action;

pub const O1: Op = Op(0);
pub const C1: Claim = Claim(0);
pub const F1: Fence = Fence(0);
pub const F2: Fence = Fence(1);
pub const W1: Worker = Worker(0);

/// The first activation of (c1, f1, w1), accepted from its grant: one lease
/// request.
pub const ACTIVATE: [Action; 6] = [
    Action::Activate(O1, C1, F1, W1),
    Action::Activator(O1, "validate"),
    Action::Activator(O1, "create_lease"),
    Action::Activator(O1, "acquire_lock"),
    Action::Activator(O1, "commit"),
    Action::Activator(O1, "record_grant"),
];
