//! Sets of records.

use smallvec::SmallVec;

/// A finite set of records (messages in flight, pending writes), kept as a
/// sorted vector without duplicates, so that equal sets are equal vectors
/// (and hash alike) and iteration is in the records' order, as a
/// `BTreeSet`'s. Up to `N` records live inline in the state; more spill to
/// the heap.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct SortedSet<T, const N: usize>(SmallVec<[T; N]>);

impl<T, const N: usize> Default for SortedSet<T, N> {
    fn default() -> Self {
        SortedSet(SmallVec::new())
    }
}

impl<T: Ord, const N: usize> SortedSet<T, N> {
    pub fn contains(&self, x: &T) -> bool {
        self.0.binary_search(x).is_ok()
    }

    /// Adds `x`; `false` if it was there already.
    pub fn insert(&mut self, x: T) -> bool {
        match self.0.binary_search(&x) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, x);
                true
            }
        }
    }

    /// Removes `x`; `false` if it was not there.
    pub fn remove(&mut self, x: &T) -> bool {
        match self.0.binary_search(x) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The records, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }

    /// Keeps the records for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.0.retain(|x| keep(x));
    }
}

impl<T: Ord, const N: usize> Extend<T> for SortedSet<T, N> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for x in items {
            self.insert(x);
        }
    }
}

impl<T: Ord, const N: usize> FromIterator<T> for SortedSet<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut s = SortedSet::default();
        s.extend(items);
        s
    }
}

impl<'a, T, const N: usize> IntoIterator for &'a SortedSet<T, N> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_one_sorted_copy_of_each_record() {
        let mut s: SortedSet<u8, 2> = [3, 1, 2].into_iter().collect();
        assert!(!s.insert(2));
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![1, 2, 3]);
        assert!(s.remove(&1) && !s.remove(&1));
        assert_eq!(s, [3, 2].into_iter().collect());
        assert!(s.contains(&3) && !s.contains(&1));
    }
}
