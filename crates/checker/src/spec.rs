//! What a stateright model must offer to be run as a spec mirror: built
//! from a `.cfg`, states printed with the spec's variable names, actions
//! printed as TLA+ action instances.

use std::fmt;
use std::hash::Hash;

use stateright::Model;

use crate::cfg::{CfgError, TlcConfig};
use crate::engine::Liveness;

/// A state whose variables can be printed under their TLA+ names, in
/// TLA+-like notation (`[r0 |-> "ready", r1 |-> "recovering"]`, `{}`, ...).
pub trait TlaState {
    /// `(variable name, value)` for every TLA+ variable, in the order of the
    /// module's `VARIABLES` declaration.
    fn variables(&self) -> Vec<(&'static str, String)>;
}

/// A stateright model that mirrors (or refines) a TLA+ module. Its
/// actions print through `Model::format_action` (traces, the explorer).
pub trait Mirror:
    Model<
        State: TlaState + Hash + Clone + PartialEq + fmt::Debug + Send + Sync + 'static,
        Action: fmt::Debug + Clone + PartialEq + Send + Sync + 'static,
    > + Sized
    + Send
    + Sync
    + 'static
{
    /// The TLA+ module this model mirrors, e.g. `"Handoff"`.
    const MODULE: &'static str;

    /// Named protocol mutations (`--mutation NAME`) the checker must catch.
    const MUTATIONS: &'static [&'static str];

    /// Whether the model has reductions: state-space savings that rest on
    /// an argument (`--no-reduction` turns them off and checks the
    /// argument instead; docs/verification.md 1.8). Mirrors have none.
    const REDUCTIONS: bool = false;

    /// Builds the model from the cfg's constants, checking only the
    /// invariants and properties the cfg lists. Unknown constants, unknown
    /// invariant names, wrong types and unknown mutations are errors.
    fn from_cfg(cfg: &TlcConfig, mutation: Option<&str>) -> Result<Self, CfgError>;

    /// The kinds of step the model takes, by name, for the coverage
    /// counts: a mirror's are the spec's action names, in `Next` order (so
    /// that they line up with TLC's coverage); every kind can fire on some
    /// cfg.
    fn action_names(&self) -> Vec<&'static str>;

    /// The position in [`Mirror::action_names`] of `action`'s kind.
    fn action_kind(&self, action: &Self::Action) -> usize;

    /// The liveness properties the cfg asks for (`<>Q`, `P ~> Q`, `<>[]Q`),
    /// checked by the engine on every behaviour, cycles included. A mirror
    /// has none: the TLA+ checker checks the specs' temporal properties.
    fn liveness(&self) -> Vec<Liveness<Self>> {
        Vec::new()
    }
}

/// Renders a state's variables as a TLA+ conjunction, one variable a line:
/// `/\ mem = [...]`. Used for `Debug` (the web explorer) and traces.
pub fn fmt_variables(state: &impl TlaState, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for (i, (name, value)) in state.variables().into_iter().enumerate() {
        if i > 0 {
            f.write_str("\n")?;
        }
        write!(f, "/\\ {name} = {value}")?;
    }
    Ok(())
}

/// The names of a table of named mutations, for [`Mirror::MUTATIONS`]: a
/// model's one table is the source of both its names and, through
/// [`named`], the lookup of a name.
pub const fn names<T: Copy, const N: usize>(table: &[(&'static str, T); N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].0;
        i += 1;
    }
    out
}

/// The entry of `table` called `name`.
pub fn named<T: Copy>(table: &[(&str, T)], name: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == name).map(|&(_, t)| t)
}

/// Fails for a mutation name the model does not define.
pub fn check_mutation(module: &str, known: &[&str], mutation: Option<&str>) -> Result<(), CfgError> {
    match mutation {
        Some(m) if !known.contains(&m) => {
            Err(CfgError::Unsupported(format!("{module} has no mutation {m:?}; known: {}", known.join(", "))))
        }
        _ => Ok(()),
    }
}

/// TLA+ notation helpers for `TlaState` implementations.
pub mod tla {
    use std::fmt::Display;

    /// `{a, b}`
    pub fn set<T: Display>(items: impl IntoIterator<Item = T>) -> String {
        let parts: Vec<String> = items.into_iter().map(|x| x.to_string()).collect();
        format!("{{{}}}", parts.join(", "))
    }

    /// `[a |-> x, b |-> y]` (a function or a record)
    pub fn func<K: Display, V: Display>(pairs: impl IntoIterator<Item = (K, V)>) -> String {
        let parts: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k} |-> {v}")).collect();
        format!("[{}]", parts.join(", "))
    }

    /// `TRUE` or `FALSE`
    pub fn boolean(b: bool) -> &'static str {
        if b { "TRUE" } else { "FALSE" }
    }

    /// `"text"` (a TLA+ string)
    pub fn string(s: &str) -> String {
        format!("{s:?}")
    }
}
