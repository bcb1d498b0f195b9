//! The spec extensions' mirrors (`tla/HandoffAcks.tla`,
//! `tla/HandoffZombie.tla`): parity with the TLA+ checker's distinct-state
//! counts on the cfgs in tla/ (the larger bounds in tla/large/ run with
//! `cargo xtask check --all`, or `checker check --config`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use checker::cfg::TlcConfig;
use checker::mirror::handoff_ext::{HandoffAcks, HandoffZombie};
use checker::run::{self, Report, RunOptions};
use checker::search::Search;
use checker::spec::Mirror;

fn tla(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tla").join(name)
}

fn check<M: Mirror>(path: &Path) -> Report {
    let cfg = TlcConfig::load(path).unwrap();
    let model = M::from_cfg(&cfg, None).unwrap();
    let opts = RunOptions {
        threads: 2,
        progress_every: Some(Duration::from_secs(30)),
        search: Search::Bfs,
        ..Default::default()
    };
    let report = run::check(model, M::MODULE, &path.display().to_string(), None, &opts);
    println!("{}\n{}", report.summary(), run::format_trace(&report));
    report
}

/// The `tla` checker (tla-checker 0.24.11) reports the same count.
#[test]
fn handoff_zombie_cfg_matches_the_tla_checker() {
    let report = check::<HandoffZombie>(&tla("HandoffZombie.cfg"));
    assert_eq!(report.verdict, "pass", "{:?}", report.violated);
    assert_eq!(report.unique_states, HANDOFF_ZOMBIE_STATES);
}

const HANDOFF_ACKS_STATES: usize = 110_287;
const HANDOFF_ZOMBIE_STATES: usize = 21_918;

/// A cfg's module must be named by its first line or its file name.
#[test]
fn the_extension_cfgs_name_their_modules() {
    for (cfg, module) in [
        ("HandoffAcks.cfg", None),
        ("HandoffZombie.cfg", None),
        ("large/HandoffAcksMaxEvicts2.cfg", Some("HandoffAcks")),
        ("large/HandoffAcksMaxEvicts3.cfg", Some("HandoffAcks")),
        ("large/HandoffZombieMaxEvicts2.cfg", Some("HandoffZombie")),
        ("large/HandoffZombieMaxEvicts3.cfg", Some("HandoffZombie")),
    ] {
        let parsed = TlcConfig::load(&tla(cfg)).unwrap();
        assert_eq!(parsed.module.as_deref(), module, "{cfg}");
    }
}

/// Slow (3 to 50 s each on 2 cores): `cargo xtask check --slow` and
/// `cargo xtask test` run them; the default check skips `::slow::`.
mod slow {
    use super::*;

    /// The `tla` checker (tla-checker 0.24.11) reports the same count.
    #[test]
    fn handoff_acks_cfg_matches_the_tla_checker() {
        let report = check::<HandoffAcks>(&tla("HandoffAcks.cfg"));
        assert_eq!(report.verdict, "pass", "{:?}", report.violated);
        assert_eq!(report.unique_states, HANDOFF_ACKS_STATES);
    }
}
