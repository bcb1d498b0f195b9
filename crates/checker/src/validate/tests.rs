//! The validator on traces recorded by three traced drivers over a small
//! in-process network: the honest run fits; each kind of tampering (a
//! message nobody sent, a changed client input, a timer fired early, a
//! step missing) is reported.

use std::collections::VecDeque;
use std::fs;
use std::path::PathBuf;

use protocol::handoff::trace::{self, Row, Step};
use protocol::handoff::{
    ClientRequestId, Config, Driver, Input, Key, Message, Millis, Output, ReplicaId, Status, WriteId,
};

use super::{ValidateError, validate_dir};

/// Rows by object, in the order they were recorded.
type Rows = Vec<(u64, Row)>;

/// Three traced replicas; messages delivered in order, 5 ms apart.
fn record_run(writes: u64) -> Rows {
    run(writes).0
}

/// The recorded rows and the drivers at the end.
fn run(writes: u64) -> (Rows, Vec<Driver>) {
    let config = Config::new(ReplicaId(0), [ReplicaId(1), ReplicaId(2)]).expect("config");
    let mut now = 1_000;
    let mut rows = Rows::new();
    let mut queue = VecDeque::new();
    let mut drivers = Vec::new();
    for r in 0..3u8 {
        let (mut d, out) =
            Driver::boot_traced(config.clone(), ReplicaId(r), Millis(now), u64::from(r) + 11).expect("boot");
        take(&mut d, u64::from(r), &mut rows);
        sends(out, &mut queue);
        drivers.push(d);
    }
    let mut written = 0;
    for _ in 0..400 {
        now += 5;
        while let Some(m) = queue.pop_front() {
            let to = usize::from(m.to.0);
            if let Ok(out) = drivers[to].handle(Millis(now), Input::Message(m)) {
                sends(out, &mut queue);
            }
            take(&mut drivers[to], to as u64, &mut rows);
        }
        for (r, d) in drivers.iter_mut().enumerate() {
            let out = d.run_due(Millis(now), 64);
            take(d, r as u64, &mut rows);
            sends(out, &mut queue);
        }
        if drivers[0].replica().phase() == Status::Ready && written < writes {
            written += 1;
            let key = Key::new(format!("k{written}")).expect("key");
            let input = Input::Put {
                req: ClientRequestId(written),
                key,
                value: b"v".to_vec(),
                wid: WriteId(written.into()),
                cond: None,
                ttl_ms: None,
            };
            let out = drivers[0].handle(Millis(now), input).expect("put");
            take(&mut drivers[0], 0, &mut rows);
            sends(out, &mut queue);
        }
    }
    (rows, drivers)
}

fn take(d: &mut Driver, object: u64, rows: &mut Rows) {
    rows.extend(d.take_trace().into_iter().map(|row| (object, row)));
}

fn sends(out: Vec<Output>, queue: &mut VecDeque<Message>) {
    queue.extend(out.into_iter().filter_map(|o| match o {
        Output::Send(m) => Some(m),
        _ => None,
    }));
}

fn validate(rows: &Rows, name: &str) -> Result<super::Fitted, ValidateError> {
    let dir: PathBuf = std::env::temp_dir().join(format!("handoff-validate-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temp dir");
    for object in 0..3 {
        let mut page = Vec::new();
        for (_, row) in rows.iter().filter(|(o, _)| *o == object) {
            trace::push_frame(&mut page, object, &row.encode());
        }
        fs::write(dir.join(format!("r{object}.trace")), page).expect("write");
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

#[test]
fn a_missing_step_is_reported() {
    let mut rows = record_run(1);
    let at = rows.iter().rposition(|(o, _)| *o == 1).expect("r1 steps") / 2;
    let at = at + rows[at..].iter().position(|(o, _)| *o == 1).expect("an r1 step");
    rows.remove(at);
    assert!(misfit(validate(&rows, "gap")).contains("is missing"));
}

#[test]
fn a_ready_replica_that_lost_a_record_is_a_served_regression() {
    let (_, drivers) = run(2);
    let coordinator = drivers[0].replica();
    assert_eq!(coordinator.phase(), Status::Ready);
    let held = coordinator.memory().clone();
    assert!(super::invariants::no_served_regression(&held, coordinator).is_ok());
    let mut more = held.clone();
    let (key, rec) = held.iter().next().map(|(k, r)| (k.clone(), r.clone())).expect("a record");
    let newer = protocol::handoff::Record {
        stamp: protocol::handoff::Stamp { ep: rec.stamp.ep, ver: protocol::handoff::Version(rec.stamp.ver.0 + 9) },
        ..rec
    };
    more.merge(&key, &newer);
    let err = super::invariants::no_served_regression(&more, coordinator).expect_err("a regression");
    assert!(err.starts_with("NoServedRegression"), "{err}");
}
