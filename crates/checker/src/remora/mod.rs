//! 1:1 stateright mirror of `tla/RemoraClaimActivation.tla` (being written).
