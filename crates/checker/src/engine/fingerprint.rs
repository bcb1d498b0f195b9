//! Fingerprints: what the search keeps of a state, and the [`Key`] that
//! tells apart a state reached owing different liveness properties.

use std::hash::{BuildHasher, Hash, Hasher};

/// A state's 64-bit hash, never 0 (0 marks "no parent").
pub type Fingerprint = u64;

/// The liveness properties a path owes (`liveness.rs`), bit `i` for the
/// model's `i`th `<>Q` or `P ~> Q` property.
pub type Pending = u64;

/// What the search tells apart: a state's fingerprint and the liveness
/// properties its path owes. `node` is what the visited set and the parents
/// hold: the fingerprint itself when nothing is owed (so a model without
/// liveness properties is searched exactly as one without), else a hash of
/// both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub node: Fingerprint,
    pub pending: Pending,
}

impl Key {
    pub fn new(fp: Fingerprint, pending: Pending) -> Key {
        let node = if pending == 0 {
            fp
        } else {
            foldhash::quality::FixedState::with_seed(0x1319_8a2e_0370_7344).hash_one((fp, pending)).max(1)
        };
        Key { node, pending }
    }
}

/// The fingerprint of a state (see [`Fingerprinter`]).
pub fn fingerprint<T: Hash>(value: &T) -> Fingerprint {
    Fingerprinter::default().of(value)
}

/// Fingerprints states: foldhash (quality) with a fixed seed, so that the
/// same state has the same fingerprint in every run and on every thread.
/// A derived `Hash` makes one small write per field; they are gathered
/// into a buffer first and hashed in one pass, several times fewer mixing
/// rounds than hashing each write. The buffer is kept between states.
#[derive(Default)]
pub struct Fingerprinter {
    bytes: Bytes,
}

impl Fingerprinter {
    pub fn of<T: Hash>(&mut self, value: &T) -> Fingerprint {
        self.bytes.0.clear();
        value.hash(&mut self.bytes);
        foldhash::quality::FixedState::with_seed(0x243f_6a88_85a3_08d3).hash_one(&self.bytes.0[..]).max(1)
    }
}

/// A `Hasher` that keeps what is written.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Hasher for Bytes {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.0.push(byte);
    }

    /// Never asked: the bytes are hashed by foldhash.
    fn finish(&self) -> u64 {
        0
    }
}
