//! The stamps answers show, in real-time order: a check beside the
//! register's that bounds what an ambiguous write can explain.
//!
//! The store orders a key's writes by their `(epoch, version)` stamps and
//! keeps the highest (docs/handoff.md): a write that takes effect after
//! another gets a higher stamp, and what a key holds never goes to a lower
//! one. So once a write's acknowledgment has arrived, every answer that
//! shows the key's record and was asked for after it shows that stamp or a
//! higher one: a read's record (a 404's deletion, when its tombstone is
//! held), a 412's ETag, and a later acknowledged write (strictly higher).
//! The register check cannot see this: an ambiguous PUT or DELETE may take
//! effect at any later time, so it explains a later read of its value (or
//! a 404) after an acknowledged overwrite, which this check refuses when
//! the read's stamp is below the overwrite's.
//!
//! Within one generation: a new generation (after a total death) starts
//! its stamps again, and loses every acknowledged write, which the
//! register check reports.

use std::collections::BTreeMap;
use std::time::Duration;

use super::op::{Op, Outcome};

/// The answers that showed a stamp below one acknowledged before they
/// were asked, one line each.
pub fn regressions(ops: &[Op]) -> Vec<String> {
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in ops.iter().filter(|op| op.stamp.is_some()) {
        by_key.entry(op.key.as_str()).or_default().push(op);
    }
    let mut found = Vec::new();
    for (key, ops) in by_key {
        // Acknowledged writes by their return; at each, the highest stamp
        // acknowledged so far and the write that had it.
        let mut acked: Vec<(Duration, (u64, u64), &Op)> = ops
            .iter()
            .filter(|op| op.outcome == Outcome::Written)
            .filter_map(|op| op.stamp.map(|s| (op.returned, s, *op)))
            .collect();
        acked.sort_by_key(|(returned, _, _)| *returned);
        let mut highest: Vec<(Duration, (u64, u64), &Op)> = Vec::with_capacity(acked.len());
        for (returned, stamp, op) in acked {
            let top = match highest.last() {
                Some(&(_, top, by)) if top >= stamp => (top, by),
                _ => (stamp, op),
            };
            highest.push((returned, top.0, top.1));
        }
        for op in ops {
            let Some(stamp) = op.stamp else { continue };
            // The highest stamp acknowledged before this was asked.
            let before = highest.partition_point(|(returned, _, _)| *returned < op.invoked);
            let Some((_, top, by)) = before.checked_sub(1).and_then(|i| highest.get(i)) else { continue };
            let below = if op.outcome == Outcome::Written { stamp <= *top } else { stamp < *top };
            if below {
                found.push(format!(
                    "key {key:?}: client {} {:?} asked at {:.3} s was answered {} showing stamp {}.{}, below {}.{} \
                     acknowledged at {:.3} s to client {} ({:?})",
                    op.client,
                    op.call,
                    op.invoked.as_secs_f64(),
                    op.answer,
                    stamp.0,
                    stamp.1,
                    top.0,
                    top.1,
                    by.returned.as_secs_f64(),
                    by.client,
                    by.call,
                ));
            }
        }
    }
    found
}
