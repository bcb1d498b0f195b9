//! A WebSocket between two objects carrying frames that are each answered,
//! in order: the hop between replicas (and the echo baseline's) for every
//! batch that fits in a frame. A frame costs the runtime about half of an
//! HTTP request between objects (no `Request`/`Response`, no headers, no
//! new incoming event per message: docs/BENCHMARKS.md measured the echo
//! both ways), and the hop is the whole cost of replication.
//!
//! The opener authenticates once (the upgrade request carries the internal
//! key, `internal::admit` checks it); the answering side serves each frame
//! synchronously as it arrives, so answers come back in the order the
//! frames were sent and the opener matches them first in, first out.
//! An answer frame is a 2-byte status (little-endian; 200 or the HTTP
//! status the same batch would have got) and a body.
//!
//! Bounds: a frame is at most [`MAX_FRAME_BYTES`] (bigger batches go over
//! HTTP); the opener's unanswered frames are bounded by its callers (one
//! delivery in flight per lane) and a socket with an answer overdue is
//! closed ([`Waiting::overdue`]); a closed socket fails its waiting frames
//! at once.
//!
//! Neither end keeps state of its own: the JavaScript events call the
//! owner back (`on_answer`, `on_end`, `serve`), and the owner's one state
//! holds the bookkeeping ([`Waiting`], [`Accepted`]). Each callback is an
//! entry point of the owner.

use std::collections::VecDeque;

use futures_channel::oneshot;
use js_sys::Uint8Array;
use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen::closure::Closure;
use worker::worker_sys::ext::{ResponseExt, WebSocketExt};
use worker::{Response, Result, WebSocketPair, web_sys};

use crate::internal::{self, RawStub};

/// Most bytes of one frame, either way: 1 MB, under 1 MiB, the documented
/// limit on a WebSocket message a Worker receives (a Durable Object on the
/// platform receives up to 32 MiB; the local workerd took a 2 MB frame
/// between objects when tried), so the one rule holds everywhere.
pub const MAX_FRAME_BYTES: usize = 1_000_000;
/// Most frames an opener keeps unanswered on one socket; more go over HTTP
/// (`hop::LinkState::route`). A replica keeps one per lane; the claim
/// object one per lease call in flight (`crate::tunnel`).
pub const MAX_WAITING_FRAMES: usize = 256;
/// The answer frame's status prefix.
const STATUS_BYTES: usize = 2;
/// Most bytes of an answer frame's body.
pub const MAX_ANSWER_BYTES: usize = MAX_FRAME_BYTES - STATUS_BYTES;

/// The answer frame to a frame: `status` then `body`.
pub fn answer_frame(status: u16, body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(STATUS_BYTES + body.len());
    frame.extend_from_slice(&status.to_le_bytes());
    frame.extend_from_slice(body);
    frame
}

/// (status, body) of an answer frame; `None` if it is too short.
pub fn parse_answer(frame: &[u8]) -> Option<(u16, &[u8])> {
    let (status, body) = frame.split_first_chunk::<STATUS_BYTES>()?;
    Some((u16::from_le_bytes(*status), body))
}

type OnMessage = Closure<dyn FnMut(web_sys::MessageEvent)>;
type OnEnd = Closure<dyn FnMut(web_sys::Event)>;

/// The listeners a socket holds; removed before they are dropped (a JS
/// event calling a dropped closure would throw).
struct Listeners {
    socket: web_sys::WebSocket,
    on_message: OnMessage,
    on_end: OnEnd,
}

impl Listeners {
    fn attach(socket: web_sys::WebSocket, on_message: OnMessage, on_end: OnEnd) -> Result<Self> {
        socket.add_event_listener_with_callback("message", on_message.as_ref().unchecked_ref())?;
        for end in ["close", "error"] {
            socket.add_event_listener_with_callback(end, on_end.as_ref().unchecked_ref())?;
        }
        Ok(Listeners { socket, on_message, on_end })
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        let _ = self.socket.remove_event_listener_with_callback("message", self.on_message.as_ref().unchecked_ref());
        for end in ["close", "error"] {
            let _ = self.socket.remove_event_listener_with_callback(end, self.on_end.as_ref().unchecked_ref());
        }
        let _ = self.socket.close();
    }
}

/// The bytes of a message event (a text frame reads as empty).
fn frame_of(event: &web_sys::MessageEvent) -> Vec<u8> {
    let data = event.data();
    if data.is_instance_of::<js_sys::ArrayBuffer>() { Uint8Array::new(&data).to_vec() } else { Vec::new() }
}

/// Accepts `socket` with binary messages as `ArrayBuffer`s (the standard
/// default, which the runtime follows, is a `Blob`, read only
/// asynchronously).
fn accept(socket: &web_sys::WebSocket) -> Result<()> {
    socket.accept()?;
    js_sys::Reflect::set(socket, &"binaryType".into(), &"arraybuffer".into())?;
    Ok(())
}

/// Sends `frame` as one binary message. The bytes are copied out of wasm
/// memory first: the runtime sends asynchronously, after the Rust buffer
/// may be gone.
fn send(socket: &web_sys::WebSocket, frame: &[u8]) -> Result<()> {
    socket.send_with_array_buffer(&Uint8Array::from(frame).buffer())?;
    Ok(())
}

/// The opening side: frames out; each answer frame goes to the owner's
/// `on_answer` (its state matches it with the oldest waiting frame:
/// [`Waiting`]), the socket's end to `on_end`.
pub struct Outgoing {
    listeners: Listeners,
}

impl Outgoing {
    /// Opens a socket to the object behind `stub` (`url`: its link
    /// operation), presenting the internal `key`; `None` if the object
    /// answered with something else (a refusal: 403, 410, 503).
    pub async fn open(
        stub: &RawStub,
        url: &str,
        key: &str,
        mut on_answer: impl FnMut(Vec<u8>) + 'static,
        mut on_end: impl FnMut() + 'static,
    ) -> Result<Option<Outgoing>> {
        let resp = internal::upgrade(stub, url, Some(key)).await?;
        let Some(socket) = resp.websocket() else { return Ok(None) };
        accept(&socket)?;
        let on_message = Closure::new(move |event: web_sys::MessageEvent| on_answer(frame_of(&event)));
        let on_end = Closure::new(move |_: web_sys::Event| on_end());
        Ok(Some(Outgoing { listeners: Listeners::attach(socket, on_message, on_end)? }))
    }

    /// Sends `frame` (at most [`MAX_FRAME_BYTES`]); its answer arrives
    /// through `on_answer`.
    pub fn send(&self, frame: &[u8]) -> Result<()> {
        send(&self.listeners.socket, frame)
    }
}

/// The answering side of one socket; closed when dropped.
pub struct Incoming {
    listeners: Listeners,
}

impl Incoming {
    /// Accepts a socket whose frames are answered by `serve` (status,
    /// body), each as it arrives; `on_end` is called when it closes.
    /// Returns the `101` answer to the upgrade request and the socket,
    /// which the caller keeps.
    pub fn accept(
        serve: impl Fn(&[u8]) -> (u16, Vec<u8>) + 'static,
        mut on_end: impl FnMut() + 'static,
    ) -> Result<(Response, Incoming)> {
        let pair = WebSocketPair::new()?;
        let socket: web_sys::WebSocket = pair.server.as_ref().clone();
        accept(&socket)?;
        let answer_to = socket.clone();
        let on_message = Closure::new(move |event: web_sys::MessageEvent| {
            let (status, body) = serve(&frame_of(&event));
            // A send on a closing socket fails; the opener's wait fails too.
            let _ = send(&answer_to, &answer_frame(status, &body));
        });
        let on_end = Closure::new(move |_: web_sys::Event| on_end());
        let listeners = Listeners::attach(socket, on_message, on_end)?;
        Ok((Response::from_websocket(pair.client)?, Incoming { listeners }))
    }

    /// Accepts a socket whose frames go to `on_frame` as they arrive; the
    /// owner answers each later with [`Incoming::send`], in the order the
    /// frames came (the opener matches answers first in, first out).
    pub fn accept_later(
        mut on_frame: impl FnMut(Vec<u8>) + 'static,
        mut on_end: impl FnMut() + 'static,
    ) -> Result<(Response, Incoming)> {
        let pair = WebSocketPair::new()?;
        let socket: web_sys::WebSocket = pair.server.as_ref().clone();
        accept(&socket)?;
        let on_message = Closure::new(move |event: web_sys::MessageEvent| on_frame(frame_of(&event)));
        let on_end = Closure::new(move |_: web_sys::Event| on_end());
        let listeners = Listeners::attach(socket, on_message, on_end)?;
        Ok((Response::from_websocket(pair.client)?, Incoming { listeners }))
    }

    /// Sends an answer frame (of a socket accepted with
    /// [`Incoming::accept_later`]).
    pub fn send(&self, frame: &[u8]) -> Result<()> {
        send(&self.listeners.socket, frame)
    }
}

/// The sockets an object accepted and keeps open, each with the id its
/// `on_end` names, at most a bound: beyond it the oldest closes (an opener
/// that lost its socket opens a new one, and the runtime may not tell the
/// old one's end at once).
#[derive(Default)]
pub struct Accepted {
    sockets: VecDeque<(u64, Incoming)>,
    next_id: u64,
}

impl Accepted {
    /// The id the next kept socket will have (its `on_end` names it).
    pub fn next_id(&mut self) -> u64 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    pub fn keep(&mut self, id: u64, socket: Incoming, max: usize) {
        self.sockets.push_back((id, socket));
        while self.sockets.len() > max {
            self.sockets.pop_front();
        }
    }

    /// Socket `id` closed.
    pub fn ended(&mut self, id: u64) {
        self.sockets.retain(|(i, _)| *i != id);
    }
}

/// The opener's frames waiting for their answers, oldest first, each with
/// its number. Dropped with its socket, it fails every waiting frame (each
/// receiver sees its sender gone). Pure bookkeeping, tested on the host.
#[derive(Default)]
pub struct Waiting {
    /// (number, sent at ms, where the answer goes).
    queue: VecDeque<(u64, u64, oneshot::Sender<Vec<u8>>)>,
    next: u64,
}

impl Waiting {
    /// A frame sent at `now` waits for its answer: its number, and where
    /// the answer arrives.
    pub fn wait(&mut self, now: u64) -> (u64, oneshot::Receiver<Vec<u8>>) {
        let (tx, rx) = oneshot::channel();
        self.next = self.next.wrapping_add(1);
        self.queue.push_back((self.next, now, tx));
        (self.next, rx)
    }

    /// How many frames wait.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// The next answer arrived on a socket that answers in order: it is the
    /// oldest waiting frame's.
    pub fn answer(&mut self, frame: Vec<u8>) {
        if let Some((_, _, tx)) = self.queue.pop_front() {
            let _ = tx.send(frame);
        }
    }

    /// The answer to frame `number` arrived (on a socket that answers in
    /// any order, `crate::tunnel`); one that no frame waits for is dropped.
    pub fn answer_to(&mut self, number: u64, frame: Vec<u8>) {
        if let Some(at) = self.queue.iter().position(|(n, _, _)| *n == number)
            && let Some((_, _, tx)) = self.queue.remove(at)
        {
            let _ = tx.send(frame);
        }
    }

    /// Forgets the frames nobody waits for any more (their receivers were
    /// dropped: the call gave up), so that they neither take room nor make
    /// the socket look overdue. Only on a socket that answers by number
    /// ([`Waiting::answer_to`]): on one that answers in order, a frame's
    /// place must stay until its answer comes.
    pub fn forget_abandoned(&mut self) {
        self.queue.retain(|(_, _, tx)| !tx.is_canceled());
    }

    /// Has the oldest frame waited longer than `timeout_ms`?
    pub fn overdue(&self, now: u64, timeout_ms: u64) -> bool {
        self.queue.front().is_some_and(|(_, sent, _)| now.saturating_sub(*sent) > timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_frame_is_a_status_and_a_body() {
        let frame = answer_frame(503, b"paused");
        assert_eq!(parse_answer(&frame), Some((503, &b"paused"[..])));
        assert_eq!(parse_answer(&answer_frame(200, b"")), Some((200, &b""[..])));
        assert_eq!(parse_answer(&[7]), None, "shorter than the status");
    }

    #[test]
    fn answers_go_to_the_oldest_waiting_frame() {
        let mut w = Waiting::default();
        let (_, mut first) = w.wait(10);
        let (_, mut second) = w.wait(20);
        w.answer(b"one".to_vec());
        assert_eq!(first.try_recv().ok().flatten(), Some(b"one".to_vec()));
        assert_eq!(second.try_recv().ok().flatten(), None, "not answered yet");
        assert!(w.overdue(20 + 5_001, 5_000), "the second frame waited too long");
        assert!(!w.overdue(20 + 5_000, 5_000));
        w.answer(b"two".to_vec());
        assert_eq!(second.try_recv().ok().flatten(), Some(b"two".to_vec()));
        assert!(!w.overdue(u64::MAX, 0), "nothing waits");
    }

    #[test]
    fn numbered_answers_go_to_their_frames_in_any_order() {
        let mut w = Waiting::default();
        let (one, mut first) = w.wait(10);
        let (two, mut second) = w.wait(20);
        assert_ne!(one, two);
        w.answer_to(two, b"two".to_vec());
        assert_eq!(second.try_recv().ok().flatten(), Some(b"two".to_vec()));
        assert_eq!(first.try_recv().ok().flatten(), None, "not answered yet");
        w.answer_to(two, b"again".to_vec());
        w.answer_to(two + 100, b"stray".to_vec());
        assert_eq!(w.len(), 1, "stray answers are dropped");
        assert!(w.overdue(10 + 5_001, 5_000), "the first frame still waits");
        w.answer_to(one, b"one".to_vec());
        assert_eq!(first.try_recv().ok().flatten(), Some(b"one".to_vec()));
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn dropping_fails_the_waiting_frames() {
        let mut w = Waiting::default();
        let (_, mut waiting) = w.wait(0);
        drop(w);
        assert!(waiting.try_recv().is_err(), "the sender is gone");
    }
}
