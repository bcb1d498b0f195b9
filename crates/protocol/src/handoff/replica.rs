//! The one entry point a host drives: [`Replica::handle`]`(now, input)`
//! returns the outputs to perform. A replica is either the coordinator or a
//! peer, fixed by the namespace [`Config`]; what both share (identity,
//! generation, memory) lives in [`Node`].
//!
//! Every call is one atomic step. Internal steps that the spec separates
//! from the message that enables them (choosing the epoch after the last
//! collect reply, becoming ready after the last announce ack or reseed
//! reply) run on the next [`Timer::Retry`]; the replica asks for it by
//! arming that timer at `now`. A host runs a timer due now before sleeping.

use std::fmt;

use serde::Serialize;

use super::config::Config;
use super::coordinator::{self, Coordinator};
use super::error::{ConfigError, HandleError};
use super::ids::{ClientRequestId, Epoch, Generation, Instance, Key, Millis, ReplicaId, SplitMix64, WriteId};
use super::memory::Memory;
use super::message::{Body, Message, PROTOCOL_VERSION};
use super::peer::{self, Peer};
use super::record::{Record, Stamp, Value};

/// What a host feeds in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A message from another replica (already decoded).
    Message(Message),
    /// A client PUT, with the caller's write id.
    Put { req: ClientRequestId, key: Key, value: Vec<u8>, wid: WriteId },
    /// A client DELETE: a tombstone write, with the caller's write id.
    Delete { req: ClientRequestId, key: Key, wid: WriteId },
    /// A timer the replica armed is due.
    Timer(Timer),
}

/// What a host must do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    /// Send a message to `message.to` (best effort: it may be lost).
    Send(Message),
    /// Answer the client request `req`.
    Reply { req: ClientRequestId, reply: WriteReply },
    /// (Re)arm `timer` to fire at `at`, replacing its previous deadline.
    SetTimer { timer: Timer, at: Millis },
}

/// The replica's timers; each has at most one deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Timer {
    /// Resend unanswered requests; run a pending internal step.
    Retry,
    /// Send keep-alives to both other replicas.
    Heartbeat,
    /// Send this replica's memory to both other replicas (when ready).
    Gossip,
}

/// The answer to a client write.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WriteReply {
    /// Held by at least two replicas (the coordinator and a peer).
    Committed { key: Key, stamp: Stamp, wid: WriteId },
    /// The coordinator is recovering (HTTP 503 + `Retry-After`).
    Unavailable { status: Status, retry_after_ms: u64 },
    /// Too many uncommitted writes (HTTP 503 + `Retry-After`).
    Overloaded { retry_after_ms: u64 },
    /// This coordinator instance learned that a newer one exists; it never
    /// acknowledges a write again. The client retries and reaches the
    /// current instance.
    Superseded,
}

/// The answer to a client read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Read {
    /// The committed record for the key (a tombstone for a deleted key),
    /// or `None` if the key was never written.
    Committed(Option<Record>),
    /// The coordinator is recovering (HTTP 503 + `Retry-After`).
    Unavailable { status: Status, retry_after_ms: u64 },
    /// A superseded coordinator instance.
    Superseded,
}

/// A replica's phase, as reported by `GET /v1/{ns}/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ready,
    /// Coordinator recovery, phase 1.
    Collect,
    /// Coordinator recovery, phase 2.
    Announce,
    /// Peer recovery.
    Recovering,
    /// A coordinator instance that was superseded (a zombie that knows it).
    Fenced,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ready => "ready",
            Status::Collect => "collect",
            Status::Announce => "announce",
            Status::Recovering => "recovering",
            Status::Fenced => "fenced",
        })
    }
}

/// One replica's line of `GET /v1/{ns}/status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatusReport {
    pub replica: ReplicaId,
    /// `"coordinator"` or `"peer"`.
    pub role: &'static str,
    pub status: Status,
    /// The coordinator's epoch; for a peer, the coordinator epoch it knows.
    pub epoch: Epoch,
    /// The highest epoch heard of: a peer's `known`; the coordinator's
    /// `collectMax` from its last collect.
    pub known: Epoch,
    /// Keys with a live value.
    pub keys: usize,
    pub generation: Option<Generation>,
    /// Uncommitted writes (coordinator only).
    pub pending: usize,
}

/// What both roles share: who this is, which boot, which generation, and
/// the memory (for the coordinator: committed data only).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    pub(super) config: Config,
    pub(super) me: ReplicaId,
    pub(super) instance: Instance,
    pub(super) rng: SplitMix64,
    pub(super) generation: Option<Generation>,
    pub(super) mem: Memory,
}

impl Node {
    pub(super) fn send(&self, to: ReplicaId, body: Body) -> Output {
        Output::Send(Message::new(self.generation, self.me, to, body))
    }

    /// Sends `body` to both other replicas.
    pub(super) fn send_others(&self, body: Body) -> impl Iterator<Item = Output> + '_ {
        self.config.others(self.me).map(move |to| self.send(to, body.clone()))
    }

    /// Arms `timer` one interval from now.
    pub(super) fn arm(&self, now: Millis, timer: Timer) -> Output {
        let ms = match timer {
            Timer::Retry => self.config.retry_ms,
            Timer::Heartbeat => self.config.heartbeat_ms,
            Timer::Gossip => self.config.gossip_ms,
        };
        Output::SetTimer { timer, at: now.plus(ms) }
    }

    /// Asks for the next internal step: the retry timer, due now.
    pub(super) fn step_now(now: Millis) -> Output {
        Output::SetTimer { timer: Timer::Retry, at: now }
    }

    /// Timers every replica runs from boot.
    pub(super) fn boot_timers(&self, now: Millis) -> [Output; 3] {
        [self.arm(now, Timer::Retry), self.arm(now, Timer::Heartbeat), self.arm(now, Timer::Gossip)]
    }
}

/// The two roles.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Role {
    Coordinator(Coordinator),
    Peer(Peer),
}

/// A read-only view of a replica's role state, for status pages and for
/// the model checker's map to the spec's variables.
#[derive(Clone, Copy, Debug)]
pub enum RoleView<'a> {
    Coordinator(&'a Coordinator),
    Peer(&'a Peer),
}

/// One replica: a Durable Object instance's whole protocol state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Replica {
    node: Node,
    role: Role,
}

impl Replica {
    /// A replica constructed empty -- first boot, and every reboot after an
    /// eviction, look the same from inside: the replica learns which one it
    /// is from the others (a coordinator that finds nobody with a
    /// generation mints one). `seed` is fresh host randomness.
    pub fn boot(config: Config, me: ReplicaId, now: Millis, seed: u64) -> Result<(Replica, Vec<Output>), ConfigError> {
        config.validate()?;
        if !config.contains(me) {
            return Err(ConfigError::NotAReplica(me));
        }
        Ok(Replica::boot_valid(config, me, now, seed))
    }

    fn boot_valid(config: Config, me: ReplicaId, now: Millis, seed: u64) -> (Replica, Vec<Output>) {
        let mut rng = SplitMix64::new(seed);
        let instance = Instance(rng.next_u64());
        let is_coordinator = me == config.coordinator();
        let node = Node { config, me, instance, rng, generation: None, mem: Memory::default() };
        let (role, out) = if is_coordinator {
            let (c, out) = Coordinator::boot(&node, now);
            (Role::Coordinator(c), out)
        } else {
            let (p, out) = Peer::boot(&node, now);
            (Role::Peer(p), out)
        };
        (Replica { node, role }, out)
    }

    /// Processes one input. On `Err` the replica is unchanged.
    pub fn handle(&mut self, now: Millis, input: Input) -> Result<Vec<Output>, HandleError> {
        match input {
            Input::Message(msg) => self.on_message(now, msg),
            Input::Put { req, key, value, wid } => {
                let max = self.node.config.max_value_bytes;
                if value.len() > max {
                    return Err(HandleError::ValueTooLarge { len: value.len(), max });
                }
                self.on_write(now, req, key, Value::Bytes(value), wid)
            }
            Input::Delete { req, key, wid } => self.on_write(now, req, key, Value::Tombstone, wid),
            Input::Timer(timer) => Ok(match &mut self.role {
                Role::Coordinator(c) => c.on_timer(&mut self.node, now, timer),
                Role::Peer(p) => p.on_timer(&self.node, now, timer),
            }),
        }
    }

    fn on_write(
        &mut self,
        now: Millis,
        req: ClientRequestId,
        key: Key,
        value: Value,
        wid: WriteId,
    ) -> Result<Vec<Output>, HandleError> {
        match &mut self.role {
            Role::Coordinator(c) => Ok(c.on_write(&mut self.node, now, req, key, value, wid)),
            Role::Peer(_) => {
                Err(HandleError::NotCoordinator { me: self.node.me, coordinator: self.node.config.coordinator() })
            }
        }
    }

    /// Checks everything that can make a message unacceptable before
    /// anything changes, then lets a newer generation reboot this replica,
    /// then dispatches.
    fn on_message(&mut self, now: Millis, msg: Message) -> Result<Vec<Output>, HandleError> {
        if msg.v != PROTOCOL_VERSION {
            return Err(HandleError::UnsupportedVersion { got: msg.v, supported: PROTOCOL_VERSION });
        }
        if msg.to != self.node.me {
            return Err(HandleError::WrongDestination { to: msg.to, me: self.node.me });
        }
        if msg.from == self.node.me || !self.node.config.contains(msg.from) {
            return Err(HandleError::UnknownSender(msg.from));
        }
        match &self.role {
            Role::Coordinator(_) => coordinator::check(&msg)?,
            Role::Peer(_) => peer::check(&self.node, &msg)?,
        }
        let mut out = Vec::new();
        if let (Some(mine), Some(theirs)) = (self.node.generation, msg.generation) {
            if theirs < mine {
                return Err(HandleError::StaleGeneration { got: theirs, mine });
            }
            if theirs > mine {
                // Our namespace died while we were away from it (everyone
                // else was evicted and a coordinator minted a new
                // generation): our state belongs to a dead namespace.
                let seed = self.node.rng.next_u64();
                let (rebooted, boot_out) = Replica::boot_valid(self.node.config.clone(), self.node.me, now, seed);
                *self = rebooted;
                out = boot_out;
            }
        }
        out.extend(match &mut self.role {
            Role::Coordinator(c) => c.on_message(&mut self.node, now, msg),
            Role::Peer(p) => p.on_message(&mut self.node, now, msg),
        });
        Ok(out)
    }

    /// A client read: committed data at the coordinator.
    pub fn read(&self, key: &Key) -> Result<Read, HandleError> {
        match &self.role {
            Role::Coordinator(c) => Ok(c.read(&self.node, key)),
            Role::Peer(_) => {
                Err(HandleError::NotCoordinator { me: self.node.me, coordinator: self.node.config.coordinator() })
            }
        }
    }

    /// This replica's status line.
    pub fn status(&self) -> StatusReport {
        let (role, status, epoch, known, pending) = match &self.role {
            Role::Coordinator(c) => ("coordinator", c.status(), c.epoch(), c.collect_max(), c.pending().count()),
            Role::Peer(p) => ("peer", p.status(), p.known(), p.known(), 0),
        };
        StatusReport {
            replica: self.node.me,
            role,
            status,
            epoch,
            known,
            keys: self.node.mem.live_keys(),
            generation: self.node.generation,
            pending,
        }
    }

    pub fn me(&self) -> ReplicaId {
        self.node.me
    }

    /// This boot's instance (replies to other instances are stale).
    pub fn instance(&self) -> Instance {
        self.node.instance
    }

    pub fn generation(&self) -> Option<Generation> {
        self.node.generation
    }

    /// The served memory (the spec's `mem[r]`).
    pub fn memory(&self) -> &Memory {
        &self.node.mem
    }

    pub fn config(&self) -> &Config {
        &self.node.config
    }

    /// The role's state, read-only.
    pub fn role(&self) -> RoleView<'_> {
        match &self.role {
            Role::Coordinator(c) => RoleView::Coordinator(c),
            Role::Peer(p) => RoleView::Peer(p),
        }
    }
}
