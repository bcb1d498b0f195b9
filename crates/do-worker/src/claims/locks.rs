//! One-at-a-time access per claim inside the claim object: the lease of a
//! claim is read, changed and written back (three awaits on the lease
//! store), and no other lease request for that claim may start meanwhile.
//! Requests for other claims, and durable transitions, do run in between:
//! only the lease record's read-modify-write must not interleave.
//!
//! No `RefCell` borrow is held across an await: the queue is borrowed only
//! inside the synchronous parts of `acquire` and `Drop`.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use futures_channel::oneshot;
use protocol::claim::ClaimId;

/// Waiters per claim; a claim is in the map while someone holds its lock.
#[derive(Default)]
pub struct ClaimLocks {
    queues: Rc<RefCell<BTreeMap<ClaimId, VecDeque<oneshot::Sender<()>>>>>,
}

/// Holds a claim's lock until dropped; dropping hands it to the next waiter.
pub struct Held {
    queues: Rc<RefCell<BTreeMap<ClaimId, VecDeque<oneshot::Sender<()>>>>>,
    claim: ClaimId,
}

impl Held {
    /// The claim whose lock this is.
    pub fn claim(&self) -> &ClaimId {
        &self.claim
    }
}

impl ClaimLocks {
    /// Waits for `claim`'s lock. `None` only if the queue is unusable (a
    /// re-entrant borrow: a bug), which the caller reports as a 500.
    pub async fn acquire(&self, claim: &ClaimId) -> Option<Held> {
        loop {
            let waiter = {
                let mut queues = self.queues.try_borrow_mut().ok()?;
                match queues.get_mut(claim) {
                    None => {
                        queues.insert(claim.clone(), VecDeque::new());
                        None
                    }
                    Some(queue) => {
                        let (tx, rx) = oneshot::channel();
                        queue.push_back(tx);
                        Some(rx)
                    }
                }
            };
            match waiter {
                None => return Some(Held { queues: self.queues.clone(), claim: claim.clone() }),
                // Handed over by the previous holder.
                Some(rx) => {
                    if rx.await.is_ok() {
                        return Some(Held { queues: self.queues.clone(), claim: claim.clone() });
                    }
                    // The queue was dropped without handing over: try afresh.
                }
            }
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Ok(mut queues) = self.queues.try_borrow_mut() else { return };
        if let Some(queue) = queues.get_mut(&self.claim) {
            // A waiter whose request went away has dropped its receiver:
            // skip it.
            while let Some(next) = queue.pop_front() {
                if next.send(()).is_ok() {
                    return;
                }
            }
        }
        queues.remove(&self.claim);
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn one_holder_per_claim_handed_over_in_order() {
        let locks = ClaimLocks::default();
        let (a, b) = (ClaimId::from("a"), ClaimId::from("b"));
        let Poll::Ready(Some(first)) = poll(pin!(locks.acquire(&a))) else { panic!("a is free") };
        let Poll::Ready(Some(other_claim)) = poll(pin!(locks.acquire(&b))) else { panic!("b is free") };
        let mut second = pin!(locks.acquire(&a));
        let mut third = pin!(locks.acquire(&a));
        assert!(poll(second.as_mut()).is_pending() && poll(third.as_mut()).is_pending());
        drop(other_claim);
        assert!(poll(second.as_mut()).is_pending(), "another claim's release does not hand a over");
        drop(first);
        let Poll::Ready(Some(held)) = poll(second.as_mut()) else { panic!("handed to the first waiter") };
        assert!(poll(third.as_mut()).is_pending());
        drop(held);
        assert!(matches!(poll(third.as_mut()), Poll::Ready(Some(_))));
    }

    #[test]
    fn a_waiter_that_went_away_is_skipped() {
        let locks = ClaimLocks::default();
        let a = ClaimId::from("a");
        let Poll::Ready(Some(first)) = poll(pin!(locks.acquire(&a))) else { panic!("a is free") };
        {
            let mut gone = pin!(locks.acquire(&a));
            assert!(poll(gone.as_mut()).is_pending());
        }
        let mut next = pin!(locks.acquire(&a));
        assert!(poll(next.as_mut()).is_pending());
        drop(first);
        assert!(matches!(poll(next.as_mut()), Poll::Ready(Some(_))));
    }
}
