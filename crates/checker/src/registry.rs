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

/// Declares every model once, by type: [`MODULES`] and [`dispatch`] both
/// come from this one list, and each name is the model's own
/// [`Mirror::MODULE`].
macro_rules! models {
    ($($model:ty),* $(,)?) => {
        /// Every module that has a Rust model, by TLA+ module name.
        pub const MODULES: &[&str] = &[$(<$model as Mirror>::MODULE),*];

        /// Calls `visitor` with the model of `module`; `None` when no Rust
        /// model checks that module.
        pub fn dispatch<V: MirrorVisitor>(module: &str, visitor: V) -> Option<V::Output> {
            $(
                if module == <$model as Mirror>::MODULE {
                    return Some(visitor.visit::<$model>());
                }
            )*
            None
        }
    };
}

models! {
    crate::mirror::handoff::Handoff,
    crate::mirror::handoff::HandoffV2,
    crate::mirror::handoff_ext::HandoffAcks,
    crate::mirror::handoff_ext::HandoffZombie,
    crate::mirror::handoff_scale::HandoffScale,
    crate::mirror::handoff_reads::HandoffReads,
    crate::mirror::handoff_cond::HandoffCond,
    crate::mirror::handoff_roll::HandoffRoll,
    crate::model::handoff::HandoffImpl,
    crate::model::generations::HandoffGenerations,
    crate::mirror::remora::RemoraClaimActivation,
    crate::mirror::remora_loss::RemoraClaimLeaseLoss,
    crate::mirror::remora_jobs::RemoraJobs,
    crate::model::claim::ClaimImpl,
    crate::model::claim::ClaimJobsImpl,
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Module;

    impl MirrorVisitor for Module {
        type Output = &'static str;
        fn visit<M: Mirror>(self) -> &'static str {
            M::MODULE
        }
    }

    #[test]
    fn every_name_dispatches_to_the_model_of_that_name() {
        for &name in MODULES {
            assert_eq!(dispatch(name, Module), Some(name));
        }
        let mut unique = MODULES.to_vec();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), MODULES.len(), "a module is listed twice");
        assert_eq!(dispatch("NoSuchModule", Module), None);
    }
}
