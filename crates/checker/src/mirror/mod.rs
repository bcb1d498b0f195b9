//! 1:1 stateright mirrors of the TLA+ specs: one action per TLA+ action,
//! the state exactly the spec's variables, so that the unique-state count
//! equals TLC's distinct-state count on the same cfg.
//!
//! - [`handoff`] mirrors `tla/Handoff.tla` and `tla/HandoffV2.tla`;
//! - [`handoff_ext`] mirrors the extensions `tla/HandoffAcks.tla` and
//!   `tla/HandoffZombie.tla`, built on the HandoffV2 mirror;
//! - [`handoff_scale`] mirrors `tla/HandoffScale.tla` (deletes, chunked
//!   snapshots, digest anti-entropy, the tombstone floor, the budget),
//!   built on the HandoffZombie mirror;
//! - [`handoff_reads`] mirrors `tla/HandoffReads.tla` (client reads
//!   confirmed by a peer), built on the HandoffScale mirror;
//! - [`remora`] mirrors `tla/RemoraClaimActivation.tla`;
//! - [`remora_loss`] mirrors the extension `tla/RemoraClaimLeaseLoss.tla`,
//!   built on the [`remora`] mirror.

pub mod handoff;
pub mod handoff_ext;
pub mod handoff_reads;
pub mod handoff_scale;
pub mod remora;
pub mod remora_loss;
