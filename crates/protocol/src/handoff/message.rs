//! Replica-to-replica messages: JSON with a protocol version, a namespace
//! generation, sender and addressee, and one body.
//!
//! Requests carry the sender's [`Instance`]; replies echo the requester's,
//! so a reply that outlived the instance that asked is recognised as stale
//! (the request id of the issue: an instance plus what is asked, e.g. the
//! write's stamp). Every message may be lost, duplicated or reordered: the
//! requester retries on its retry timer, and every handler is idempotent.

use serde::{Deserialize, Serialize};

use super::error::DecodeError;
use super::ids::{Epoch, Generation, Instance, Key, ReplicaId, WriteId};
use super::memory::Memory;
use super::record::{Record, Stamp};

/// The wire protocol version. A replica refuses other versions with a typed
/// error rather than guessing (the three replicas of a namespace are
/// deployed together, so a mismatch is a deployment in progress).
pub const PROTOCOL_VERSION: u16 = 1;

/// Largest encoded message accepted (snapshots carry whole memories; the
/// Durable Objects platform caps a request body at 100 MB, a replica's
/// memory at far less).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// One message between replicas.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub v: u16,
    /// The sender's namespace generation; `None` while the sender is a
    /// freshly booted replica that has not yet joined one.
    pub generation: Option<Generation>,
    pub from: ReplicaId,
    pub to: ReplicaId,
    pub body: Body,
}

/// What a message says.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Body {
    /// Coordinator → peer: store this write (the spec's push in `net`).
    Push { instance: Instance, key: Key, record: Record },
    /// Peer → coordinator: the write is held (the ack the spec abstracts).
    PushAck { instance: Instance, key: Key, stamp: Stamp, wid: WriteId },
    /// Peer → coordinator: the push's epoch is older than the peer knows;
    /// the sender is superseded (zombie fencing).
    PushRefused { instance: Instance, key: Key, stamp: Stamp, known: Epoch },
    /// Recovering coordinator → peer: send me your snapshot and epoch.
    /// `round` counts collect rounds that every peer declined (first boot).
    Collect { instance: Instance, round: u64 },
    /// Ready peer → coordinator: the peer's memory and the epoch it knows
    /// of. Only a ready peer answers (HandoffV2's `CanSeed`): a recovering
    /// one may have forgotten the epoch.
    CollectReply { instance: Instance, known: Epoch, memory: Memory },
    /// Recovering peer → coordinator: I cannot seed you now. Names the
    /// peer's own instance, so that two rounds declined by the same two
    /// instances prove that no replica was ready at some instant.
    CollectDecline { instance: Instance, round: u64, peer: Instance },
    /// Coordinator → peer: my new epoch (and, in the envelope, my
    /// generation, which a booting peer adopts), in announce round `round`.
    Announce { instance: Instance, epoch: Epoch, round: u64 },
    /// Peer → coordinator: the epoch is installed, by instance `peer`.
    AnnounceAck { instance: Instance, epoch: Epoch, round: u64, peer: Instance },
    /// Peer → coordinator: the peer knows a newer epoch (zombie fencing).
    AnnounceRefused { instance: Instance, epoch: Epoch, known: Epoch },
    /// Recovering replica → any replica: send me your snapshot.
    Reseed { instance: Instance },
    /// Replica that `CanSeed` (a ready one, or the coordinator announcing
    /// its epoch) → recovering peer: my memory and epoch knowledge (the
    /// spec's `SrcKnow`).
    ReseedReply { instance: Instance, known: Epoch, memory: Memory },
    /// Replica that cannot seed now → recovering peer: do not wait for me.
    ReseedDecline { instance: Instance },
    /// Ready replica → ready replica: anti-entropy, one-way max-merge.
    Gossip { memory: Memory },
    /// Keep-alive: a Durable Object that receives nothing for ~10 s
    /// hibernates and loses its memory. Changes no state.
    Heartbeat,
}

impl Body {
    /// The message kind, for errors and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Body::Push { .. } => "push",
            Body::PushAck { .. } => "push_ack",
            Body::PushRefused { .. } => "push_refused",
            Body::Collect { .. } => "collect",
            Body::CollectReply { .. } => "collect_reply",
            Body::CollectDecline { .. } => "collect_decline",
            Body::Announce { .. } => "announce",
            Body::AnnounceAck { .. } => "announce_ack",
            Body::AnnounceRefused { .. } => "announce_refused",
            Body::Reseed { .. } => "reseed",
            Body::ReseedReply { .. } => "reseed_reply",
            Body::ReseedDecline { .. } => "reseed_decline",
            Body::Gossip { .. } => "gossip",
            Body::Heartbeat => "heartbeat",
        }
    }

    /// For a reply, the instance of the requester it answers. A host routes
    /// replies to that instance; one that no longer exists drops them.
    pub fn reply_to(&self) -> Option<Instance> {
        match self {
            Body::PushAck { instance, .. }
            | Body::PushRefused { instance, .. }
            | Body::CollectReply { instance, .. }
            | Body::CollectDecline { instance, .. }
            | Body::AnnounceAck { instance, .. }
            | Body::AnnounceRefused { instance, .. }
            | Body::ReseedReply { instance, .. }
            | Body::ReseedDecline { instance } => Some(*instance),
            Body::Push { .. }
            | Body::Collect { .. }
            | Body::Announce { .. }
            | Body::Reseed { .. }
            | Body::Gossip { .. }
            | Body::Heartbeat => None,
        }
    }
}

/// Only the version, read first so that a message from another protocol
/// version is reported as such rather than as malformed.
#[derive(Deserialize)]
struct Header {
    v: u16,
}

impl Message {
    /// A message of this protocol version.
    pub fn new(generation: Option<Generation>, from: ReplicaId, to: ReplicaId, body: Body) -> Message {
        Message { v: PROTOCOL_VERSION, generation, from, to, body }
    }

    /// The wire form.
    pub fn encode(&self) -> Result<Vec<u8>, DecodeError> {
        serde_json::to_vec(self).map_err(|e| DecodeError::Malformed(e.to_string()))
    }

    /// Parses the wire form; any malformed, oversized or foreign-version
    /// input is a typed error.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        if bytes.len() > MAX_MESSAGE_BYTES {
            return Err(DecodeError::TooLarge { len: bytes.len(), max: MAX_MESSAGE_BYTES });
        }
        let header: Header = serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
        if header.v != PROTOCOL_VERSION {
            return Err(DecodeError::UnsupportedVersion { got: header.v, supported: PROTOCOL_VERSION });
        }
        serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::ids::Version;
    use crate::handoff::record::Value;

    fn sample() -> Vec<Message> {
        let key = Key::new("k").unwrap();
        let stamp = Stamp { ep: Epoch(3), ver: Version(7) };
        let record = Record { stamp, wid: WriteId(42), value: Value::Bytes(b"hi".to_vec()) };
        let mut memory = Memory::default();
        memory.merge(&key, &record);
        let i = Instance(9);
        let generation = Some(Generation { minted_at: 1, nonce: 2 });
        [
            Body::Push { instance: i, key: key.clone(), record: record.clone() },
            Body::PushAck { instance: i, key: key.clone(), stamp, wid: WriteId(42) },
            Body::PushRefused { instance: i, key: key.clone(), stamp, known: Epoch(4) },
            Body::Collect { instance: i, round: 2 },
            Body::CollectReply { instance: i, known: Epoch(3), memory: memory.clone() },
            Body::CollectDecline { instance: i, round: 2, peer: Instance(8) },
            Body::Announce { instance: i, epoch: Epoch(4), round: 1 },
            Body::AnnounceAck { instance: i, epoch: Epoch(4), round: 1, peer: Instance(8) },
            Body::AnnounceRefused { instance: i, epoch: Epoch(4), known: Epoch(5) },
            Body::Reseed { instance: i },
            Body::ReseedReply { instance: i, known: Epoch(3), memory: memory.clone() },
            Body::ReseedDecline { instance: i },
            Body::Gossip { memory },
            Body::Heartbeat,
        ]
        .into_iter()
        .map(|body| Message::new(generation, ReplicaId(0), ReplicaId(1), body))
        .collect()
    }

    #[test]
    fn every_message_round_trips() {
        for m in sample() {
            let bytes = m.encode().unwrap();
            assert_eq!(Message::decode(&bytes).unwrap(), m, "{}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn the_wire_form_is_stable() {
        let m = &sample()[1];
        assert_eq!(
            String::from_utf8(m.encode().unwrap()).unwrap(),
            r#"{"v":1,"generation":{"minted_at":1,"nonce":2},"from":0,"to":1,"body":{"type":"push_ack","instance":9,"key":"k","stamp":{"ep":3,"ver":7},"wid":"0000000000000000000000000000002a"}}"#
        );
    }

    #[test]
    fn malformed_and_adversarial_input_is_a_typed_error() {
        let cases: &[&[u8]] = &[
            b"",
            b"\xff\xfe",
            b"null",
            b"[]",
            b"{}",
            b"{\"v\":\"1\"}",
            b"{\"v\":70000}",
            b"{\"v\":1}",
            b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"nope\"}}",
            b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"push\",\"instance\":1}}",
            b"{\"v\":1,\"generation\":null,\"from\":256,\"to\":1,\"body\":{\"type\":\"heartbeat\"}}",
            b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"collect\",\"instance\":-1,\"round\":0}}",
            b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"push_ack\",\"instance\":1,\"key\":\"\",\"stamp\":{\"ep\":1,\"ver\":1},\"wid\":\"0000000000000000000000000000002a\"}}",
            b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"push_ack\",\"instance\":1,\"key\":\"k\",\"stamp\":{\"ep\":1,\"ver\":1},\"wid\":42}}",
            b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"gossip\",\"memory\":{\"k\":{\"stamp\":{\"ep\":1,\"ver\":1},\"wid\":\"0000000000000000000000000000002a\",\"value\":{\"bytes\":\"abc\"}}}}}",
            b"{\"v\":1,\"generation\":null,\"from\":0,\"to\":1,\"body\":{\"type\":\"gossip\",\"memory\":{\"\":{\"stamp\":{\"ep\":1,\"ver\":1},\"wid\":\"0000000000000000000000000000002a\",\"value\":\"tombstone\"}}}}",
        ];
        for bytes in cases {
            let err = Message::decode(bytes).unwrap_err();
            assert!(matches!(err, DecodeError::Malformed(_)), "{:?} gave {err:?}", String::from_utf8_lossy(bytes));
        }
        assert_eq!(
            Message::decode(b"{\"v\":2,\"whatever\":true}"),
            Err(DecodeError::UnsupportedVersion { got: 2, supported: PROTOCOL_VERSION })
        );
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(matches!(Message::decode(deep.as_bytes()), Err(DecodeError::Malformed(_))));
    }

    #[test]
    fn oversized_input_is_refused_before_parsing() {
        let big = vec![b' '; MAX_MESSAGE_BYTES + 1];
        assert_eq!(
            Message::decode(&big),
            Err(DecodeError::TooLarge { len: MAX_MESSAGE_BYTES + 1, max: MAX_MESSAGE_BYTES })
        );
    }

    #[test]
    fn only_replies_name_an_instance_to_route_to() {
        let replies: Vec<&'static str> =
            sample().iter().filter(|m| m.body.reply_to().is_some()).map(|m| m.body.kind()).collect();
        assert_eq!(
            replies,
            [
                "push_ack",
                "push_refused",
                "collect_reply",
                "collect_decline",
                "announce_ack",
                "announce_refused",
                "reseed_reply",
                "reseed_decline"
            ]
        );
    }
}
