//! Typed errors (a bad key is [`KeyError`](super::ids::KeyError), beside
//! the key). Nothing in this module's callers panics on input: a
//! malformed, misdirected, stale or adversarial input becomes one of these.

use super::ids::{Generation, ReplicaId};

/// Bytes that are not a replica message this build understands.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("protocol version {got} is not supported (this replica speaks {supported})")]
    UnsupportedVersion { got: u16, supported: u16 },
    #[error("a message is at most {max} bytes, this one has {len}")]
    TooLarge { len: usize, max: usize },
}

/// A message that cannot be written in the protocol version asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("protocol version {version} cannot be written (this replica writes {supported}, and 3)")]
    UnsupportedVersion { version: u16, supported: u16 },
    #[error("protocol version {version} cannot carry {what}")]
    NotInVersion { version: u16, what: &'static str },
    #[error("encoding failed: {0}")]
    Postcard(String),
}

/// A replica configuration that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("the three replicas must be distinct, got {0:?}")]
    DuplicateReplica([ReplicaId; 3]),
    #[error("{0} is not one of this namespace's replicas")]
    NotAReplica(ReplicaId),
    #[error("{name} must be at least 1 ms")]
    ZeroInterval { name: &'static str },
    #[error("{name} is {value}, at most {max}")]
    TooLarge { name: &'static str, value: usize, max: usize },
}

/// An input the replica refuses. The replica's state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HandleError {
    #[error("protocol version {got} is not supported (this replica speaks {supported})")]
    UnsupportedVersion { got: u16, supported: u16 },
    #[error("message for {to} delivered to {me}")]
    WrongDestination { to: ReplicaId, me: ReplicaId },
    #[error("{0} is not another replica of this namespace")]
    UnknownSender(ReplicaId),
    #[error("message from generation {got:?}, older than this replica's {mine:?}: a ghost of a dead namespace")]
    StaleGeneration { got: Generation, mine: Generation },
    #[error("a {role} does not accept {kind} messages")]
    UnexpectedMessage { kind: &'static str, role: &'static str },
    #[error("a {kind} message must carry a generation")]
    MissingGeneration { kind: &'static str },
    #[error("a {kind} message may only come from the coordinator, not {from}")]
    NotFromCoordinator { kind: &'static str, from: ReplicaId },
    #[error("client requests go to the coordinator {coordinator}, not {me}")]
    NotCoordinator { me: ReplicaId, coordinator: ReplicaId },
    #[error("a value is at most {max} bytes, this one has {len}")]
    ValueTooLarge { len: usize, max: usize },
    #[error("a time to live is 1 ms to {max} ms, not {ttl_ms}")]
    TtlOutOfRange { ttl_ms: u64, max: u64 },
    #[error("a listing's limit is 1 to {max}, not {limit}")]
    LimitOutOfRange { limit: usize, max: usize },
}
