//! Replica-to-replica messages: a protocol version, a namespace
//! generation, sender and addressee, and one body, in postcard's compact
//! binary form (values as raw bytes). Several messages travel together as a
//! [`Batch`].
//!
//! Requests carry the sender's [`Instance`]; replies echo the requester's,
//! so a reply that outlived the instance that asked is recognised as stale
//! (the request id of the issue: an instance plus what is asked, e.g. the
//! write's stamp). Every message may be lost, duplicated or reordered: the
//! requester retries on its retry timer, and every handler is idempotent.
//!
//! Decoding is total and bounded: the input's size is checked first, the
//! version before the rest, and every length inside (keys, values, record
//! lists, batches) against its limit before anything is allocated for it.

use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::error::{DecodeError, EncodeError};
use super::ids::{Epoch, Generation, Instance, Key, ReplicaId, WriteId};
use super::memory::{Chunk, Digest, Records};
use super::record::{Record, Stamp, Value};

/// The wire protocol version this build writes. Version 1 was JSON with
/// whole-memory snapshots; version 2 had no read confirmation; version 3
/// had no expiry and no request fingerprint on a record; version 4 had no
/// ack naming the acking instance ([`Body::PushAckBy`]).
pub const PROTOCOL_VERSION: u16 = 5;

/// The oldest version this build still reads (and can write, with
/// [`Message::encode_as`]): a version-3 record reads as one that never
/// expires, made by a request of unknown fingerprint; an ack of version 3
/// or 4 is a [`Body::PushAck`]. Older versions are refused with a typed
/// error rather than guessed at.
pub const MIN_PROTOCOL_VERSION: u16 = 3;

/// A record as protocol version 3 carries it: no expiry, no fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RecordV3 {
    pub stamp: Stamp,
    pub wid: WriteId,
    pub value: Value,
}

impl From<RecordV3> for Record {
    fn from(r: RecordV3) -> Record {
        Record { stamp: r.stamp, wid: r.wid, value: r.value, expires_at: None, fp: None }
    }
}

impl TryFrom<Record> for RecordV3 {
    type Error = EncodeError;

    /// A record that expires cannot travel in version 3 (it would never
    /// expire there). Its fingerprint is dropped: the record then reads as
    /// made by an unknown request, which is what every version-3 record is.
    fn try_from(r: Record) -> Result<RecordV3, EncodeError> {
        if r.expires_at.is_some() {
            return Err(EncodeError::NotInVersion { version: 3, what: "a record's expiry" });
        }
        Ok(RecordV3 { stamp: r.stamp, wid: r.wid, value: r.value })
    }
}

/// Largest encoded message accepted: a chunk of records of at most 1 MiB
/// plus one record of the largest size (a 1 MiB value), with room for the
/// envelope.
pub const MAX_MESSAGE_BYTES: usize = 3 * 1024 * 1024;

/// Messages in one batch, at most.
pub const MAX_BATCH: usize = 256;

/// One message between replicas.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message<R = Record> {
    /// The protocol version the message was written in (this build writes
    /// [`PROTOCOL_VERSION`]); encoded first.
    pub v: u16,
    /// The sender's namespace generation; `None` while the sender is a
    /// freshly booted replica that has not yet joined one.
    pub generation: Option<Generation>,
    pub from: ReplicaId,
    pub to: ReplicaId,
    pub body: Body<R>,
}

/// What a message says. `R` is the wire form of a record: [`Record`], or
/// [`RecordV3`] in a version-3 message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Body<R = Record> {
    /// Coordinator → peer: store this write (the spec's push in `net`).
    Push { instance: Instance, key: Key, record: R },
    /// Peer → coordinator: the write is held (the ack the spec abstracts),
    /// by an instance the ack does not name: the ack of versions 3 and 4.
    /// This build acks with [`Body::PushAckBy`], which becomes this when
    /// written in version 3 or 4.
    PushAck { instance: Instance, key: Key, stamp: Stamp, wid: WriteId },
    /// Peer → coordinator: the push's epoch is older than the peer knows;
    /// the sender is superseded (zombie fencing).
    PushRefused { instance: Instance, key: Key, stamp: Stamp, known: Epoch },
    /// Recovering coordinator → peer: send me your next snapshot chunk
    /// (the records after `after`) and epoch. `round` counts collect
    /// rounds that every peer declined (first boot).
    Collect { instance: Instance, round: u64, after: Option<Key> },
    /// Ready peer → coordinator: a chunk of the peer's memory, the epoch it
    /// knows of and its floor; `peer` is the peer's instance. Only a ready
    /// peer answers (HandoffV2's `CanSeed`): a recovering one may have
    /// forgotten the epoch.
    CollectReply { instance: Instance, peer: Instance, known: Epoch, floor: Stamp, chunk: Chunk<R> },
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
    /// Recovering peer → any replica: send me your next snapshot chunk.
    Reseed { instance: Instance, after: Option<Key> },
    /// Replica that `CanSeed` (a ready one, or the coordinator announcing
    /// its epoch) → recovering peer: a chunk of my memory, my epoch
    /// knowledge (the spec's `SrcKnow`) and floor; `source` is my instance.
    ReseedReply { instance: Instance, source: Instance, known: Epoch, floor: Stamp, chunk: Chunk<R> },
    /// Replica that cannot seed now → recovering peer: do not wait for me.
    /// `source` is my instance (a peer declined by a collecting
    /// coordinator is fenced until that instance announces to it).
    ReseedDecline { instance: Instance, source: Instance },
    /// Ready replica → coordinator, coordinator → both peers: anti-entropy.
    /// The sender's digest, the epoch it knows (`SrcKnow`), its floor and
    /// its instance. The receiver answers with its records where the
    /// digests differ.
    Digest { instance: Instance, known: Epoch, floor: Stamp, digest: Digest },
    /// The answer to a digest: the sender's records in the buckets that
    /// differ (at most one chunk's worth), and its floor.
    Records { floor: Stamp, records: Records<R> },
    /// Ready coordinator → peers: is `epoch` still the newest you know?
    /// One round confirms every read that was waiting when it was sent
    /// (HandoffReads' `ReadConfirm`).
    Confirm { instance: Instance, epoch: Epoch, round: u64 },
    /// Ready, unfenced peer that knows exactly `epoch` → coordinator: yes.
    Confirmed { instance: Instance, epoch: Epoch, round: u64 },
    /// Peer → coordinator: no, I know a newer epoch (zombie fencing).
    ConfirmRefused { instance: Instance, known: Epoch },
    /// Keep-alive: a Durable Object that receives nothing for ~10 s
    /// hibernates and loses its memory. Changes no state.
    Heartbeat,
    /// Peer → coordinator: the write is held by instance `peer` (HandoffRoll's
    /// `acksBy`, `pinc`): the coordinator does not count it once it heard
    /// from a newer instance of that peer, which has not got the write.
    /// Since version 5; last, so that every older body keeps its postcard
    /// index.
    PushAckBy { instance: Instance, peer: Instance, key: Key, stamp: Stamp, wid: WriteId },
}

impl<R> Body<R> {
    /// The same body with its records in another wire form (`f` may refuse
    /// a record).
    pub fn try_map<S, E>(self, mut f: impl FnMut(R) -> Result<S, E>) -> Result<Body<S>, E> {
        Ok(match self {
            Body::Push { instance, key, record } => Body::Push { instance, key, record: f(record)? },
            Body::CollectReply { instance, peer, known, floor, chunk } => {
                Body::CollectReply { instance, peer, known, floor, chunk: chunk.try_map(f)? }
            }
            Body::ReseedReply { instance, source, known, floor, chunk } => {
                Body::ReseedReply { instance, source, known, floor, chunk: chunk.try_map(f)? }
            }
            Body::Records { floor, records } => Body::Records { floor, records: records.try_map(f)? },
            Body::PushAck { instance, key, stamp, wid } => Body::PushAck { instance, key, stamp, wid },
            Body::PushRefused { instance, key, stamp, known } => Body::PushRefused { instance, key, stamp, known },
            Body::Collect { instance, round, after } => Body::Collect { instance, round, after },
            Body::CollectDecline { instance, round, peer } => Body::CollectDecline { instance, round, peer },
            Body::Announce { instance, epoch, round } => Body::Announce { instance, epoch, round },
            Body::AnnounceAck { instance, epoch, round, peer } => Body::AnnounceAck { instance, epoch, round, peer },
            Body::AnnounceRefused { instance, epoch, known } => Body::AnnounceRefused { instance, epoch, known },
            Body::Reseed { instance, after } => Body::Reseed { instance, after },
            Body::ReseedDecline { instance, source } => Body::ReseedDecline { instance, source },
            Body::Digest { instance, known, floor, digest } => Body::Digest { instance, known, floor, digest },
            Body::Confirm { instance, epoch, round } => Body::Confirm { instance, epoch, round },
            Body::Confirmed { instance, epoch, round } => Body::Confirmed { instance, epoch, round },
            Body::ConfirmRefused { instance, known } => Body::ConfirmRefused { instance, known },
            Body::Heartbeat => Body::Heartbeat,
            Body::PushAckBy { instance, peer, key, stamp, wid } => Body::PushAckBy { instance, peer, key, stamp, wid },
        })
    }

    /// The oldest protocol version that has this body.
    fn since(&self) -> u16 {
        match self {
            Body::PushAckBy { .. } => 5,
            _ => MIN_PROTOCOL_VERSION,
        }
    }

    /// The body as a replica of version 4 or older reads it: an ack without
    /// the acking instance, which such a replica does not know.
    fn before_version_5(self) -> Body<R> {
        match self {
            Body::PushAckBy { instance, key, stamp, wid, .. } => Body::PushAck { instance, key, stamp, wid },
            body => body,
        }
    }

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
            Body::Digest { .. } => "digest",
            Body::Records { .. } => "records",
            Body::Confirm { .. } => "confirm",
            Body::Confirmed { .. } => "confirmed",
            Body::ConfirmRefused { .. } => "confirm_refused",
            Body::Heartbeat => "heartbeat",
            Body::PushAckBy { .. } => "push_ack_by",
        }
    }

    /// For a reply, the instance of the requester it answers. A host routes
    /// replies to that instance; one that no longer exists drops them.
    pub fn reply_to(&self) -> Option<Instance> {
        match self {
            Body::PushAck { instance, .. }
            | Body::PushAckBy { instance, .. }
            | Body::PushRefused { instance, .. }
            | Body::CollectReply { instance, .. }
            | Body::CollectDecline { instance, .. }
            | Body::AnnounceAck { instance, .. }
            | Body::AnnounceRefused { instance, .. }
            | Body::ReseedReply { instance, .. }
            | Body::ReseedDecline { instance, .. }
            | Body::Confirmed { instance, .. }
            | Body::ConfirmRefused { instance, .. } => Some(*instance),
            Body::Push { .. }
            | Body::Collect { .. }
            | Body::Announce { .. }
            | Body::Reseed { .. }
            | Body::Digest { .. }
            | Body::Records { .. }
            | Body::Confirm { .. }
            | Body::Heartbeat => None,
        }
    }

    /// Whether a body is well-formed beyond its types: chunks in key order
    /// after their cursor, records in key order.
    fn well_formed(&self) -> bool {
        match self {
            Body::CollectReply { chunk, .. } | Body::ReseedReply { chunk, .. } => chunk.well_formed(),
            Body::Records { records, .. } => records.in_key_order(),
            _ => true,
        }
    }
}

impl Message {
    /// A message of this protocol version.
    pub fn new(generation: Option<Generation>, from: ReplicaId, to: ReplicaId, body: Body) -> Message {
        Message { v: PROTOCOL_VERSION, generation, from, to, body }
    }

    /// The wire form, in [`PROTOCOL_VERSION`]. (The error type is the
    /// decoder's, which the hosts already handle: encoding in this build's
    /// own version fails only if postcard does.)
    pub fn encode(&self) -> Result<Vec<u8>, DecodeError> {
        self.encode_as(PROTOCOL_VERSION).map_err(|e| DecodeError::Malformed(e.to_string()))
    }

    /// The wire form in protocol `version` (a replica of this build talking
    /// to one of an older build, during a rolling deploy):
    /// [`PROTOCOL_VERSION`]; version 4, where a [`Body::PushAckBy`] is a
    /// [`Body::PushAck`] (the acking instance is dropped); or version 3 as
    /// 4, for a message whose records do not expire (the records lose their
    /// fingerprints, [`RecordV3`]).
    pub fn encode_as(&self, version: u16) -> Result<Vec<u8>, EncodeError> {
        let postcard = |e: postcard::Error| EncodeError::Postcard(e.to_string());
        match version {
            PROTOCOL_VERSION => postcard::to_allocvec(&Message { v: version, ..self.clone() }).map_err(postcard),
            4 => {
                let old = Message { v: version, body: self.body.clone().before_version_5(), ..self.clone() };
                postcard::to_allocvec(&old).map_err(postcard)
            }
            3 => {
                let body = self.body.clone().before_version_5().try_map(RecordV3::try_from)?;
                let old = Message { v: version, generation: self.generation, from: self.from, to: self.to, body };
                postcard::to_allocvec(&old).map_err(postcard)
            }
            _ => Err(EncodeError::UnsupportedVersion { version, supported: PROTOCOL_VERSION }),
        }
    }

    /// Parses the wire form of version 3, 4 or 5 (the message keeps the
    /// version it was written in, `v`); any malformed, oversized or
    /// foreign-version input is a typed error, and so is a body its
    /// version does not have (a `PushAckBy` in version 4).
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        if bytes.len() > MAX_MESSAGE_BYTES {
            return Err(DecodeError::TooLarge { len: bytes.len(), max: MAX_MESSAGE_BYTES });
        }
        let malformed = |e: postcard::Error| DecodeError::Malformed(e.to_string());
        let (v, _) = postcard::take_from_bytes::<u16>(bytes).map_err(malformed)?;
        let msg = match v {
            // Version 4 is version 5 without its last body, `PushAckBy`
            // (refused below).
            PROTOCOL_VERSION | 4 => whole::<Record>(bytes)?,
            3 => {
                let old = whole::<RecordV3>(bytes)?;
                let body = old.body.try_map(|r| Ok::<_, DecodeError>(Record::from(r)))?;
                Message { v: old.v, generation: old.generation, from: old.from, to: old.to, body }
            }
            _ => return Err(DecodeError::UnsupportedVersion { got: v, supported: PROTOCOL_VERSION }),
        };
        if msg.body.since() > msg.v {
            return Err(DecodeError::Malformed(format!("a {} in version {}", msg.body.kind(), msg.v)));
        }
        if !msg.body.well_formed() {
            return Err(DecodeError::Malformed(format!("a {} out of key order", msg.body.kind())));
        }
        Ok(msg)
    }
}

/// A whole message with records of wire form `R`: nothing may follow it.
fn whole<R: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<Message<R>, DecodeError> {
    let (msg, rest) =
        postcard::take_from_bytes::<Message<R>>(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    if !rest.is_empty() {
        return Err(DecodeError::Malformed(format!("{} bytes after the message", rest.len())));
    }
    Ok(msg)
}

/// Several encoded messages in one request or response body: a count, then
/// each message as a length and its bytes.
pub struct Batch;

impl Batch {
    /// One body for `messages` (each already encoded).
    pub fn encode(messages: &[Vec<u8>]) -> Result<Vec<u8>, DecodeError> {
        let items: Vec<Encoded<'_>> = messages.iter().map(|m| Encoded(m)).collect();
        postcard::to_allocvec(&items).map_err(|e| DecodeError::Malformed(e.to_string()))
    }

    /// The messages of a body, still encoded; at most [`MAX_BATCH`] of
    /// them, each at most [`MAX_MESSAGE_BYTES`].
    pub fn decode(body: &[u8]) -> Result<Vec<&[u8]>, DecodeError> {
        let (items, rest) =
            postcard::take_from_bytes::<BoundedBatch<'_>>(body).map_err(|e| DecodeError::Malformed(e.to_string()))?;
        if !rest.is_empty() {
            return Err(DecodeError::Malformed(format!("{} bytes after the batch", rest.len())));
        }
        Ok(items.0)
    }
}

/// A batch as decoded: borrowed slices of the body.
struct BoundedBatch<'a>(Vec<&'a [u8]>);

impl<'de> Deserialize<'de> for BoundedBatch<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Items;
        impl<'de> Visitor<'de> for Items {
            type Value = BoundedBatch<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "at most {MAX_BATCH} messages of at most {MAX_MESSAGE_BYTES} bytes")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let n = seq.size_hint().unwrap_or(0);
                if n > MAX_BATCH {
                    return Err(de::Error::invalid_length(n, &self));
                }
                // Room grows with what is actually decoded, not with the
                // count the input claims.
                let mut out = Vec::with_capacity(n.min(64));
                while let Some(item) = seq.next_element::<Encoded<'de>>()? {
                    if out.len() == MAX_BATCH {
                        return Err(de::Error::invalid_length(out.len() + 1, &self));
                    }
                    out.push(item.0);
                }
                Ok(BoundedBatch(out))
            }
        }
        d.deserialize_seq(Items)
    }
}

/// One encoded message inside a batch (a byte string), borrowed; its
/// length is checked on decoding.
struct Encoded<'a>(&'a [u8]);

impl Serialize for Encoded<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl<'de> Deserialize<'de> for Encoded<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Slice;
        impl<'de> Visitor<'de> for Slice {
            type Value = Encoded<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a message of at most {MAX_MESSAGE_BYTES} bytes")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, b: &'de [u8]) -> Result<Self::Value, E> {
                if b.len() > MAX_MESSAGE_BYTES {
                    return Err(E::invalid_length(b.len(), &self));
                }
                Ok(Encoded(b))
            }
        }
        d.deserialize_bytes(Slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::ids::{Fingerprint, Millis, Version};
    use crate::handoff::memory::Memory;
    use crate::handoff::record::Value;

    /// One message of each kind; the records expire at `expires_at`.
    fn sample_expiring(expires_at: Option<Millis>) -> Vec<Message> {
        let key = Key::new("k").unwrap();
        let stamp = Stamp { ep: Epoch(3), ver: Version(7) };
        let fp = Some(Fingerprint(5));
        let record = Record { stamp, wid: WriteId(42), value: Value::Bytes(b"hi".to_vec()), expires_at, fp };
        let mut memory = Memory::default();
        memory.merge(&key, &record);
        let chunk = memory.chunk(None, 1024);
        let i = Instance { born: 5, nonce: 9 };
        let j = Instance { born: 6, nonce: 8 };
        let generation = Some(Generation { minted_at: 1, nonce: 2 });
        [
            Body::Push { instance: i, key: key.clone(), record: record.clone() },
            Body::PushAck { instance: i, key: key.clone(), stamp, wid: WriteId(42) },
            Body::PushRefused { instance: i, key: key.clone(), stamp, known: Epoch(4) },
            Body::Collect { instance: i, round: 2, after: Some(key.clone()) },
            Body::CollectReply { instance: i, peer: j, known: Epoch(3), floor: stamp, chunk: chunk.clone() },
            Body::CollectDecline { instance: i, round: 2, peer: j },
            Body::Announce { instance: i, epoch: Epoch(4), round: 1 },
            Body::AnnounceAck { instance: i, epoch: Epoch(4), round: 1, peer: j },
            Body::AnnounceRefused { instance: i, epoch: Epoch(4), known: Epoch(5) },
            Body::Reseed { instance: i, after: None },
            Body::ReseedReply { instance: i, source: j, known: Epoch(3), floor: Stamp::ZERO, chunk: chunk.clone() },
            Body::ReseedDecline { instance: i, source: j },
            Body::Confirm { instance: i, epoch: Epoch(3), round: 2 },
            Body::Confirmed { instance: i, epoch: Epoch(3), round: 2 },
            Body::ConfirmRefused { instance: i, known: Epoch(4) },
            Body::Digest { instance: i, known: Epoch(3), floor: stamp, digest: memory.digest().clone() },
            Body::Records { floor: stamp, records: chunk.records },
            Body::Heartbeat,
            Body::PushAckBy { instance: i, peer: j, key: key.clone(), stamp, wid: WriteId(42) },
        ]
        .into_iter()
        .map(|body| Message::new(generation, ReplicaId(0), ReplicaId(1), body))
        .collect()
    }

    pub(crate) fn sample() -> Vec<Message> {
        sample_expiring(Some(Millis(1000)))
    }

    /// `m` with what a version-3 message drops: its records' fingerprints,
    /// an ack's acking instance.
    fn as_in_version_3(m: &Message) -> Message {
        let v3 = |r: Record| Ok::<_, EncodeError>(Record { fp: None, ..r });
        Message { v: 3, body: m.body.clone().before_version_5().try_map(v3).unwrap(), ..m.clone() }
    }

    #[test]
    fn every_message_round_trips() {
        for m in sample() {
            let bytes = m.encode().unwrap();
            assert_eq!(Message::decode(&bytes).unwrap(), m, "{}", m.body.kind());
        }
    }

    #[test]
    fn the_wire_form_is_stable_and_compact() {
        let m = &sample()[0];
        let bytes = m.encode().unwrap();
        assert_eq!(
            bytes,
            [
                5, // version
                1, 1, 2, // Some(generation { minted_at: 1, nonce: 2 })
                0, 1, // from r0 to r1
                0, // Push
                5, 9, // instance
                1, b'k', // key
                3, 7, 42, // stamp, write id
                0, 2, b'h', b'i', // Bytes, raw
                1, 0xe8, 0x07, // Some(expires at 1000)
                1, 5, // Some(fingerprint 5)
            ]
        );
        // A 1 MiB value costs its bytes plus a few: no hex, no escaping.
        let big = Message::new(
            None,
            ReplicaId(0),
            ReplicaId(1),
            Body::Push {
                instance: Instance { born: 1, nonce: 1 },
                key: Key::new("k").unwrap(),
                record: Record {
                    stamp: Stamp { ep: Epoch(1), ver: Version(1) },
                    wid: WriteId(u128::MAX),
                    value: Value::Bytes(vec![0xab; 1 << 20]),
                    expires_at: None,
                    fp: None,
                },
            },
        );
        assert!(big.encode().unwrap().len() < (1 << 20) + 64);
    }

    /// A push as a version-3 replica writes it (this test's bytes before
    /// version 4) still decodes: the record never expires and has no
    /// fingerprint, and the message says it was written in version 3.
    #[test]
    fn a_version_3_message_still_decodes() {
        let v3 = [3, 1, 1, 2, 0, 1, 0, 5, 9, 1, b'k', 3, 7, 42, 0, 2, b'h', b'i'];
        let m = Message::decode(&v3).unwrap();
        assert_eq!(m.v, 3);
        let Body::Push { record, .. } = &m.body else { panic!("{m:?}") };
        assert_eq!((record.expires_at, record.fp, &record.value), (None, None, &Value::Bytes(b"hi".to_vec())));
        assert_eq!(m.encode_as(3).unwrap(), v3, "and is written back byte for byte");
    }

    /// Every message whose records do not expire can be written in
    /// version 3 (the fingerprints are dropped) and reads back as such; an
    /// expiring record cannot, and no other version can be written.
    #[test]
    fn messages_without_expiry_can_be_written_in_version_3() {
        for m in sample_expiring(None) {
            let bytes = m.encode_as(3).unwrap();
            assert_eq!(bytes[0], 3);
            assert_eq!(Message::decode(&bytes).unwrap(), as_in_version_3(&m), "{}", m.body.kind());
        }
        let carries_records = |m: &Message| {
            matches!(
                m.body,
                Body::Push { .. } | Body::CollectReply { .. } | Body::ReseedReply { .. } | Body::Records { .. }
            )
        };
        for m in sample() {
            let v3 = m.encode_as(3);
            if carries_records(&m) {
                assert_eq!(
                    v3,
                    Err(EncodeError::NotInVersion { version: 3, what: "a record's expiry" }),
                    "{}",
                    m.body.kind()
                );
            } else {
                assert!(v3.is_ok(), "{}", m.body.kind());
            }
        }
        assert_eq!(sample()[0].encode_as(2), Err(EncodeError::UnsupportedVersion { version: 2, supported: 5 }));
    }

    /// An ack as this build writes it names the acking instance; written
    /// in version 4 (or 3), for a replica of the last build, it is the ack
    /// that build knows, without it; and a version-4 replica's ack decodes
    /// as such. Every other message is written in version 4 as in 5.
    #[test]
    fn an_ack_naming_its_instance_is_new_in_version_5() {
        let (i, j) = (Instance { born: 5, nonce: 9 }, Instance { born: 6, nonce: 8 });
        let (key, stamp) = (Key::new("k").unwrap(), Stamp { ep: Epoch(3), ver: Version(7) });
        let generation = Some(Generation { minted_at: 1, nonce: 2 });
        let ack = Body::PushAckBy { instance: i, peer: j, key: key.clone(), stamp, wid: WriteId(42) };
        let m = Message::new(generation, ReplicaId(1), ReplicaId(0), ack);
        let v5 = m.encode().unwrap();
        assert_eq!(v5, [5, 1, 1, 2, 1, 0, 18, 5, 9, 6, 8, 1, b'k', 3, 7, 42], "the 19th body, after heartbeat");
        assert_eq!(Message::decode(&v5).unwrap(), m);
        // A version-4 replica's ack: body 1, no acking instance.
        let v4 = [4, 1, 1, 2, 1, 0, 1, 5, 9, 1, b'k', 3, 7, 42];
        assert_eq!(m.encode_as(4).unwrap(), v4);
        let old = Message::decode(&v4).unwrap();
        assert_eq!(old.v, 4);
        assert_eq!(old.body, Body::PushAck { instance: i, key: key.clone(), stamp, wid: WriteId(42) });
        let v3 = Message::decode(&m.encode_as(3).unwrap()).unwrap();
        assert_eq!((v3.v, v3.body), (3, old.body));
        // Version 4 has no body 18: a version-4 (or 3) message claiming one
        // is malformed, as a build of version 4 finds it.
        for v in [4, 3] {
            let forged = [&[v][..], &v5[1..]].concat();
            assert!(matches!(Message::decode(&forged), Err(DecodeError::Malformed(_))), "version {v}");
        }
        for m in sample() {
            if !matches!(m.body, Body::PushAckBy { .. }) {
                assert_eq!(m.encode_as(4).unwrap()[1..], m.encode().unwrap()[1..], "{}", m.body.kind());
            }
        }
    }

    #[test]
    fn malformed_and_adversarial_input_is_a_typed_error() {
        let good = sample()[3].encode().unwrap();
        let mut cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![3],
            vec![3, 0xff],
            vec![3, 0, 0, 1, 99],                                     // unknown body
            vec![3, 0, 0, 1, 3, 1, 1, 0, 1, 0],                       // collect after an empty key
            vec![3, 2, 0, 1, 14],                                     // generation tag out of range
            vec![3, 0, 0, 1, 13, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f], // records: 4 G of them
        ];
        cases.push(good[..good.len() - 1].to_vec()); // truncated
        let mut trailing = good.clone();
        trailing.push(0);
        cases.push(trailing);
        // The same in versions 4 and 5 (a record's layout is the only
        // difference, and the bodies they have).
        let newer: Vec<Vec<u8>> = [4, 5]
            .into_iter()
            .flat_map(|v| cases.iter().filter(|b| b.first() == Some(&3)).map(move |b| [&[v][..], &b[1..]].concat()))
            .collect();
        cases.extend(newer);
        for bytes in &cases {
            let err = Message::decode(bytes).unwrap_err();
            assert!(matches!(err, DecodeError::Malformed(_)), "{bytes:?} gave {err:?}");
        }
        assert_eq!(
            Message::decode(&[1, 0]),
            Err(DecodeError::UnsupportedVersion { got: 1, supported: PROTOCOL_VERSION })
        );
        // JSON from a version-1 replica: `{` is read as version 123.
        assert!(matches!(Message::decode(b"{\"v\":1}"), Err(DecodeError::UnsupportedVersion { got: 123, .. })));
    }

    #[test]
    fn chunks_out_of_key_order_are_refused() {
        let key = |s: &str| Key::new(s).unwrap();
        let rec = Record {
            stamp: Stamp { ep: Epoch(1), ver: Version(1) },
            wid: WriteId(1),
            value: Value::Tombstone,
            expires_at: None,
            fp: None,
        };
        let bad = [
            Chunk { after: None, records: Records(vec![(key("b"), rec.clone()), (key("a"), rec.clone())]), last: true },
            Chunk { after: Some(key("b")), records: Records(vec![(key("a"), rec.clone())]), last: true },
            Chunk { after: None, records: Records(vec![]), last: false },
        ];
        for chunk in bad {
            let body = Body::ReseedReply {
                instance: Instance { born: 1, nonce: 1 },
                source: Instance { born: 1, nonce: 2 },
                known: Epoch(1),
                floor: Stamp::ZERO,
                chunk,
            };
            let bytes = Message::new(None, ReplicaId(1), ReplicaId(2), body).encode().unwrap();
            assert!(matches!(Message::decode(&bytes), Err(DecodeError::Malformed(_))));
        }
    }

    #[test]
    fn oversized_input_is_refused_before_parsing() {
        let big = vec![2; MAX_MESSAGE_BYTES + 1];
        assert_eq!(
            Message::decode(&big),
            Err(DecodeError::TooLarge { len: MAX_MESSAGE_BYTES + 1, max: MAX_MESSAGE_BYTES })
        );
    }

    #[test]
    fn batches_round_trip_and_are_bounded() {
        let encoded: Vec<Vec<u8>> = sample().iter().map(|m| m.encode().unwrap()).collect();
        let body = Batch::encode(&encoded).unwrap();
        let items = Batch::decode(&body).unwrap();
        assert_eq!(items.len(), encoded.len());
        for (item, m) in items.iter().zip(sample()) {
            assert_eq!(Message::decode(item).unwrap(), m);
        }
        assert_eq!(Batch::decode(&Batch::encode(&[]).unwrap()).unwrap().len(), 0);
        let too_many = Batch::encode(&vec![vec![0u8]; MAX_BATCH + 1]).unwrap();
        assert!(Batch::decode(&too_many).is_err());
        // A count or a length far beyond the body: refused, not allocated.
        assert!(Batch::decode(&[0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert!(Batch::decode(&[1, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert!(Batch::decode(&[1, 5, 1]).is_err());
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
                "reseed_decline",
                "confirmed",
                "confirm_refused",
                "push_ack_by"
            ]
        );
    }
}
