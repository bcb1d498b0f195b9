//! Which wire version to write to each other replica, so that a rolling
//! deploy (one script at a time, `cargo xtask deploy`) never has a replica
//! send a peer a message that peer's build cannot read.
//!
//! A build reads [`MIN_PROTOCOL_VERSION`]..=[`PROTOCOL_VERSION`] and writes
//! either. The rule, per peer:
//! - until a message of version N arrived from the peer, it is believed to
//!   read only the oldest version (a build of the last release reads
//!   nothing newer), and messages to it are written in that version;
//! - a message of version N from it proves its build reads N: from then on
//!   it is written N (a peer of this build writes the old version to us
//!   until it heard N from us, so only a raise counts, never a lowering);
//! - heartbeats always go in [`PROTOCOL_VERSION`]: they are the
//!   advertisement that lets two replicas of this build find each other
//!   (an older build skips a message it cannot read, and a heartbeat has no
//!   effect anyway); and while a peer is not known to read it, every
//!   message to it is preceded by one in its queue, so that its replies to
//!   that very batch (say, the records of a recovery's collect) already
//!   come in the new version with nothing dropped;
//! - a delivery that fails (the peer's object went away: a restart, which
//!   is what a deploy or a rollback is) forgets what the peer read;
//! - a message the old version cannot carry (a record that expires) goes
//!   in [`PROTOCOL_VERSION`]: an older peer skips it, and the protocol
//!   retries it or carries on with the other peer, as after any lost
//!   message.
//!
//! Pure: the transport calls it.

use protocol::handoff::{Body, MIN_PROTOCOL_VERSION, Message, PROTOCOL_VERSION};

use crate::names::ReplicaName;

/// By replica index: the newest version that replica has shown it reads.
pub(super) struct Versions([u16; 3]);

impl Default for Versions {
    fn default() -> Self {
        Versions([MIN_PROTOCOL_VERSION; 3])
    }
}

impl Versions {
    /// A message of version `v` arrived from `from`.
    pub(super) fn heard(&mut self, from: ReplicaName, v: u16) {
        if let Some(reads) = self.0.get_mut(usize::from(from.index())) {
            *reads = (*reads).max(v.min(PROTOCOL_VERSION));
        }
    }

    /// A delivery to `to` failed: its object may have restarted on
    /// another build.
    pub(super) fn forget(&mut self, to: ReplicaName) {
        if let Some(reads) = self.0.get_mut(usize::from(to.index())) {
            *reads = MIN_PROTOCOL_VERSION;
        }
    }

    /// What `to` is believed to read.
    pub(super) fn reads(&self, to: ReplicaName) -> u16 {
        self.0.get(usize::from(to.index())).copied().unwrap_or(MIN_PROTOCOL_VERSION)
    }

    /// The heartbeat (wire form) to queue ahead of `msg` to `to`, while
    /// `to` is not known to read this build's version.
    pub(super) fn announcement(&self, to: ReplicaName, msg: &Message) -> Option<Vec<u8>> {
        if self.reads(to) >= PROTOCOL_VERSION || matches!(msg.body, Body::Heartbeat) {
            return None;
        }
        Message::new(msg.generation, msg.from, msg.to, Body::Heartbeat).encode_as(PROTOCOL_VERSION).ok()
    }

    /// The wire form of `msg` for `to`, by the rule above; `None` only if
    /// postcard fails.
    pub(super) fn encode(&self, to: ReplicaName, msg: &Message) -> Option<Vec<u8>> {
        let version = match msg.body {
            Body::Heartbeat => PROTOCOL_VERSION,
            _ => self.reads(to),
        };
        msg.encode_as(version).or_else(|_| msg.encode_as(PROTOCOL_VERSION)).ok()
    }
}

#[cfg(test)]
mod tests {
    use protocol::handoff::ids::{Instance, Key, Millis, ReplicaId, WriteId};
    use protocol::handoff::{Record, Stamp, Value};

    use super::*;

    fn push(expires_at: Option<u64>) -> Message {
        let record = Record {
            stamp: Stamp::default(),
            wid: WriteId(7),
            value: Value::Bytes(b"v".to_vec()),
            expires_at: expires_at.map(Millis),
            fp: None,
        };
        let Ok(key) = Key::new("k") else { unreachable!("a valid key") };
        let body = Body::Push { instance: Instance { born: 1, nonce: 2 }, key, record };
        Message::new(None, ReplicaId(0), ReplicaId(1), body)
    }

    fn version(bytes: &[u8]) -> u16 {
        Message::decode(bytes).map(|m| m.v).unwrap_or(0)
    }

    #[test]
    fn a_peer_not_yet_heard_from_is_written_the_oldest_version() {
        let versions = Versions::default();
        let bytes = versions.encode(ReplicaName::R1, &push(None)).unwrap_or_default();
        assert_eq!(version(&bytes), MIN_PROTOCOL_VERSION);
    }

    #[test]
    fn heartbeats_always_advertise_this_builds_version() {
        let versions = Versions::default();
        let beat = Message::new(None, ReplicaId(0), ReplicaId(1), Body::Heartbeat);
        let bytes = versions.encode(ReplicaName::R1, &beat).unwrap_or_default();
        assert_eq!(version(&bytes), PROTOCOL_VERSION);
    }

    #[test]
    fn hearing_the_new_version_raises_and_the_old_one_does_not_lower() {
        let mut versions = Versions::default();
        versions.heard(ReplicaName::R1, PROTOCOL_VERSION);
        versions.heard(ReplicaName::R1, MIN_PROTOCOL_VERSION);
        let bytes = versions.encode(ReplicaName::R1, &push(None)).unwrap_or_default();
        assert_eq!(version(&bytes), PROTOCOL_VERSION);
        assert_eq!(versions.reads(ReplicaName::R2), MIN_PROTOCOL_VERSION, "per peer");
    }

    #[test]
    fn messages_to_a_peer_not_known_to_read_the_new_version_are_announced() {
        let mut versions = Versions::default();
        let announced = versions.announcement(ReplicaName::R1, &push(None)).unwrap_or_default();
        let heartbeat = Message::decode(&announced).map(|m| (m.v, m.body));
        assert_eq!(heartbeat.ok(), Some((PROTOCOL_VERSION, Body::Heartbeat)));
        let beat = Message::new(None, ReplicaId(0), ReplicaId(1), Body::Heartbeat);
        assert_eq!(versions.announcement(ReplicaName::R1, &beat), None, "a heartbeat announces itself");
        versions.heard(ReplicaName::R1, PROTOCOL_VERSION);
        assert_eq!(versions.announcement(ReplicaName::R1, &push(None)), None, "known to read it");
    }

    #[test]
    fn a_failed_delivery_forgets_what_the_peer_read() {
        let mut versions = Versions::default();
        versions.heard(ReplicaName::R2, PROTOCOL_VERSION);
        versions.forget(ReplicaName::R2);
        assert_eq!(versions.reads(ReplicaName::R2), MIN_PROTOCOL_VERSION);
    }

    #[test]
    fn a_record_that_expires_goes_in_the_new_version_even_to_an_old_peer() {
        let versions = Versions::default();
        let bytes = versions.encode(ReplicaName::R1, &push(Some(5))).unwrap_or_default();
        assert_eq!(version(&bytes), PROTOCOL_VERSION);
    }

    #[test]
    fn a_version_from_the_future_is_capped_at_this_builds() {
        let mut versions = Versions::default();
        versions.heard(ReplicaName::R1, PROTOCOL_VERSION + 1);
        assert_eq!(versions.reads(ReplicaName::R1), PROTOCOL_VERSION);
    }
}
