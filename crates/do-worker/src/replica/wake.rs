//! The one JavaScript `setTimeout` wake-up a replica object keeps in
//! flight for its earliest timer deadline (the deadlines themselves are
//! the protocol's [`Driver`](protocol::handoff::Driver)'s). Pure
//! bookkeeping, tested on the host; `driving.rs` does the sleeping.
//!
//! Invariant kept by callers: after every batch of outputs,
//! [`WakeUp::plan`] is called with the earliest deadline, so whenever a
//! deadline exists a wake-up is scheduled at or before it. A wake-up whose
//! token is no longer current (an earlier one replaced it) does nothing.

/// The scheduled wake-up.
#[derive(Debug, Clone, Default)]
pub struct WakeUp {
    /// The wake-up in flight: (token, at).
    wake: Option<(u64, u64)>,
    next_token: u64,
}

impl WakeUp {
    /// A wake-up to schedule, `(token, at)`, when none is in flight early
    /// enough for the earliest deadline `earliest`.
    pub fn plan(&mut self, earliest: Option<u64>) -> Option<(u64, u64)> {
        let earliest = earliest?;
        if self.wake.is_some_and(|(_, at)| at <= earliest) {
            return None;
        }
        self.next_token = self.next_token.wrapping_add(1);
        self.wake = Some((self.next_token, earliest));
        self.wake
    }

    /// A wake-up fired; `true` if it is the current one (which is then
    /// cleared, so the next [`WakeUp::plan`] schedules a new one).
    pub fn woke(&mut self, token: u64) -> bool {
        if self.wake.is_some_and(|(t, _)| t == token) {
            self.wake = None;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_wake_up_for_the_earliest_deadline() {
        let mut w = WakeUp::default();
        assert_eq!(w.plan(None), None, "nothing armed, nothing to wake for");
        let (a, at) = w.plan(Some(2_000)).unwrap_or_default();
        assert_eq!(at, 2_000);
        assert_eq!(w.plan(Some(2_000)), None, "already scheduled early enough");
        assert_eq!(w.plan(Some(5_000)), None, "already scheduled early enough");
        let (b, at) = w.plan(Some(250)).unwrap_or_default();
        assert_eq!(at, 250, "an earlier deadline replaces the wake-up");
        assert!(!w.woke(a), "the replaced wake-up is stale");
        assert!(w.woke(b));
        assert!(!w.woke(b), "a wake-up fires once");
        assert_eq!(w.plan(Some(2_000)).map(|(_, at)| at), Some(2_000));
    }
}
