//! The validator on traces recorded by traced drivers over a small
//! in-process network: honest runs fit (one with a total death and a ghost
//! of the dead generation refused); each kind of tampering is reported (a
//! message nobody sent, a changed client input, a timer fired or fed
//! early, a step missing, a trace cut at its end, host time going back, a
//! reboot into an older
//! instance, a refusal the models do not make, a supersession of a
//! coordinator that was not ready); and each invariant the validator
//! checks reports a state that breaks it.

use std::collections::VecDeque;
use std::fs;
use std::path::PathBuf;

use protocol::handoff::trace::{self, Row, Step};
use protocol::handoff::{
    Body, ClientRequestId, Config, Driver, Epoch, Input, Key, Message, Millis, Output, Record, Replica, ReplicaId,
    Stamp, Status, Tag, Timer, Value, Version, WriteId, WriteReply,
};

use super::invariants::{Current, Invariants, no_served_regression};
use super::{ValidateError, validate_dir};

/// Rows by host object, in the order they were recorded.
type Rows = Vec<(u64, Row)>;

/// Three traced replicas; messages delivered in order, 5 ms apart. Each
/// boot is a host object of its own.
struct Net {
    config: Config,
    now: u64,
    drivers: Vec<Driver>,
    /// The host object of each replica's current instance.
    objects: Vec<u64>,
    queue: VecDeque<Message>,
    rows: Rows,
    written: u64,
}

impl Net {
    fn new() -> Net {
        let config = Config::new(ReplicaId(0), [ReplicaId(1), ReplicaId(2)]).expect("config");
        let mut net = Net {
            config,
            now: 1_000,
            drivers: Vec::new(),
            objects: Vec::new(),
            queue: VecDeque::new(),
            rows: Rows::new(),
            written: 0,
        };
        for r in 0..3u8 {
            let (d, out) = Driver::boot_traced(net.config.clone(), ReplicaId(r), Millis(net.now), u64::from(r) + 11)
                .expect("boot");
            net.drivers.push(d);
            net.objects.push(u64::from(r));
            net.take(usize::from(r));
            net.sends(out);
        }
        net
    }

    fn take(&mut self, r: usize) {
        let object = self.objects[r];
        self.rows.extend(self.drivers[r].take_trace().into_iter().map(|row| (object, row)));
    }

    fn sends(&mut self, out: Vec<Output>) {
        self.queue.extend(out.into_iter().filter_map(|o| match o {
            Output::Send(m) => Some(m),
            _ => None,
        }));
    }

    /// 5 ms on: every message in flight delivered, every due timer run.
    fn tick(&mut self) {
        self.now += 5;
        while let Some(m) = self.queue.pop_front() {
            self.feed(usize::from(m.to.0), Input::Message(m));
        }
        for r in 0..3 {
            let out = self.drivers[r].run_due(Millis(self.now), 64);
            self.take(r);
            self.sends(out);
        }
    }

    /// Feeds `input` to replica `r`, refused or not.
    fn feed(&mut self, r: usize, input: Input) {
        if let Ok(out) = self.drivers[r].handle(Millis(self.now), input) {
            self.sends(out);
        }
        self.take(r);
    }

    /// `ticks` ticks.
    fn settle(&mut self, ticks: usize) {
        for _ in 0..ticks {
            self.tick();
        }
    }

    /// Ticks until every replica is ready.
    fn until_ready(&mut self) {
        for _ in 0..2_000 {
            if self.drivers.iter().all(|d| d.replica().phase() == Status::Ready) {
                return;
            }
            self.tick();
        }
        panic!("the replicas never got ready");
    }

    /// A client write of a fresh key at the coordinator.
    fn put(&mut self) {
        self.written += 1;
        let key = Key::new(format!("k{}", self.written)).expect("key");
        let input = Input::Put {
            req: ClientRequestId(self.written),
            key,
            value: b"v".to_vec(),
            wid: WriteId(self.written.into()),
            cond: None,
            ttl_ms: None,
        };
        self.feed(0, input);
    }

    /// Replica `r` evicted: a new instance boots on a new host object.
    fn evict(&mut self, r: usize, seed: u64) {
        let (d, out) =
            Driver::boot_traced(self.config.clone(), ReplicaId(r as u8), Millis(self.now), seed).expect("boot");
        self.drivers[r] = d;
        self.objects[r] = self.objects.iter().max().map_or(0, |o| o + 1);
        self.take(r);
        self.sends(out);
    }
}

/// Three replicas ready, then `writes` writes, each settled.
fn run(writes: u64) -> Net {
    let mut net = Net::new();
    net.until_ready();
    for _ in 0..writes {
        net.put();
        net.settle(20);
    }
    net.settle(100);
    net
}

fn record_run(writes: u64) -> Rows {
    run(writes).rows
}

fn validate(rows: &Rows, name: &str) -> Result<super::Fitted, ValidateError> {
    validate_ended(rows, &[], name)
}

/// [`validate`], with `ends` (object, steps) saved beside the traces as the
/// pause hook's answers are.
fn validate_ended(rows: &Rows, ends: &[(u64, u64)], name: &str) -> Result<super::Fitted, ValidateError> {
    let dir: PathBuf = std::env::temp_dir().join(format!("handoff-validate-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temp dir");
    let mut objects: Vec<u64> = rows.iter().map(|(o, _)| *o).collect();
    objects.sort_unstable();
    objects.dedup();
    for object in objects {
        let mut page = Vec::new();
        for (_, row) in rows.iter().filter(|(o, _)| *o == object) {
            trace::push_frame(&mut page, object, &row.encode());
        }
        fs::write(dir.join(format!("o{object}.trace")), page).expect("write");
    }
    for (object, steps) in ends {
        let end = format!(r#"{{"object":"{object:016x}","steps":{steps}}}"#);
        fs::write(dir.join(format!("o{object}.end")), end).expect("write");
    }
    let result = validate_dir(&dir);
    let _ = fs::remove_dir_all(&dir);
    result
}

fn entry_mut(rows: &mut Rows, pick: impl Fn(&Step) -> bool) -> &mut trace::Entry {
    rows.iter_mut()
        .find_map(|(_, row)| match row {
            Row::Step(e) if pick(&e.step) => Some(&mut **e),
            _ => None,
        })
        .expect("such a step")
}

fn misfit(result: Result<super::Fitted, ValidateError>) -> String {
    match result {
        Err(e) => e.to_string(),
        Ok(f) => panic!("a tampered trace fitted: {f:?}"),
    }
}

#[test]
fn an_honest_run_fits() {
    let fitted = validate(&record_run(3), "honest").expect("the honest run fits");
    assert_eq!(fitted.acked, 3);
    assert_eq!(fitted.boots, [1, 1, 1]);
    assert!(fitted.delivered > 10 && fitted.timers > 10, "{fitted:?}");
    assert_eq!((fitted.evictions_alone, fitted.refused_messages, fitted.refused_client), (0, 0, 0));
}

#[test]
fn a_message_nobody_sent_is_reported() {
    let mut rows = record_run(1);
    let e = entry_mut(&mut rows, |s| matches!(s, Step::Handle(Input::Message(m)) if m.body.kind() == "push"));
    if let Step::Handle(Input::Message(m)) = &mut e.step {
        m.generation = None;
    }
    assert!(misfit(validate(&rows, "unsent")).contains("no step merged before it sent"));
}

#[test]
fn a_client_input_other_than_the_one_processed_is_reported() {
    let mut rows = record_run(1);
    let e = entry_mut(&mut rows, |s| matches!(s, Step::Handle(Input::Put { .. })));
    if let Step::Handle(Input::Put { value, .. }) = &mut e.step {
        *value = b"w".to_vec();
    }
    assert!(misfit(validate(&rows, "put")).contains("other outputs"));
}

#[test]
fn a_timer_fired_before_it_was_due_is_reported() {
    let mut rows = record_run(1);
    let e = entry_mut(&mut rows, |s| matches!(s, Step::Fire(_)));
    e.now = Millis(e.now.0 - 1);
    assert!(misfit(validate(&rows, "early")).contains("the timer due was None"));
}

/// A host that feeds a timer as an input (instead of `fire_next`) must
/// feed it when it is due too.
#[test]
fn a_timer_fed_before_it_was_due_is_reported() {
    let mut net = run(0);
    let armed = net.drivers[1].deadline(Timer::Gossip).expect("gossip armed");
    assert!(armed.0 > net.now);
    net.feed(1, Input::Timer(Timer::Gossip));
    assert!(misfit(validate(&net.rows, "fed-early")).contains("the host fed Gossip at"));
    // Fed when due, it fits.
    let mut net = run(0);
    let armed = net.drivers[1].deadline(Timer::Gossip).expect("gossip armed");
    net.now = armed.0;
    net.feed(1, Input::Timer(Timer::Gossip));
    validate(&net.rows, "fed-due").expect("a timer fed when due fits");
}

#[test]
fn a_missing_step_is_reported() {
    let mut rows = record_run(1);
    let at = rows.iter().rposition(|(o, _)| *o == 1).expect("r1 steps") / 2;
    let at = at + rows[at..].iter().position(|(o, _)| *o == 1).expect("an r1 step");
    rows.remove(at);
    assert!(misfit(validate(&rows, "gap")).contains("is missing"));
}

/// A trace cut at its end: without the ends the pause hook names, the
/// prefix validates; with them, the cut is reported.
#[test]
fn a_trace_cut_at_its_end_is_reported() {
    let net = run(1);
    let ends: Vec<(u64, u64)> =
        (0..3).map(|r| (net.objects[r], net.drivers[r].traced_steps().expect("a traced driver"))).collect();
    validate_ended(&net.rows, &ends, "ended").expect("the whole trace fits its ends");
    // A replica's last step whose sends (if any) nobody received: cut, the
    // rest is a behaviour still.
    let rows = (0..3u64)
        .find_map(|object| {
            let mut rows = net.rows.clone();
            rows.remove(rows.iter().rposition(|(o, _)| *o == object)?);
            validate(&rows, "cut-unended").is_ok().then_some(rows)
        })
        .expect("a last step whose cut leaves a behaviour");
    assert!(misfit(validate_ended(&rows, &ends, "cut")).contains("had taken"));
}

/// Host time never goes back within a host object's steps.
#[test]
fn host_time_that_goes_back_is_reported() {
    let mut rows = record_run(1);
    let last = rows.iter().rposition(|(o, _)| *o == 1).expect("r1 steps");
    if let (_, Row::Step(e)) = &mut rows[last] {
        e.now = Millis(999);
    }
    assert!(misfit(validate(&rows, "time-back")).contains("before its previous step"));
}

/// A reboot must be a newer instance than the one it replaces: two boots
/// of a replica in one millisecond are ordered by their nonces, and the
/// validator reports the one that comes out older (the coordinator would
/// keep the replaced instance as the newest).
#[test]
fn a_reboot_into_an_older_instance_is_reported() {
    let mut net = run(0);
    net.evict(1, 41);
    let first = net.drivers[1].replica().instance();
    let (seed, older) = (42..)
        .find_map(|seed| {
            let (d, _) = Driver::boot_traced(net.config.clone(), ReplicaId(1), Millis(net.now), seed).ok()?;
            (d.replica().instance() < first).then_some((seed, d.replica().instance()))
        })
        .expect("a seed whose nonce is smaller");
    assert_eq!(older.born, first.born, "the same millisecond");
    net.evict(1, seed);
    assert!(misfit(validate(&net.rows, "older-instance")).contains("is not newer than the one it replaces"));
    // The same two boots, the second's nonce larger: it fits.
    let mut net = run(0);
    net.evict(1, 41);
    let newer = (42..)
        .find(|&seed| {
            Driver::boot_traced(net.config.clone(), ReplicaId(1), Millis(net.now), seed)
                .is_ok_and(|(d, _)| d.replica().instance() > first)
        })
        .expect("a seed whose nonce is larger");
    net.evict(1, newer);
    validate(&net.rows, "newer-instance").expect("a newer instance fits");
}

/// Refused inputs are recorded and replayed: a message the code refuses
/// for another reason than its generation is not a step of the models
/// (`NoProtocolError`), and a refusal the code does not repeat is reported.
#[test]
fn a_refusal_the_models_do_not_make_is_reported() {
    let mut net = run(1);
    let push = net
        .rows
        .iter()
        .find_map(|(_, row)| match row {
            Row::Step(e) => match &e.step {
                Step::Handle(Input::Message(m)) if m.body.kind() == "push" => Some(m.clone()),
                _ => None,
            },
            Row::Lost { .. } => None,
        })
        .expect("a push");
    // Sent to r1 or r2, fed to the other: the wrong destination.
    let other = 3 - usize::from(push.to.0);
    net.feed(other, Input::Message(push));
    let mut rows = net.rows.clone();
    assert!(misfit(validate(&rows, "refused")).contains("the models refuse only a message of an older generation"));
    // The same step recorded as taken: replayed, the code refuses it.
    let e = entry_mut(&mut rows, |s| matches!(s, Step::Refused(_)));
    if let Step::Refused(input) = &e.step {
        e.step = Step::Handle(input.clone());
    }
    assert!(misfit(validate(&rows, "refused-taken")).contains("the code refuses this input"));
}

/// A total death on the real code: the three evicted one after the other,
/// the last with no other replica ready (HandoffGenerations' regime); the
/// coordinator mints a new generation, and a ghost of the dead one is
/// refused, as the models allow.
#[test]
fn a_total_death_fits_and_a_ghost_of_the_dead_generation_is_refused() {
    let mut net = run(1);
    let dead = net.drivers[0].replica().generation();
    assert!(dead.is_some());
    // A digest of the dead generation, kept back.
    net.now = net.drivers[1].deadline(Timer::Gossip).expect("gossip armed").0;
    let out = net.drivers[1].run_due(Millis(net.now), 64);
    net.take(1);
    let ghost = out
        .into_iter()
        .find_map(|o| match o {
            Output::Send(m) if m.to == ReplicaId(0) && m.body.kind() == "digest" => Some(m),
            _ => None,
        })
        .expect("a digest to r0");
    for (r, seed) in [(1, 21), (2, 22), (0, 20)] {
        net.evict(r, seed);
    }
    net.until_ready();
    let minted = net.drivers[0].replica().generation();
    assert!(minted > dead, "{minted:?} after {dead:?}");
    net.feed(0, Input::Message(ghost));
    let fitted = validate(&net.rows, "total-death").expect("a total death fits");
    assert_eq!(fitted.boots, [2, 2, 2]);
    assert_eq!((fitted.evictions_alone, fitted.refused_messages), (1, 1), "{fitted:?}");
}

/// Supersede needs a ready coordinator: a coordinator instance that goes
/// on stepping after a successor booted while it was still collecting is
/// not a zombie the model has.
#[test]
fn a_coordinator_superseded_before_it_was_ready_is_reported() {
    let mut net = Net::new();
    let old = net.drivers[0].clone();
    let old_object = net.objects[0];
    net.evict(0, 30);
    // The older instance steps on, as a zombie.
    let mut zombie = old;
    let _ = zombie.run_due(Millis(net.now + 10_000), 64);
    net.rows.extend(zombie.take_trace().into_iter().map(|row| (old_object, row)));
    assert!(misfit(validate(&net.rows, "supersede")).contains("Supersede needs it ready"));
}

#[test]
fn a_ready_replica_that_lost_a_record_is_a_served_regression() {
    let net = run(2);
    let coordinator = net.drivers[0].replica();
    assert_eq!(coordinator.phase(), Status::Ready);
    let held = coordinator.memory().clone();
    assert!(no_served_regression(&held, coordinator).is_ok());
    let mut more = held.clone();
    let (key, rec) = held.iter().next().map(|(k, r)| (k.clone(), r.clone())).expect("a record");
    let newer = Record { stamp: Stamp { ep: rec.stamp.ep, ver: Version(rec.stamp.ver.0 + 9) }, ..rec };
    more.merge(&key, &newer);
    let err = no_served_regression(&more, coordinator).expect_err("a regression");
    assert!(err.starts_with("NoServedRegression"), "{err}");
}

/// The replicas of a settled run with one write, and the view of them.
fn ready_replicas() -> Vec<Replica> {
    let net = run(1);
    net.drivers.iter().map(|d| d.replica().clone()).collect()
}

fn current(replicas: &[Replica]) -> Current<'_> {
    Current { replicas: [replicas.first(), replicas.get(1), replicas.get(2)], coordinator: 0 }
}

fn committed(key: &str, stamp: Stamp, wid: u64) -> Output {
    let reply = WriteReply::Committed {
        key: Key::new(key).expect("key"),
        tag: Tag { stamp, wid: WriteId(wid.into()) },
        expires_at: None,
    };
    Output::Reply { req: ClientRequestId(wid), reply }
}

/// A write the coordinator's epoch stamps `ver`.
fn stamp(replicas: &[Replica], ver: u64) -> Stamp {
    Stamp { ep: replicas[0].epoch(), ver: Version(ver) }
}

#[test]
fn two_writes_of_one_stamp_break_epoch_ver_unique() {
    let replicas = ready_replicas();
    let mut inv = Invariants::default();
    let push = |wid: u64| {
        let record = Record {
            stamp: stamp(&replicas, 7),
            wid: WriteId(wid.into()),
            value: Value::Bytes(b"v".to_vec()),
            expires_at: None,
            fp: None,
        };
        let body = Body::Push { instance: replicas[0].instance(), key: Key::new("k9").expect("key"), record };
        Output::Send(Message::new(replicas[0].generation(), ReplicaId(0), ReplicaId(1), body))
    };
    assert!(inv.after_step(&replicas[0], &[push(70)], &current(&replicas)).is_ok());
    let err = inv.after_step(&replicas[0], &[push(71)], &current(&replicas)).expect_err("two writes");
    assert!(err.starts_with("EpochVerUnique"), "{err}");
}

#[test]
fn an_acknowledged_write_nobody_holds_breaks_acked_implies_held() {
    let replicas = ready_replicas();
    let mut inv = Invariants::default();
    let err = inv
        .after_step(&replicas[0], &[committed("k9", stamp(&replicas, 9), 90)], &current(&replicas))
        .expect_err("held by nobody");
    assert!(err.starts_with("AckedImpliesHeldUnlessDoomed"), "{err}");
}

#[test]
fn a_ready_coordinator_without_its_own_write_breaks_coordinator_holds_own_commits() {
    let mut replicas = ready_replicas();
    // r1 takes a push of the coordinator's epoch that the coordinator does
    // not hold (it never wrote it).
    let s = stamp(&replicas, 9);
    let record = Record { stamp: s, wid: WriteId(90), value: Value::Bytes(b"v".to_vec()), expires_at: None, fp: None };
    let body = Body::Push { instance: replicas[0].instance(), key: Key::new("k9").expect("key"), record };
    let push = Message::new(replicas[0].generation(), ReplicaId(0), ReplicaId(1), body);
    replicas[1].handle(Millis(1), Input::Message(push)).expect("r1 takes the push");
    let mut inv = Invariants::default();
    let err = inv
        .after_step(&replicas[1], &[committed("k9", s, 90)], &current(&replicas))
        .expect_err("the coordinator lacks it");
    assert!(err.starts_with("CoordinatorHoldsOwnCommits"), "{err}");
}

#[test]
fn a_ready_peer_on_another_epoch_breaks_epoch_agreement() {
    let mut replicas = ready_replicas();
    // r1 installs a newer epoch, announced by a coordinator of that epoch
    // that the ready coordinator here knows nothing of.
    let epoch = Epoch(replicas[0].epoch().0 + 1);
    let body = Body::Announce { instance: replicas[0].instance(), epoch, round: 9 };
    let announce = Message::new(replicas[0].generation(), ReplicaId(0), ReplicaId(1), body);
    replicas[1].handle(Millis(1), Input::Message(announce)).expect("r1 takes the announce");
    assert_eq!((replicas[1].phase(), replicas[1].epoch()), (Status::Ready, epoch));
    let mut inv = Invariants::default();
    let err = inv.after_step(&replicas[1], &[], &current(&replicas)).expect_err("two epochs");
    assert!(err.starts_with("EpochAgreement"), "{err}");
}
