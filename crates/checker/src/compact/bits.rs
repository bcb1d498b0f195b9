//! Subsets of a constant set.

use std::marker::PhantomData;

use super::elem::Elem;

/// A subset of a constant set of at most 64 elements (element type `K`),
/// as a bitset: bit `i` for the element at position `i`. Iterates in the
/// set's order, as a `BTreeSet` of positions would.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Bits<K> {
    bits: u64,
    elem: PhantomData<K>,
}

impl<K> Default for Bits<K> {
    fn default() -> Self {
        Bits { bits: 0, elem: PhantomData }
    }
}

impl<K: Elem> Bits<K> {
    /// The largest set position a `Bits` can hold, plus one.
    pub const CAP: usize = 64;

    pub fn contains(&self, x: &K) -> bool {
        self.bits & (1 << x.index()) != 0
    }

    pub fn insert(&mut self, x: K) {
        self.bits |= 1 << x.index();
    }

    pub fn clear(&mut self) {
        self.bits = 0;
    }

    pub fn is_empty(&self) -> bool {
        self.bits == 0
    }

    pub fn len(&self) -> usize {
        self.bits.count_ones() as usize
    }

    /// The elements, in the set's order.
    pub fn iter(&self) -> impl Iterator<Item = K> + '_ {
        (0..Self::CAP).filter(|&i| self.bits & (1 << i) != 0).map(K::at)
    }
}

impl<K: Elem> FromIterator<K> for Bits<K> {
    fn from_iter<I: IntoIterator<Item = K>>(items: I) -> Self {
        let mut s = Bits::default();
        for x in items {
            s.insert(x);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::elem!(Replica, "Replicas", "A replica, for the tests.");

    #[test]
    fn a_set_of_positions() {
        let mut s: Bits<Replica> = Bits::default();
        assert!(s.is_empty());
        s.insert(Replica(2));
        s.insert(Replica(0));
        s.insert(Replica(2));
        assert!(s.contains(&Replica(0)) && !s.contains(&Replica(1)));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![Replica(0), Replica(2)]);
        assert_eq!(s.len(), 2);
        assert_eq!(s, [Replica(2), Replica(0)].into_iter().collect());
    }
}
