//! The incremental solver shared by every state of one search.
//!
//! Each path-condition node gets a fresh guard literal `g` and the solver keeps `g → cond`
//! forever; a state's path condition is the list of its guards, passed as assumptions. So
//! jumping between states of a best-first frontier costs no push/pop replay, and Z3 keeps what it
//! learnt across states.

use super::state::{PathCondition, PcNode};
use std::rc::Rc;
use std::time::Instant;
use z3::ast::Bool;
use z3::{Model, SatResult, Solver};

/// Longest single query: a state whose query times out is given up, not decided.
const QUERY_MS: u32 = 3_000;

/// Queries end this long before the search's deadline.
const DEADLINE_MARGIN: std::time::Duration = std::time::Duration::from_millis(300);

pub struct PathSolver {
    pub solver: Solver,
    /// A second solver holding the APC at its base level (preprocessed once) and a copy of
    /// every path-condition implication: pruning queries go there, path queries never pay
    /// for the APC.
    apc: Option<Solver>,
    /// Nondet positions whose link to the APC's stream is asserted in `apc`.
    linked: u64,
    next_guard: u64,
    pub calls: u64,
    deadline: Instant,
    timeout_ms: u32,
}

/// The answer to a query.
#[derive(Debug, PartialEq, Eq)]
pub enum Sat {
    Yes,
    No,
    Unknown,
}

impl PathSolver {
    pub fn new(deadline: Instant) -> Self {
        PathSolver { solver: Solver::new(), apc: None, linked: 0, next_guard: 0, calls: 0, deadline, timeout_ms: 0 }
    }

    /// `pc ∧ cond` as a new path condition (the old one is unchanged, forks share it).
    pub fn extend(&mut self, pc: &PathCondition, cond: &Bool) -> PathCondition {
        if cond.as_bool() == Some(true) {
            return pc.clone();
        }
        self.next_guard += 1;
        let guard = Bool::new_const(format!("dse.g{}", self.next_guard));
        let imp = guard.implies(cond);
        if let Some(a) = &self.apc {
            a.assert(&imp);
        }
        self.solver.assert(&imp);
        PathCondition { head: Some(Rc::new(PcNode { parent: pc.head.clone(), guard, depth: pc.len() + 1 })) }
    }

    /// Milliseconds a query may take: at most `cap`, and ending [`DEADLINE_MARGIN`] before the
    /// deadline (Z3 overshoots its timeouts under load; the portfolio waits for every engine).
    fn budget_ms(&self, cap: u32) -> u32 {
        self.deadline.saturating_duration_since(Instant::now()).saturating_sub(DEADLINE_MARGIN).as_millis().clamp(1, cap as u128) as u32
    }

    fn set_timeout(&mut self) {
        let left = self.budget_ms(QUERY_MS);
        if left != self.timeout_ms {
            let mut p = z3::Params::new();
            p.set_u32("timeout", left);
            self.solver.set_params(&p);
            self.timeout_ms = left;
        }
    }

    /// Satisfiability of `pc ∧ extra`.
    pub fn check(&mut self, pc: &PathCondition, extra: &[Bool]) -> Sat {
        if extra.iter().any(|b| b.as_bool() == Some(false)) {
            return Sat::No;
        }
        self.set_timeout();
        self.calls += 1;
        let mut assumptions = pc.guards();
        assumptions.extend(extra.iter().filter(|b| b.as_bool() != Some(true)).cloned());
        match self.solver.check_assumptions(&assumptions) {
            SatResult::Sat => Sat::Yes,
            SatResult::Unsat => Sat::No,
            SatResult::Unknown => Sat::Unknown,
        }
    }

    /// Installs the APC for [`PathSolver::check_apc`] (before any path condition exists).
    pub fn set_apc(&mut self, apc: &Bool) {
        let s = Solver::new();
        s.assert(apc);
        self.apc = Some(s);
    }

    /// Satisfiability of `pc ∧ APC ∧ extra` within `ms` milliseconds, where nondet positions
    /// below `nondet` are tied to the APC's stream by `link`.
    pub fn check_apc(&mut self, pc: &PathCondition, extra: &[Bool], nondet: u64, link: &dyn Fn(u64) -> Bool, ms: u32) -> Sat {
        let Some(a) = &self.apc else { return Sat::Yes };
        while self.linked < nondet {
            a.assert(link(self.linked));
            self.linked += 1;
        }
        let left = self.budget_ms(ms);
        let mut p = z3::Params::new();
        p.set_u32("timeout", left);
        a.set_params(&p);
        self.calls += 1;
        a.push();
        for e in extra {
            a.assert(e);
        }
        let r = match a.check_assumptions(&pc.guards()) {
            SatResult::Sat => Sat::Yes,
            SatResult::Unsat => Sat::No,
            SatResult::Unknown => Sat::Unknown,
        };
        a.pop(1);
        r
    }

    /// Values of the named 64-bit counters in some model of the APC alone (the first guess of
    /// how often each loop runs).
    pub fn apc_counter_guess(&mut self, names: &[Vec<Option<String>>]) -> Vec<Vec<Option<u64>>> {
        let none = || names.iter().map(|l| vec![None; l.len()]).collect();
        let Some(a) = &self.apc else { return none() };
        let mut p = z3::Params::new();
        p.set_u32("timeout", self.budget_ms(2_000));
        a.set_params(&p);
        self.calls += 1;
        if a.check() != SatResult::Sat {
            return none();
        }
        let Some(m) = a.get_model() else { return none() };
        names
            .iter()
            .map(|l| l.iter().map(|n| n.as_ref().and_then(|n| m.eval(&z3::ast::BV::new_const(n.as_str(), 64), true)).and_then(|v| v.as_u64())).collect())
            .collect()
    }

    /// The model of the last satisfiable [`PathSolver::check`].
    pub fn model(&self) -> Option<Model> {
        self.solver.get_model()
    }
}
