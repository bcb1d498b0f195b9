//! The wire version a replica writes, so that a rolling deploy (one script
//! at a time, `cargo xtask deploy`) never has a replica send a peer a
//! message that peer's build cannot read.
//!
//! A build reads [`MIN_PROTOCOL_VERSION`]..=[`PROTOCOL_VERSION`] and writes
//! either. Which one is the deployment's choice, not guessed from traffic
//! (a guess would need messages no protocol step sent, and a replica that
//! restarted on the old build would be written the new version until a
//! delivery failed): `HANDOFF_WIRE_VERSION` (default [`PROTOCOL_VERSION`]).
//! A deploy that raises the protocol version rolls twice: first every
//! script onto the new build still writing the old version (old and new
//! replicas read it), then every script again writing the new one (every
//! replica reads it by then). Never a roll that changes both what is read
//! and what is written.
//!
//! A message the configured version cannot carry (a record that expires,
//! in version 3) goes in [`PROTOCOL_VERSION`]: an older peer skips it, and
//! the protocol retries it or carries on with the other peer, as after any
//! lost message.
//!
//! A push ack written in version 4 or 3 does not name the acking instance
//! (`PushAck`, not version 5's `PushAckBy`), and a coordinator counts it as
//! before version 5: also when it has heard from a newer instance of that
//! peer. So HandoffRoll's rule (an ack of a replaced instance commits
//! nothing) holds once every replica writes version 5, i.e. after the
//! second roll of a deploy to it; in the first, a rolling restart can lose
//! an acknowledged write as before.
//!
//! Pure: the transport calls it.

use protocol::handoff::{MIN_PROTOCOL_VERSION, Message, PROTOCOL_VERSION};

/// The version this replica writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireVersion(u16);

impl Default for WireVersion {
    fn default() -> Self {
        WireVersion(PROTOCOL_VERSION)
    }
}

impl WireVersion {
    /// The configured version, if this build can write it.
    pub fn parse(var: &str) -> Option<Self> {
        let v: u16 = var.trim().parse().ok()?;
        (MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&v).then_some(WireVersion(v))
    }

    pub fn get(self) -> u16 {
        self.0
    }

    /// The wire form of `msg`; `None` only if postcard fails.
    pub(super) fn encode(self, msg: &Message) -> Option<Vec<u8>> {
        msg.encode_as(self.0).or_else(|_| msg.encode_as(PROTOCOL_VERSION)).ok()
    }
}

#[cfg(test)]
mod tests {
    use protocol::handoff::ids::{Instance, Key, Millis, ReplicaId, WriteId};
    use protocol::handoff::{Body, Record, Stamp, Value};

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
    fn by_default_this_builds_version_is_written() {
        let bytes = WireVersion::default().encode(&push(None)).unwrap_or_default();
        assert_eq!(version(&bytes), PROTOCOL_VERSION);
    }

    #[test]
    fn the_configured_older_version_is_written_and_read_back() {
        let old = WireVersion::parse(&MIN_PROTOCOL_VERSION.to_string());
        let bytes = old.unwrap_or_default().encode(&push(None)).unwrap_or_default();
        assert_eq!(version(&bytes), MIN_PROTOCOL_VERSION);
        let body = Message::decode(&bytes).map(|m| m.body).ok();
        assert!(matches!(body, Some(Body::Push { .. })), "a replica of this build reads it");
    }

    #[test]
    fn only_versions_this_build_writes_are_accepted() {
        assert_eq!(WireVersion::parse(&(MIN_PROTOCOL_VERSION - 1).to_string()), None);
        assert_eq!(WireVersion::parse(&(PROTOCOL_VERSION + 1).to_string()), None);
        assert_eq!(WireVersion::parse("four"), None);
        assert_eq!(WireVersion::parse(" 4 ").map(WireVersion::get), Some(4));
    }

    /// An ack goes in the configured older version, as the ack that version
    /// knows (without the acking instance), not in the new version.
    #[test]
    fn an_ack_goes_without_its_instance_in_an_older_version() {
        let Ok(key) = Key::new("k") else { unreachable!("a valid key") };
        let i = Instance { born: 1, nonce: 2 };
        let ack = Body::PushAckBy { instance: i, peer: i, key, stamp: Stamp::default(), wid: WriteId(7) };
        let msg = Message::new(None, ReplicaId(1), ReplicaId(0), ack);
        for v in MIN_PROTOCOL_VERSION..PROTOCOL_VERSION {
            let bytes = WireVersion::parse(&v.to_string()).unwrap_or_default().encode(&msg).unwrap_or_default();
            let read = Message::decode(&bytes).ok();
            assert_eq!(read.as_ref().map(|m| m.v), Some(v));
            assert!(matches!(read.map(|m| m.body), Some(Body::PushAck { .. })), "version {v}");
        }
    }

    #[test]
    fn a_record_that_expires_goes_in_the_new_version_even_when_the_old_is_configured() {
        let old = WireVersion::parse(&MIN_PROTOCOL_VERSION.to_string()).unwrap_or_default();
        let bytes = old.encode(&push(Some(5))).unwrap_or_default();
        assert_eq!(version(&bytes), PROTOCOL_VERSION);
    }
}
