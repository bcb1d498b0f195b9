//! The implementation model's state: three running `protocol` replicas,
//! the zombie coordinator instances, the network, armed timers, and the
//! ghost variables the map to the spec needs (history the replicas do not
//! keep: the acked writes, the write counter, eviction counts).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Display};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use protocol::handoff::{Body, Instance, Key, Memory, Message, Record, Replica, ReplicaId, Timer, WriteId};

use crate::mirror::handoff::{AckedW, Msgs, WriteSet};
use crate::mirror::handoff_cond::{CondW, ExpIssued, Issued};
use crate::mirror::handoff_reads::Read;
use crate::mirror::handoff_roll::RollState;
use crate::spec::{TlaState, fmt_variables};

/// One state of the implementation model. Equality and hashing leave out
/// `mapped`, a function of the rest.
#[derive(Clone)]
pub struct ImplState {
    /// The current instance of each replica, by `ReplicaId` index. Shared
    /// between states (copied on write, `Arc::make_mut`): a step changes one
    /// replica and leaves the others to its successor as they are, and two
    /// states sharing a replica compare it by address.
    pub replicas: Vec<Arc<Replica>>,
    /// Boots of each replica (0 = the instance from first boot).
    pub incarnation: Vec<u8>,
    /// Superseded coordinator instances still finishing their requests.
    pub zombies: Vec<Arc<Replica>>,
    /// Every message sent and not pruned, by a stable hash: an unordered,
    /// duplicating network (delivery leaves the message; a lost message
    /// is one never delivered). Shared: states are cloned by the million
    /// and a message, once sent, never changes.
    pub net: BTreeMap<u64, Arc<Message>>,
    /// Ghost: per current replica, the tombstones its floor collected (the
    /// spec keeps them in `mem`: they are what the floor stands for).
    pub collected: Vec<BTreeMap<Key, Record>>,
    /// Ghost: the same for each zombie that had collected any, by instance
    /// (kept from when it was superseded: a zombie's memory is HandoffReads'
    /// `zmem`, which keeps them too).
    pub zombie_collected: BTreeMap<Instance, BTreeMap<Key, Record>>,
    /// Ghost: the memory each digest in the network summarises (the code
    /// sends only its hashes), by the digest's network key.
    pub digests: BTreeMap<u64, Arc<Memory>>,
    /// Ghost: for a ready peer recovered in this run, the replicas it
    /// reseeded from (the spec's `seeded[p]`, which the code forgets).
    pub seeded_when_ready: Vec<Option<BTreeSet<ReplicaId>>>,
    /// Ghost: the writes acknowledged to clients (the spec's `acked`).
    pub acked: WriteSet<AckedW>,
    /// Ghost: the next write id (the spec's `widCtr`).
    pub wid_ctr: u8,
    /// Ghost: evictions so far (the spec's `evictCount`).
    pub evict_count: u8,
    /// Ghost: supersessions so far (the spec's `supersedes`).
    pub supersedes: u8,
    /// Ghost: client reads started so far (HandoffReads' `readCtr`).
    pub read_ctr: u8,
    /// Client listings started so far (each is a read of every key).
    pub list_ctr: u8,
    /// Ghost: the reads in progress (HandoffReads' `reads`), by client
    /// request id, with the coordinator instance that has them.
    pub reads: BTreeMap<u64, (Instance, Read)>,
    /// HandoffCond's variables and the ghosts they need ([`Cond`]).
    pub cond: Cond,
    /// The spec state this state maps to (a function of the rest, cached;
    /// shared, as a successor computes its own).
    pub mapped: Arc<RollState>,
    /// The first property the step into this state violated, if any.
    pub violation: Option<&'static str>,
    /// `Reduction::KeepOne` only: a step has kept what it would drop (its
    /// one kept step; what the state holds that the reductions drop is
    /// that step's and what followed from it).
    pub kept: bool,
}

/// HandoffCond's side of the model: its clock (in ms: what the replicas are
/// told), and ghost history of the conditional writes and expiries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cond {
    /// `now`
    pub now: u8,
    /// `expAt`, by spec write id (`exp_at[w - 1]`).
    pub exp_at: Vec<u8>,
    /// `conds`: the conditional writes waiting, by client request id, with
    /// the coordinator instance that has them.
    pub conds: BTreeMap<u64, (Instance, CondW)>,
    /// `condCtr`
    pub cond_ctr: u8,
    /// `condIssued`
    pub cond_issued: Msgs<Issued>,
    /// `expIssued`
    pub exp_issued: Msgs<ExpIssued>,
    /// The spec write id of each expiry delete, by the write id the
    /// coordinator derived for it.
    pub expiries: BTreeMap<WriteId, u8>,
}

impl ImplState {
    /// Everything but `mapped`, the fields a step most often changes and
    /// that compare fastest first: a comparison stops at the first
    /// difference, and the replicas, compared last, are mostly shared.
    #[allow(clippy::type_complexity)]
    fn key(
        &self,
    ) -> (
        [u8; 5],
        (Option<&'static str>, bool),
        &[u8],
        &WriteSet<AckedW>,
        &BTreeMap<u64, Arc<Message>>,
        (
            &[BTreeMap<Key, Record>],
            &BTreeMap<Instance, BTreeMap<Key, Record>>,
            &BTreeMap<u64, Arc<Memory>>,
            &BTreeMap<u64, (Instance, Read)>,
        ),
        &Cond,
        &[Option<BTreeSet<ReplicaId>>],
        &[Arc<Replica>],
        &[Arc<Replica>],
    ) {
        (
            [self.wid_ctr, self.evict_count, self.supersedes, self.read_ctr, self.list_ctr],
            (self.violation, self.kept),
            &self.incarnation,
            &self.acked,
            &self.net,
            (&self.collected, &self.zombie_collected, &self.digests, &self.reads),
            &self.cond,
            &self.seeded_when_ready,
            &self.zombies,
            &self.replicas,
        )
    }
}

impl PartialEq for ImplState {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for ImplState {}
impl Hash for ImplState {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.key().hash(h);
    }
}

/// The network key of a message: a stable 64-bit hash (the checker's
/// states are fingerprinted with 64 bits anyway).
pub fn msg_key(m: &Message) -> u64 {
    let mut h = DefaultHasher::new();
    m.hash(&mut h);
    h.finish()
}

/// One step of the environment or of a replica.
#[derive(Clone, Debug, PartialEq)]
pub enum ImplAction {
    /// A client PUT of key number `key` reaches the current coordinator,
    /// with time to live `ttl` (0: none).
    Put { key: usize, ttl: u8 },
    /// A client PUT that was in flight reaches zombie number `zombie`.
    ZombiePut { zombie: usize, key: usize, ttl: u8 },
    /// The network delivers a copy of a message.
    Deliver(Arc<Message>),
    /// A timer of a current instance fires.
    Timer(ReplicaId, Timer),
    /// The platform evicts a replica: a new, empty instance boots.
    Evict(ReplicaId),
    /// The platform starts a new coordinator instance; the old one lives
    /// on as a zombie.
    Supersede,
    /// A client GET of key number `key` reaches the current coordinator.
    Read { key: usize },
    /// A client GET that was in flight reaches zombie number `zombie`.
    ZombieRead { zombie: usize, key: usize },
    /// A conditional client PUT (a DELETE if its write id is a delete's)
    /// reaches the current coordinator: `cond` 0 is IfAbsent, else IfMatch
    /// the tag of the acknowledged write with that spec write id.
    CondPut { key: usize, cond: u8, ttl: u8 },
    /// A conditional client write that was in flight reaches zombie number
    /// `zombie`.
    ZombieCondPut { zombie: usize, key: usize, cond: u8, ttl: u8 },
    /// A client listing of every key reaches the current coordinator.
    List,
    /// A client listing that was in flight reaches zombie number `zombie`.
    ZombieList { zombie: usize },
    /// Time passes (HandoffCond's `Tick`): a millisecond.
    Tick,
    /// `Reduction::KeepOne`: the step, keeping what it would drop (and
    /// from then on what follows from that).
    Keep(Box<ImplAction>),
}

impl ImplAction {
    /// The kinds of step, for the coverage counts: the environment's, one
    /// per timer.
    pub const NAMES: [&'static str; 16] = [
        "Put",
        "ZombiePut",
        "Deliver",
        "Timer(Retry)",
        "Timer(Heartbeat)",
        "Timer(Gossip)",
        "Evict",
        "Supersede",
        "Read",
        "ZombieRead",
        "Timer(Expire)",
        "CondPut",
        "ZombieCondPut",
        "List",
        "ZombieList",
        "Tick",
    ];

    /// The position of this step's kind in [`ImplAction::NAMES`].
    pub fn kind(&self) -> usize {
        match self {
            ImplAction::Put { .. } => 0,
            ImplAction::ZombiePut { .. } => 1,
            ImplAction::Deliver(_) => 2,
            ImplAction::Timer(_, Timer::Retry) => 3,
            ImplAction::Timer(_, Timer::Heartbeat) => 4,
            ImplAction::Timer(_, Timer::Gossip) => 5,
            ImplAction::Evict(_) => 6,
            ImplAction::Supersede => 7,
            ImplAction::Read { .. } => 8,
            ImplAction::ZombieRead { .. } => 9,
            ImplAction::Timer(_, Timer::Expire) => 10,
            ImplAction::CondPut { .. } => 11,
            ImplAction::ZombieCondPut { .. } => 12,
            ImplAction::List => 13,
            ImplAction::ZombieList { .. } => 14,
            ImplAction::Tick => 15,
            ImplAction::Keep(a) => a.kind(),
        }
    }
}

impl Display for ImplAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImplAction::Put { key, ttl } => write!(f, "Put(key {key}, ttl {ttl})"),
            ImplAction::ZombiePut { zombie, key, ttl } => {
                write!(f, "ZombiePut(zombie {zombie}, key {key}, ttl {ttl})")
            }
            ImplAction::Deliver(m) => {
                write!(f, "Deliver({} {} -> {}: {})", m.body.kind(), m.from, m.to, brief(&m.body))
            }
            ImplAction::Timer(r, t) => write!(f, "Timer({r}, {t:?})"),
            ImplAction::Evict(r) => write!(f, "Evict({r})"),
            ImplAction::Supersede => f.write_str("Supersede"),
            ImplAction::Read { key } => write!(f, "Read(key {key})"),
            ImplAction::ZombieRead { zombie, key } => write!(f, "ZombieRead(zombie {zombie}, key {key})"),
            ImplAction::CondPut { key, cond, ttl } => write!(f, "CondPut(key {key}, cond {cond}, ttl {ttl})"),
            ImplAction::ZombieCondPut { zombie, key, cond, ttl } => {
                write!(f, "ZombieCondPut(zombie {zombie}, key {key}, cond {cond}, ttl {ttl})")
            }
            ImplAction::List => f.write_str("List"),
            ImplAction::ZombieList { zombie } => write!(f, "ZombieList(zombie {zombie})"),
            ImplAction::Tick => f.write_str("Tick"),
            ImplAction::Keep(a) => write!(f, "{a}, keeping what it drops"),
        }
    }
}

/// The fields of a message body that matter in a trace.
fn brief(body: &Body) -> String {
    let recs = |m: &protocol::handoff::Records| {
        m.0.iter()
            .map(|(k, r)| format!("{k}@{}.{}#{}", r.stamp.ep.0, r.stamp.ver.0, r.wid.0))
            .collect::<Vec<_>>()
            .join(",")
    };
    match body {
        Body::Push { key, record, .. } => {
            format!("{key}@{}.{}#{}", record.stamp.ep.0, record.stamp.ver.0, record.wid.0)
        }
        Body::PushAck { key, stamp, wid, .. } => format!("{key}@{}.{}#{}", stamp.ep.0, stamp.ver.0, wid.0),
        Body::PushAckBy { key, stamp, wid, peer, .. } => {
            format!("{key}@{}.{}#{} by {}.{}", stamp.ep.0, stamp.ver.0, wid.0, peer.born, peer.nonce % 1000)
        }
        Body::PushRefused { key, stamp, known, .. } => {
            format!("{key}@{}.{} known {}", stamp.ep.0, stamp.ver.0, known.0)
        }
        Body::CollectReply { known, floor, chunk, .. } | Body::ReseedReply { known, floor, chunk, .. } => {
            let after = chunk.after.as_ref().map_or("-".to_string(), ToString::to_string);
            let last = if chunk.last { " last" } else { "" };
            format!(
                "known {} floor {}.{} after {after} [{}]{last}",
                known.0,
                floor.ep.0,
                floor.ver.0,
                recs(&chunk.records)
            )
        }
        Body::Announce { epoch, .. } | Body::AnnounceAck { epoch, .. } => format!("epoch {}", epoch.0),
        Body::AnnounceRefused { epoch, known, .. } => format!("epoch {} known {}", epoch.0, known.0),
        Body::Digest { known, floor, digest, .. } => {
            format!("known {} floor {}.{} {digest:?}", known.0, floor.ep.0, floor.ver.0)
        }
        Body::Records { floor, records } => format!("floor {}.{} [{}]", floor.ep.0, floor.ver.0, recs(records)),
        Body::Collect { round, after, .. } => {
            format!("round {round} after {}", after.as_ref().map_or("-".to_string(), ToString::to_string))
        }
        Body::Reseed { after, .. } => format!("after {}", after.as_ref().map_or("-".to_string(), ToString::to_string)),
        Body::CollectDecline { round, .. } => format!("round {round}"),
        Body::Confirm { epoch, round, .. } | Body::Confirmed { epoch, round, .. } => {
            format!("epoch {} round {round}", epoch.0)
        }
        Body::ConfirmRefused { known, .. } => format!("known {}", known.0),
        Body::ReseedDecline { .. } | Body::Heartbeat => String::new(),
    }
}

/// A state prints as the spec state it maps to, then the implementation.
impl TlaState for ImplState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = self.mapped.variables();
        for r in &self.replicas {
            let s = r.status();
            vars.push((
                match r.me().0 {
                    0 => "impl_r0",
                    1 => "impl_r1",
                    _ => "impl_r2",
                },
                format!(
                    "{} instance {}.{} {} epoch {} known {} floor {}.{} pending {} mem [{}]",
                    s.role,
                    r.instance().born,
                    r.instance().nonce % 1000,
                    s.status,
                    s.epoch.0,
                    s.known.0,
                    s.floor.ep.0,
                    s.floor.ver.0,
                    s.pending,
                    r.memory()
                        .iter()
                        .map(|(k, rec)| format!("{k}@{}.{}#{}", rec.stamp.ep.0, rec.stamp.ver.0, rec.wid.0))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            ));
        }
        vars.push((
            "impl_zombies",
            self.zombies.iter().map(|z| format!("{}", z.status().status)).collect::<Vec<_>>().join(","),
        ));
        vars.push((
            "impl_net",
            self.net
                .values()
                .map(|m| format!("{} {}->{} {}", m.body.kind(), m.from, m.to, brief(&m.body)))
                .collect::<Vec<_>>()
                .join("; "),
        ));
        vars
    }
}

impl fmt::Debug for ImplState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
