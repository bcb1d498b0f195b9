//! The namespace's topology and the replica timings.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use super::ids::ReplicaId;
use super::memory::MAX_CHUNK_BYTES;
use super::record::MAX_VALUE_BYTES;

/// The default memory budget per namespace: 16 MiB of keys, values and
/// tombstones (with [`RECORD_OVERHEAD`](super::memory::RECORD_OVERHEAD) per
/// record). Three replicas of a namespace at its budget are 48 MiB; with
/// the coordinator's pending window, the transport's bounded queues and a
/// recovery's chunks in flight that stays under 100 MiB, inside the 128 MB
/// a Durable Object isolate has (docs/handoff.md section 5.16).
pub const DEFAULT_BUDGET_BYTES: usize = 16 * 1024 * 1024;

/// Who is who, and how often things happen. The same for all three
/// replicas of a namespace. Serialized in a trace's boot step, which the
/// validator replays.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Config {
    coordinator: ReplicaId,
    peers: [ReplicaId; 2],
    /// Retry interval for unanswered requests (pushes, collect, announce,
    /// reseed) and the delay of internal steps (0 would spin).
    pub retry_ms: u64,
    /// Keep-alive interval. A Durable Object that gets no request for about
    /// 10 s hibernates and its memory is gone; 2 s leaves room for four
    /// lost heartbeats in a row.
    pub heartbeat_ms: u64,
    /// Anti-entropy interval: digests from the coordinator to both peers
    /// and from each peer to the coordinator.
    pub gossip_ms: u64,
    /// Longest wait between two pushes of an unacknowledged write (the
    /// wait doubles from `retry_ms` up to this). One second: a peer back
    /// from a pause gets the write within a second, well inside the 10 s a
    /// client waits for its commit, and a paused peer costs at most one
    /// push per pending write per second (the window bounds them).
    pub retry_max_ms: u64,
    /// `Retry-After` suggested to clients while the coordinator recovers.
    pub retry_after_ms: u64,
    /// Uncommitted writes the coordinator buffers before it sheds load.
    pub max_pending: usize,
    /// Bytes of uncommitted writes the coordinator buffers before it sheds
    /// load.
    pub max_pending_bytes: usize,
    /// Client reads and listings waiting for a confirmation round before
    /// the coordinator sheds load.
    pub max_reads: usize,
    /// Conditional writes waiting (for a write to their key to commit, or
    /// for a confirmation) before the coordinator sheds load.
    pub max_conds: usize,
    /// Largest value accepted, in bytes (at most [`MAX_VALUE_BYTES`]).
    pub max_value_bytes: usize,
    /// The namespace's memory budget: bytes of keys, values and tombstones
    /// the coordinator stores plus those its pending writes would add. A
    /// write beyond it is refused ([`WriteReply::Full`](super::interface::WriteReply::Full)).
    pub budget_bytes: usize,
    /// Bytes of records in one snapshot chunk or gossip answer (at most
    /// [`MAX_CHUNK_BYTES`]; one record always fits).
    pub chunk_bytes: usize,
    /// A deliberate bug, for the model checker to catch (feature
    /// `mutations`; never compiled into the Worker).
    #[cfg(feature = "mutations")]
    #[serde(skip)]
    pub mutation: Option<Mutation>,
}

/// Deliberately broken handlers. The implementation model runs the real
/// code with one of these switched on and must find a violation; that is
/// what shows the model can see these bugs at all.
#[cfg(feature = "mutations")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mutation {
    /// The coordinator commits a write as soon as it pushes it, before
    /// any peer acked.
    CommitBeforeAck,
    /// A peer merges and acks a push from an epoch older than it knows.
    AcceptStalePush,
    /// The coordinator serves as soon as it chose its epoch, before the
    /// announce completed.
    ServeBeforeAnnounce,
    /// A replica collects every tombstone it holds, not only those at or
    /// below its floor.
    CollectAboveFloor,
    /// A recovering replica (coordinator collecting, peer reseeding) counts a
    /// source done after its first chunk.
    FinishOnPartialSnapshot,
    /// The coordinator answers a read at once, without a peer's
    /// confirmation (HandoffReads' `serve-reads-unconfirmed`).
    ServeReadsUnconfirmed,
    /// A peer never fences itself when it answers a collect or is declined
    /// by a collecting coordinator (HandoffReads' `no-collect-fence`).
    NoCollectFence,
    /// A ready peer fences itself again for the coordinator instance whose
    /// digest it takes, though that instance has announced to it and never
    /// will again: a fence lifted once is raised for good
    /// (HandoffReadsLiveness' `FencesLift`, broken after it held).
    RefenceOnDigest,
    /// The coordinator answers a failed condition at once, without a
    /// peer's confirmation (HandoffCond's `cond-unconfirmed`).
    CondUnconfirmed,
    /// The coordinator evaluates a condition while a write to its key is
    /// pending (HandoffCond's `cond-ignores-pending`).
    CondIgnoresPending,
    /// A read returns a record whose expiry has passed (HandoffCond's
    /// `serve-expired`).
    ServeExpired,
    /// The coordinator commits on a peer's ack though it heard from a newer
    /// instance of that peer, which has not got the write (HandoffRoll's
    /// `AckedByLive` dropped: a rolling restart loses an acknowledged write).
    CountStaleAck,
    /// A collecting coordinator never asks a collected peer again, nor
    /// counts a decline of its successor, so it waits for good for the other
    /// peer's snapshot once both died (docs/handoff.md 5.8: the code before
    /// that rule). Outside the spec's regime, so the implementation model
    /// cannot see it; the harness and HandoffGenerations' step test do.
    WaitForDeadSnapshot,
    /// A collecting coordinator that holds a generation goes on as soon as
    /// every peer it has not collected declined once, though the collected
    /// one may still be ready (HandoffGenerations'
    /// `PartialCollectOnlyAfterTotalDeath`).
    GoOnWhenUncollectedDeclined,
    /// A collecting coordinator takes a decline of this round from any
    /// instance of a peer, a dead one's late copy after its successor's
    /// too (`Phase::takes_decline` without its newest-instance rule): the
    /// two in turn keep a round from being declined twice by the same
    /// instances (HandoffGenerations' `ServesAgain`).
    TakeStaleDecline,
}

impl Config {
    /// A namespace of `coordinator` and two `peers`, with default timings.
    pub fn new(coordinator: ReplicaId, peers: [ReplicaId; 2]) -> Result<Config, ConfigError> {
        let [p, q] = peers;
        if coordinator == p || coordinator == q || p == q {
            return Err(ConfigError::DuplicateReplica([coordinator, p, q]));
        }
        Ok(Config {
            coordinator,
            peers,
            retry_ms: 250,
            heartbeat_ms: 2_000,
            gossip_ms: 5_000,
            retry_max_ms: 1_000,
            retry_after_ms: 1_000,
            max_pending: 256,
            max_pending_bytes: 4 * 1024 * 1024,
            max_reads: 1024,
            max_conds: 1024,
            max_value_bytes: MAX_VALUE_BYTES,
            budget_bytes: DEFAULT_BUDGET_BYTES,
            chunk_bytes: MAX_CHUNK_BYTES,
            #[cfg(feature = "mutations")]
            mutation: None,
        })
    }

    /// Fails on timings and sizes that cannot work.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        for (name, ms) in
            [("retry_ms", self.retry_ms), ("heartbeat_ms", self.heartbeat_ms), ("gossip_ms", self.gossip_ms)]
        {
            if ms == 0 {
                return Err(ConfigError::ZeroInterval { name });
            }
        }
        for (name, value, max) in [
            ("max_value_bytes", self.max_value_bytes, MAX_VALUE_BYTES),
            ("chunk_bytes", self.chunk_bytes, MAX_CHUNK_BYTES),
        ] {
            if value > max {
                return Err(ConfigError::TooLarge { name, value, max });
            }
        }
        Ok(())
    }

    /// The fixed write coordinator (the spec's `Coordinator`).
    pub fn coordinator(&self) -> ReplicaId {
        self.coordinator
    }

    /// `Peers == Replicas \ {Coordinator}`.
    pub fn peers(&self) -> [ReplicaId; 2] {
        self.peers
    }

    /// `Replicas`, coordinator first.
    pub fn replicas(&self) -> [ReplicaId; 3] {
        let [p, q] = self.peers;
        [self.coordinator, p, q]
    }

    /// The two replicas other than `me`.
    pub fn others(&self, me: ReplicaId) -> impl Iterator<Item = ReplicaId> + use<> {
        self.replicas().into_iter().filter(move |&r| r != me)
    }

    pub(crate) fn contains(&self, r: ReplicaId) -> bool {
        self.replicas().contains(&r)
    }

    /// Whether the deliberate bug `m` is switched on (never, without the
    /// `mutations` feature).
    #[cfg(feature = "mutations")]
    pub(crate) fn mutated(&self, m: Mutation) -> bool {
        self.mutation == Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_must_be_distinct() {
        let r = ReplicaId;
        assert!(Config::new(r(0), [r(1), r(2)]).is_ok());
        assert_eq!(Config::new(r(0), [r(0), r(2)]), Err(ConfigError::DuplicateReplica([r(0), r(0), r(2)])));
        assert!(Config::new(r(0), [r(1), r(1)]).is_err());
        let c = Config::new(r(5), [r(1), r(2)]).unwrap();
        assert_eq!(c.others(r(1)).collect::<Vec<_>>(), [r(5), r(2)]);
        assert_eq!(c.replicas(), [r(5), r(1), r(2)]);
    }

    #[test]
    fn zero_intervals_are_refused() {
        let mut c = Config::new(ReplicaId(0), [ReplicaId(1), ReplicaId(2)]).unwrap();
        assert!(c.validate().is_ok());
        c.retry_ms = 0;
        assert_eq!(c.validate(), Err(ConfigError::ZeroInterval { name: "retry_ms" }));
        c.retry_ms = 1;
        c.chunk_bytes = MAX_CHUNK_BYTES + 1;
        assert_eq!(
            c.validate(),
            Err(ConfigError::TooLarge { name: "chunk_bytes", value: MAX_CHUNK_BYTES + 1, max: MAX_CHUNK_BYTES })
        );
    }
}
