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
//! - [`handoff_cond`] mirrors `tla/HandoffCond.tla` (conditional writes,
//!   expiring keys), built on the HandoffReads mirror;
//! - [`handoff_roll`] mirrors `tla/HandoffRoll.tla` (acks that name their
//!   incarnation, rolling restarts), built on the HandoffCond mirror;
//! - [`remora`] mirrors `tla/RemoraClaimActivation.tla`;
//! - [`remora_loss`] mirrors the extension `tla/RemoraClaimLeaseLoss.tla`,
//!   built on the [`remora`] mirror;
//! - [`remora_jobs`] mirrors `tla/RemoraJobs.tla` (completion, retries,
//!   dead claims), built on the [`remora_loss`] mirror.

/// The stateright `Model` of a mirror built on another one: its own `init`,
/// `next` and `step`, and its checks by number (`crate::properties`): the
/// check of that name among its own (`checks`), else the verdict of the
/// mirror it extends, `$inherited` (the name of the check it violates).
macro_rules! extension_model {
    ($model:ty, $state:ty, $action:ty, |$m:ident, $s:ident| $inherited:expr) => {
        impl stateright::Model for $model {
            type State = $state;
            type Action = $action;

            fn init_states(&self) -> Vec<$state> {
                vec![self.init()]
            }

            fn actions(&self, s: &$state, actions: &mut Vec<$action>) {
                self.next(s, actions);
            }

            fn next_state(&self, s: &$state, action: $action) -> Option<$state> {
                self.step(s, &action)
            }

            fn properties(&self) -> Vec<stateright::Property<Self>> {
                crate::properties::always(self)
            }

            /// The web explorer lists actions as TLA+ action instances.
            fn format_action(&self, action: &Self::Action) -> String {
                action.to_string()
            }
        }

        impl crate::properties::NumberedChecks for $model {
            fn check_names(&self) -> &[&'static str] {
                &self.names
            }

            fn holds(&self, i: usize, $s: &$state) -> bool {
                let $m = self;
                match self.names.get(i) {
                    None => true,
                    Some(name) => match self.checks.iter().find(|(n, _)| n == name) {
                        Some((_, check)) => check(self, $s),
                        None => $inherited != Some(*name),
                    },
                }
            }
        }
    };
}

pub mod handoff;
pub mod handoff_cond;
pub mod handoff_ext;
pub mod handoff_reads;
pub mod handoff_roll;
pub mod handoff_scale;
pub mod remora;
pub mod remora_jobs;
pub mod remora_loss;
