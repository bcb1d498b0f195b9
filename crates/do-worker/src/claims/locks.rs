//! One-at-a-time access per claim inside the claim object: the lease of a
//! claim is read, changed and written back (three awaits on the lease
//! store), and no other lease request for that claim may start meanwhile.
//! Requests for other claims, and durable transitions, do run in between:
//! only the lease record's read-modify-write must not interleave.
//!
//! [`Locks`] is plain bookkeeping in the object's one state (host-tested);
//! [`acquire`] takes a claim's lock from that state (or waits for the
//! hand-over), and the [`Held`] guard gives it back when dropped. Both
//! borrow the state only in their synchronous parts: each is an entry point.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;

use futures_channel::oneshot;
use futures_util::future::{self, Either};
use protocol::claim::ClaimId;
use worker::console_error;

/// Requests that may wait for one claim's lock at once. One more is
/// refused at once (503, retry): many requests for one claim while the
/// lease store is slow must not queue without bound in the object.
pub const MAX_WAITERS: usize = 64;

/// Waiters per claim; a claim is in the map while someone holds its lock.
#[derive(Default)]
pub struct Locks {
    queues: BTreeMap<ClaimId, VecDeque<oneshot::Sender<()>>>,
}

impl Locks {
    /// Takes `claim`'s lock if it is free (`None`); else queues for it: the
    /// lock arrives on the receiver, handed over by its holder. Refused
    /// when [`MAX_WAITERS`] requests still wait for it.
    pub fn take(&mut self, claim: &ClaimId) -> Result<Option<oneshot::Receiver<()>>, LockError> {
        match self.queues.get_mut(claim) {
            None => {
                self.queues.insert(claim.clone(), VecDeque::new());
                Ok(None)
            }
            Some(queue) => {
                if queue.len() >= MAX_WAITERS {
                    queue.retain(|waiter| !waiter.is_canceled());
                }
                if queue.len() >= MAX_WAITERS {
                    return Err(LockError::Crowded(claim.clone()));
                }
                let (tx, rx) = oneshot::channel();
                queue.push_back(tx);
                Ok(Some(rx))
            }
        }
    }

    /// The holder of `claim`'s lock gives it up: to the next waiter still
    /// waiting (one whose request went away dropped its receiver), or free.
    pub fn release(&mut self, claim: &ClaimId) {
        if let Some(queue) = self.queues.get_mut(claim) {
            while let Some(next) = queue.pop_front() {
                if next.send(()).is_ok() {
                    return;
                }
            }
        }
        self.queues.remove(claim);
    }
}

/// A state that holds [`Locks`].
pub trait HasLocks: 'static {
    fn locks(&mut self) -> &mut Locks;
}

/// The state was borrowed twice: a bug, reported.
#[derive(Debug, thiserror::Error)]
#[error("bug: the claim object's state was borrowed twice")]
pub struct Reentered;

/// Why a claim's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(transparent)]
    Reentered(#[from] Reentered),
    #[error("{MAX_WAITERS} requests already wait for the lease lock of claim {0}")]
    Crowded(ClaimId),
}

/// Holds a claim's lock until dropped; dropping hands it to the next waiter.
pub struct Held<S: HasLocks> {
    state: Rc<RefCell<S>>,
    claim: ClaimId,
}

impl<S: HasLocks> Held<S> {
    /// The claim whose lock this is.
    pub fn claim(&self) -> &ClaimId {
        &self.claim
    }
}

/// Waits for `claim`'s lock in `state`. Dropped while it waits (its
/// request gave up), it gives up its place, or the lock if that was just
/// handed to it.
pub async fn acquire<S: HasLocks>(state: &Rc<RefCell<S>>, claim: &ClaimId) -> Result<Held<S>, LockError> {
    loop {
        let waiter = state.try_borrow_mut().map_err(|_| Reentered)?.locks().take(claim)?;
        // `None`: taken now; else handed over by the previous holder (an
        // error: the queue was dropped without handing over, try afresh).
        let taken = match waiter {
            None => true,
            Some(rx) => {
                let mut waiting = Waiter { rx, state: state.clone(), claim: claim.clone() };
                (&mut waiting.rx).await.is_ok()
            }
        };
        if taken {
            return Ok(Held { state: state.clone(), claim: claim.clone() });
        }
    }
}

/// [`acquire`], giving up when `deadline` (a timer) comes first: `None`.
/// The lock is polled first, so one free, or handed over, is taken even if
/// the deadline came in the same turn; one that did not come in time gives
/// up its place in the queue.
pub async fn acquire_before<S: HasLocks>(
    state: &Rc<RefCell<S>>,
    claim: &ClaimId,
    deadline: impl Future<Output = ()>,
) -> Result<Option<Held<S>>, LockError> {
    match future::select(pin!(acquire(state, claim)), pin!(deadline)).await {
        Either::Left((held, _)) => held.map(Some),
        Either::Right(_) => Ok(None),
    }
}

/// A place in a claim's queue. Dropped with the lock handed to it but not
/// yet taken (the request went away in between), it passes the lock on.
struct Waiter<S: HasLocks> {
    rx: oneshot::Receiver<()>,
    state: Rc<RefCell<S>>,
    claim: ClaimId,
}

impl<S: HasLocks> Drop for Waiter<S> {
    fn drop(&mut self) {
        if matches!(self.rx.try_recv(), Ok(Some(()))) {
            drop(Held { state: self.state.clone(), claim: self.claim.clone() });
        }
    }
}

impl<S: HasLocks> Drop for Held<S> {
    fn drop(&mut self) {
        match self.state.try_borrow_mut() {
            Ok(mut state) => state.locks().release(&self.claim),
            Err(_) => console_error!("{Reentered}: the lock of claim {} was not released", self.claim),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::task::{Context, Poll, Waker};

    use super::*;

    #[derive(Default)]
    struct State(Locks);

    impl HasLocks for State {
        fn locks(&mut self) -> &mut Locks {
            &mut self.0
        }
    }

    fn poll<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn one_holder_per_claim_handed_over_in_order() {
        let locks = Rc::new(RefCell::new(State::default()));
        let (a, b) = (ClaimId::from("a"), ClaimId::from("b"));
        let Poll::Ready(Ok(first)) = poll(pin!(acquire(&locks, &a))) else { panic!("a is free") };
        let Poll::Ready(Ok(other_claim)) = poll(pin!(acquire(&locks, &b))) else { panic!("b is free") };
        let mut second = pin!(acquire(&locks, &a));
        let mut third = pin!(acquire(&locks, &a));
        assert!(poll(second.as_mut()).is_pending() && poll(third.as_mut()).is_pending());
        drop(other_claim);
        assert!(poll(second.as_mut()).is_pending(), "another claim's release does not hand a over");
        drop(first);
        let Poll::Ready(Ok(held)) = poll(second.as_mut()) else { panic!("handed to the first waiter") };
        assert!(poll(third.as_mut()).is_pending());
        drop(held);
        assert!(matches!(poll(third.as_mut()), Poll::Ready(Ok(_))));
    }

    #[test]
    fn a_waiter_that_went_away_is_skipped() {
        let locks = Rc::new(RefCell::new(State::default()));
        let a = ClaimId::from("a");
        let Poll::Ready(Ok(first)) = poll(pin!(acquire(&locks, &a))) else { panic!("a is free") };
        {
            let mut gone = pin!(acquire(&locks, &a));
            assert!(poll(gone.as_mut()).is_pending());
        }
        let mut next = pin!(acquire(&locks, &a));
        assert!(poll(next.as_mut()).is_pending());
        drop(first);
        assert!(matches!(poll(next.as_mut()), Poll::Ready(Ok(_))));
    }

    #[test]
    fn a_borrowed_state_is_reported_not_skipped() {
        let locks = Rc::new(RefCell::new(State::default()));
        let _borrowed = locks.borrow_mut();
        assert!(matches!(poll(pin!(acquire(&locks, &ClaimId::from("a")))), Poll::Ready(Err(LockError::Reentered(_)))));
    }

    #[test]
    fn waiters_beyond_the_bound_are_refused_and_those_gone_make_room() {
        let locks = Rc::new(RefCell::new(State::default()));
        let a = ClaimId::from("a");
        let Poll::Ready(Ok(_held)) = poll(pin!(acquire(&locks, &a))) else { panic!("a is free") };
        let mut waiters: Vec<_> = (0..MAX_WAITERS).map(|_| Box::pin(acquire(&locks, &a))).collect();
        assert!(waiters.iter_mut().all(|w| poll(w.as_mut()).is_pending()));
        assert!(matches!(poll(pin!(acquire(&locks, &a))), Poll::Ready(Err(LockError::Crowded(_)))));
        waiters.pop();
        let mut one_more = pin!(acquire(&locks, &a));
        assert!(poll(one_more.as_mut()).is_pending(), "a waiter that went away made room");
        let Poll::Ready(Ok(_other)) = poll(pin!(acquire(&locks, &ClaimId::from("b")))) else {
            panic!("another claim's lock is not crowded")
        };
    }

    #[test]
    fn a_waiter_gone_after_the_hand_over_passes_the_lock_on() {
        let locks = Rc::new(RefCell::new(State::default()));
        let a = ClaimId::from("a");
        let Poll::Ready(Ok(first)) = poll(pin!(acquire(&locks, &a))) else { panic!("a is free") };
        let mut handed = Box::pin(acquire(&locks, &a));
        assert!(poll(handed.as_mut()).is_pending());
        let mut next = pin!(acquire(&locks, &a));
        assert!(poll(next.as_mut()).is_pending());
        drop(first);
        drop(handed);
        assert!(matches!(poll(next.as_mut()), Poll::Ready(Ok(_))), "not stuck with the waiter that went away");
    }

    #[test]
    fn the_deadline_gives_up_a_wait_but_never_a_free_lock() {
        let locks = Rc::new(RefCell::new(State::default()));
        let a = ClaimId::from("a");
        let Poll::Ready(Ok(Some(held))) = poll(pin!(acquire_before(&locks, &a, future::ready(())))) else {
            panic!("a free lock is taken even at the deadline")
        };
        assert!(
            matches!(poll(pin!(acquire_before(&locks, &a, future::ready(())))), Poll::Ready(Ok(None))),
            "a held lock is not waited for past the deadline"
        );
        let mut waiting = pin!(acquire_before(&locks, &a, future::pending()));
        assert!(poll(waiting.as_mut()).is_pending());
        drop(held);
        assert!(
            matches!(poll(waiting.as_mut()), Poll::Ready(Ok(Some(_)))),
            "handed over, not to the request that gave up"
        );
    }
}
