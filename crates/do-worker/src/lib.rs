//! placeholder until the worker helper lands
