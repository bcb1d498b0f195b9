//! The checker's integration tests, one binary (`cargo test -p checker --test it`),
//! a module per subject.

mod claim_model;
mod claim_mutations;
mod cli;
mod handoff_bounds;
mod handoff_cond;
mod handoff_generations;
mod handoff_impl_ext;
mod handoff_impl_liveness;
mod handoff_impl_model;
mod handoff_impl_mutations;
mod handoff_mirror;
mod handoff_mutations;
mod handoff_reads;
mod handoff_roll;
mod remora_jobs_mirror;
mod remora_loss_mirror;
mod remora_mirror;
mod remora_mutations;
