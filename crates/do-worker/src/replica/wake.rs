//! The replica's timer table on a Durable Object: the protocol arms named
//! timers (`Output::SetTimer`), the object has one JavaScript `setTimeout`
//! wake-up in flight for the earliest deadline. Pure bookkeeping, tested on
//! the host; `replica.rs` does the sleeping.
//!
//! Invariant kept by callers: after every batch of outputs, [`Timers::plan`]
//! is called, so whenever a deadline exists a wake-up is scheduled at or
//! before it. A wake-up whose token is no longer current (an earlier one
//! replaced it) does nothing.

use std::collections::BTreeMap;

/// Deadlines (host milliseconds) by timer, plus the scheduled wake-up.
#[derive(Debug, Clone)]
pub struct Timers<T: Ord + Copy> {
    deadlines: BTreeMap<T, u64>,
    /// The wake-up in flight: (token, at).
    wake: Option<(u64, u64)>,
    next_token: u64,
}

impl<T: Ord + Copy> Default for Timers<T> {
    fn default() -> Self {
        Timers { deadlines: BTreeMap::new(), wake: None, next_token: 0 }
    }
}

impl<T: Ord + Copy> Timers<T> {
    /// (Re)arms `timer` at `at`, replacing its previous deadline.
    pub fn set(&mut self, timer: T, at: u64) {
        self.deadlines.insert(timer, at);
    }

    /// Removes and returns the timers due at `now`, in timer order.
    pub fn take_due(&mut self, now: u64) -> Vec<T> {
        let due: Vec<T> = self.deadlines.iter().filter(|&(_, &at)| at <= now).map(|(&t, _)| t).collect();
        for t in &due {
            self.deadlines.remove(t);
        }
        due
    }

    /// The earliest deadline.
    pub fn earliest(&self) -> Option<u64> {
        self.deadlines.values().copied().min()
    }

    /// A wake-up to schedule, `(token, at)`, when none is in flight early
    /// enough for the earliest deadline.
    pub fn plan(&mut self) -> Option<(u64, u64)> {
        let earliest = self.earliest()?;
        if self.wake.is_some_and(|(_, at)| at <= earliest) {
            return None;
        }
        self.next_token = self.next_token.wrapping_add(1);
        self.wake = Some((self.next_token, earliest));
        self.wake
    }

    /// A wake-up fired; `true` if it is the current one (which is then
    /// cleared, so the next [`Timers::plan`] schedules a new one).
    pub fn woke(&mut self, token: u64) -> bool {
        if self.wake.is_some_and(|(t, _)| t == token) {
            self.wake = None;
            true
        } else {
            false
        }
    }

    /// Number of armed timers.
    pub fn len(&self) -> usize {
        self.deadlines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.deadlines.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_wake_up_for_the_earliest_deadline() {
        let mut t: Timers<u8> = Timers::default();
        assert_eq!(t.plan(), None, "nothing armed, nothing to wake for");
        t.set(1, 2_000);
        t.set(2, 5_000);
        let (a, at) = t.plan().unwrap_or_default();
        assert_eq!(at, 2_000);
        assert_eq!(t.plan(), None, "already scheduled early enough");
        t.set(3, 250);
        let (b, at) = t.plan().unwrap_or_default();
        assert_eq!(at, 250, "an earlier deadline replaces the wake-up");
        assert!(!t.woke(a), "the replaced wake-up is stale");
        assert!(t.woke(b));
        assert_eq!(t.take_due(250), vec![3]);
        assert_eq!(t.plan().map(|(_, at)| at), Some(2_000));
    }

    #[test]
    fn rearming_replaces_and_due_timers_are_taken_once() {
        let mut t: Timers<u8> = Timers::default();
        t.set(1, 100);
        t.set(1, 300);
        t.set(2, 200);
        assert_eq!(t.take_due(150), Vec::<u8>::new());
        assert_eq!(t.take_due(300), vec![1, 2]);
        assert!(t.is_empty());
        assert_eq!(t.take_due(1_000), Vec::<u8>::new());
    }
}
