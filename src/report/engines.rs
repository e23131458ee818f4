//! What the report says about each engine: its summary line and the invariants of a proof.
//! The engines fill these in; the report owns them because it prints them.

use serde::Serialize;
use std::collections::BTreeMap;

/// A formula that holds whenever `block` is entered (an inductive invariant of a proof), in
/// SMT-LIB over the registers' names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Invariant {
    pub block: String,
    pub formula: String,
}

/// One engine's run, as the report shows it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EngineSummary {
    /// `reachable`, `unreachable`, `unknown` or `cancelled`.
    pub outcome: String,
    pub reason: String,
    pub seconds: f64,
    /// Counters of the engine's work (states explored, models tried, executions, ...).
    pub stats: BTreeMap<String, u64>,
}
