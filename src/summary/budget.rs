//! The solver budget of the checks that only sharpen summaries.

use crate::expr::ExprId;
use crate::solve::cpu_limit::thread_cpu_time;

/// Solver time for the checks that only sharpen summaries (pruning infeasible iterations,
/// closed-form counts). Each check gets at most its own limit and what is left of the budget;
/// once it is spent the checks answer "not shown", which is always sound: an iteration is kept,
/// no count is claimed. Without it, a function with many loop paths spent minutes here.
/// Both are CPU time of the building thread (see [`crate::solve::cpu_limit`]): measured in
/// wall time, a check that decides alone could run out of time on a busy machine (beside the
/// other engines, or other analyses under `make -j`), so the APC depended on the load.
#[derive(Clone, Debug)]
pub struct CheckBudget {
    left: std::time::Duration,
}

/// Which of `solve`'s solvers a check runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solver {
    /// [`crate::solve::check_portfolio`].
    Portfolio,
    /// [`crate::solve::check`].
    Light,
    /// [`crate::solve::check_polynomial`].
    Polynomial,
}

/// Concrete assignments tried before an unsat check goes to the solver.
pub(crate) const TRIALS: u64 = 32;

impl Default for CheckBudget {
    fn default() -> Self {
        CheckBudget { left: std::time::Duration::from_secs(3) }
    }
}

impl CheckBudget {
    /// A budget of `left` in all.
    pub fn with(left: std::time::Duration) -> Self {
        CheckBudget { left }
    }

    /// Runs `f` with a `fraction` of what is left, and charges what it spent: one consumer (a
    /// loop, a phase) cannot spend everything the next one needs.
    pub fn share<R>(&mut self, fraction: f64, f: impl FnOnce(&mut CheckBudget) -> R) -> R {
        let given = self.left.mul_f64(fraction);
        let mut sub = CheckBudget { left: given };
        let r = f(&mut sub);
        self.left = self.left.saturating_sub(given.saturating_sub(sub.left));
        r
    }

    /// Checks `f` within `limit_ms` and the budget: `None` when the budget is spent. `portfolio`:
    /// with Z3's default solver ([`crate::solve::check_portfolio`]).
    pub fn check<T>(
        &mut self,
        pool: &crate::expr::ExprPool,
        f: ExprId,
        limit_ms: u64,
        portfolio: bool,
        extract: impl FnOnce(&mut crate::solve::ModelView) -> T,
    ) -> Option<crate::solve::Outcome<T>> {
        self.check_as(pool, f, limit_ms, if portfolio { Solver::Portfolio } else { Solver::Light }, extract)
    }

    /// [`Self::check`] with the solver `kind`.
    pub fn check_as<T>(
        &mut self,
        pool: &crate::expr::ExprPool,
        f: ExprId,
        limit_ms: u64,
        kind: Solver,
        extract: impl FnOnce(&mut crate::solve::ModelView) -> T,
    ) -> Option<crate::solve::Outcome<T>> {
        let limit = self.left.min(std::time::Duration::from_millis(limit_ms));
        if limit.is_zero() {
            return None;
        }
        let t = thread_cpu_time();
        let answer = match kind {
            Solver::Portfolio => crate::solve::check_portfolio(pool, f, limit, extract),
            Solver::Light => crate::solve::check(pool, f, limit, extract),
            Solver::Polynomial => crate::solve::check_polynomial(pool, f, limit, extract),
        };
        let spent = thread_cpu_time().saturating_sub(t);
        self.left = self.left.saturating_sub(spent);
        tracing::trace!(cpu_seconds = spent.as_secs_f64(), unsat = matches!(answer.outcome, crate::solve::Outcome::Unsat), definite = answer.outcome.is_definite(), f = %crate::expr::Printer::new(pool).print(f), "summary check");
        Some(answer.outcome)
    }

    /// Whether `f` is unsatisfiable even with its nonlinear operations uninterpreted
    /// ([`crate::solve::check_abstraction`]), shown within `limit_ms` and the budget.
    pub fn unsat_abstracted(&mut self, pool: &crate::expr::ExprPool, f: ExprId, limit_ms: u64) -> bool {
        let limit = self.left.min(std::time::Duration::from_millis(limit_ms));
        if limit.is_zero() {
            return false;
        }
        let t = thread_cpu_time();
        let answer = crate::solve::check_abstraction(pool, f, limit);
        self.left = self.left.saturating_sub(thread_cpu_time().saturating_sub(t));
        matches!(answer.outcome, crate::solve::Outcome::Unsat)
    }

    /// Whether `f` is unsatisfiable, shown within `limit_ms` and the budget.
    /// A concrete assignment that satisfies `f`, or a literal next to its negation, answers at
    /// once, without the solver (see [`crate::expr::eval`]): the first query of a thread costs
    /// tens of milliseconds.
    pub fn unsat(&mut self, pool: &crate::expr::ExprPool, f: ExprId, limit_ms: u64) -> bool {
        if self.left.is_zero() {
            return false;
        }
        if crate::expr::eval::contradictory(pool, f) {
            return true;
        }
        // The trials' time is charged too: on a large formula they are not free.
        let t = thread_cpu_time();
        let found = crate::expr::eval::satisfiable_by_trial(pool, f, TRIALS);
        self.left = self.left.saturating_sub(thread_cpu_time().saturating_sub(t));
        if found {
            return false;
        }
        matches!(self.check(pool, f, limit_ms, false, |_| ()), Some(crate::solve::Outcome::Unsat))
    }
}
