//! The checked properties of a claims model, one `always` slot each.

use stateright::{Model, Property};

use super::model::ClaimImpl;
use super::state::ImplState;

/// How many properties a model checks at most.
pub(super) const SLOTS: usize = 24;

/// `always` properties are plain function pointers, so each checked
/// property gets a slot reading its name from `checked`.
fn slot<M: AsRef<ClaimImpl> + Model<State = ImplState>, const I: usize>(m: &M, s: &ImplState) -> bool {
    m.as_ref().checked.get(I).is_none_or(|name| !s.step_violations.contains(name))
}

/// The checked properties of `m`, one slot each.
pub(super) fn properties<M: AsRef<ClaimImpl> + Model<State = ImplState>>(m: &M) -> Vec<Property<M>> {
    let slots: [fn(&M, &ImplState) -> bool; SLOTS] = [
        slot::<M, 0>,
        slot::<M, 1>,
        slot::<M, 2>,
        slot::<M, 3>,
        slot::<M, 4>,
        slot::<M, 5>,
        slot::<M, 6>,
        slot::<M, 7>,
        slot::<M, 8>,
        slot::<M, 9>,
        slot::<M, 10>,
        slot::<M, 11>,
        slot::<M, 12>,
        slot::<M, 13>,
        slot::<M, 14>,
        slot::<M, 15>,
        slot::<M, 16>,
        slot::<M, 17>,
        slot::<M, 18>,
        slot::<M, 19>,
        slot::<M, 20>,
        slot::<M, 21>,
        slot::<M, 22>,
        slot::<M, 23>,
    ];
    m.as_ref().checked.iter().zip(slots).map(|(name, slot)| Property::always(name, slot)).collect()
}
