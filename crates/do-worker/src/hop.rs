//! The hop from one object to another (replica to replica, and the echo
//! baseline's): a [`Link`] to the addressee (its stub and the URLs of its
//! message and link operations) and, in the owner's state, a
//! [`LinkState`]: the link with its WebSocket, which decides how each body
//! travels ([`Via`]). A body that fits in a frame goes over the socket; a
//! bigger one, or one sent while the socket is still opening, is an HTTP
//! `POST` to the message operation. Both ways the answer is (status,
//! body), with the status the HTTP request would have got, so callers do
//! not know which way it went.
//!
//! `LinkState` is plain bookkeeping (host-tested): the owner's shell does
//! the I/O it asks for (send a frame, post, open a socket) and reports back
//! ([`LinkState::opened`], [`LinkState::answered`], [`LinkState::ended`]).

use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_channel::oneshot;
use futures_util::future::{self, Either};
use worker::{Delay, Env, Result};

use crate::http::BINARY;
use crate::internal::{self, RawStub};
use crate::names::ReplicaName;
use crate::socket::{MAX_FRAME_BYTES, MAX_WAITING_FRAMES, Outgoing, Waiting};
use crate::wire::{Ops, Target};

/// A route to one object: its stub and the URLs of its message and link
/// operations. Replace it when a hop through it fails, or when its socket
/// is lost: a stub whose object threw stays broken.
pub struct Link {
    socket: SocketRoute,
    msg_url: String,
}

impl Link {
    /// The link to object `object` of `binding`, whose message and link
    /// operations are `msg` and `link` (of namespace `ns`, replica `r`).
    pub fn to<O: Ops>(
        env: &Env,
        (binding, object): (&str, &str),
        (ns, r): (&str, Option<ReplicaName>),
        msg: O,
        link: O,
    ) -> Result<Link> {
        let socket = SocketRoute::to(env, (binding, object), Target::new(link, ns, r))?;
        Ok(Link { socket, msg_url: internal_url(&Target::new(msg, ns, r))? })
    }

    /// Carries `body` over HTTP, presenting the internal `key`; the
    /// runtime aborts it after `timeout`.
    pub async fn post(&self, key: &str, body: &[u8], timeout: Duration) -> Result<(u16, Vec<u8>)> {
        internal::exchange(&self.socket.stub, &self.msg_url, key, body, &[("content-type", BINARY)], timeout).await
    }

    /// Opens the socket (`SocketRoute::open`).
    pub async fn open(
        &self,
        key: &str,
        timeout: Duration,
        on_answer: impl FnMut(Vec<u8>) + 'static,
        on_end: impl FnMut() + 'static,
    ) -> Result<Option<Outgoing>> {
        self.socket.open(key, timeout, on_answer, on_end).await
    }
}

/// A route to one object's socket operation: its stub and the operation's
/// URL (a [`Link`]'s, and the claim object's to its coordinator's calls,
/// `crate::tunnel`).
pub struct SocketRoute {
    stub: RawStub,
    url: String,
}

impl SocketRoute {
    /// The route to operation `target` of object `object` of `binding`.
    pub fn to<O: Ops>(env: &Env, (binding, object): (&str, &str), target: Target<O>) -> Result<SocketRoute> {
        Ok(SocketRoute { stub: internal::raw_stub(env, binding, object)?, url: internal_url(&target)? })
    }

    /// Opens the socket within `timeout` (one timer per opening, not per
    /// hop), presenting the internal `key`; `None` if the object answered
    /// the upgrade with something else than a socket.
    pub async fn open(
        &self,
        key: &str,
        timeout: Duration,
        on_answer: impl FnMut(Vec<u8>) + 'static,
        on_end: impl FnMut() + 'static,
    ) -> Result<Option<Outgoing>> {
        let open = pin!(Outgoing::open(&self.stub, &self.url, key, on_answer, on_end));
        match future::select(open, pin!(Delay::from(timeout))).await {
            Either::Left((opened, _)) => opened,
            Either::Right(_) => Err(worker::Error::RustError("the socket did not open in time".into())),
        }
    }
}

fn internal_url<O: Ops>(target: &Target<O>) -> Result<String> {
    target.url().map_err(|e| worker::Error::RustError(format!("internal url: {e}")))
}

/// How one body travels, as a [`LinkState`] decided (`L`, `S`: the link
/// and socket types, [`Link`] and [`Outgoing`] but in host tests).
pub enum Via<L = Link, S = Outgoing> {
    /// As a frame on the open socket (`id`): the owner's shell sends it at
    /// once, and its answer frame arrives on `answer` (dropped unanswered if
    /// the socket closes). `number` tells its answer apart on a socket that
    /// answers in any order ([`LinkState::answered_to`]).
    Frame { socket: Rc<S>, answer: oneshot::Receiver<Vec<u8>>, id: u64, number: u64 },
    /// As an HTTP request through the link.
    Http(Rc<L>),
    /// As an HTTP request through a new link, which the shell makes (the
    /// owner has none, or lost its last one) and hands back to the owner.
    NewLink,
}

/// How long after a refused opening (the object answered the upgrade
/// with something else than a socket: an older build, not running) the
/// next one may start; bodies go over HTTP meanwhile. Without it, every
/// body would send one more upgrade to an object that refuses them.
pub const REOPEN_AFTER_MS: u64 = 1_000;

/// The socket of a link.
enum Socket<S> {
    /// None; one may be opened from `retry_at` (ms) on.
    Closed {
        retry_at: u64,
    },
    /// An upgrade request is out (as opening `id`): meanwhile bodies go
    /// over HTTP.
    Opening {
        id: u64,
    },
    Open {
        id: u64,
        socket: Rc<S>,
        waiting: Waiting,
    },
    /// It was open and has closed: the object at the other end most likely
    /// went away (was reset, evicted), and the stub with it.
    Lost,
}

/// Socket ids, unique in the isolate: a link replaced while its socket was
/// still opening must not take the old opening's report (or a stale
/// answer or end) for its own.
static NEXT_SOCKET_ID: AtomicU64 = AtomicU64::new(1);

/// A link and its socket, as the owner's state keeps them.
pub struct LinkState<L = Link, S = Outgoing> {
    link: Rc<L>,
    socket: Socket<S>,
}

impl<L, S> LinkState<L, S> {
    pub fn new(link: Rc<L>) -> Self {
        LinkState { link, socket: Socket::Closed { retry_at: 0 } }
    }

    /// How a body of `len` bytes travels now, at `now`; and the id of a
    /// socket to open now (the shell opens it and reports
    /// [`LinkState::opened`]), if there is none.
    pub fn route(&mut self, len: usize, now: u64) -> (Via<L, S>, Option<u64>) {
        let http = Via::Http(self.link.clone());
        match &mut self.socket {
            Socket::Open { id, socket, waiting } if len <= MAX_FRAME_BYTES && waiting.len() < MAX_WAITING_FRAMES => {
                let (number, answer) = waiting.wait(now);
                (Via::Frame { socket: socket.clone(), answer, id: *id, number }, None)
            }
            Socket::Closed { retry_at } if now >= *retry_at => {
                let id = NEXT_SOCKET_ID.fetch_add(1, Ordering::Relaxed);
                self.socket = Socket::Opening { id };
                (http, Some(id))
            }
            Socket::Open { .. } | Socket::Opening { .. } | Socket::Closed { .. } | Socket::Lost => (http, None),
        }
    }

    /// Opening `id` ended at `now`: with a socket, refused (`Ok(None)`: the
    /// next opening waits [`REOPEN_AFTER_MS`]), or failed (`Err`: the
    /// upgrade threw or timed out, and a stub whose object threw stays
    /// broken, so the link is lost and its owner makes a new one).
    pub fn opened<E>(&mut self, id: u64, socket: std::result::Result<Option<S>, E>, now: u64) {
        if matches!(self.socket, Socket::Opening { id: opening } if opening == id) {
            self.socket = match socket {
                Ok(Some(socket)) => Socket::Open { id, socket: Rc::new(socket), waiting: Waiting::default() },
                Ok(None) => Socket::Closed { retry_at: now.saturating_add(REOPEN_AFTER_MS) },
                Err(_) => Socket::Lost,
            };
        }
    }

    /// An answer frame arrived on socket `id`: the oldest waiting frame's.
    pub fn answered(&mut self, id: u64, frame: Vec<u8>) {
        if let Socket::Open { id: open, waiting, .. } = &mut self.socket
            && *open == id
        {
            waiting.answer(frame);
        }
    }

    /// The answer to frame `number` arrived on socket `id` (a socket that
    /// answers in any order).
    pub fn answered_to(&mut self, id: u64, number: u64, frame: Vec<u8>) {
        if let Socket::Open { id: open, waiting, .. } = &mut self.socket
            && *open == id
        {
            waiting.answer_to(number, frame);
        }
    }

    /// Forgets the frames whose callers gave up waiting, on a socket that
    /// answers by number ([`Waiting::forget_abandoned`]).
    pub fn forget_abandoned(&mut self) {
        if let Socket::Open { waiting, .. } = &mut self.socket {
            waiting.forget_abandoned();
        }
    }

    /// Socket `id` closed (or a frame could not be sent on it): its
    /// waiting frames fail, and the link is lost.
    pub fn ended(&mut self, id: u64) {
        if matches!(self.socket, Socket::Open { id: open, .. } if open == id) {
            self.socket = Socket::Lost;
        }
    }

    /// An HTTP hop through `link` failed: forgets the kept link if it is
    /// that one (a stub whose object threw stays broken). A failure through
    /// a link already replaced says nothing about its replacement, which
    /// stays; a frame's failure is settled by its socket's end
    /// ([`LinkState::ended`]).
    pub fn forget_if_broken(kept: &mut Option<LinkState<L, S>>, link: &Rc<L>) {
        if kept.as_ref().is_some_and(|kept| Rc::ptr_eq(&kept.link, link)) {
            *kept = None;
        }
    }

    /// Its socket was open and has closed: replace this link.
    pub fn lost(&self) -> bool {
        matches!(self.socket, Socket::Lost)
    }

    /// Closes the socket if an answer on it is overdue by `timeout_ms` at
    /// `now` (its waiting frames fail, the link is lost); `true` if it did.
    pub fn close_if_overdue(&mut self, now: u64, timeout_ms: u64) -> bool {
        let overdue = matches!(&self.socket, Socket::Open { waiting, .. } if waiting.overdue(now, timeout_ms));
        if overdue {
            self.socket = Socket::Lost;
        }
        overdue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type State = LinkState<(), ()>;

    const OPEN: std::result::Result<Option<()>, ()> = Ok(Some(()));
    const REFUSED: std::result::Result<Option<()>, ()> = Ok(None);
    const FAILED: std::result::Result<Option<()>, ()> = Err(());

    /// A link whose first hop opened its socket, and that socket's id.
    fn open_state() -> (State, u64) {
        let mut state = State::new(Rc::new(()));
        let (_, Some(id)) = state.route(1, 0) else { panic!("opens") };
        state.opened(id, OPEN, 0);
        (state, id)
    }

    #[test]
    fn a_failed_hop_forgets_its_own_link_and_not_the_one_that_replaced_it() {
        let old = Rc::new(());
        let new = Rc::new(());
        let mut kept = Some(State::new(new.clone()));
        State::forget_if_broken(&mut kept, &old);
        assert!(kept.is_some(), "a late failure through the old link forgot the new one");
        State::forget_if_broken(&mut kept, &new);
        assert!(kept.is_none(), "a failure through the kept link keeps a broken stub");
    }

    fn is_http(via: &Via<(), ()>) -> bool {
        matches!(via, Via::Http(_))
    }

    #[test]
    fn http_until_the_socket_opens_then_frames_answered_in_order() {
        let mut state = State::new(Rc::new(()));
        let (via, Some(id)) = state.route(10, 0) else { panic!("the first hop opens the socket") };
        assert!(is_http(&via), "the first hop goes over HTTP");
        let (via, open) = state.route(10, 1);
        assert!(is_http(&via) && open.is_none(), "still opening: HTTP, no second opening");
        state.opened(id, OPEN, 0);
        let (Via::Frame { answer: mut first, .. }, None) = state.route(10, 2) else { panic!("a frame") };
        let (Via::Frame { answer: mut second, .. }, None) = state.route(10, 3) else { panic!("a frame") };
        assert!(is_http(&state.route(MAX_FRAME_BYTES + 1, 4).0), "too big for a frame");
        state.answered(id, b"one".to_vec());
        state.answered(id + 1, b"stray".to_vec());
        assert_eq!(first.try_recv().ok().flatten(), Some(b"one".to_vec()));
        assert_eq!(second.try_recv().ok().flatten(), None, "a stray socket's answer is ignored");
    }

    #[test]
    fn frames_beyond_the_waiting_bound_go_over_http() {
        let (mut state, id) = open_state();
        let waiting: Vec<_> = (0..MAX_WAITING_FRAMES).map(|_| state.route(1, 0).0).collect();
        assert!(waiting.iter().all(|via| matches!(via, Via::Frame { .. })));
        assert!(is_http(&state.route(1, 0).0), "one more waits over HTTP");
        state.answered(id, Vec::new());
        assert!(matches!(state.route(1, 0).0, Via::Frame { .. }), "an answer made room");
    }

    #[test]
    fn a_closed_socket_fails_its_frames_and_loses_the_link() {
        let (mut state, id) = open_state();
        let (Via::Frame { mut answer, .. }, _) = state.route(1, 0) else { panic!("a frame") };
        assert!(!state.lost());
        state.ended(id + 1);
        assert!(!state.lost(), "another socket's end");
        state.ended(id);
        assert!(state.lost());
        assert!(answer.try_recv().is_err(), "the waiting frame failed");
        assert!(is_http(&state.route(1, 0).0), "a lost link opens nothing more");
    }

    #[test]
    fn an_overdue_answer_closes_the_socket_and_a_refused_opening_retries() {
        let mut state = State::new(Rc::new(()));
        let (_, Some(id)) = state.route(1, 0) else { panic!("opens") };
        state.opened(id, REFUSED, 0);
        let (via, open) = state.route(1, REOPEN_AFTER_MS - 1);
        assert!(is_http(&via) && open.is_none(), "refused: HTTP, and no new upgrade for a while");
        let (_, Some(id)) = state.route(1, REOPEN_AFTER_MS) else { panic!("refused: opens again later") };
        state.opened(id, OPEN, 0);
        let _waiting = state.route(1, 100);
        assert!(!state.close_if_overdue(5_100, 5_000));
        assert!(state.close_if_overdue(5_101, 5_000));
        assert!(state.lost());
    }

    #[test]
    fn a_failed_opening_loses_the_link() {
        let mut state = State::new(Rc::new(()));
        let (_, Some(id)) = state.route(1, 0) else { panic!("opens") };
        state.opened(id + 1, FAILED, 0);
        assert!(!state.lost(), "another opening's failure");
        state.opened(id, FAILED, 0);
        assert!(state.lost(), "its stub may be broken: the owner makes a new link");
        assert!(is_http(&state.route(1, 0).0), "a lost link opens nothing more");
    }

    #[test]
    fn frames_whose_callers_gave_up_are_forgotten_on_a_numbered_socket() {
        let (mut state, id) = open_state();
        let (Via::Frame { answer: abandoned, .. }, _) = state.route(1, 0) else { panic!("a frame") };
        let (Via::Frame { answer: mut kept, number, .. }, _) = state.route(1, 100) else { panic!("a frame") };
        drop(abandoned);
        state.forget_abandoned();
        assert!(!state.close_if_overdue(5_050, 5_000), "the abandoned frame no longer counts");
        state.answered_to(id, number, b"kept".to_vec());
        assert_eq!(kept.try_recv().ok().flatten(), Some(b"kept".to_vec()));
    }

    #[test]
    fn a_new_link_never_takes_an_old_links_opening_for_its_own() {
        let mut old = State::new(Rc::new(()));
        let (_, Some(stale)) = old.route(1, 0) else { panic!("opens") };
        let mut new = State::new(Rc::new(()));
        let (_, Some(id)) = new.route(1, 0) else { panic!("opens") };
        assert_ne!(id, stale, "socket ids are unique in the isolate");
        new.opened(stale, FAILED, 0);
        assert!(!new.lost(), "the old link's failed opening is not this link's");
        new.opened(id, OPEN, 0);
        assert!(matches!(new.route(1, 0).0, Via::Frame { .. }));
    }
}
