//! The name table of one model.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use super::elem::{Elem, Mv};
use crate::cfg::{CfgError, TlcConfig};

/// The names of a model's constant sets' elements and of its lone model
/// values, as the cfg gives them.
#[derive(Debug, Default)]
pub struct Names {
    /// `(constant, element names)`, e.g. `("Claims", ["c1", "c2"])`.
    sets: Vec<(String, Vec<String>)>,
    /// The lone model values, each name once.
    values: Vec<String>,
}

impl Names {
    /// Registers the constant set `constant` of the cfg (a non-empty set of
    /// distinct model values) for the element type `E`, whose functions
    /// hold at most `cap` elements; returns its elements.
    pub fn set<E: Elem>(&mut self, cfg: &TlcConfig, cap: usize) -> Result<Vec<E>, CfgError> {
        let names = cfg.model_value_set(E::SET)?;
        if names.len() > cap.min(usize::from(u8::MAX)) {
            return Err(CfgError::Unsupported(format!(
                "{} has {} elements; the mirror's states hold at most {cap}",
                E::SET,
                names.len()
            )));
        }
        let elements = (0..names.len()).map(E::at).collect();
        self.sets.push((E::SET.to_string(), names));
        Ok(elements)
    }

    /// Registers a set derived from another by the model (e.g. `Peers`),
    /// under its own constant name, with the names of `elements`.
    pub fn subset<E: Elem>(&mut self, name: &str, elements: &[E]) {
        let names = elements.iter().map(|&e| self.name(e).to_string()).collect();
        self.sets.push((name.to_string(), names));
    }

    /// The model value the cfg gives constant `constant`.
    pub fn value(&mut self, cfg: &TlcConfig, constant: &str) -> Result<Mv, CfgError> {
        let name = cfg.model_value(constant)?;
        Ok(self.intern(&name))
    }

    /// The model value called `name`.
    pub fn intern(&mut self, name: &str) -> Mv {
        let i = self.values.iter().position(|v| v == name).unwrap_or_else(|| {
            self.values.push(name.to_string());
            self.values.len() - 1
        });
        Mv(u8::try_from(i).unwrap_or(u8::MAX))
    }

    /// The names of the elements of the set `constant`.
    pub fn elements(&self, constant: &str) -> &[String] {
        self.sets.iter().find(|(c, _)| c == constant).map_or(&[], |(_, names)| names.as_slice())
    }

    /// The name of element `e`; `?` for a position outside its set (which
    /// only a bug can make, and `TypeOK` reports).
    pub fn name<E: Elem>(&self, e: E) -> &str {
        self.elements(E::SET).get(e.index()).map_or("?", String::as_str)
    }

    /// The name of model value `v`.
    pub fn model_value(&self, v: Mv) -> &str {
        self.values.get(usize::from(v.0)).map_or("?", String::as_str)
    }

    /// The element of set `E` called `name`, if any.
    pub fn find<E: Elem>(&self, name: &str) -> Option<E> {
        self.elements(E::SET).iter().position(|n| n == name).map(E::at)
    }

    /// Leaks the table: states print themselves through it, so it lives as
    /// long as the process (a few hundred bytes per model built).
    pub fn leak<T>(table: T) -> &'static T {
        Box::leak(Box::new(table))
    }
}

/// A model's name table (or a struct holding it) as its states carry it:
/// a `'static` reference that every state of the model shares. It compares
/// equal to any other and hashes as nothing, so it is no part of a state's
/// identity.
pub struct Ctx<T: 'static>(pub &'static T);

impl<T> Clone for Ctx<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Ctx<T> {}

impl<T> PartialEq for Ctx<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<T> Eq for Ctx<T> {}

impl<T> Hash for Ctx<T> {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl<T> Deref for Ctx<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0
    }
}

impl<T> fmt::Debug for Ctx<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Ctx")
    }
}
