//! The implementation model with the constants of one cfg.

use super::mutation::Mutation;
use super::names::Names;
use super::refinement::{Interned, Refines};

/// The implementation model with the constants of one cfg.
pub struct ClaimImpl {
    pub(super) names: Names,
    /// The spec checked: RemoraClaimLeaseLoss, or RemoraJobs (`jobs`).
    pub(super) refinement: Box<dyn Refines>,
    pub(super) interned: Interned,
    /// The properties checked, in the order of `properties()`.
    pub(super) checked: Vec<&'static str>,
    /// The formula that names the refinement (`LossSpec`, `JobsSpec`), if
    /// the cfg asks for it as a `PROPERTY`.
    pub(super) refinement_property: Option<&'static str>,
    /// RemoraJobs' `MaxAttempts` when the model checks RemoraJobs: then the
    /// clients also complete, retry and the reaper takes executing claims.
    pub(super) jobs: Option<u32>,
    pub(super) mutation: Option<Mutation>,
}

/// Not a property of the spec: a procedure handed a reply it cannot take is
/// a bug of the model or of the protocol, never silently skipped.
pub(super) const PROCEDURES_TAKE_EVERY_REPLY: &str = "ProceduresTakeEveryReply";
