//! A deterministic test host: three replicas (plus zombie instances) over a
//! simulated network with loss, duplication and reordering, in virtual
//! time that jumps to the next event. Everything random comes from a seed.

use std::collections::BTreeMap;

use crate::handoff::ids::SplitMix64;
use crate::handoff::{
    ClientRequestId, Cond, Config, Driver, HandleError, Input, Key, List, Message, Millis, Output, Read, Replica,
    ReplicaId, Status, Tag, WriteId, WriteReply,
};

pub const C: ReplicaId = ReplicaId(0);
pub const P1: ReplicaId = ReplicaId(1);
pub const P2: ReplicaId = ReplicaId(2);
pub const ALL: [ReplicaId; 3] = [C, P1, P2];

/// How hostile the network is, in percent per message.
#[derive(Clone, Copy, Debug)]
pub struct Weather {
    pub drop_pct: u64,
    pub dup_pct: u64,
    /// Delivery delay is uniform in `1..=max_delay_ms` (reordering).
    pub max_delay_ms: u64,
}

impl Weather {
    pub const CALM: Weather = Weather { drop_pct: 0, dup_pct: 0, max_delay_ms: 1 };
    pub const STORMY: Weather = Weather { drop_pct: 20, dup_pct: 20, max_delay_ms: 80 };
}

pub struct Net {
    pub config: Config,
    pub now: Millis,
    pub weather: Weather,
    rng: SplitMix64,
    /// The replica instances the host still runs: the current one of each
    /// name, and zombies that only receive replies to their own requests
    /// (their timers never fire).
    current: BTreeMap<ReplicaId, Driver>,
    zombies: Vec<Driver>,
    /// (deliver at, sequence number for a stable order, message)
    in_flight: Vec<(Millis, u64, Message)>,
    seq: u64,
    next_req: u64,
    /// Every reply a client received, in order.
    pub replies: Vec<(ClientRequestId, WriteReply)>,
    /// Every answer a client read received, in order.
    pub reads: Vec<(ClientRequestId, Read)>,
    /// Every answer a client listing received, in order.
    pub lists: Vec<(ClientRequestId, List)>,
    /// Every input a replica refused.
    pub errors: Vec<(ReplicaId, HandleError)>,
    /// Messages delivered to each replica name, with the time (keep-alive).
    pub deliveries: Vec<(Millis, ReplicaId)>,
    /// Messages sent, and their encoded bytes, by kind.
    pub sent: BTreeMap<&'static str, (u64, u64)>,
}

impl Net {
    /// Boots all three replicas at time 0.
    pub fn new(seed: u64, weather: Weather) -> Net {
        Net::with_config(seed, weather, Net::config())
    }

    /// The namespace's default config.
    pub fn config() -> Config {
        Config::new(C, [P1, P2]).unwrap()
    }

    /// Boots all three replicas at time 0, with `config`.
    pub fn with_config(seed: u64, weather: Weather, config: Config) -> Net {
        let mut net = Net {
            config,
            now: Millis(0),
            weather,
            rng: SplitMix64::new(seed),
            current: BTreeMap::new(),
            zombies: Vec::new(),
            in_flight: Vec::new(),
            seq: 0,
            next_req: 1,
            replies: Vec::new(),
            reads: Vec::new(),
            lists: Vec::new(),
            errors: Vec::new(),
            deliveries: Vec::new(),
            sent: BTreeMap::new(),
        };
        for r in ALL {
            net.boot(r);
        }
        net
    }

    fn chance(&mut self, pct: u64) -> bool {
        self.rng.next_u64() % 100 < pct
    }

    /// Constructs `r` empty (first boot, or eviction: the same thing).
    pub fn boot(&mut self, r: ReplicaId) {
        let seed = self.rng.next_u64();
        let (driver, out) = Driver::boot(self.config.clone(), r, self.now, seed).unwrap();
        self.current.insert(r, driver);
        self.perform(out);
    }

    /// The platform evicts `r`: its memory is gone, a new instance boots.
    pub fn evict(&mut self, r: ReplicaId) {
        self.boot(r);
    }

    /// The platform starts a new coordinator instance while the old one
    /// keeps running what it had in flight (a zombie).
    pub fn supersede_coordinator(&mut self) {
        if let Some(old) = self.current.remove(&C) {
            self.zombies.push(old);
        }
        self.boot(C);
    }

    pub fn replica(&self, r: ReplicaId) -> &Replica {
        self.current[&r].replica()
    }

    pub fn zombie(&self, i: usize) -> &Replica {
        self.zombies[i].replica()
    }

    pub fn status(&self, r: ReplicaId) -> Status {
        self.replica(r).status().status
    }

    pub fn all_ready(&self) -> bool {
        ALL.iter().all(|&r| self.status(r) == Status::Ready)
    }

    /// A client PUT to the coordinator; returns the request id.
    pub fn put(&mut self, key: &str, value: &[u8], wid: u128) -> ClientRequestId {
        self.put_with(None, key, value, wid, None, None)
    }

    /// A client PUT with a condition and a time to live, to the coordinator
    /// (`None`) or to zombie `i` (an in-flight request).
    pub fn put_with(
        &mut self,
        zombie: Option<usize>,
        key: &str,
        value: &[u8],
        wid: u128,
        cond: Option<Cond>,
        ttl_ms: Option<u64>,
    ) -> ClientRequestId {
        let req = self.next_req();
        let (key, value, wid) = (Key::new(key).unwrap(), value.to_vec(), WriteId(wid));
        self.input(C, zombie, Input::Put { req, key, value, wid, cond, ttl_ms });
        req
    }

    /// A client DELETE to the coordinator.
    pub fn delete(&mut self, key: &str, wid: u128) -> ClientRequestId {
        self.delete_if(key, wid, None)
    }

    /// A client DELETE to the coordinator, if the key's record has the tag
    /// `if_match`.
    pub fn delete_if(&mut self, key: &str, wid: u128, if_match: Option<Tag>) -> ClientRequestId {
        let req = self.next_req();
        self.input(C, None, Input::Delete { req, key: Key::new(key).unwrap(), wid: WriteId(wid), if_match });
        req
    }

    /// A client PUT that reached zombie `i` (an in-flight request).
    pub fn put_to_zombie(&mut self, i: usize, key: &str, value: &[u8], wid: u128) -> ClientRequestId {
        self.put_with(Some(i), key, value, wid, None, None)
    }

    /// A client listing to the coordinator, run until it is answered (at
    /// most 10 s of virtual time).
    pub fn list(&mut self, prefix: &str, after: Option<&str>, limit: usize, hide: Option<&str>) -> List {
        let req = self.next_req();
        let after = after.map(|a| Key::new(a).unwrap());
        let input = Input::List { req, prefix: prefix.into(), after, limit, hide: hide.map(Into::into) };
        self.input(C, None, input);
        let answer = |n: &Net| n.lists.iter().find(|(r, _)| *r == req).map(|(_, l)| l.clone());
        assert!(self.run_until(10_000, |n| answer(n).is_some()), "the listing was never answered");
        answer(self).unwrap()
    }

    fn next_req(&mut self) -> ClientRequestId {
        self.next_req += 1;
        ClientRequestId(self.next_req)
    }

    /// A client GET to the coordinator, run until it is answered (at most
    /// 10 s of virtual time).
    pub fn read(&mut self, key: &str) -> Read {
        let req = self.start_read(None, key);
        assert!(self.run_until(10_000, |n| n.read_answer(req).is_some()), "the read of {key} was never answered");
        self.read_answer(req).cloned().unwrap()
    }

    /// A client GET that reached the coordinator (`None`) or zombie `i`,
    /// not yet run.
    pub fn start_read(&mut self, zombie: Option<usize>, key: &str) -> ClientRequestId {
        let req = self.next_req();
        self.input(C, zombie, Input::Read { req, key: Key::new(key).unwrap() });
        req
    }

    /// The answer read `req` got, if any.
    pub fn read_answer(&self, req: ClientRequestId) -> Option<&Read> {
        self.reads.iter().find(|(r, _)| *r == req).map(|(_, read)| read)
    }

    /// The replies `req` got.
    pub fn replies_to(&self, req: ClientRequestId) -> Vec<&WriteReply> {
        self.replies.iter().filter(|(r, _)| *r == req).map(|(_, w)| w).collect()
    }

    /// Injects a raw message (a ghost, a forgery) into the network.
    pub fn inject(&mut self, msg: Message) {
        let at = self.now.plus(1);
        self.seq += 1;
        self.in_flight.push((at, self.seq, msg));
    }

    fn host_mut(&mut self, r: ReplicaId, zombie: Option<usize>) -> Option<&mut Driver> {
        match zombie {
            None => self.current.get_mut(&r),
            Some(i) => self.zombies.get_mut(i),
        }
    }

    fn input(&mut self, r: ReplicaId, zombie: Option<usize>, input: Input) {
        let now = self.now;
        let Some(host) = self.host_mut(r, zombie) else { return };
        match host.handle(now, input) {
            Ok(out) => self.perform(out),
            Err(e) => self.errors.push((r, e)),
        }
    }

    /// Performs what a replica asked (its driver keeps the timers).
    fn perform(&mut self, out: Vec<Output>) {
        for o in out {
            match o {
                Output::Send(msg) => {
                    let bytes = msg.encode().map_or(0, |b| b.len() as u64);
                    let count = self.sent.entry(msg.body.kind()).or_default();
                    *count = (count.0 + 1, count.1 + bytes);
                    if self.chance(self.weather.drop_pct) {
                        continue;
                    }
                    let copies = if self.chance(self.weather.dup_pct) { 2 } else { 1 };
                    for _ in 0..copies {
                        let delay = 1 + self.rng.next_u64() % self.weather.max_delay_ms.max(1);
                        self.seq += 1;
                        self.in_flight.push((self.now.plus(delay), self.seq, msg.clone()));
                    }
                }
                Output::Reply { req, reply } => self.replies.push((req, reply)),
                Output::ReadReply { req, read } => self.reads.push((req, read)),
                Output::ListReply { req, list } => self.lists.push((req, list)),
                Output::SetTimer { .. } => unreachable!("the driver keeps the timers"),
            }
        }
    }

    /// Runs the earliest event (a delivery or a timer); false if none.
    pub fn step(&mut self) -> bool {
        let next_msg = self
            .in_flight
            .iter()
            .enumerate()
            .min_by_key(|(_, (at, seq, _))| (*at, *seq))
            .map(|(i, (at, _, _))| (i, *at));
        let next_timer = self.current.iter().filter_map(|(r, d)| Some((d.next_deadline()?, *r))).min();
        match (next_msg, next_timer) {
            (Some((i, at)), timer) if timer.is_none_or(|(t_at, _)| at <= t_at) => {
                let (at, _, msg) = self.in_flight.swap_remove(i);
                self.now = self.now.max(at);
                self.deliver(msg);
                true
            }
            (_, Some((at, r))) => {
                self.now = self.now.max(at);
                // One timer per event, so that `run_until` looks between steps.
                let out = self.current.get_mut(&r).and_then(|d| d.fire_next(self.now)).unwrap_or_default();
                self.perform(out);
                true
            }
            _ => false,
        }
    }

    /// Routes a reply to the instance that asked (current or zombie), and
    /// anything else to the current instance.
    fn deliver(&mut self, msg: Message) {
        let to = msg.to;
        let zombie = match msg.body.reply_to() {
            Some(instance) if self.current.get(&to).is_some_and(|h| h.replica().instance() == instance) => None,
            Some(instance) => {
                match self.zombies.iter().position(|z| z.replica().me() == to && z.replica().instance() == instance) {
                    Some(i) => Some(i),
                    None => return,
                }
            }
            None => None,
        };
        self.deliveries.push((self.now, to));
        self.input(to, zombie, Input::Message(msg));
    }

    /// Runs events until `until` holds or `deadline_ms` of virtual time
    /// passes; returns whether `until` held.
    pub fn run_until(&mut self, deadline_ms: u64, mut until: impl FnMut(&Net) -> bool) -> bool {
        let deadline = self.now.plus(deadline_ms);
        while !until(self) {
            if self.now > deadline || !self.step() {
                return until(self);
            }
        }
        true
    }

    /// Runs for `ms` of virtual time.
    pub fn run_for(&mut self, ms: u64) {
        let deadline = self.now.plus(ms);
        while self.now <= deadline && self.step() {}
    }
}
