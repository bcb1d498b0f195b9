//! HandoffGenerations: total death, first boot and the new-generation path
//! on the real code (docs/handoff.md 5.9). The cfg with a write and a total
//! death runs in `cargo xtask check` (145,519 states), the survivor case
//! exhaustively in `--deep` (`large/HandoffGenerationsSurvivor.cfg`, 17.6
//! million states); here, first boot exhaustively, and both outcomes of
//! the survivor case step by step, in the survivor cfg's model: so both
//! are paths its exhaustive run goes through.

use std::path::PathBuf;
use std::sync::Arc;

use checker::cfg::TlcConfig;
use checker::model::generations::{GenAction, GenState, HandoffGenerations};
use checker::run::{self, RunOptions};
use checker::search::Search;
use checker::spec::Mirror;
use protocol::handoff::{Body, ReplicaId, Status, Timer};
use stateright::Model;

fn models(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models").join(name)
}

/// The exhaustive run of cfg `name` (in `models/`), with `mutation`.
fn check(name: &str, mutation: Option<&str>) -> run::Report {
    let cfg = TlcConfig::load(&models(name)).unwrap();
    let model = HandoffGenerations::from_cfg(&cfg, mutation).unwrap();
    run::check(model, "HandoffGenerations", name, None, &RunOptions { threads: 2, ..Default::default() })
}

/// Every interleaving of first boot: one generation is minted, only while
/// nobody is ready, and every message is accepted.
#[test]
fn first_boot_every_interleaving() {
    let report = check("HandoffGenerationsFirstBoot.cfg", None);
    assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
    assert_eq!(report.unique_states, 18_023);
}

fn step(model: &HandoffGenerations, s: &GenState, action: GenAction) -> GenState {
    let t = model.next_state(s, action.clone()).unwrap_or_else(|| panic!("{action} is not enabled in\n{s:?}"));
    assert_eq!(t.violation, None, "{action}:\n{t:?}");
    t
}

/// Delivers the first message of `kind` from `from` to `to`.
fn deliver(model: &HandoffGenerations, s: &GenState, kind: &str, from: u8, to: u8) -> GenState {
    let m = s
        .net
        .values()
        .find(|m| m.body.kind() == kind && m.from == ReplicaId(from) && m.to == ReplicaId(to))
        .unwrap_or_else(|| panic!("no {kind} r{from} -> r{to} in\n{s:?}"));
    step(model, s, GenAction::Deliver(Arc::clone(m)))
}

/// Delivers the message of collect round `round` (a collect, or its
/// decline) from `from` to `to`: an older round's may still be in the net,
/// and which of them comes first there depends on the messages' hashes.
fn deliver_round(model: &HandoffGenerations, s: &GenState, round: u64, from: u8, to: u8) -> GenState {
    let of_round =
        |b: &Body| matches!(b, Body::Collect { round: r, .. } | Body::CollectDecline { round: r, .. } if *r == round);
    let m = s
        .net
        .values()
        .find(|m| of_round(&m.body) && m.from == ReplicaId(from) && m.to == ReplicaId(to))
        .unwrap_or_else(|| panic!("no round {round} r{from} -> r{to} in\n{s:?}"));
    step(model, s, GenAction::Deliver(Arc::clone(m)))
}

/// A write acknowledged: held by r0 and r1 (r2 has not got it yet).
fn acknowledged(model: &HandoffGenerations) -> GenState {
    let mut s = model.init_states().remove(0);
    s = step(model, &s, GenAction::Put { key: 0 });
    s = deliver(model, &s, "push", 0, 1);
    s = deliver(model, &s, "push_ack_by", 1, 0);
    assert_eq!(s.acked.len(), 1, "the write is acknowledged");
    s
}

/// Up to the case: a write acknowledged (held by r0 and r1), then r1
/// evicted and reseeded by r0 (it holds the write, still recovering: r2 has
/// not answered), then every ready replica dies (r0, r2); r1 survives.
fn survivor(model: &HandoffGenerations) -> GenState {
    let mut s = acknowledged(model);
    s = step(model, &s, GenAction::Evict(ReplicaId(1)));
    s = deliver(model, &s, "reseed", 1, 0);
    s = deliver(model, &s, "reseed_reply", 0, 1);
    assert!(s.replicas[1].memory().holds(&s.acked[0].key, s.acked[0].stamp), "the survivor holds the write");
    assert_eq!(s.replicas[1].phase(), Status::Recovering);
    s = step(model, &s, GenAction::TotalDeath);
    assert!(!s.acked[0].doomed, "the recovering survivor still holds it");
    s
}

/// The survivor cfg narrows the single eviction to before the total death.
#[test]
fn the_survivor_cfg_evicts_only_before_the_death() {
    let model = model();
    let init = model.init_states().remove(0);
    let dead = step(&model, &init, GenAction::TotalDeath);
    assert!(model.next_state(&dead, GenAction::Evict(ReplicaId(1))).is_none(), "no eviction after the death");
    for r in 0..3 {
        step(&model, &init, GenAction::Evict(ReplicaId(r)));
    }
}

fn model() -> HandoffGenerations {
    mutated(None)
}

/// The survivor cfg's model, with a protocol mutation.
fn mutated(mutation: Option<&str>) -> HandoffGenerations {
    let cfg = TlcConfig::load(&models("large/HandoffGenerationsSurvivor.cfg")).unwrap();
    HandoffGenerations::from_cfg(&cfg, mutation).unwrap()
}

/// Fair rounds (every message delivered, every retry fired), at most 50,
/// until `done` holds.
fn fair(model: &HandoffGenerations, mut s: GenState, done: impl Fn(&GenState) -> bool) -> GenState {
    for _ in 0..50 {
        if done(&s) {
            break;
        }
        let actions: Vec<GenAction> = s
            .net
            .values()
            .map(|m| GenAction::Deliver(Arc::clone(m)))
            .chain((0..3).map(|r| GenAction::Timer(ReplicaId(r), Timer::Retry)))
            .collect();
        for action in actions {
            if let Some(t) = model.next_state(&s, action.clone()) {
                assert_eq!(t.violation, None, "{action}:\n{t:?}");
                s = t;
            }
        }
    }
    s
}

/// Fair rounds after the death (every message delivered, every retry
/// fired): the survivor hears the new r2 decline, finishes its recovery
/// with the whole snapshot it holds, and the new coordinator collects it:
/// the namespace lives on in its generation, the write with it.
#[test]
fn a_survivor_holding_a_whole_snapshot_carries_the_namespace_through_a_total_death() {
    let model = model();
    let s = survivor(&model);
    let g1 = s.replicas[1].generation();
    let s = fair(&model, s, |s| s.replicas[0].phase() == Status::Ready);
    assert_eq!(s.replicas[0].phase(), Status::Ready, "{s:?}");
    assert_eq!(s.replicas[0].generation(), g1, "no new generation: the survivor was ready to be collected");
    assert!(s.replicas[0].memory().holds(&s.acked[0].key, s.acked[0].stamp), "the write is back at r0");
    assert!(!s.acked[0].doomed);
}

/// The race (issue 15, item 4): the new coordinator's collect reaches the
/// survivor twice while it still waits for r2, so both peers decline two
/// rounds and the coordinator mints a new generation -- legitimately:
/// between the declines nobody was ready. The survivor reboots into it,
/// empty; the write died with its generation (it is doomed, not lost
/// silently), and no record of the dead generation enters the new one.
#[test]
fn a_survivor_still_recovering_when_both_peers_decline_twice_reboots_into_the_new_generation() {
    let model = model();
    let mut s = survivor(&model);
    let g1 = s.replicas[1].generation();
    for round in 0..2 {
        for p in [1, 2] {
            s = deliver_round(&model, &s, round, 0, p);
            s = deliver_round(&model, &s, round, p, 0);
        }
        s = step(&model, &s, GenAction::Timer(ReplicaId(0), Timer::Retry));
    }
    let g2 = s.replicas[0].generation();
    assert!(g2.is_some() && g2 > g1, "the coordinator minted a newer generation: {g1:?} -> {g2:?}");
    s = deliver(&model, &s, "announce", 0, 1);
    assert_eq!(s.replicas[1].generation(), None, "the survivor rebooted, and joins by reseeding:\n{s:?}");
    assert!(s.replicas[1].memory().is_empty(), "empty: the dead generation's data went with it");
    // The rebooted survivor's: an older instance's may be outstanding too
    // (the reductions keep a late reseed request, which registers its
    // sender; issue 30).
    let survivor = s.replicas[1].instance();
    let reseed = s.net.values().find(|m| {
        matches!(m.body, Body::Reseed { instance, .. } if instance == survivor)
            && m.from == ReplicaId(1)
            && m.to == ReplicaId(0)
            && m.generation.is_none()
    });
    s = step(
        &model,
        &s,
        GenAction::Deliver(Arc::clone(
            reseed.unwrap_or_else(|| panic!("no reseed of the rebooted survivor in\n{s:?}")),
        )),
    );
    let reply = s.net.values().find(|m| m.body.kind() == "reseed_reply" && m.to == ReplicaId(1) && m.generation == g2);
    s = step(
        &model,
        &s,
        GenAction::Deliver(Arc::clone(reply.unwrap_or_else(|| panic!("no g2 reseed reply in\n{s:?}")))),
    );
    assert_eq!(s.replicas[1].generation(), g2, "the survivor joined the new generation:\n{s:?}");
    assert!(s.acked[0].doomed, "the write died with its generation");
}

/// Up to the case of docs/handoff.md 5.8: a write acknowledged (held by r0
/// and r1), then r0 evicted; the new r0 takes r1's snapshot (and the
/// generation) while r2 has not answered, and the total death takes r1 and
/// r2 (both ready). The coordinator survives it, collecting.
fn collecting_survivor(model: &HandoffGenerations) -> GenState {
    let mut s = acknowledged(model);
    let g1 = s.replicas[0].generation();
    s = step(model, &s, GenAction::Evict(ReplicaId(0)));
    s = deliver(model, &s, "collect", 0, 1);
    s = deliver(model, &s, "collect_reply", 1, 0);
    assert_eq!((s.replicas[0].phase(), s.replicas[0].generation()), (Status::Collect, g1), "r1 collected:\n{s:?}");
    let survivor = s.replicas[0].instance();
    s = step(model, &s, GenAction::TotalDeath);
    assert_eq!(s.replicas[0].instance(), survivor, "the collecting coordinator survives the death");
    s
}

/// Fair rounds after the death: both peers' successors decline twice, and
/// the coordinator goes on with what it collected, in its generation, the
/// write with it (every check holding at every step).
#[test]
fn a_coordinator_collecting_through_a_total_death_goes_on_with_what_it_collected() {
    let model = model();
    let s = collecting_survivor(&model);
    let g1 = s.replicas[0].generation();
    let s = fair(&model, s, |s| s.replicas.iter().all(|r| r.phase() == Status::Ready));
    assert!(s.replicas.iter().all(|r| r.phase() == Status::Ready), "{s:?}");
    assert!(s.replicas.iter().all(|r| r.generation() == g1), "the same generation:\n{s:?}");
    assert!(s.replicas[0].memory().holds(&s.acked[0].key, s.acked[0].stamp), "the write is kept");
    assert!(!s.acked[0].doomed);
}

/// The mutation WaitForDeadSnapshot (never ask a collected peer again)
/// waits for the dead r1's snapshot for good.
#[test]
fn waiting_for_a_dead_peers_snapshot_never_ends() {
    let model = mutated(Some("WaitForDeadSnapshot"));
    let s = collecting_survivor(&model);
    let s = fair(&model, s, |_| false);
    let statuses: Vec<Status> = s.replicas.iter().map(|r| r.phase()).collect();
    assert_eq!(statuses, [Status::Collect, Status::Recovering, Status::Recovering], "{s:?}");
}

/// The mutation GoOnWhenUncollectedDeclined goes on once the peer it has
/// not collected declined, though the collected one is still ready:
/// `PartialCollectOnlyAfterTotalDeath` catches it; the code passes.
#[test]
fn going_on_while_a_collected_peer_is_ready_is_caught() {
    let run = |mutation| check("HandoffGenerationsTwoEvicts.cfg", mutation);
    let report = run(None);
    assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
    let report = run(Some("GoOnWhenUncollectedDeclined"));
    assert_eq!(report.violated.as_deref(), Some("PartialCollectOnlyAfterTotalDeath"), "{}", run::format_trace(&report));
}

/// `ServesAgain` on every behaviour of one eviction and one total death at
/// any time, cycles included: the code passes; the mutation
/// WaitForDeadSnapshot ends collecting for good, and TakeStaleDecline
/// cycles on a dead instance's late decline and its successor's.
#[test]
fn every_behaviour_serves_again_once_the_evictions_stop() {
    let run = |mutation| check("HandoffGenerationsLiveness.cfg", mutation);
    let report = run(None);
    assert_eq!(report.verdict, "pass", "{:?}\n{}", report.violated, run::format_trace(&report));
    // 54,830 before the reductions kept requests whose answer may reboot their asker.
    assert_eq!(report.unique_states, 56_796);
    for mutation in ["WaitForDeadSnapshot", "TakeStaleDecline"] {
        let report = run(Some(mutation));
        assert_eq!(report.violated.as_deref(), Some("ServesAgain"), "{mutation}: {}", run::format_trace(&report));
    }
}

/// The reductions' old rule (the mutation `PruneByReplicasOnly`: a message
/// of a newer generation dropped once no replica holds an older one, though
/// a recovering survivor of a total death may still take the dead
/// generation from a late reply) is caught by the run that keeps one step's
/// drops, on the survivor cfg without its write, as by the unreduced run.
#[test]
fn keeping_one_step_s_drops_catches_the_old_generation_rule() {
    caught_without_the_write("PruneByReplicasOnly", "ReductionSound", 17);
}

/// The second old rule, `PruneRequestsByOwnGeneration` (a request dropped
/// by its own generation only, though its answer carries the answerer's,
/// which may reboot the asker), is caught only deep: at depth 23
/// breadth-first, which holds 5.4 GB. Depth-first, on one thread (so the
/// same path every run), with one step's drops kept, it is caught in about
/// 24 s and 50 MB (636,936 states on the release checker, 2026-12-07). The
/// sound rule's run of the same graph (38 million states) is `--deep`'s.
#[test]
fn keeping_one_step_s_drops_catches_the_own_generation_rule() {
    let mut cfg = TlcConfig::load(&models("large/HandoffGenerationsSurvivorNoWrite.cfg")).unwrap();
    cfg.reduction = checker::cfg::Reduction::KeepOne;
    let model = HandoffGenerations::from_cfg(&cfg, Some("PruneRequestsByOwnGeneration")).unwrap();
    let opts = RunOptions { threads: 1, search: Search::Dfs, ..Default::default() };
    let report = run::check(model, "HandoffGenerations", "Survivor", None, &opts);
    assert_eq!(report.violated.as_deref(), Some("ReductionSound"), "{}", run::format_trace(&report));
}

/// The premise of the argument for keeping one step's drops (whether a
/// message is dropped depends on no other message the reductions drop) is
/// checked on every state: the mutation `RebootByDroppedReplies`, whose
/// `may_reboot` also asks about replies it drops, breaks it and is caught
/// (`DropsIndependent`), unreduced and with one step's drops kept alike.
#[test]
fn a_drop_that_depends_on_another_drop_is_caught() {
    caught_without_the_write("RebootByDroppedReplies", "DropsIndependent", 16);
}

/// Runs `mutation` on the survivor cfg without its write, with one step's
/// drops kept and unreduced: both must report `violated` at `depth`.
fn caught_without_the_write(mutation: &str, violated: &str, depth: usize) {
    let mut cfg = TlcConfig::load(&models("large/HandoffGenerationsSurvivorNoWrite.cfg")).unwrap();
    let opts = RunOptions { threads: 2, ..Default::default() };
    for reduction in [checker::cfg::Reduction::KeepOne, checker::cfg::Reduction::Off] {
        cfg.reduction = reduction;
        let model = HandoffGenerations::from_cfg(&cfg, Some(mutation)).unwrap();
        let report = run::check(model, "HandoffGenerations", "Survivor", None, &opts);
        let trace = run::format_trace(&report);
        assert_eq!(report.violated.as_deref(), Some(violated), "{reduction:?}:\n{trace}");
        assert_eq!(report.max_depth, depth, "{reduction:?}:\n{trace}");
    }
}
