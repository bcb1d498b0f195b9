//! Compact states: the pieces a mirror's state is built from so that a
//! state is a few dozen bytes on the stack, with no heap allocation, no
//! name and no pointer in what is hashed and compared.
//!
//! - [`Names`] (`names.rs`): the name table of one model, built from its
//!   cfg: the elements of each constant set and the lone model values, by
//!   name. A model builds one and leaks it ([`Names::leak`]); its states
//!   carry the `'static` reference as a [`Ctx`], which compares equal and
//!   hashes as nothing, so printing (traces, the explorer, snapshots, JSON)
//!   reads the spec's names while the state itself holds only numbers.
//! - [`Elem`] and [`elem!`](crate::elem) (`elem.rs`): an element of a
//!   constant set as its position in the cfg's set (one `u8` newtype per
//!   set: `Claim`, `Worker`, `Replica`, ...), and [`Mv`], a lone model value
//!   as its index in the table (two constants given the same model value get
//!   the same index, as in TLC); [`OrNone`], an element or the model value
//!   outside its set (`Workers \cup {NoWorker}`).
//! - [`Func`] (`func.rs`): a function over a constant set, `[D -> V]`, as a
//!   fixed array indexed by the element's position.
//! - [`Bits`] (`bits.rs`): a subset of a constant set, as a bitset.
//! - [`SortedSet`] (`sorted_set.rs`): a set of records (messages, writes),
//!   as a sorted small vector, inline up to a few elements.
//!
//! A new mirror adopts them in four steps (docs/verification.md has the
//! walk-through): declare one `elem!` per constant set; register the sets
//! and model values with [`Names`] when the model is built from the cfg;
//! write the state with `Func`, `Bits`, `SortedSet` and plain enums and
//! integers, plus a `Ctx` field; print it in `TlaState::variables` through
//! the table (`Func::show`, [`Names::name`], [`Names::value`]).

mod bits;
mod elem;
mod func;
mod names;
mod sorted_set;

pub use bits::Bits;
pub use elem::{Elem, Mv, OrNone};
pub use func::Func;
pub use names::{Ctx, Names};
pub use sorted_set::SortedSet;
