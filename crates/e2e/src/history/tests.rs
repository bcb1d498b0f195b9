//! The checker without a store: hand-made histories it must accept or
//! reject (a check that cannot fail proves nothing), and random small ones
//! on which it must agree with stateright's tester fed the whole history.

use std::time::Duration;

use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

use super::cas::{CasOp, CasRegister, CasRet};
use super::*;

fn ms(t: u64) -> Duration {
    Duration::from_millis(t)
}

fn op(client: usize, call: Call, (invoked, returned): (u64, u64), outcome: Outcome, answer: &str) -> Op {
    Op {
        client,
        key: "k".into(),
        call,
        invoked: ms(invoked),
        returned: ms(returned),
        outcome,
        answer: answer.into(),
        stamp: None,
    }
}

/// `o` with the stamp its answer showed.
fn stamped(mut o: Op, ep: u64, ver: u64) -> Op {
    o.stamp = Some((ep, ver));
    o
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

/// A conditional write of `write` expecting `expect`, acknowledged.
fn cas(client: usize, expect: Option<&str>, write: Option<&str>, t: (u64, u64)) -> Op {
    op(client, Call::CondWrite { expect: val(expect), write: val(write) }, t, Outcome::Written, "200")
}

/// The same, answered 412 with the key holding `held`.
fn failed(mut o: Op, held: Option<&str>) -> Op {
    o.outcome = Outcome::PreconditionFailed(val(held));
    o.answer = "412".into();
    o
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

/// An ambiguous PUT may take effect at any later time, so the register
/// explains a read of its value after an acknowledged overwrite; the
/// stamps do not: the read shows a stamp below the overwrite's, which was
/// acknowledged before the read was asked.
#[test]
fn a_read_below_an_acknowledged_stamp_is_rejected_though_an_ambiguous_write_explains_its_value() {
    let ops = vec![
        stamped(ambiguous(put(0, "aaaaaaaa01", (0, 10))), 1, 1),
        stamped(put(1, "bbbbbbbb02", (20, 30)), 1, 2),
        stamped(get(2, Some("aaaaaaaa01"), (40, 50)), 1, 1),
    ];
    let unstamped: Vec<Op> = ops
        .iter()
        .cloned()
        .map(|mut o| {
            o.stamp = None;
            o
        })
        .collect();
    assert!(verdict(&unstamped).linearizable(), "the register alone explains it");
    let report = verdict(&ops);
    assert!(!report.linearizable());
    assert_eq!(report.stamp_regressions.len(), 1, "{report}");
    assert!(report.to_string().contains("stamp regression"), "{report}");
    // The same read showing the overwrite's stamp or a higher one is fine;
    // so is the old stamp asked before the overwrite was acknowledged.
    for read in
        [stamped(get(2, Some("bbbbbbbb02"), (40, 50)), 1, 2), stamped(get(2, Some("aaaaaaaa01"), (25, 50)), 1, 1)]
    {
        let ops = vec![ops[0].clone(), ops[1].clone(), read];
        assert!(verdict(&ops).stamp_regressions.is_empty(), "{}", verdict(&ops));
    }
}

/// The same for a 404 that names its deletion's stamp: an ambiguous DELETE
/// explains it to the register, the stamps refuse it.
#[test]
fn a_deletion_below_an_acknowledged_stamp_is_rejected_though_an_ambiguous_delete_explains_it() {
    let ops = vec![
        stamped(put(0, "aaaaaaaa01", (0, 10)), 1, 1),
        ambiguous(delete(1, (12, 15))),
        stamped(put(0, "bbbbbbbb02", (20, 30)), 1, 3),
        stamped(get(2, None, (40, 50)), 1, 2),
    ];
    let mut unstamped = ops.clone();
    unstamped[3].stamp = None;
    assert!(verdict(&unstamped).linearizable(), "the register alone explains it");
    assert_eq!(verdict(&ops).stamp_regressions.len(), 1, "{}", verdict(&ops));
}

/// Writes acknowledged one after the other get higher stamps, and a 412's
/// ETag shows the key's record: both are held to the stamps acknowledged
/// before them.
#[test]
fn a_later_write_or_412_below_an_acknowledged_stamp_is_rejected() {
    let first = stamped(put(0, "aaaaaaaa01", (0, 10)), 2, 5);
    let same = stamped(put(1, "bbbbbbbb02", (20, 30)), 2, 5);
    assert_eq!(verdict(&[first.clone(), same]).stamp_regressions.len(), 1, "a write must get a higher stamp");
    let higher = stamped(put(1, "bbbbbbbb02", (20, 30)), 3, 1);
    assert!(verdict(&[first.clone(), higher]).stamp_regressions.is_empty());
    let refused = stamped(failed(cas(1, Some("zzzzzzzz09"), Some("cccccccc03"), (20, 30)), Some("aaaaaaaa01")), 2, 4);
    assert_eq!(verdict(&[first, refused]).stamp_regressions.len(), 1, "a 412 showing an older record");
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

#[test]
fn a_conditional_write_on_a_value_replaced_before_it_began_is_rejected() {
    let ops = vec![
        put(0, "a", (0, 10)),
        put(1, "b", (20, 30)),
        // If-Match a, after b was acknowledged: a compare-and-set on a
        // stale value.
        cas(2, Some("a"), Some("c"), (40, 50)),
        get(0, Some("c"), (60, 70)),
    ];
    let report = verdict(&ops);
    assert!(!report.linearizable(), "{report}");
    let shown = report.to_string();
    assert!(shown.contains("client 2 PUT c if-match a \"k\" -> 200"), "{shown}");
    // Concurrent with b, it may go first.
    let mut concurrent = ops.clone();
    concurrent[2] = cas(2, Some("a"), Some("c"), (25, 50));
    concurrent[3] = get(0, Some("b"), (60, 70));
    assert!(verdict(&concurrent).linearizable());
    // ... but then b replaced c: c cannot be read after both returned.
    concurrent[3] = get(0, Some("c"), (60, 70));
    assert!(!verdict(&concurrent).linearizable());
}

#[test]
fn one_value_is_replaced_by_one_conditional_write() {
    let both = |second: Outcome| {
        vec![
            put(0, "a", (0, 10)),
            cas(1, Some("a"), Some("b"), (20, 30)),
            Op { outcome: second, ..cas(2, Some("a"), Some("c"), (22, 32)) },
        ]
    };
    assert!(!verdict(&both(Outcome::Written)).linearizable());
    assert!(verdict(&both(Outcome::PreconditionFailed(val(Some("b"))))).linearizable());
    // If-None-Match on a new key: one creates it, the other sees it.
    let create = |second: Outcome| {
        vec![cas(1, None, Some("b"), (20, 30)), Op { outcome: second, ..cas(2, None, Some("c"), (22, 32)) }]
    };
    assert!(!verdict(&create(Outcome::Written)).linearizable());
    assert!(verdict(&create(Outcome::PreconditionFailed(val(Some("b"))))).linearizable());
}

#[test]
fn a_failure_reports_a_value_the_key_held_on_which_the_condition_fails() {
    let with = |held: Option<&str>| vec![put(0, "a", (0, 10)), failed(cas(1, Some("x"), Some("b"), (20, 30)), held)];
    assert!(verdict(&with(Some("a"))).linearizable());
    // A value nobody wrote, a value gone before it began.
    assert!(!verdict(&with(Some("y"))).linearizable());
    assert!(!verdict(&with(None)).linearizable());
    // The very value it expected: the condition held.
    let held = vec![put(0, "a", (0, 10)), failed(cas(1, Some("a"), Some("b"), (20, 30)), Some("a"))];
    assert!(!verdict(&held).linearizable());
    // A failure writes nothing.
    let mut wrote = with(Some("a"));
    wrote.push(get(2, Some("b"), (40, 50)));
    assert!(!verdict(&wrote).linearizable());
}

#[test]
fn an_ambiguous_conditional_put_took_effect_only_on_its_value() {
    let ops = |expect: &str| {
        vec![
            put(0, "a", (0, 10)),
            ambiguous(cas(1, Some(expect), Some("b"), (20, 25))),
            get(2, Some("a"), (30, 40)),
            // b took effect after the read above, on a.
            get(2, Some("b"), (50, 60)),
        ]
    };
    assert!(verdict(&ops("a")).linearizable());
    // Expecting a value the key never held, it never took effect.
    assert!(!verdict(&ops("z")).linearizable());
    // Observed by an acknowledged conditional write only: it took effect.
    let chained = vec![
        put(0, "a", (0, 10)),
        ambiguous(cas(1, Some("a"), Some("b"), (20, 25))),
        cas(2, Some("b"), Some("c"), (30, 40)),
        get(0, Some("c"), (50, 60)),
    ];
    assert!(verdict(&chained).linearizable());
    // Two ambiguous ones resolve each other through the one that was read.
    let resolved = vec![
        put(0, "a", (0, 10)),
        ambiguous(cas(1, Some("a"), Some("b"), (20, 25))),
        ambiguous(cas(2, Some("b"), Some("c"), (30, 35))),
        get(0, Some("c"), (50, 60)),
    ];
    assert!(verdict(&resolved).linearizable());
}

#[test]
fn an_ambiguous_conditional_delete_takes_effect_only_while_its_value_is_held() {
    let mut ops = vec![
        put(0, "a", (0, 10)),
        ambiguous(cas(1, Some("a"), None, (20, 25))),
        get(2, Some("a"), (30, 40)),
        // The delete took effect across the quiet gaps, on a.
        get(2, None, (50, 60)),
        put(0, "c", (70, 80)),
        get(2, Some("c"), (90, 100)),
    ];
    let report = verdict(&ops);
    assert!(report.linearizable(), "{report}");
    assert!(report.keys["k"].segments >= 4, "{report}");
    // It cannot delete c, which it did not expect.
    ops[5] = get(2, None, (90, 100));
    assert!(!verdict(&ops).linearizable());
    // Nor a, once b replaced it before it was invoked.
    let late = vec![
        put(0, "a", (0, 10)),
        put(0, "b", (12, 18)),
        ambiguous(cas(1, Some("a"), None, (20, 25))),
        get(2, None, (30, 40)),
    ];
    assert!(!verdict(&late).linearizable());
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
/// possibly after they returned; a conditional write takes effect only if
/// its condition holds there, and one that was answered fails with what
/// the key held), then perhaps one observation changed to a random value.
/// With `conditional`, some writes are conditional: If-None-Match, or
/// If-Match a value written so far. Histories in which an ambiguous
/// conditional DELETE expects a value that no client could have learned
/// the ETag of are made again (the check relies on that: module docs).
fn random_history(rng: &mut Rng, clients: usize, most: u64, conditional: bool) -> Vec<Op> {
    loop {
        let ops = random_execution(rng, clients, most, conditional);
        if names_learnable_values(&ops) {
            return ops;
        }
    }
}

fn random_execution(rng: &mut Rng, clients: usize, most: u64, conditional: bool) -> Vec<Op> {
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
            // If-Match a value written so far (or, before any, nothing).
            let written = |rng: &mut Rng, wid: u64| match wid {
                0 => Val::Absent,
                n => Val::Put(format!("w{}", 1 + rng.below(n))),
            };
            let call = match rng.below(100) {
                0..45 => Call::Read,
                45..65 if conditional => {
                    let expect = if rng.chance(30) { Val::Absent } else { written(rng, wid) };
                    wid += 1;
                    Call::CondWrite { expect, write: Val::Put(format!("w{wid}")) }
                }
                65..72 if conditional => Call::CondWrite { expect: written(rng, wid), write: Val::Absent },
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
                stamp: None,
            };
            if let Some(at) = effect {
                points.push((at, ops.len()));
            }
            ops.push(o);
        }
    }
    points.sort();
    let mut register = CasRegister(Val::Absent);
    for (_, i) in points {
        let ret = register.invoke(&cas_op(&ops[i].call));
        match (ret, &ops[i].outcome) {
            (CasRet::ReadOk(v), _) => ops[i].outcome = Outcome::Read(v),
            (CasRet::CasFailed(v), Outcome::Written) => ops[i].outcome = Outcome::PreconditionFailed(v),
            _ => {}
        }
    }
    if rng.chance(40) {
        let seen: Vec<usize> = (0..ops.len())
            .filter(|&i| matches!(ops[i].outcome, Outcome::Read(_) | Outcome::PreconditionFailed(_)))
            .collect();
        if !seen.is_empty() {
            let i = seen[rng.below(seen.len() as u64) as usize];
            let v = rng.below(wid + 1);
            let v = if v == 0 { Val::Absent } else { Val::Put(format!("w{v}")) };
            let outcome = match ops[i].outcome {
                Outcome::Read(_) => Outcome::Read(v),
                _ => Outcome::PreconditionFailed(v),
            };
            if ops[i].outcome != outcome {
                ops[i].answer = "tampered".into();
            }
            ops[i].outcome = outcome;
        }
    }
    ops
}

/// The register's operation for a call.
fn cas_op(call: &Call) -> CasOp<Val> {
    match call {
        Call::Read => CasOp::Read,
        Call::Write(v) => CasOp::Write(v.clone()),
        Call::CondWrite { expect, write } => CasOp::Cas { expect: expect.clone(), write: write.clone() },
    }
}

/// Every ambiguous conditional DELETE expects a value whose ETag a client
/// could know: nothing, or a value an acknowledged write wrote or an answer
/// showed (a read, a 412, an acknowledged conditional write).
fn names_learnable_values(ops: &[Op]) -> bool {
    let learnable = |v: &Val| {
        *v == Val::Absent
            || ops.iter().any(|o| match (&o.call, &o.outcome) {
                (Call::Write(w) | Call::CondWrite { write: w, .. }, Outcome::Written) if w == v => true,
                (Call::CondWrite { expect, .. }, Outcome::Written) => expect == v,
                (_, Outcome::Read(w) | Outcome::PreconditionFailed(w)) => w == v,
                _ => false,
            })
    };
    ops.iter().all(|o| match (&o.call, &o.outcome) {
        (Call::CondWrite { expect, write: Val::Absent }, Outcome::Ambiguous) => learnable(expect),
        _ => true,
    })
}

/// stateright's tester on the whole history, as recorded, over the
/// compare-and-set register: refused writes and failed reads left out,
/// ambiguous writes invoked on a thread of their own and never returned.
fn whole_history_linearizable(ops: &[Op]) -> bool {
    let mut tester = LinearizabilityTester::new(CasRegister(Val::Absent));
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
            (1, call, _) => tester.on_invoke(thread, cas_op(call)),
            (_, _, Outcome::Read(v)) => tester.on_return(thread, CasRet::ReadOk(v.clone())),
            (_, _, Outcome::PreconditionFailed(v)) => tester.on_return(thread, CasRet::CasFailed(v.clone())),
            (_, Call::CondWrite { .. }, _) => tester.on_return(thread, CasRet::CasOk),
            _ => tester.on_return(thread, CasRet::WriteOk),
        };
        result.expect("a well-formed history");
    }
    tester.serialized_history().is_some()
}

#[test]
fn agrees_with_the_tester_on_whole_random_histories() {
    // PUT, GET and DELETE; and the same with conditional writes.
    for (conditional, seed) in [(false, 0x5eed_1234_abcd_ef01), (true, 0xc0de_cafe_f00d_0031)] {
        let mut rng = Rng(seed);
        let (mut yes, mut no) = (0, 0);
        for n in 0..3_000 {
            let ops = random_history(&mut rng, 3, 4, conditional);
            let expected = whole_history_linearizable(&ops);
            let report = verdict(&ops);
            assert_eq!(report.linearizable(), expected, "history {n}: {ops:#?}\n{report}");
            if expected { yes += 1 } else { no += 1 }
        }
        // Both verdicts are exercised.
        assert!(yes > 500 && no > 500, "conditional {conditional}: {yes} linearizable, {no} not");
    }
}

/// Eight clients with long, overlapping operations (as when a replica is
/// evicted), many of them ambiguous: the search decides within its budget,
/// and agrees with how each history was made (a history with an
/// observation changed may still be linearizable; one without never
/// fails).
fn long_busy_histories(conditional: bool, seed: u64, histories: usize) -> (usize, usize) {
    let mut rng = Rng(seed);
    let effort = Effort { minimiser_time: Duration::from_millis(200), ..Effort::default() };
    let (mut yes, mut no) = (0, 0);
    for n in 0..histories {
        let ops = random_history(&mut rng, 8, 30, conditional);
        let report = check(&ops, effort);
        assert_eq!(report.undecided(), 0, "history {n}: {report}");
        let tampered = ops.iter().any(|o| o.answer == "tampered");
        assert!(report.linearizable() || tampered, "history {n} was made linearizable:\n{report}");
        if report.linearizable() { yes += 1 } else { no += 1 }
    }
    (yes, no)
}

/// Slow (3 to 50 s each on 2 cores): `cargo xtask check --slow` and
/// `cargo xtask test` run them; the default check skips `::slow::`.
mod slow {
    use super::*;

    #[test]
    fn long_busy_histories_are_decided() {
        let (yes, no) = long_busy_histories(false, 0xb05e_7a11_0dd5_f00d, 16);
        assert!(yes > 4 && no > 4, "{yes} linearizable, {no} not");
    }

    #[test]
    fn long_busy_histories_with_conditional_writes_are_decided() {
        let (yes, no) = long_busy_histories(true, 0x0b5e_55ed_c0de_0031, 10);
        assert!(yes > 2 && no > 2, "{yes} linearizable, {no} not");
    }
}
