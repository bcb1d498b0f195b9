//! The checker without a store: hand-made histories it must accept or
//! reject (a check that cannot fail proves nothing), and random small ones
//! on which it must agree with stateright's tester fed the whole history.

use std::time::Duration;

use stateright::semantics::register::{Register, RegisterOp, RegisterRet};
use stateright::semantics::{ConsistencyTester, LinearizabilityTester};

use super::*;

fn ms(t: u64) -> Duration {
    Duration::from_millis(t)
}

fn op(client: usize, call: Call, (invoked, returned): (u64, u64), outcome: Outcome, answer: &str) -> Op {
    Op { client, key: "k".into(), call, invoked: ms(invoked), returned: ms(returned), outcome, answer: answer.into() }
}

fn val(v: Option<&str>) -> Val {
    v.map_or(Val::Absent, |w| Val::Put(w.into()))
}

fn put(client: usize, wid: &str, t: (u64, u64)) -> Op {
    op(client, Call::Write(val(Some(wid))), t, Outcome::Written, "200")
}

fn delete(client: usize, t: (u64, u64)) -> Op {
    op(client, Call::Write(Val::Absent), t, Outcome::Written, "200")
}

fn get(client: usize, v: Option<&str>, t: (u64, u64)) -> Op {
    op(client, Call::Read, t, Outcome::Read(val(v)), if v.is_some() { "200" } else { "404" })
}

fn ambiguous(mut o: Op) -> Op {
    o.outcome = Outcome::Ambiguous;
    o.answer = "503 not_committed".into();
    o
}

fn refused(mut o: Op) -> Op {
    o.outcome = Outcome::Refused;
    o.answer = "503 recovering".into();
    o
}

fn verdict(ops: &[Op]) -> Report {
    let report = check(ops, Effort::default());
    assert_eq!(report.undecided(), 0, "{report}");
    report
}

#[test]
fn a_stale_read_is_rejected_and_the_minimiser_prints_it() {
    let ops = vec![
        put(0, "aaaaaaaa01", (0, 10)),
        get(1, Some("aaaaaaaa01"), (20, 30)),
        put(0, "bbbbbbbb02", (40, 50)),
        get(2, Some("bbbbbbbb02"), (45, 55)),
        get(1, None, (35, 38)).clone_with_key("other"),
        // Begins after b was acknowledged, yet returns a.
        get(1, Some("aaaaaaaa01"), (60, 70)),
        get(2, Some("bbbbbbbb02"), (61, 66)),
        put(2, "cccccccc03", (80, 90)),
    ];
    let report = verdict(&ops);
    assert!(!report.linearizable());
    assert!(report.keys["other"].violation.is_none());
    let v = report.keys["k"].violation.as_ref().expect("a violation on k");
    let shown = report.to_string();
    println!("{shown}");
    // The cut after b was acknowledged and seen leaves b in the key; the
    // read of a that began after it is the whole offence.
    assert_eq!(v.before, vec![(val(Some("bbbbbbbb02")), 0)]);
    assert_eq!(v.ops.len(), 1, "{shown}");
    assert_eq!(v.ops[0].outcome, Outcome::Read(val(Some("aaaaaaaa01"))));
    assert!(shown.contains("NOT linearizable"), "{shown}");
    assert!(shown.contains("before it the key holds bbbbbbbb"), "{shown}");
    assert!(shown.contains("(earlier: [0.040 s, 0.050 s] client 0 PUT bbbbbbbb \"k\" -> 200)"), "{shown}");
    assert!(shown.contains("(earlier: [0.000 s, 0.010 s] client 0 PUT aaaaaaaa \"k\" -> 200)"), "{shown}");
    assert!(v.minimal);
    assert!(shown.contains("[0.060 s, 0.070 s] client 1 GET \"k\" -> 200 (aaaaaaaa)"), "{shown}");
}

impl Op {
    fn clone_with_key(&self, key: &str) -> Op {
        Op { key: key.into(), ..self.clone() }
    }
}

#[test]
fn concurrent_writes_may_be_seen_in_either_order_but_not_both() {
    let both = |first: &str, second: &str| {
        vec![
            put(0, "a", (0, 10)),
            put(1, "b", (2, 12)),
            get(2, Some(first), (20, 25)),
            get(2, Some(second), (30, 35)),
            get(0, Some(second), (40, 45)),
        ]
    };
    assert!(verdict(&both("a", "a")).linearizable());
    assert!(verdict(&both("b", "b")).linearizable());
    // Concurrent PUTs are ordered once: a reader cannot see b, then a.
    assert!(!verdict(&both("b", "a")).linearizable());
}

#[test]
fn an_ambiguous_put_may_take_effect_late_but_then_it_stays() {
    let late = |last: Option<&str>| {
        vec![
            put(0, "a", (0, 10)),
            ambiguous(put(1, "b", (20, 25))),
            get(2, Some("a"), (30, 40)),
            // b takes effect after the read above: it may, it was never
            // acknowledged.
            get(2, Some("b"), (50, 60)),
            get(0, last, (70, 80)),
        ]
    };
    assert!(verdict(&late(Some("b"))).linearizable());
    // Once seen, b cannot be undone by nothing.
    assert!(!verdict(&late(Some("a"))).linearizable());
    // An acknowledged b had taken effect by 25: the read at 30 is stale.
    let mut acked = late(Some("b"));
    acked[1] = put(1, "b", (20, 25));
    assert!(!verdict(&acked).linearizable());
    // Nobody saw it: as if it never happened.
    let unseen = vec![put(0, "a", (0, 10)), ambiguous(put(1, "b", (20, 25))), get(2, Some("a"), (30, 40))];
    assert!(verdict(&unseen).linearizable());
}

#[test]
fn a_refused_write_never_takes_effect() {
    let ops = vec![put(0, "a", (0, 10)), refused(put(1, "b", (20, 25))), get(2, Some("b"), (30, 40))];
    assert!(!verdict(&ops).linearizable());
    let mut ambiguous_b = ops.clone();
    ambiguous_b[1] = ambiguous(put(1, "b", (20, 25)));
    assert!(verdict(&ambiguous_b).linearizable());
}

#[test]
fn an_ambiguous_delete_takes_effect_at_most_once_across_quiet_gaps() {
    let mut ops = vec![
        put(0, "a", (0, 10)),
        ambiguous(delete(1, (20, 25))),
        get(2, Some("a"), (30, 40)),
        get(2, None, (50, 60)),
        get(0, None, (70, 80)),
        put(0, "c", (90, 100)),
        get(2, Some("c"), (110, 120)),
    ];
    let report = verdict(&ops);
    assert!(report.linearizable(), "{report}");
    assert!(report.keys["k"].segments >= 5, "{report}");
    // After c the key is empty again: that needs a second delete.
    ops[6] = get(2, None, (110, 120));
    let report = verdict(&ops);
    assert!(!report.linearizable(), "{report}");
    // ... which an acknowledged delete concurrent with the read provides.
    ops.push(delete(1, (105, 115)));
    assert!(verdict(&ops).linearizable());
}

/// A small xorshift generator: the same histories on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A history of 2 to `most` operations by each of `clients` on one key,
/// from a real sequential execution (each effective operation at a random
/// point of its interval; ambiguous writes take effect half the time,
/// possibly after they returned), then perhaps one read changed to a
/// random value.
fn random_history(rng: &mut Rng, clients: usize, most: u64) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut points = Vec::new(); // (linearization point, op index)
    let mut wid = 0;
    for client in 0..clients {
        let mut t = rng.below(5_000);
        for _ in 0..2 + rng.below(most - 1) {
            let invoked = t + rng.below(4_000);
            let returned = invoked + 1 + rng.below(6_000);
            t = returned;
            let at = invoked + rng.below(returned - invoked + 1);
            let call = match rng.below(100) {
                0..45 => Call::Read,
                45..80 => {
                    wid += 1;
                    Call::Write(Val::Put(format!("w{wid}")))
                }
                _ => Call::Write(Val::Absent),
            };
            let (outcome, effect) = match (&call, rng.below(100)) {
                (Call::Read, _) => (Outcome::Read(Val::Absent), Some(at)),
                (_, 0..15) => (Outcome::Refused, None),
                (_, 15..35) if rng.chance(50) => {
                    (Outcome::Ambiguous, Some(invoked + rng.below(returned - invoked + 10_000)))
                }
                (_, 15..35) => (Outcome::Ambiguous, None),
                _ => (Outcome::Written, Some(at)),
            };
            let o = Op {
                client,
                key: "k".into(),
                call,
                invoked: Duration::from_micros(invoked),
                returned: Duration::from_micros(returned),
                outcome,
                answer: String::new(),
            };
            if let Some(at) = effect {
                points.push((at, ops.len()));
            }
            ops.push(o);
        }
    }
    points.sort();
    let mut register = Val::Absent;
    for (_, i) in points {
        match &ops[i].call {
            Call::Read => ops[i].outcome = Outcome::Read(register.clone()),
            Call::Write(v) => register = v.clone(),
        }
    }
    if rng.chance(40) {
        let reads: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].call == Call::Read).collect();
        if !reads.is_empty() {
            let i = reads[rng.below(reads.len() as u64) as usize];
            let v = rng.below(wid + 1);
            let seen = if v == 0 { Val::Absent } else { Val::Put(format!("w{v}")) };
            if ops[i].outcome != Outcome::Read(seen.clone()) {
                ops[i].answer = "tampered".into();
            }
            ops[i].outcome = Outcome::Read(seen);
        }
    }
    ops
}

/// stateright's tester on the whole history, as recorded: refused writes
/// and failed reads left out, ambiguous writes invoked on a thread of their
/// own and never returned.
fn whole_history_linearizable(ops: &[Op]) -> bool {
    let mut tester = LinearizabilityTester::new(Register(Val::Absent));
    let mut events: Vec<(Duration, u8, usize)> = Vec::new();
    for (i, o) in ops.iter().enumerate() {
        match o.outcome {
            Outcome::Refused => continue,
            Outcome::Ambiguous => events.push((o.invoked, 1, i)),
            _ => {
                events.push((o.invoked, 1, i));
                events.push((o.returned, 0, i));
            }
        }
    }
    events.sort();
    for (_, what, i) in events {
        let o = &ops[i];
        let thread = if o.outcome == Outcome::Ambiguous { 100 + i } else { o.client };
        let result = match (what, &o.call, &o.outcome) {
            (1, Call::Read, _) => tester.on_invoke(thread, RegisterOp::Read),
            (1, Call::Write(v), _) => tester.on_invoke(thread, RegisterOp::Write(v.clone())),
            (_, _, Outcome::Read(v)) => tester.on_return(thread, RegisterRet::ReadOk(v.clone())),
            _ => tester.on_return(thread, RegisterRet::WriteOk),
        };
        result.expect("a well-formed history");
    }
    tester.serialized_history().is_some()
}

#[test]
fn agrees_with_the_tester_on_whole_random_histories() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let (mut yes, mut no) = (0, 0);
    for n in 0..3_000 {
        let ops = random_history(&mut rng, 3, 4);
        let expected = whole_history_linearizable(&ops);
        let report = verdict(&ops);
        assert_eq!(report.linearizable(), expected, "history {n}: {ops:#?}\n{report}");
        if expected { yes += 1 } else { no += 1 }
    }
    // Both verdicts are exercised.
    assert!(yes > 500 && no > 500, "{yes} linearizable, {no} not");
}

/// Eight clients with long, overlapping operations (as when a replica is
/// evicted), many of them ambiguous: the search decides within its budget,
/// and agrees with how each history was made (a history with a read
/// changed may still be linearizable; one without never fails).
#[test]
fn long_busy_histories_are_decided() {
    let mut rng = Rng(0xb05e_7a11_0dd5_f00d);
    let effort = Effort { minimiser_time: Duration::from_millis(200), ..Effort::default() };
    let (mut yes, mut no) = (0, 0);
    for n in 0..16 {
        let ops = random_history(&mut rng, 8, 30);
        let report = check(&ops, effort);
        assert_eq!(report.undecided(), 0, "history {n}: {report}");
        let tampered = ops.iter().any(|o| o.answer == "tampered");
        assert!(report.linearizable() || tampered, "history {n} was made linearizable:\n{report}");
        if report.linearizable() { yes += 1 } else { no += 1 }
    }
    assert!(yes > 4 && no > 4, "{yes} linearizable, {no} not");
}
