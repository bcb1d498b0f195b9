//! Elements of the constant sets, as small integers.

use std::fmt::Debug;
use std::hash::Hash;

/// An element of one constant set (`Claims`, `Replicas`, ...): its position
/// in the set as the cfg lists it. Declared with [`elem!`](crate::elem).
pub trait Elem: Copy + Eq + Ord + Hash + Debug + Default {
    /// The constant naming the set, e.g. `"Claims"`: where
    /// [`Names`](super::Names) finds the elements' names.
    const SET: &'static str;
    /// The element at position `i`.
    fn at(i: usize) -> Self;
    /// Its position.
    fn index(self) -> usize;
    /// A position no set reaches (sets have fewer than 255 elements): what
    /// [`OrNone`] uses for the model value outside the set.
    const NONE: Self;
}

/// Declares an element type of a constant set:
/// `elem!(Claim, "Claims", "an element of `Claims`")`.
#[macro_export]
macro_rules! elem {
    ($name:ident, $set:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
        pub struct $name(pub u8);

        impl $crate::compact::Elem for $name {
            const SET: &'static str = $set;
            fn at(i: usize) -> Self {
                $name(u8::try_from(i).unwrap_or(u8::MAX))
            }
            fn index(self) -> usize {
                usize::from(self.0)
            }
            const NONE: Self = $name(u8::MAX);
        }
    };
}

/// A lone model value (`NoWorker`, `Accepted`): its index among the model
/// values of the name table. Model values are equal exactly when their
/// names are, as in TLC: a cfg that gives two constants the same model
/// value (`NoResponse = Accepted`) gets one index for both.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Mv(pub u8);

/// An element of a constant set or one model value outside it, such as
/// `Workers \cup {NoWorker}` (the spec assumes `NoWorker \notin Workers`):
/// one byte, [`OrNone::NONE`] for the model value. Compares with an
/// element directly (`lease[c] = w`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct OrNone<E>(E);

impl<E: Elem> OrNone<E> {
    /// The model value outside the set (`NoWorker`).
    pub const NONE: OrNone<E> = OrNone(E::NONE);

    /// The element, or `None` for the model value.
    pub fn get(self) -> Option<E> {
        (self != Self::NONE).then_some(self.0)
    }
}

impl<E: Elem> Default for OrNone<E> {
    fn default() -> Self {
        Self::NONE
    }
}

impl<E: Elem> From<E> for OrNone<E> {
    fn from(e: E) -> Self {
        OrNone(e)
    }
}

impl<E: Elem> PartialEq<E> for OrNone<E> {
    fn eq(&self, e: &E) -> bool {
        self.0 == *e && *self != Self::NONE
    }
}

/// Hashes a fieldless enum as its one-byte discriminant (a derived `Hash`
/// writes a machine word): `hash_as_byte!(DurableState, ActivationStage)`.
#[macro_export]
macro_rules! hash_as_byte {
    ($($t:ty),*) => {$(
        impl ::std::hash::Hash for $t {
            #[inline]
            fn hash<H: ::std::hash::Hasher>(&self, h: &mut H) {
                h.write_u8(*self as u8);
            }
        }
    )*};
}
