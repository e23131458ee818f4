//! Constrained Horn clauses solved by Z3's Horn engine (Spacer) on a worker thread.

use super::logic::note_context;
use super::worker::in_worker;
use std::time::Duration;

/// What Z3's Horn engine said of a set of constrained Horn clauses.
#[derive(Debug)]
pub enum HornAnswer {
    /// The clauses have a model: the interpretation of every predicate (SMT-LIB
    /// `define-fun`s), which are inductive invariants.
    Solved(String),
    /// No model: the query is derivable (in the clauses' over-approximation).
    Refuted,
    /// No answer within the time, or interrupted: why.
    Unknown(String),
}

/// Solves the Horn clauses `smtlib` (declarations and assertions, see [`crate::chc`]) with
/// Z3's Horn engine (Spacer) on a worker thread of its own context, until `timeout` or until
/// `cancel` is set (see [`in_worker`]).
pub fn check_horn(smtlib: &str, timeout: Duration, cancel: &std::sync::atomic::AtomicBool) -> HornAnswer {
    // With bit-vector predicates only, Z3 picks its Datalog engine, which tabulates 2^32
    // states; Spacer is the engine for invariants. (A global parameter: read by the contexts
    // created after it, and only Horn problems look at it.)
    static SPACER: std::sync::Once = std::sync::Once::new();
    SPACER.call_once(|| z3::set_global_param("fp.engine", "spacer"));
    let text = smtlib.to_string();
    let work = move |_: &dyn Fn() -> bool| match {
        note_context();
        z3::Solver::new_for_logic("HORN")
    } {
        None => HornAnswer::Unknown("Z3 has no HORN logic".into()),
        Some(solver) => {
            solver.from_string(text);
            match solver.check() {
                z3::SatResult::Sat => HornAnswer::Solved(solver.get_model().map(|m| m.to_string()).unwrap_or_default()),
                z3::SatResult::Unsat => HornAnswer::Refuted,
                z3::SatResult::Unknown => HornAnswer::Unknown(solver.get_reason_unknown().unwrap_or_else(|| "unknown".into())),
            }
        }
    };
    in_worker("z3-horn", timeout, cancel, work).unwrap_or_else(HornAnswer::Unknown)
}
