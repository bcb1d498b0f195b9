//! The `checker` binary as `cargo xtask check` and people run it: a cfg
//! alone picks its module and its search, whoever runs it.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the checker in the workspace root and parses its JSON output.
fn checker(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_checker")).current_dir(root()).args(args).output().unwrap();
    assert!(out.status.success(), "checker {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn cfg_says_what_a_cfg_is_for() {
    let handoff = checker(&["cfg", "tla/Handoff.cfg"]);
    assert_eq!(handoff["module"], "Handoff");
    assert_eq!(handoff["search"], "bfs");
    assert_eq!(handoff["rust_model"], true);
    assert!(handoff["constants"].as_array().unwrap().contains(&"MaxEvicts".into()));
    assert_eq!(handoff["properties"], serde_json::json!(["NoServedRegression"]));

    let named = checker(&["cfg", "tla/RemoraClaimActivationTwoClaims.cfg"]);
    assert_eq!(named["module"], "RemoraClaimActivation");

    let large = checker(&["cfg", "crates/checker/models/large/HandoffImpl.cfg"]);
    assert_eq!((&large["module"], &large["search"]), (&"HandoffImpl".into(), &"dfs".into()));

    let heartbeat = checker(&["cfg", "tla/RemoraClaimHeartbeat.cfg"]);
    assert_eq!(heartbeat["rust_model"], false);
    assert!(heartbeat["no_mirror"].as_str().is_some_and(|why| why.contains("RemoraClaimLeaseLoss")), "{heartbeat}");
    assert_eq!(checker(&["cfg", "tla/Handoff.cfg"])["no_mirror"], serde_json::Value::Null);

    // Where the run keeping one step's drops goes (xtask reads this shape).
    assert_eq!(handoff["keep_one"], Value::Null);
    let rolling = checker(&["cfg", "crates/checker/models/HandoffImplRolling.cfg"]);
    assert!(rolling["keep_one"]["deep"].as_str().is_some_and(|why| why.contains("--deep")), "{rolling}");
    let reads = checker(&["cfg", "crates/checker/models/large/HandoffImplReads2.cfg"]);
    assert!(reads["keep_one"]["never"].as_str().is_some_and(|why| why.contains("hours")), "{reads}");
}

/// A simulation cfg run directly walks at random, as in `cargo xtask check`.
#[test]
fn a_simulation_cfg_is_simulated() {
    let cfg = "crates/checker/models/simulation/HandoffImplLarge.cfg";
    let report = checker(&["check", cfg, "--seconds", "1", "--threads", "1", "--json"]);
    assert_eq!(report["search"], "simulation");
    assert_eq!(report["verdict"], "pass");
    assert_eq!(report["spec"], "HandoffImpl");

    let report = checker(&["check", "HandoffImpl", "--config", cfg, "--seconds", "1", "--threads", "1", "--json"]);
    assert_eq!(report["search"], "simulation");
}

/// An action that never fires fails an exhaustive check unless the cfg
/// declares it (`\* UNFIRED Action: why`): the fixture declares every
/// recovery action but not `Evict`, which MaxEvicts = 0 disables.
#[test]
fn an_undeclared_action_that_never_fires_fails_the_check() {
    let cfg = "crates/checker/tests/fixtures/HandoffNoEvictions.cfg";
    let out = Command::new(env!("CARGO_BIN_EXE_checker"))
        .current_dir(root())
        .args(["check", cfg, "--json", "--threads", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"], "vacuous");
    assert_eq!(report["violated"], Value::Null);
    assert_eq!(report["unfired"], serde_json::json!(["Evict never fired"]));

    // The shipped cfgs declare what cannot fire at their bounds, and pass.
    let shipped = checker(&["check", "tla/HandoffZombie.cfg", "--json"]);
    assert_eq!(shipped["verdict"], "pass");
}

/// A declaration that names no action of the model (a typo, a renamed
/// action) fails the check: it would otherwise never be checked.
#[test]
fn an_unfired_declaration_of_no_action_fails_the_check() {
    let fixture = root().join("crates/checker/tests/fixtures/HandoffNoEvictions.cfg");
    let text = std::fs::read_to_string(fixture).unwrap();
    let dir = root().join("target/tmp/checker-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("HandoffUnfiredTypo.cfg");
    std::fs::write(
        &cfg,
        text.replace("SPECIFICATION Spec", "SPECIFICATION Spec\n\\* UNFIRED Evict: none\n\\* UNFIRED Evic: a typo"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_checker"))
        .current_dir(root())
        .args(["check", cfg.to_str().unwrap(), "--json", "--threads", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"], "vacuous");
    assert_eq!(report["unfired"], serde_json::json!(["UNFIRED Evic names no action of this model"]));
}

/// A run bounded in depth whose graph ends above the bound met every
/// state: it says so and is judged like a whole run (the fixture's graph
/// ends at depth 9, and `Evict` never fires). Bounded at 9, the last level
/// is met but not expanded, so the run knows nothing beyond it: complete
/// to depth 9 only, and not judged.
#[test]
fn a_bounded_run_whose_graph_ends_within_its_bound_is_the_whole_graph() {
    let cfg = "crates/checker/tests/fixtures/HandoffNoEvictions.cfg";
    let run = |bound: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_checker"))
            .current_dir(root())
            .args(["check", cfg, "--json", "--threads", "1", "--depth-bound", bound])
            .output()
            .unwrap();
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap())
    };
    let (code, within) = run("10");
    assert_eq!((code, &within["verdict"]), (Some(1), &"vacuous".into()), "{within}");
    assert_eq!((&within["ended_within_bound"], &within["max_depth"]), (&true.into(), &9.into()));
    let (code, at) = run("9");
    assert_eq!((code, &at["verdict"]), (Some(0), &"pass".into()), "{at}");
    assert_eq!(at["ended_within_bound"], false);
    assert_eq!(at["unique_states"], within["unique_states"], "the same states, but not known to be all");
}
