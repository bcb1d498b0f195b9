//! The set of states met so far, as fingerprints, each with its parent's:
//! 16 bytes a state (plus the hash table's slack), however large the
//! state. Sharded behind mutexes: with a handful of threads and hundreds of
//! shards, two threads rarely want the same shard, and each shard grows on
//! its own (no pause to rehash everything, no doubled peak).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Mutex, MutexGuard, PoisonError};

use nohash_hasher::BuildNoHashHasher;

use super::Fingerprint;

const SHARDS: usize = 256;

/// One shard: fingerprint -> parent fingerprint.
type Shard = HashMap<Fingerprint, Fingerprint, BuildNoHashHasher<Fingerprint>>;

/// Fingerprint -> parent fingerprint ([`NO_PARENT`] for initial states).
pub struct Visited {
    shards: Box<[Mutex<Shard>]>,
}

/// The parent of an initial state (fingerprints are never 0).
pub const NO_PARENT: Fingerprint = 0;

impl Default for Visited {
    fn default() -> Visited {
        Visited { shards: (0..SHARDS).map(|_| Mutex::default()).collect() }
    }
}

impl Visited {
    /// Records `fp`, reached from `parent`; `false` if it was already known.
    pub fn insert(&self, fp: Fingerprint, parent: Fingerprint) -> bool {
        match self.shard(fp).entry(fp) {
            Entry::Vacant(e) => {
                e.insert(parent);
                true
            }
            Entry::Occupied(_) => false,
        }
    }

    /// The parent `fp` was first reached from.
    pub fn parent(&self, fp: Fingerprint) -> Option<Fingerprint> {
        self.shard(fp).get(&fp).copied()
    }

    /// How many states are known.
    pub fn count(&self) -> usize {
        (0..SHARDS).map(|i| lock(&self.shards[i]).len()).sum()
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

    /// The shard of `fp`: bits the table itself does not use (hashbrown
    /// takes the bucket from the low bits and a tag from the top seven).
    fn shard(
        &self,
        fp: Fingerprint,
    ) -> MutexGuard<'_, HashMap<Fingerprint, Fingerprint, BuildNoHashHasher<Fingerprint>>> {
        lock(&self.shards[(fp >> 32) as usize % SHARDS])
    }
}

/// A worker that panicked cannot have left a shard half-written (an insert
/// is one call), so a poisoned lock is still a good table.
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
}
