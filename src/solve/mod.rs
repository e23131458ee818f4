//! Solving: translation of expressions to Z3, satisfiability under a timeout, and model
//! evaluation. Z3's context is per thread (z3 0.22), so everything that touches Z3 (including
//! reading the model) happens inside [`check`], which returns plain data. [`race`] runs queries
//! on worker threads, each in its own thread-local context, and joins every worker before it
//! returns (ARCHITECTURE.md, "Threads and FFI ownership").

pub mod cpu_limit;
mod horn;
mod logic;
mod minimise;
mod race;
mod share;
mod smtlib;
mod translate;
mod worker;

pub use horn::{check_horn, HornAnswer};
pub use logic::{light_solver, polynomial_solver, thread_has_context, Logic};
pub use minimise::{least_value, BoundedSum, Probe};
pub use race::{race, race_until, ModelExtractor, RaceEntry};
pub use share::{set_thread_nice, set_worker_share, NICE_0_WEIGHT};
pub use smtlib::cmp_symbol;
pub use worker::{exit_now, in_worker, note_thread_left_running, workers_left_running, Interrupter, InterruptibleGuard};

use crate::expr::{BvOp, Expr, ExprId, ExprPool, Sort};
use logic::{note_context, SolverKind};
use minimise::minimise;
use std::time::{Duration, Instant};
use translate::Translator;
use worker::entered_may_check;
use z3::ast::{Bool, BV};

/// The answer of one query.
#[derive(Debug)]
pub enum Outcome<T> {
    /// Satisfiable, with whatever the caller extracted from the model.
    Sat(T),
    Unsat,
    Unknown(String),
}

/// The result of a query and the time it took.
#[derive(Debug)]
pub struct Answer<T> {
    pub outcome: Outcome<T>,
    pub seconds: f64,
    /// For a model of a query with an [`Objective`]: whether it is known to be the least (or
    /// small enough); `false` when the search for a smaller one was cut short. `true` for
    /// every other answer.
    pub least: bool,
}

impl<T> Outcome<T> {
    pub fn is_definite(&self) -> bool {
        !matches!(self, Outcome::Unknown(_))
    }
}

/// One query of a [`race`]: a formula, solved exactly or as an over-approximation.
#[derive(Clone, Debug)]
pub struct Query {
    pub name: String,
    pub formula: ExprId,
    /// Solve with every multiplication, division and remainder whose operands are both
    /// non-constant replaced by an uninterpreted function of its operands (see
    /// [`has_nonlinear`]). Every model of the formula is a model of this abstraction (read the
    /// function as the operation), so *unsat* is a proof for the formula; a *sat* answer says
    /// nothing and is reported as unknown. Z3 bit-blasts a 32-bit multiplier of two variables into
    /// thousands of clauses and often cannot refute `a·κ ≠ n·a` even once it knows κ = n; with
    /// the function, congruence closes it in milliseconds.
    pub nonlinear_as_functions: bool,
    /// After a model: look for one with a smaller objective (see [`Objective`]).
    pub objective: Option<Objective>,
}

impl Query {
    /// A query solved as it is.
    pub fn exact(name: impl Into<String>, formula: ExprId) -> Query {
        Query { name: name.into(), formula, nonlinear_as_functions: false, objective: None }
    }

    /// A query whose nonlinear operations are uninterpreted (only *unsat* counts).
    pub fn nonlinear_as_functions(name: impl Into<String>, formula: ExprId) -> Query {
        Query { name: name.into(), formula, nonlinear_as_functions: true, objective: None }
    }

    /// The same query, minimising `objective` once it has a model.
    pub fn minimising(mut self, objective: Objective) -> Query {
        self.objective = Some(objective);
        self
    }
}

/// What a model should keep small: the sum of unsigned bit-vector `terms` (the path counters:
/// a witness whose loops run 34 times instead of 134,217,728, whose string has 3 bytes instead
/// of 26). Once the query has a model whose sum exceeds `above`, the same solver (incrementally)
/// is asked for models with every term and their sum at most `s`, for `s` = 0, 1, 3, 7, ... up
/// to the first model, then by bisection, for at most `budget` in all; the smallest model found
/// is the answer. It only ever replaces a model by another model of the same formula.
#[derive(Clone, Debug)]
pub struct Objective {
    pub terms: Vec<ExprId>,
    pub above: u64,
    pub budget: Duration,
}

/// Whether `op` with these operands is a nonlinear operation ([`Query::nonlinear_as_functions`]).
fn is_nonlinear(pool: &ExprPool, op: BvOp, a: ExprId, b: ExprId) -> bool {
    let constant = |e| matches!(pool.get(e), Expr::Const { .. });
    matches!(op, BvOp::Mul | BvOp::UDiv | BvOp::SDiv | BvOp::URem | BvOp::SRem) && !constant(a) && !constant(b)
}

/// Whether `formula` multiplies, divides or takes the remainder of two non-constant terms.
pub fn has_nonlinear(pool: &ExprPool, formula: ExprId) -> bool {
    let mut found = false;
    crate::expr::visit(pool, formula, |_, node| {
        found |= matches!(*node, Expr::Bin(op, a, b) if is_nonlinear(pool, op, a, b));
        !found
    });
    found
}

/// The SMT-LIB 2 text of the query `formula` (printed without Z3, see [`smtlib`]).
pub fn smtlib(pool: &ExprPool, formula: ExprId) -> String {
    smtlib::print(pool, formula)
}

/// `formula` as a Z3 term of the calling thread's context (for engines that keep their own
/// solver, such as the DSE).
pub fn to_z3(pool: &ExprPool, formula: ExprId) -> Bool {
    Translator::new(pool).boolean(formula)
}

/// Access to a model from inside [`check`].
pub struct ModelView<'a> {
    model: z3::Model,
    tr: Translator<'a>,
}

impl ModelView<'_> {
    /// The value of a bit-vector (or Boolean, as 0/1) expression, with model completion.
    pub fn eval(&mut self, e: ExprId) -> Option<u64> {
        let d = self.tr.translate(e);
        if let Some(b) = d.as_bool() {
            return self.model.eval(&b, true).and_then(|v| v.as_bool()).map(u64::from);
        }
        let bv = d.as_bv()?;
        self.model.eval(&bv, true).and_then(|v| v.as_u64())
    }

    /// Element `index` of an array-sorted expression (memory or the nondet stream).
    pub fn eval_element(&mut self, array: ExprId, index: u64) -> Option<u64> {
        let Sort::Array { index: iw, .. } = self.tr.pool.sort(array) else { return None };
        let a = self.tr.translate(array).as_array()?;
        let v = a.select(&BV::from_u64(index, iw)).as_bv()?;
        self.model.eval(&v, true).and_then(|v| v.as_u64())
    }
}

/// Checks `formula` for satisfiability within `timeout`, CPU time of the calling thread (with a
/// wall-clock backstop, see [`cpu_limit`]: the same checks decide under load as alone); on
/// sat, runs `extract` on the model.
///
/// Every Z3 object of the query (solver, terms, model) belongs to the calling thread's
/// thread-local context and is dropped before this returns; only `T` leaves, so `T` must not
/// hold Z3 objects.
///
/// Meant for the many small checks that sharpen summaries: it runs Z3's `smt` tactic, not the
/// default solver. The default solver of Z3 4.8 sets up its whole tactic portfolio for every
/// fresh solver (about 8 MB allocated and initialised; 6–14 ms even for `x > 1`, where the `smt`
/// tactic takes 0.3 ms): OneLoop spent 120 of its 160 ms of building the APC on four such
/// checks. The APC's own queries keep the default solver, which is faster on hard instances.
pub fn check<T>(pool: &ExprPool, formula: ExprId, timeout: Duration, extract: impl FnOnce(&mut ModelView) -> T) -> Answer<T> {
    check_until(pool, formula, SolverKind::Light, false, Some(timeout), &|| false, extract)
}

/// [`check`] with [`polynomial_solver`]: for the preservation of polynomial invariants.
pub fn check_polynomial<T>(pool: &ExprPool, formula: ExprId, timeout: Duration, extract: impl FnOnce(&mut ModelView) -> T) -> Answer<T> {
    check_until(pool, formula, SolverKind::Polynomial, false, Some(timeout), &|| false, extract)
}

/// [`check`] with Z3's default solver: slower to set up, far faster on some array checks (an
/// array invariant's preservation: 0.17 s where the `smt` tactic took 1.5 s).
pub fn check_portfolio<T>(pool: &ExprPool, formula: ExprId, timeout: Duration, extract: impl FnOnce(&mut ModelView) -> T) -> Answer<T> {
    check_until(pool, formula, SolverKind::Portfolio, false, Some(timeout), &|| false, extract)
}

/// [`check_portfolio`] (`timeout`: CPU time of its one check), and on a model, the search for
/// one with a smaller `objective` (within the objective's own budget, after the check).
/// `searching` gets the first model when that search starts (not when the first model is small
/// enough already): the caller may try it meanwhile, and stop the search (`stopped`).
pub fn check_small<T>(
    pool: &ExprPool,
    formula: ExprId,
    timeout: Duration,
    objective: Option<&Objective>,
    stopped: &dyn Fn() -> bool,
    searching: &dyn Fn(&T),
    mut extract: impl FnMut(&mut ModelView) -> T,
) -> Answer<T> {
    check_minimising(pool, formula, SolverKind::Portfolio, false, Some(timeout), objective, stopped, searching, &mut extract)
}

/// Why a query with its nonlinear operations uninterpreted has no answer when it has a model.
const ABSTRACTION_SATISFIABLE: &str = "the abstraction with uninterpreted nonlinear operations is satisfiable";

/// [`check_portfolio`] of `formula` with its nonlinear operations uninterpreted (see
/// [`Query::nonlinear_as_functions`]): an over-approximation, so only its unsat means
/// something of `formula`; a model is reported as `Sat(())`.
pub fn check_abstraction(pool: &ExprPool, formula: ExprId, timeout: Duration) -> Answer<()> {
    let answer = check_until(pool, formula, SolverKind::Portfolio, true, Some(timeout), &|| false, |_| ());
    match answer.outcome {
        Outcome::Unknown(why) if why == ABSTRACTION_SATISFIABLE => Answer { outcome: Outcome::Sat(()), seconds: answer.seconds, least: true },
        _ => answer,
    }
}

/// [`check`] that gives up (answers unknown) as soon as `stopped()` holds between its steps:
/// translation and model reading do not notice `Z3_interrupt`, so a racing worker asks.
///
/// `timeout`: a budget of the calling thread's CPU time ([`cpu_limit::CpuLimit`]), for callers
/// nobody interrupts. Racing workers pass `None`: the race interrupts them. Not Z3's own
/// `timeout` parameter: it is wall time, and Z3 4.8's timeouts run on a pool of timer threads
/// shared by all contexts, whose end-of-query handshake spins on `sched_yield` until the timer
/// thread runs; a timer thread spawned by a reniced worker then starves behind the solvers (see
/// `dse::solver::PathSolver::check_within`, where this stalled queries for seconds).
fn check_until<T>(
    pool: &ExprPool,
    formula: ExprId,
    kind: SolverKind,
    nonlinear_as_functions: bool,
    timeout: Option<Duration>,
    stopped: &dyn Fn() -> bool,
    extract: impl FnOnce(&mut ModelView) -> T,
) -> Answer<T> {
    // Without an objective the model is read once.
    let mut once = Some(extract);
    check_minimising(pool, formula, kind, nonlinear_as_functions, timeout, None, stopped, &|_| {}, &mut |m| (once.take().expect("one model without an objective"))(m))
}

/// [`check_until`], and on a model, the search for a smaller one of `objective` (announced by
/// calling `minimising` with the first model, when the search starts: a model small enough
/// already is returned at once).
#[allow(clippy::too_many_arguments)]
fn check_minimising<T>(
    pool: &ExprPool,
    formula: ExprId,
    kind: SolverKind,
    nonlinear_as_functions: bool,
    timeout: Option<Duration>,
    objective: Option<&Objective>,
    stopped: &dyn Fn() -> bool,
    minimising: &dyn Fn(&T),
    extract: &mut dyn FnMut(&mut ModelView) -> T,
) -> Answer<T> {
    let start = Instant::now();
    let interrupted = |start: Instant| Answer { outcome: Outcome::Unknown("interrupted".into()), seconds: start.elapsed().as_secs_f64(), least: true };
    if stopped() || !entered_may_check() {
        return interrupted(start);
    }
    // A model to minimise makes the solver incremental (push, bound, check), and the
    // incremental half of a `QF_AUFBV` solver runs the array theory in its simple mode, which
    // can answer unknown where the default's does not (see `Logic::Incremental`).
    let logic = Logic::of(pool, formula, nonlinear_as_functions).filter(|l| objective.is_none() || *l == Logic::QfBv);
    let solver = kind.solver(logic);
    let mut tr = Translator::new(pool);
    tr.nonlinear_as_functions = nonlinear_as_functions;
    let f = tr.translate(formula).as_bool().expect("the APC is a formula");
    solver.assert(&f);
    if stopped() {
        return interrupted(start);
    }
    let cpu = cpu_limit::thread_cpu_time();
    note_context();
    let limit = timeout.map(|t| cpu_limit::CpuLimit::arm(&z3::Context::thread_local(), t));
    let result = solver.check();
    let out_of_budget = limit.is_some_and(|l| l.fired());
    if timeout.is_some() {
        tracing::trace!(budget = ?timeout, cpu = ?cpu_limit::thread_cpu_time().saturating_sub(cpu), wall = ?start.elapsed(), out_of_budget, ?result, "check within a CPU budget");
    }
    let mut least = true;
    let outcome = match result {
        // An interrupted solver can say sat and then have no model: that is no answer.
        z3::SatResult::Sat if stopped() || out_of_budget => Outcome::Unknown("interrupted".into()),
        // A model of the abstraction need not be one of the formula.
        z3::SatResult::Sat if nonlinear_as_functions => Outcome::Unknown(ABSTRACTION_SATISFIABLE.into()),
        z3::SatResult::Sat => match solver.get_model() {
            Some(model) => {
                let mut view = ModelView { model, tr };
                let first = extract(&mut view);
                match objective {
                    Some(o) => {
                        let (model, proved) = minimise(&solver, view, first, o, stopped, minimising, extract);
                        least = proved;
                        Outcome::Sat(model)
                    }
                    None => Outcome::Sat(first),
                }
            }
            None => Outcome::Unknown("interrupted".into()),
        },
        z3::SatResult::Unsat => Outcome::Unsat,
        z3::SatResult::Unknown => {
            Outcome::Unknown(solver.get_reason_unknown().unwrap_or_else(|| "unknown".into()))
        }
    };
    Answer { outcome, seconds: start.elapsed().as_secs_f64(), least }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::SymbolKind;
    use crate::ops::IntPredicate;

    fn sat_value(pool: &ExprPool, f: ExprId, x: ExprId) -> Option<u64> {
        match check(pool, f, Duration::from_secs(5), |m| m.eval(x)).outcome {
            Outcome::Sat(v) => v,
            other => panic!("expected sat, got {other:?}"),
        }
    }

    /// a·t ≠ n·a with t = n: unsat with multiplication uninterpreted (and exactly); with
    /// a·t ≠ t·t instead (t = n, a free), the abstraction is satisfiable, which is no answer.
    #[test]
    fn nonlinear_terms_as_functions_prove_but_never_give_models() {
        let mut p = ExprPool::new();
        let [a, t, n] = ["a", "t", "n"].map(|s| p.symbol(s, Sort::Bv(32), SymbolKind::Input));
        let (at, na, tt) = (p.bin(BvOp::Mul, a, t), p.bin(BvOp::Mul, n, a), p.bin(BvOp::Mul, t, t));
        assert!(has_nonlinear(&p, at));
        let three = p.bv(32, 3);
        let linear = p.bin(BvOp::Mul, a, three);
        assert!(!has_nonlinear(&p, linear), "a multiplication by a constant is linear");
        let same = p.eq(t, n);
        let differ = p.cmp(IntPredicate::Ne, at, na);
        let f = p.and([same, differ]);
        let differ2 = p.cmp(IntPredicate::Ne, at, tt);
        let g = p.and([same, differ2]);
        let pool = std::sync::Arc::new(p);
        let answer = |q: Query| race(pool.clone(), vec![q], Duration::from_secs(20), std::sync::Arc::new(|_, _, _: &mut ModelView| ())).pop().unwrap().answer.outcome;
        assert!(matches!(answer(Query::nonlinear_as_functions("uf", f)), Outcome::Unsat));
        assert!(matches!(answer(Query::nonlinear_as_functions("uf", g)), Outcome::Unknown(_)));
        assert!(matches!(answer(Query::exact("exact", g)), Outcome::Sat(())));
    }

    #[test]
    fn bit_precise_wrap_around() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(32), SymbolKind::Input);
        let one = p.bv(32, 1);
        let zero = p.bv(32, 0);
        let s = p.bin(BvOp::Add, x, one);
        let f = p.eq(s, zero);
        assert_eq!(sat_value(&p, f, x), Some(0xffff_ffff), "x + 1 = 0 holds for x = 2³²−1");
        let c = p.symbol("c", Sort::Bv(8), SymbolKind::Input);
        let c32 = p.zext(c, 32);
        let k = p.bv(32, 255);
        let f = p.cmp(IntPredicate::Ugt, c32, k);
        assert!(matches!(check(&p, f, Duration::from_secs(5), |_| ()).outcome, Outcome::Unsat));
    }

    #[test]
    fn mixed_width_memory_is_little_endian() {
        let mut p = ExprPool::new();
        let a = p.symbol("A", Sort::MEMORY, SymbolKind::Input);
        let zero = p.bv(64, 0);
        let v = p.bv(32, 0x1122_3344);
        let m = p.store(a, zero, v, 32);
        let one = p.bv(64, 1);
        let byte1 = p.load(m, one, 8);
        let want = p.bv(8, 0x33);
        let f = p.eq(byte1, want);
        assert!(matches!(check(&p, f, Duration::from_secs(5), |_| ()).outcome, Outcome::Sat(())));
        let bad = p.bv(8, 0x22);
        let f = p.eq(byte1, bad);
        assert!(matches!(check(&p, f, Duration::from_secs(5), |_| ()).outcome, Outcome::Unsat));
    }

    #[test]
    fn each_query_gets_the_solver_of_its_logic() {
        let mut p = ExprPool::new();
        let n = p.symbol("n", Sort::Bv(32), SymbolKind::Input);
        let m = p.symbol("m", Sort::Bv(32), SymbolKind::Input);
        let t = p.symbol("τ1", Sort::Bv(32), SymbolKind::Tau(1));
        // 4·n = 15 has no solution modulo 2^32 (OneLoop's parity), n·m = 15 has one.
        let four = p.bv(32, 4);
        let fifteen = p.bv(32, 15);
        let four_n = p.bin(BvOp::Mul, four, n);
        let parity = p.cmp(IntPredicate::Eq, four_n, fifteen);
        let nm = p.bin(BvOp::Mul, n, m);
        let product = p.cmp(IntPredicate::Eq, nm, fifteen);
        assert_eq!(Logic::of(&p, parity, false), Some(Logic::QfBv));
        assert_eq!(Logic::of(&p, product, false), Some(Logic::QfBv));
        // Uninterpreted multiplication: functions, so the array-and-function logic.
        assert_eq!(Logic::of(&p, product, true), Some(Logic::QfAufBv));
        let below = p.cmp(IntPredicate::Ult, t, n);
        let quantified = p.forall(vec![t], below);
        assert_eq!(Logic::of(&p, quantified, false), None);
        let stream = p.symbol("nondet", Sort::Array { index: 64, elem: 32 }, SymbolKind::Input);
        let zero = p.bv(64, 0);
        let first = p.select(stream, zero);
        let read = p.cmp(IntPredicate::Eq, first, fifteen);
        assert_eq!(Logic::of(&p, read, false), Some(Logic::QfAufBv));
        // The answers are the default solver's.
        let unsat = check_portfolio(&p, parity, Duration::from_secs(5), |_| ());
        assert!(matches!(unsat.outcome, Outcome::Unsat), "{:?}", unsat.outcome);
        let model = check_portfolio(&p, product, Duration::from_secs(5), |view| (view.eval(n), view.eval(m)));
        let Outcome::Sat((Some(a), Some(b))) = model.outcome else { panic!("expected a model, got {:?}", model.outcome) };
        assert_eq!(a.wrapping_mul(b) & 0xffff_ffff, 15);
        let both = p.and([read, product]);
        let v = check_portfolio(&p, both, Duration::from_secs(5), |view| view.eval(m));
        assert!(matches!(v.outcome, Outcome::Sat(Some(_))), "{:?}", v.outcome);
    }

    #[test]
    fn quantifiers_translate() {
        let mut p = ExprPool::new();
        let t = p.symbol("τ1", Sort::Bv(8), SymbolKind::Tau(1));
        let n = p.symbol("n", Sort::Bv(8), SymbolKind::Input);
        // ∀τ. n ≥ᵤ τ  forces n = 255
        let body = p.cmp(IntPredicate::Uge, n, t);
        let f = p.forall(vec![t], body);
        assert_eq!(sat_value(&p, f, n), Some(255));
        let text = smtlib(&p, f);
        assert!(text.contains("forall"), "{text}");
    }
}
