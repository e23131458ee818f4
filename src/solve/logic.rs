//! Which Z3 solver a query gets: the default portfolio, one made for the query's logic, or the
//! light `smt` tactic; and whether the calling thread has made its Z3 context yet.

use super::is_nonlinear;
use crate::expr::{Expr, ExprId, ExprPool, Sort};

/// Which Z3 solver a query gets.
#[derive(Clone, Copy, Debug)]
pub(super) enum SolverKind {
    /// Z3's default solver (its tactic portfolio): the APC's queries.
    Portfolio,
    /// The `smt` tactic alone: cheap to set up, for small checks (see [`check`]).
    Light,
    /// Polynomials in sum-of-monomials form, equations solved, then `smt` (see
    /// [`polynomial_solver`]).
    Polynomial,
}

thread_local! {
    /// Whether this thread has used Z3 through this module (so its context exists).
    static CONTEXT_MADE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Notes that the calling thread uses its Z3 context (see [`thread_has_context`]).
pub(super) fn note_context() {
    CONTEXT_MADE.with(|c| c.set(true));
}

/// Whether the calling thread has already made its Z3 context here (a solver, a race query,
/// an interruptible check): its next query then costs no context (6-15 ms of page faults).
/// The apc engine keeps its quick check when its build has solved something already.
pub fn thread_has_context() -> bool {
    CONTEXT_MADE.with(|c| c.get())
}

impl SolverKind {
    pub(super) fn solver(self, logic: Option<Logic>) -> z3::Solver {
        note_context();
        match (self, logic) {
            (SolverKind::Portfolio, Some(logic)) => logic.solver(),
            (SolverKind::Portfolio, None) => z3::Solver::new(),
            (SolverKind::Light, _) => light_solver(),
            (SolverKind::Polynomial, _) => polynomial_solver(),
        }
    }
}

/// The SMT-LIB logic of a quantifier-free query, for a solver made for it.
///
/// Z3 4.8's default solver builds its whole default tactic (a `cond` over a dozen logics, each
/// branch's tactic constructed eagerly) for every new solver: about 5 ms before the first check,
/// measured against Debian's libz3, where a solver for the logic takes 0.5 ms. For a
/// quantifier-free formula the default tactic runs `simplify` and then the tactic its probes
/// pick, which for our formulas is the tactic of the logic named here (`qfbv` for bit-vectors,
/// `qfaufbv` once arrays or uninterpreted functions appear); so the solver for the logic solves
/// the same way, without the set-up. Quantified formulas (and λ-arrays, quantifiers to Z3) fall
/// to the default's `smt` branch and keep the default solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logic {
    QfBv,
    QfAufBv,
    /// Any formula, for a solver used only incrementally (every check with assumptions): Z3's
    /// `smt` solver configured, as the default solver's incremental half is, from the first
    /// check's formulas (a logic name its set-up does not single out; its tactic, never used
    /// incrementally, is cheap to build). `QF_AUFBV` there sets the array theory to its
    /// simple mode, which answered unknown ("incomplete (theory array)") on the DSE's
    /// `realloc` copies.
    Incremental,
}

impl Logic {
    /// The logic of `formula` as translated (`nonlinear_as_functions`: with its nonlinear
    /// operations as uninterpreted functions); `None` when it has a binder.
    pub fn of(pool: &ExprPool, formula: ExprId, nonlinear_as_functions: bool) -> Option<Logic> {
        let mut binder = false;
        let mut arrays = false;
        crate::expr::visit(pool, formula, |_, node| {
            match node {
                Expr::Forall(..) | Expr::Exists(..) | Expr::Lambda { .. } => binder = true,
                Expr::Load { .. } | Expr::Store { .. } | Expr::ConstArray { .. } | Expr::Select(..) => arrays = true,
                Expr::Symbol { sort: Sort::Array { .. }, .. } | Expr::Star(Sort::Array { .. }) => arrays = true,
                Expr::Bin(op, a, b) if nonlinear_as_functions && is_nonlinear(pool, *op, *a, *b) => arrays = true,
                _ => {}
            }
            !binder
        });
        match (binder, arrays) {
            (true, _) => None,
            (false, true) => Some(Logic::QfAufBv),
            (false, false) => Some(Logic::QfBv),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Logic::QfBv => "QF_BV",
            Logic::QfAufBv => "QF_AUFBV",
            Logic::Incremental => "BV",
        }
    }

    /// A solver of the calling thread's context for this logic (the default solver if Z3 does
    /// not know the logic).
    pub fn solver(self) -> z3::Solver {
        note_context();
        z3::Solver::new_for_logic(self.name()).unwrap_or_else(z3::Solver::new)
    }
}

/// A solver of the calling thread's context running Z3's `smt` tactic alone: a few
/// milliseconds to set up where the default solver takes tens (see [`check`](super::check)), and on the
/// quantifier-free APC of a string search (Hello's DSE guide) 15 ms where the default solver's
/// array tactics take 150 ms. Slower than the default on some hard bit-vector instances: the
/// APC's own queries keep the default.
pub fn light_solver() -> z3::Solver {
    note_context();
    z3::Tactic::new("smt").solver()
}

/// A solver for the preservation of polynomial invariants (`x = n·n·n` kept by `x += y` given
/// `y = 3n² + 3n + 1`): the simplifier in sum-of-monomials form, solving the equations for
/// their variables, and once more the simplifier, reduce such a check to `0 = 0` or to a small
/// residue; bit-blasting the products instead takes seconds.
pub fn polynomial_solver() -> z3::Solver {
    note_context();
    let mut params = z3::Params::new();
    params.set_bool("som", true);
    let simplify = z3::Tactic::new("simplify").with(&params);
    simplify.and_then(&z3::Tactic::new("solve-eqs")).and_then(&simplify).and_then(&z3::Tactic::new("smt")).solver()
}
