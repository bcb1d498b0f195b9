//! Which Rust model checks which TLA+ module.
//!
//! Models have different state types, so the dispatch is a visitor: the
//! caller says what to do with "some `M: Mirror`", and [`dispatch`] picks
//! `M` from the module name.

use crate::spec::Mirror;

/// Something to do with the mirror of a module.
pub trait MirrorVisitor {
    /// What the visit returns.
    type Output;
    /// Runs with the mirror type `M`.
    fn visit<M: Mirror>(self) -> Self::Output;
}

/// Every module that has a Rust model, by TLA+ module name.
pub const MODULES: &[&str] = &[
    "Handoff",
    "HandoffV2",
    "HandoffAcks",
    "HandoffZombie",
    "HandoffScale",
    "HandoffReads",
    "HandoffCond",
    "HandoffImpl",
    "HandoffGenerations",
    "RemoraClaimActivation",
    "RemoraClaimLeaseLoss",
    "ClaimImpl",
];

/// Calls `visitor` with the mirror of `module`; `None` when no Rust model
/// checks that module.
pub fn dispatch<V: MirrorVisitor>(module: &str, visitor: V) -> Option<V::Output> {
    match module {
        "Handoff" => Some(visitor.visit::<crate::mirror::handoff::Handoff>()),
        "HandoffV2" => Some(visitor.visit::<crate::mirror::handoff::HandoffV2>()),
        "HandoffAcks" => Some(visitor.visit::<crate::mirror::handoff_ext::HandoffAcks>()),
        "HandoffZombie" => Some(visitor.visit::<crate::mirror::handoff_ext::HandoffZombie>()),
        "HandoffScale" => Some(visitor.visit::<crate::mirror::handoff_scale::HandoffScale>()),
        "HandoffReads" => Some(visitor.visit::<crate::mirror::handoff_reads::HandoffReads>()),
        "HandoffCond" => Some(visitor.visit::<crate::mirror::handoff_cond::HandoffCond>()),
        "HandoffImpl" => Some(visitor.visit::<crate::model::handoff::HandoffImpl>()),
        "HandoffGenerations" => Some(visitor.visit::<crate::model::generations::HandoffGenerations>()),
        "RemoraClaimActivation" => Some(visitor.visit::<crate::mirror::remora::RemoraClaimActivation>()),
        "RemoraClaimLeaseLoss" => Some(visitor.visit::<crate::mirror::remora_loss::RemoraClaimLeaseLoss>()),
        "ClaimImpl" => Some(visitor.visit::<crate::model::claim::ClaimImpl>()),
        _ => None,
    }
}
