//! The hop from one object to another (replica to replica, and the echo
//! baseline's): a cached [`Link`] holding the addressee's stub, the URLs
//! of its message and link operations, and, once opened, a WebSocket to
//! it. A body that fits in a frame goes over the socket; a bigger one, or
//! one sent while the socket is still opening, is an HTTP `POST` to the
//! message operation. Both ways the answer is (status, body), with the
//! status the HTTP request would have got, so callers do not know which
//! way it went.

use std::cell::RefCell;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{self, Either};
use worker::{Delay, Env, Result};

use crate::http::BINARY;
use crate::internal::{self, RawStub};
use crate::names::ReplicaName;
use crate::socket::{MAX_FRAME_BYTES, Outgoing};
use crate::wire::{Ops, Target};

/// The socket of a link.
enum Socket {
    Closed,
    /// An upgrade request is out: meanwhile bodies go over HTTP.
    Opening,
    Open(Rc<Outgoing>),
}

/// A cached route to one object. Drop it when a hop through it fails, or
/// when it is [`Link::lost`]: the next one makes a new stub and socket (a
/// stub whose object threw stays broken).
pub struct Link {
    stub: RawStub,
    msg_url: String,
    link_url: String,
    socket: RefCell<Socket>,
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
        let url = |op| Target::new(op, ns, r).url().map_err(|e| worker::Error::RustError(format!("internal url: {e}")));
        let stub = internal::raw_stub(env, binding, object)?;
        Ok(Link { stub, msg_url: url(msg)?, link_url: url(link)?, socket: RefCell::new(Socket::Closed) })
    }

    /// The link kept in `slot`, unless it is [`Link::lost`]; else a new one
    /// from `make`, kept there from now on (if the slot can be had).
    pub fn kept(slot: Option<&mut Option<Rc<Link>>>, make: impl FnOnce() -> Result<Link>) -> Result<Rc<Link>> {
        let Some(slot) = slot else { return make().map(Rc::new) };
        if let Some(link) = slot.as_ref().filter(|link| !link.lost()) {
            return Ok(link.clone());
        }
        let link = Rc::new(make()?);
        *slot = Some(link.clone());
        Ok(link)
    }

    /// Carries `body` to the object, presenting the internal `key`, and
    /// returns its answer. `timeout` bounds an HTTP hop and the opening of
    /// the socket; a socket's answers are bounded by
    /// [`Link::close_if_overdue`].
    pub async fn exchange(&self, key: &str, body: &[u8], timeout: Duration) -> Result<(u16, Vec<u8>)> {
        if body.len() <= MAX_FRAME_BYTES
            && let Some(socket) = self.socket(key, timeout).await?
        {
            return socket.exchange(body, internal::now_ms()).await;
        }
        internal::exchange(&self.stub, &self.msg_url, key, body, &[("content-type", BINARY)], timeout).await
    }

    /// The open socket, opening it first if there is none (within
    /// `timeout`: one timer per opening, not per hop); `None` while another
    /// hop opens it, or if the object answered the upgrade with something
    /// else than a socket (the HTTP hop then gets that answer).
    async fn socket(&self, key: &str, timeout: Duration) -> Result<Option<Rc<Outgoing>>> {
        match &*self.socket.try_borrow().map_err(|_| busy())? {
            Socket::Open(socket) if !socket.is_closed() => return Ok(Some(socket.clone())),
            Socket::Opening => return Ok(None),
            Socket::Open(_) | Socket::Closed => {}
        }
        self.set(Socket::Opening);
        let open = pin!(Outgoing::open(&self.stub, &self.link_url, key));
        let opened = match future::select(open, pin!(Delay::from(timeout))).await {
            Either::Left((opened, _)) => opened.map(|s| s.map(Rc::new)),
            Either::Right(_) => Err(worker::Error::RustError("the socket did not open in time".into())),
        };
        let socket = opened.as_ref().ok().cloned().flatten();
        self.set(socket.map_or(Socket::Closed, Socket::Open));
        opened
    }

    /// Its socket was open and has closed: the object at the other end
    /// most likely went away (was reset, evicted), and its stub with it.
    /// Known from the socket's close event, before any hop fails.
    pub fn lost(&self) -> bool {
        self.socket.try_borrow().is_ok_and(|slot| matches!(&*slot, Socket::Open(socket) if socket.is_closed()))
    }

    fn set(&self, socket: Socket) {
        if let Ok(mut slot) = self.socket.try_borrow_mut() {
            *slot = socket;
        }
    }

    /// Closes the socket if an answer on it is overdue by `timeout` at
    /// `now` (its waiting hops fail); `true` if it did.
    pub fn close_if_overdue(&self, now: u64, timeout: Duration) -> bool {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let overdue = self.socket.try_borrow().ok().and_then(|slot| match &*slot {
            Socket::Open(socket) if socket.overdue(now, ms) => Some(socket.clone()),
            _ => None,
        });
        let Some(socket) = overdue else { return false };
        socket.close();
        self.set(Socket::Closed);
        true
    }
}

fn busy() -> worker::Error {
    worker::Error::RustError("link busy".into())
}
