//! `always` properties for models whose checks are chosen by name at run
//! time (from the cfg's INVARIANTS). stateright's properties are plain
//! `fn` pointers, not closures, so property number `I` is one function
//! that asks the model whether its check number `I` holds.

use stateright::{Model, Property};

use crate::cfg::{CfgError, TlcConfig};

/// A model whose checks are numbered in the order of the cfg.
pub trait NumberedChecks: Model {
    /// The checks' names, in the cfg's order.
    fn check_names(&self) -> &[&'static str];

    /// Whether check number `i` holds in `s`.
    fn holds(&self, i: usize, s: &Self::State) -> bool;
}

/// The names of a cfg's checks, and the mirror's own checks among them.
pub type Named<F> = (Vec<&'static str>, Vec<(&'static str, F)>);

/// The checks a cfg asks of `module`, a mirror built on another, in the
/// cfg's order: their names, and those that are the mirror's own (`own`,
/// by name) with their conditions; any other name must be one the extended
/// mirror knows (`inherited` gives its name as that mirror spells it).
pub fn named_checks<F: Copy>(
    module: &str,
    cfg: &TlcConfig,
    own: &[(&'static str, F)],
    inherited: impl Fn(&str) -> Option<&'static str>,
) -> Result<Named<F>, CfgError> {
    let mut names = Vec::new();
    let mut checks = Vec::new();
    for name in cfg.invariants.iter().chain(&cfg.properties) {
        match own.iter().find(|(n, _)| n == name) {
            Some(&check) => {
                names.push(check.0);
                checks.push(check);
            }
            None => names.push(
                inherited(name)
                    .ok_or_else(|| CfgError::UnknownDefinition { module: module.into(), name: name.clone() })?,
            ),
        }
    }
    if names.len() > MOST {
        return Err(CfgError::Unsupported(format!("{module} checks at most {MOST} properties")));
    }
    Ok((names, checks))
}

fn numbered<M: NumberedChecks, const I: usize>(m: &M, s: &M::State) -> bool {
    m.holds(I, s)
}

/// The most checks one model can have.
pub const MOST: usize = 24;

/// One `always` property per check. A model with no check gets the trivial
/// one: stateright explores only the initial states of a model with no
/// properties, and TLC with nothing to check still explores all.
pub fn always<M: NumberedChecks>(m: &M) -> Vec<Property<M>> {
    let table: [fn(&M, &M::State) -> bool; MOST] = [
        numbered::<M, 0>,
        numbered::<M, 1>,
        numbered::<M, 2>,
        numbered::<M, 3>,
        numbered::<M, 4>,
        numbered::<M, 5>,
        numbered::<M, 6>,
        numbered::<M, 7>,
        numbered::<M, 8>,
        numbered::<M, 9>,
        numbered::<M, 10>,
        numbered::<M, 11>,
        numbered::<M, 12>,
        numbered::<M, 13>,
        numbered::<M, 14>,
        numbered::<M, 15>,
        numbered::<M, 16>,
        numbered::<M, 17>,
        numbered::<M, 18>,
        numbered::<M, 19>,
        numbered::<M, 20>,
        numbered::<M, 21>,
        numbered::<M, 22>,
        numbered::<M, 23>,
    ];
    let names = m.check_names();
    if names.is_empty() {
        return vec![Property::always("TRUE", |_, _| true)];
    }
    if names.len() > MOST {
        // Never check fewer than asked: a run fails at once instead.
        return vec![Property::always("more checks than properties::MOST", |_, _| false)];
    }
    names.iter().zip(table).map(|(&name, holds)| Property::always(name, holds)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter from 0 to 3, with checks "below N" for each N given.
    struct Below(Vec<&'static str>, Vec<u8>);

    impl Model for Below {
        type State = u8;
        type Action = ();

        fn init_states(&self) -> Vec<u8> {
            vec![0]
        }

        fn actions(&self, s: &u8, actions: &mut Vec<()>) {
            if *s < 3 {
                actions.push(());
            }
        }

        fn next_state(&self, s: &u8, _: ()) -> Option<u8> {
            Some(s + 1)
        }
    }

    impl NumberedChecks for Below {
        fn check_names(&self) -> &[&'static str] {
            &self.0
        }

        fn holds(&self, i: usize, s: &u8) -> bool {
            self.1.get(i).is_none_or(|n| s < n)
        }
    }

    #[test]
    fn property_number_i_asks_check_number_i() {
        let m = Below(vec!["Below9", "Below2", "Below4"], vec![9, 2, 4]);
        let props = always(&m);
        let names: Vec<_> = props.iter().map(|p| p.name).collect();
        assert_eq!(names, ["Below9", "Below2", "Below4"]);
        let verdicts: Vec<_> = props.iter().map(|p| (p.condition)(&m, &3)).collect();
        assert_eq!(verdicts, [true, false, true]);
    }

    #[test]
    fn no_check_is_the_trivial_property_and_too_many_fail() {
        let none = Below(Vec::new(), Vec::new());
        let props = always(&none);
        assert_eq!(props.len(), 1);
        assert!((props[0].condition)(&none, &0));
        let many = Below(vec!["Below9"; MOST + 1], vec![9; MOST + 1]);
        let props = always(&many);
        assert_eq!(props.len(), 1);
        assert!(!(props[0].condition)(&many, &0), "a model is never checked for fewer checks than it asked");
    }
}
