//! The one entry point a host drives: [`Replica::handle`]`(now, input)`
//! returns the outputs to perform. A replica is either the coordinator or a
//! peer, fixed by the namespace [`Config`]; what both share (identity,
//! generation, memory, and the role-independent behaviour) lives in
//! [`node`](super::node). This module boots a replica, checks every input
//! before anything changes, and dispatches it.
//!
//! Every call is one atomic step. Internal steps that the spec separates
//! from the message that enables them (choosing the epoch after the last
//! collect reply, becoming ready after the last announce ack or reseed
//! reply) run on the next [`Timer::Retry`]; the replica asks for it by
//! arming that timer at `now`. A host runs a timer due now before sleeping
//! ([`Driver`](super::driver::Driver) keeps the timers).

use std::collections::BTreeMap;

use super::cond::{self, Cond};
use super::config::Config;
use super::coordinator::{self, Ask, Coordinator, Listing};
use super::error::{ConfigError, HandleError};
use super::ids::{Epoch, Generation, Instance, Millis, ReplicaId, SplitMix64};
use super::interface::{Input, MAX_LIST_LIMIT, Output, Status, StatusReport, Timer};
use super::memory::Memory;
use super::message::{Body, MIN_PROTOCOL_VERSION, Message, PROTOCOL_VERSION};
use super::node::Node;
use super::peer::{self, Peer};
use super::record::{Stamp, Value};

/// The two roles.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Role {
    Coordinator(Coordinator),
    Peer(Peer),
}

impl Role {
    /// The spec's `status[r]`.
    fn phase(&self) -> Status {
        match self {
            Role::Coordinator(c) => c.status(),
            Role::Peer(p) => p.status(),
        }
    }

    /// The spec's `SrcKnow(r)`: the coordinator's epoch, a peer's `known`.
    fn src_know(&self) -> Epoch {
        match self {
            Role::Coordinator(c) => c.epoch(),
            Role::Peer(p) => p.known(),
        }
    }
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
        let instance = Instance { born: now.0, nonce: rng.next_u64() };
        let is_coordinator = me == config.coordinator();
        let node = Node {
            config,
            me,
            instance,
            rng,
            generation: None,
            mem: Memory::default(),
            floor: Stamp::ZERO,
            gossip_after: BTreeMap::new(),
        };
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
        let mut out = match input {
            Input::Message(msg) => self.on_message(now, msg)?,
            Input::Put { req, key, value, wid, cond, ttl_ms } => {
                let max = self.node.config.max_value_bytes;
                if value.len() > max {
                    return Err(HandleError::ValueTooLarge { len: value.len(), max });
                }
                cond::check_ttl(ttl_ms)?;
                let ask = Ask { req, wid, cond, ttl_ms };
                {
                    let (c, node) = self.coordinator()?;
                    c.on_write(node, now, ask, key, Value::Bytes(value))
                }
            }
            Input::Delete { req, key, wid, if_match } => {
                let ask = Ask { req, wid, cond: if_match.map(Cond::IfMatch), ttl_ms: None };
                let (c, node) = self.coordinator()?;
                c.on_write(node, now, ask, key, Value::Tombstone)
            }
            Input::Read { req, key } => {
                let (c, node) = self.coordinator()?;
                c.on_read(node, now, req, key)
            }
            Input::List { req, prefix, after, limit, hide } => {
                if !(1..=MAX_LIST_LIMIT).contains(&limit) {
                    return Err(HandleError::LimitOutOfRange { limit, max: MAX_LIST_LIMIT });
                }
                let ask = Listing { prefix, after, limit, hide };
                let (c, node) = self.coordinator()?;
                c.on_list(node, now, req, ask)
            }
            // `on_timer` arms the expiry timer itself.
            Input::Timer(timer) => return Ok(self.on_timer(now, timer)),
        };
        out.extend(self.expiry_timer(now));
        Ok(out)
    }

    /// The coordinator role (client requests go to it), with the node; an
    /// error at a peer.
    fn coordinator(&mut self) -> Result<(&mut Coordinator, &mut Node), HandleError> {
        match &mut self.role {
            Role::Coordinator(c) => Ok((c, &mut self.node)),
            Role::Peer(_) => {
                Err(HandleError::NotCoordinator { me: self.node.me, coordinator: self.node.config.coordinator() })
            }
        }
    }

    /// The coordinator's expiry timer, armed for the earliest expiry its
    /// memory holds once it serves (after every step that may change it).
    fn expiry_timer(&mut self, now: Millis) -> Option<Output> {
        match &mut self.role {
            Role::Coordinator(c) => c.expiry_timer(&self.node, now),
            Role::Peer(_) => None,
        }
    }

    /// A timer is due. A fenced coordinator instance does nothing on its
    /// own any more.
    pub(super) fn on_timer(&mut self, now: Millis, timer: Timer) -> Vec<Output> {
        let phase = self.role.phase();
        if phase == Status::Fenced {
            return Vec::new();
        }
        let known = self.role.src_know();
        let mut out = match (timer, &mut self.role) {
            (Timer::Retry, Role::Coordinator(c)) => c.on_retry(&mut self.node, now),
            (Timer::Retry, Role::Peer(p)) => p.on_retry(&mut self.node, now),
            (Timer::Expire, Role::Coordinator(c)) => c.on_expire(&mut self.node, now),
            (Timer::Expire, Role::Peer(_)) => Vec::new(),
            (Timer::Heartbeat, _) => self.node.heartbeat(now),
            (Timer::Gossip, _) => self.node.send_digest(now, phase == Status::Ready, known),
        };
        out.extend(self.expiry_timer(now));
        out
    }

    /// Checks everything that can make a message unacceptable before
    /// anything changes, then lets a newer generation reboot this replica,
    /// then dispatches.
    fn on_message(&mut self, now: Millis, msg: Message) -> Result<Vec<Output>, HandleError> {
        if !(MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&msg.v) {
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
        let ready = self.role.phase() == Status::Ready;
        out.extend(match &msg.body {
            // The same for both roles: `CanSeed(r) == status[r] \in
            // {"ready", "announce"}`; the coordinator hears from the
            // requester (`Heard`).
            Body::Reseed { instance, after } => {
                let can_seed = matches!(self.role.phase(), Status::Ready | Status::Announce);
                if let Role::Coordinator(c) = &mut self.role {
                    c.heard(msg.from, *instance);
                }
                vec![self.node.answer_reseed(msg.from, *instance, after.as_ref(), can_seed, self.role.src_know())]
            }
            // Anti-entropy, when ready: take the floor, answer with the
            // records that differ; the coordinator also matches digests
            // for its floor.
            Body::Digest { instance, known, floor, digest } => {
                #[cfg(feature = "mutations")]
                if let Role::Peer(p) = &mut self.role {
                    p.refence_on_digest(&self.node, *instance);
                }
                let mut out = self.node.on_digest(msg.from, *floor, digest, ready);
                if let Role::Coordinator(c) = &mut self.role {
                    out.extend(c.on_digest(&self.node, now, msg.from, *instance, *known, digest));
                }
                out
            }
            Body::Records { floor, records } => {
                self.node.on_records(*floor, records, ready);
                Vec::new()
            }
            Body::Heartbeat => Vec::new(),
            _ => match &mut self.role {
                Role::Coordinator(c) => c.on_message(&mut self.node, now, msg),
                Role::Peer(p) => p.on_message(&mut self.node, now, msg),
            },
        });
        Ok(out)
    }

    /// The replica's phase (the spec's `status[r]`); cheaper than
    /// [`Replica::status`], which also counts keys.
    pub fn phase(&self) -> Status {
        self.role.phase()
    }

    /// This replica's status line.
    pub fn status(&self) -> StatusReport {
        let (role, status, epoch, known, pending, pending_bytes) = match &self.role {
            Role::Coordinator(c) => {
                ("coordinator", c.status(), c.epoch(), c.collect_max(), c.pending().count(), c.pending_bytes())
            }
            Role::Peer(p) => ("peer", p.status(), p.known(), p.known(), 0, 0),
        };
        StatusReport {
            replica: self.node.me,
            role,
            status,
            epoch,
            known,
            keys: self.node.mem.live_keys(),
            tombstones: self.node.mem.tombstones(),
            bytes: self.node.mem.bytes(),
            budget: self.node.config.budget_bytes,
            floor: self.node.floor,
            generation: self.node.generation,
            pending,
            pending_bytes,
        }
    }

    /// The spec's `SrcKnow(r)`: the coordinator's epoch, a peer's `known`.
    pub fn epoch(&self) -> Epoch {
        self.role.src_know()
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

    /// The served memory (the spec's `mem[r]` less what the floor
    /// collected).
    pub fn memory(&self) -> &Memory {
        &self.node.mem
    }

    /// HandoffScale's `floor[r]`.
    pub fn floor(&self) -> Stamp {
        self.node.floor
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
