//! What the engines and the race exchange: engine kinds, findings and results, and the
//! [`Engine`] trait.

use super::context::Context;
use crate::replay::RunOutcome;
use crate::report::{Invariant, WitnessReport};
use crate::witness::Witness;
use serde::Serialize;
use std::collections::BTreeMap;

/// The engines, by the name `--engine` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The abstract path condition, solved with Z3 (proofs and models).
    Apc,
    /// Directed symbolic execution, pruned by the APC.
    Dse,
    /// Coverage-guided fuzzing (libFuzzer), seeded by APC models. Never proves.
    Fuzz,
    /// Constrained Horn clauses of the function, solved by Z3's Spacer. Only proves.
    Chc,
    /// k-induction over the Horn clauses' steps. Only proves.
    KInduction,
    /// Loop navigation: symbolic execution steered through loops by chain-counter constraint
    /// systems. Proves when its exploration is exhaustive.
    Nav,
}

impl EngineKind {
    pub const ALL: &'static [EngineKind] = &[EngineKind::Apc, EngineKind::Dse, EngineKind::Fuzz, EngineKind::Chc, EngineKind::KInduction, EngineKind::Nav];
    /// The portfolio without `--engine`, from the start. The Horn-clause provers join it late
    /// ([`EngineKind::LATE_DEFAULT`], see [`Late`](super::Late)): their clauses are solved quickly only for
    /// small loops (seconds to never for two nested ones), and from the start, beside the others
    /// on two cores, they would slow down their witnesses.
    pub const DEFAULT: &'static [EngineKind] = &[EngineKind::Apc, EngineKind::Dse, EngineKind::Fuzz];
    /// The provers the portfolio without `--engine` adds late (see [`Late`](super::Late)).
    pub const LATE_DEFAULT: &'static [EngineKind] = &[EngineKind::Chc, EngineKind::KInduction];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Apc => "apc",
            EngineKind::Dse => "dse",
            EngineKind::Fuzz => "fuzz",
            EngineKind::Chc => "chc",
            EngineKind::KInduction => "k-induction",
            EngineKind::Nav => "nav",
        }
    }

    /// Parses a comma-separated list such as `apc,dse`.
    pub fn parse_list(s: &str) -> Result<Vec<EngineKind>, String> {
        let mut out = vec![];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let kind = EngineKind::ALL
                .iter()
                .copied()
                .find(|k| k.name() == part)
                .ok_or_else(|| format!("--engine: unknown engine `{part}` (known: {})", EngineKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")))?;
            if !out.contains(&kind) {
                out.push(kind);
            }
        }
        if out.is_empty() {
            return Err("--engine: name at least one engine".into());
        }
        Ok(out)
    }
}

/// What an engine found.
#[derive(Debug)]
pub enum Finding {
    /// A native replay of `witness` entered the target.
    Reached { witness: Witness, run: RunOutcome, report: WitnessReport },
    /// A proof that no run reaches the target (the reason says which).
    Unreachable(String),
    /// No answer: why (budget, cancelled, models that did not replay, ...).
    Unknown(String),
    /// No answer, but no witness can exist: no input makes the *replayed* program (external
    /// functions stubbed) enter the target. The witness searches stop; a proof may still come.
    NoWitness(String),
}

impl Finding {
    pub fn is_definite(&self) -> bool {
        matches!(self, Finding::Reached { .. } | Finding::Unreachable(_))
    }
}

/// The last model an engine replayed without reaching the target (for the report when nobody
/// wins).
pub type Attempt = WitnessReport;

/// What an engine hands back: its finding, its last unsuccessful attempt, its time split, its
/// statistics.
#[derive(Debug)]
pub struct EngineResult {
    pub finding: Finding,
    pub attempt: Option<Attempt>,
    pub timings: BTreeMap<String, f64>,
    pub stats: BTreeMap<String, u64>,
    /// With a proof by invariants: the invariants.
    pub invariants: Vec<Invariant>,
    /// A [`Late`](super::Late) engine the race ended before it started: left out of the report.
    pub never_started: bool,
}

impl EngineResult {
    pub fn new(finding: Finding) -> Self {
        EngineResult { finding, attempt: None, timings: BTreeMap::new(), stats: BTreeMap::new(), invariants: vec![], never_started: false }
    }
}

/// An engine of the portfolio. `run` returns at a definite finding, at `cx.deadline`, or soon
/// after `cx.cancel` is set.
pub trait Engine: Send {
    fn kind(&self) -> EngineKind;
    /// Whether the engine joins the race late ([`Late`](super::Late)): not reported if the race ends
    /// before it started.
    fn joins_late(&self) -> bool {
        false
    }
    fn run(self: Box<Self>, cx: &Context) -> EngineResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_lists_parse_and_refuse_unknown_names() {
        assert_eq!(EngineKind::parse_list("dse, apc,dse").unwrap(), vec![EngineKind::Dse, EngineKind::Apc]);
        assert!(EngineKind::parse_list("apc,klee").unwrap_err().contains("klee"));
        assert!(EngineKind::parse_list("").is_err());
    }
}
