//! Functions over a constant set.

use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use super::elem::Elem;
use super::names::Names;
use crate::spec::tla;

/// `[D -> V]` for a constant set `D` of at most `CAP` elements (its
/// element type `K`): a fixed array indexed by position. The slots past
/// the set's size hold `V::default()` in every state, so they change no
/// comparison and no hash.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Func<K, V, const CAP: usize = 4> {
    values: [V; CAP],
    domain: PhantomData<K>,
}

impl<K: Elem, V: Copy + Default, const CAP: usize> Func<K, V, CAP> {
    /// `[x \in D |-> f(x)]` for the set `domain` (every element of `D`).
    pub fn new(domain: &[K], mut f: impl FnMut(K) -> V) -> Self {
        let mut values = [V::default(); CAP];
        for &x in domain {
            values[x.index()] = f(x);
        }
        Func { values, domain: PhantomData }
    }

    /// `[x \in D |-> v]`
    pub fn constant(domain: &[K], v: V) -> Self {
        Func::new(domain, |_| v)
    }

    /// Every function in `[D -> range]`, in a fixed order (the last element
    /// of `D` varies fastest).
    pub fn all(domain: &[K], range: &[V]) -> Vec<Self> {
        domain.iter().fold(vec![Func::constant(domain, V::default())], |partial, &x| {
            partial
                .iter()
                .flat_map(|f| {
                    range.iter().map(move |&v| {
                        let mut g = *f;
                        g[x] = v;
                        g
                    })
                })
                .collect()
        })
    }

    /// `(x, f[x])` for every `x` of `domain`.
    pub fn on<'a>(&'a self, domain: &'a [K]) -> impl Iterator<Item = (K, V)> + 'a {
        domain.iter().map(|&x| (x, self[x]))
    }

    /// The function on `domain` in TLA+ notation, `[c1 |-> v, c2 |-> w]`,
    /// each value printed by `show`.
    pub fn show(&self, names: &Names, domain: &[K], show: impl Fn(V) -> String) -> String {
        tla::func(domain.iter().map(|&x| (names.name(x).to_string(), show(self[x]))))
    }
}

/// The values one after the other (no length: it is the same in every
/// state), so that a function of bytes is a few bytes to hash.
impl<K, V: Hash, const CAP: usize> Hash for Func<K, V, CAP> {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        for v in &self.values {
            v.hash(h);
        }
    }
}

impl<K: Elem, V, const CAP: usize> Index<K> for Func<K, V, CAP> {
    type Output = V;
    fn index(&self, x: K) -> &V {
        &self.values[x.index()]
    }
}

impl<K: Elem, V, const CAP: usize> IndexMut<K> for Func<K, V, CAP> {
    fn index_mut(&mut self, x: K) -> &mut V {
        &mut self.values[x.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::elem!(Claim, "Claims", "A claim, for the tests.");

    #[test]
    fn all_enumerates_every_function_in_order() {
        let domain = [Claim(0), Claim(1)];
        let all: Vec<Func<Claim, u8>> = Func::all(&domain, &[1, 2]);
        let listed: Vec<Vec<u8>> = all.iter().map(|f| f.on(&domain).map(|(_, v)| v).collect()).collect();
        assert_eq!(listed, vec![vec![1, 1], vec![1, 2], vec![2, 1], vec![2, 2]]);
        assert_eq!(all[1], Func::new(&domain, |c| c.0 + 1));
    }
}
