//! The implementation model with the constants of one cfg.

use super::mutation::Mutation;
use super::names::Names;
use super::refinement::Refinement;

/// The implementation model with the constants of one cfg.
pub struct ClaimImpl {
    pub(super) names: Names,
    pub(super) refinement: Refinement,
    /// The properties checked, in the order of `properties()`.
    pub(super) checked: Vec<&'static str>,
    /// Whether the cfg asks for `LossSpec` (the refinement itself).
    pub(super) check_refinement: bool,
    pub(super) mutation: Option<Mutation>,
}

/// Not a property of the spec: a procedure handed a reply it cannot take is
/// a bug of the model or of the protocol, never silently skipped.
pub(super) const PROCEDURES_TAKE_EVERY_REPLY: &str = "ProceduresTakeEveryReply";
