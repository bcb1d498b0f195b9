//! Client requests waiting at the coordinator, each with a deadline. The
//! deadlines are kept here, not in one `setTimeout` per request: the
//! replica's single wake-up (`wake.rs`) is planned for the earliest of its
//! protocol timers and these deadlines, and expires the overdue requests
//! when it fires. A request is answered or expired exactly once. Pure
//! bookkeeping, tested on the host.

use std::collections::{BTreeMap, BTreeSet};

/// Waiting requests by id, `T` being how to answer one.
pub(crate) struct Waiters<T> {
    by_req: BTreeMap<u64, (u64, T)>,
    /// (deadline, request id), earliest first.
    by_deadline: BTreeSet<(u64, u64)>,
}

impl<T> Default for Waiters<T> {
    fn default() -> Self {
        Waiters { by_req: BTreeMap::new(), by_deadline: BTreeSet::new() }
    }
}

impl<T> Waiters<T> {
    /// Request `req` waits until `deadline` (ms) at most.
    pub(super) fn insert(&mut self, req: u64, deadline: u64, answer: T) {
        if let Some((old, _)) = self.by_req.insert(req, (deadline, answer)) {
            self.by_deadline.remove(&(old, req));
        }
        self.by_deadline.insert((deadline, req));
    }

    /// Takes request `req` to answer it.
    pub(super) fn remove(&mut self, req: u64) -> Option<T> {
        let (deadline, answer) = self.by_req.remove(&req)?;
        self.by_deadline.remove(&(deadline, req));
        Some(answer)
    }

    /// The earliest deadline.
    pub(super) fn earliest(&self) -> Option<u64> {
        self.by_deadline.first().map(|(deadline, _)| *deadline)
    }

    /// Takes every request whose deadline is `now` or earlier.
    pub(super) fn expire(&mut self, now: u64) -> Vec<T> {
        let mut due = Vec::new();
        while let Some(&(deadline, req)) = self.by_deadline.first() {
            if deadline > now {
                break;
            }
            self.by_deadline.pop_first();
            due.extend(self.by_req.remove(&req).map(|(_, answer)| answer));
        }
        due
    }

    /// Takes every request (their protocol instance is gone).
    pub(super) fn clear(&mut self) {
        self.by_req.clear();
        self.by_deadline.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_expire_by_deadline_and_once() {
        let mut w = Waiters::default();
        w.insert(1, 10_000, "write");
        w.insert(2, 5_000, "read");
        w.insert(3, 10_500, "later write");
        assert_eq!(w.earliest(), Some(5_000));
        assert_eq!(w.expire(4_999), Vec::<&str>::new());
        assert_eq!(w.expire(10_000), vec!["read", "write"]);
        assert_eq!(w.remove(1), None, "an expired request is not answered too");
        assert_eq!(w.earliest(), Some(10_500));
        assert_eq!(w.remove(3), Some("later write"));
        assert_eq!(w.earliest(), None);
        assert_eq!(w.expire(u64::MAX), Vec::<&str>::new(), "an answered request does not expire");
    }

    #[test]
    fn clear_takes_everything() {
        let mut w = Waiters::default();
        w.insert(1, 10, ());
        w.insert(1, 20, ());
        assert_eq!(w.earliest(), Some(20), "a request id waits once");
        w.clear();
        assert_eq!(w.earliest(), None);
        assert_eq!(w.remove(1), None);
    }
}
