//! A replica's steps as its host ran them, for trace validation
//! (`checker validate`, docs/verification.md section 1.6).
//!
//! A [`Driver`](super::driver::Driver) booted with tracing on records every
//! step it takes -- the boot, each input it accepted or refused, each timer
//! it fired --
//! with the time passed in, a digest of what the step returned, and the
//! replica's instance and epoch after it. The host drains the entries
//! ([`Driver::take_trace`](super::driver::Driver::take_trace)) and stores
//! them where the test harness can fetch them. Replaying the entries
//! through the same code must give the same outputs: that, and that the
//! merged steps of all replicas form a behaviour of the implementation
//! model, is what the validator checks.
//!
//! The host's storage format is here too, so that the Worker writes and
//! the validator reads one format: a row is a postcard [`Row`]; a page of
//! rows travels as frames (`object: u64 LE`, `len: u32 LE`, `len` bytes of
//! row), `object` naming the host object (one Durable Object instance).

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::config::Config;
use super::ids::{Epoch, Instance, Millis, ReplicaId};
use super::interface::{Input, Output, Status, Timer};

/// One step a driver took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    /// `Driver::boot(config, me, now, seed)`.
    Boot { config: Config, me: ReplicaId, seed: u64 },
    /// `Driver::handle(now, input)`, accepted.
    Handle(Input),
    /// `Driver::fire_next(now)` fired this timer.
    Fire(Timer),
    /// `Driver::handle(now, input)`, refused: the replica is unchanged and
    /// returned no outputs. Recorded so that the validator holds every
    /// refusal to the model, which allows only some (a message of an older
    /// generation).
    Refused(Input),
}

/// A recorded step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Steps of this driver before this one.
    pub seq: u64,
    /// The time the host passed in.
    pub now: Millis,
    pub step: Step,
    /// [`outputs_digest`] of every output the replica returned, timers
    /// included.
    pub outputs: u64,
    /// After the step (a replica reboots itself into a newer generation).
    pub instance: Instance,
    pub phase: Status,
    pub epoch: Epoch,
}

/// A row of a host's trace store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Row {
    Step(Box<Entry>),
    /// This many steps were taken but not recorded (a bound was reached):
    /// the trace is incomplete from here on.
    Lost {
        steps: u64,
    },
}

impl Row {
    pub fn encode(&self) -> Vec<u8> {
        // Serializing plain data into a Vec cannot fail.
        postcard::to_allocvec(self).unwrap_or_default()
    }

    pub fn decode(bytes: &[u8]) -> Result<Row, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}

/// The digest of a step's outputs: xxh3 of their postcard encoding (the
/// same on every build and platform).
pub fn outputs_digest(outputs: &[Output]) -> u64 {
    xxh3_64(&postcard::to_allocvec(outputs).unwrap_or_default())
}

/// Appends one frame (an object's row) to a page.
pub fn push_frame(page: &mut Vec<u8>, object: u64, row: &[u8]) {
    page.extend_from_slice(&object.to_le_bytes());
    page.extend_from_slice(&u32::try_from(row.len()).unwrap_or(u32::MAX).to_le_bytes());
    page.extend_from_slice(row);
}

/// The frames of pages written one after another: `(object, row bytes)`,
/// or `None` at a truncated frame.
pub fn frames(mut bytes: &[u8]) -> impl Iterator<Item = Option<(u64, &[u8])>> {
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        let frame = (|| {
            let (object, rest) = bytes.split_first_chunk::<8>()?;
            let (len, rest) = rest.split_first_chunk::<4>()?;
            let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
            let row = rest.get(..len)?;
            bytes = rest.get(len..)?;
            Some((u64::from_le_bytes(*object), row))
        })();
        if frame.is_none() {
            bytes = &[];
        }
        Some(frame)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_a_truncated_one_is_reported() {
        let mut page = Vec::new();
        push_frame(&mut page, 7, b"abc");
        push_frame(&mut page, 9, b"");
        let all: Vec<_> = frames(&page).collect();
        assert_eq!(all, [Some((7, &b"abc"[..])), Some((9, &b""[..]))]);
        let cut = &page[..page.len() - 5];
        assert_eq!(frames(cut).collect::<Vec<_>>(), [Some((7, &b"abc"[..])), None]);
    }

    #[test]
    fn rows_round_trip() {
        let row = Row::Lost { steps: 3 };
        assert_eq!(Row::decode(&row.encode()).ok(), Some(row));
    }
}
