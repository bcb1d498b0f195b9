//! The set of states met so far, as fingerprints, each with its parent's:
//! 16 bytes a state (about 28 with the table's slack), however large the
//! state.
//!
//! Most lookups find a known state (a few dozen steps reach each new one),
//! and in a table of hundreds of megabytes each lookup costs a cache miss:
//! the table is open-addressed with linear probing and keeps a fingerprint
//! and its parent side by side, so a lookup touches one cache line, not the
//! two (control bytes, then the bucket) of a general-purpose map. It is
//! sharded behind mutexes: with a handful of threads and hundreds of shards
//! two threads rarely want the same shard, and each shard grows on its own
//! (no pause to rehash everything, no doubled peak).

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::fingerprint::Fingerprint;

const SHARDS: usize = 256;

/// The parent of an initial state (fingerprints are never 0).
pub const NO_PARENT: Fingerprint = 0;

/// An empty slot (fingerprints are never 0).
const EMPTY: Fingerprint = 0;

/// One shard: open addressing, linear probing, at most 3/4 full.
struct Shard {
    /// `(fingerprint, parent)`; a power-of-two number of them.
    slots: Vec<(Fingerprint, Fingerprint)>,
    len: usize,
}

impl Shard {
    const INITIAL: usize = 1 << 10;

    fn new() -> Shard {
        Shard { slots: vec![(EMPTY, NO_PARENT); Shard::INITIAL], len: 0 }
    }

    /// The slot holding `fp`, or the empty one where it would go.
    fn find(&self, fp: Fingerprint) -> usize {
        let mask = self.slots.len() - 1;
        // The low bits: the shard was chosen by others.
        let mut i = fp as usize & mask;
        loop {
            let key = self.slots[i].0;
            if key == fp || key == EMPTY {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    fn insert(&mut self, fp: Fingerprint, parent: Fingerprint) -> bool {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let i = self.find(fp);
        if self.slots[i].0 == fp {
            return false;
        }
        self.slots[i] = (fp, parent);
        self.len += 1;
        true
    }

    fn get(&self, fp: Fingerprint) -> Option<Fingerprint> {
        let (key, parent) = self.slots[self.find(fp)];
        (key == fp).then_some(parent)
    }

    fn grow(&mut self) {
        let doubled = vec![(EMPTY, NO_PARENT); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        for (fp, parent) in old.into_iter().filter(|&(fp, _)| fp != EMPTY) {
            let i = self.find(fp);
            self.slots[i] = (fp, parent);
        }
    }
}

/// Fingerprint -> parent fingerprint ([`NO_PARENT`] for initial states).
pub struct Visited {
    shards: Box<[Padded]>,
}

/// A shard's lock on a cache line of its own: two locks on one line would
/// send it from core to core twice as often.
#[repr(align(128))]
struct Padded(Mutex<Shard>);

impl Default for Visited {
    fn default() -> Visited {
        Visited { shards: (0..SHARDS).map(|_| Padded(Mutex::new(Shard::new()))).collect() }
    }
}

impl Visited {
    /// Records `fp`, reached from `parent`; `false` if it was already known.
    pub fn insert(&self, fp: Fingerprint, parent: Fingerprint) -> bool {
        self.shard(fp).insert(fp, parent)
    }

    /// The parent `fp` was first reached from.
    pub fn parent(&self, fp: Fingerprint) -> Option<Fingerprint> {
        self.shard(fp).get(fp)
    }

    /// How many states are known.
    pub fn count(&self) -> usize {
        self.shards.iter().map(|s| lock(&s.0).len).sum()
    }

    /// The path of fingerprints from an initial state to `fp`.
    pub fn path_to(&self, fp: Fingerprint) -> Vec<Fingerprint> {
        let mut path = vec![fp];
        let mut at = fp;
        while let Some(parent) = self.parent(at).filter(|&p| p != NO_PARENT) {
            path.push(parent);
            at = parent;
        }
        path.reverse();
        path
    }

    /// The shard of `fp`: bits the shard's own table does not use.
    fn shard(&self, fp: Fingerprint) -> MutexGuard<'_, Shard> {
        lock(&self.shards[(fp >> 40) as usize % SHARDS].0)
    }
}

/// A worker that panicked cannot have left a shard half-written (an insert
/// either grows the table, which replaces it whole, or writes one slot), so
/// a poisoned lock still guards a good table.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_states_and_their_parents() {
        let v = Visited::default();
        assert!(v.insert(7, NO_PARENT));
        assert!(!v.insert(7, 9));
        assert!(v.insert(9, 7));
        assert!(v.insert(11, 9));
        assert_eq!(v.count(), 3);
        assert_eq!(v.path_to(11), vec![7, 9, 11]);
    }

    #[test]
    fn grows_without_losing_anything() {
        let v = Visited::default();
        // Many fingerprints in one shard, and colliding low bits.
        let fps: Vec<u64> = (1..=10_000u64).map(|i| i << 12).collect();
        for (i, &fp) in fps.iter().enumerate() {
            assert!(v.insert(fp, i as u64));
        }
        assert_eq!(v.count(), fps.len());
        for (i, &fp) in fps.iter().enumerate() {
            assert!(!v.insert(fp, 0));
            assert_eq!(v.parent(fp), Some(i as u64));
        }
        assert_eq!(v.parent(3), None);
    }
}
