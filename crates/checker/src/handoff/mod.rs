//! 1:1 stateright mirror of `tla/Handoff.tla` (being written).
