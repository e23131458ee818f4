//! Solving: translation of expressions to Z3, satisfiability under a timeout, and model
//! evaluation. Z3's context is per thread (z3 0.22), so everything that touches Z3 (including
//! reading the model) happens inside [`check`], which returns plain data. [`race`] runs queries
//! on worker threads, each in its own thread-local context, and joins every worker before it
//! returns (ARCHITECTURE.md, "Threads and FFI ownership").

pub mod cpu_limit;

use crate::expr::{BvOp, Expr, ExprId, ExprPool, Sort};
use crate::ir::IntPredicate;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use z3::ast::{Array, Ast, Bool, Dynamic, BV};

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

mod smtlib;
pub use smtlib::cmp_symbol;

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

/// Which Z3 solver a query gets.
#[derive(Clone, Copy, Debug)]
enum SolverKind {
    /// Z3's default solver (its tactic portfolio): the APC's queries.
    Portfolio,
    /// The `smt` tactic alone: cheap to set up, for small checks (see [`check`]).
    Light,
}

thread_local! {
    /// Whether this thread has used Z3 through this module (so its context exists).
    static CONTEXT_MADE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Notes that the calling thread uses its Z3 context (see [`thread_has_context`]).
fn note_context() {
    CONTEXT_MADE.with(|c| c.set(true));
}

/// Whether the calling thread has already made its Z3 context here (a solver, a race query,
/// an interruptible check): its next query then costs no context (6-15 ms of page faults).
/// The apc engine keeps its quick check when its build has solved something already.
pub fn thread_has_context() -> bool {
    CONTEXT_MADE.with(|c| c.get())
}

impl SolverKind {
    fn solver(self, logic: Option<Logic>) -> z3::Solver {
        note_context();
        match (self, logic) {
            (SolverKind::Portfolio, Some(logic)) => logic.solver(),
            (SolverKind::Portfolio, None) => z3::Solver::new(),
            (SolverKind::Light, _) => light_solver(),
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
/// milliseconds to set up where the default solver takes tens (see [`check`]), and on the
/// quantifier-free APC of a string search (Hello's DSE guide) 15 ms where the default solver's
/// array tactics take 150 ms. Slower than the default on some hard bit-vector instances: the
/// APC's own queries keep the default.
pub fn light_solver() -> z3::Solver {
    note_context();
    z3::Tactic::new("smt").solver()
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

/// The search of [`Objective`]: `view` is the solver's first model and `first` what `extract`
/// made of it. Every check is incremental (push, bound, check, pop) and has the budget left as its
/// timeout; a timeout, an interrupt or an unknown ends the search with the best model so far.
/// Also says whether that model is known to be the least (or small enough). `searching` gets
/// `first` when the search starts.
fn minimise<T>(
    solver: &z3::Solver,
    view: ModelView,
    first: T,
    objective: &Objective,
    stopped: &dyn Fn() -> bool,
    searching: &dyn Fn(&T),
    extract: &mut dyn FnMut(&mut ModelView) -> T,
) -> (T, bool) {
    let ModelView { model, mut tr } = view;
    let terms: Vec<BV> = objective.terms.iter().filter_map(|&t| tr.translate(t).as_bv()).collect();
    let Some(bounded) = BoundedSum::new(&terms) else { return (first, true) };
    let hi = bounded.value(&model);
    if hi <= objective.above {
        return (first, true);
    }
    searching(&first);
    let mut best = first;
    let mut tr = Some(tr);
    let (_, proved) = least_value(hi, objective.budget, stopped, |s, left| {
        let mut params = z3::Params::new();
        params.set_u32("timeout", left.as_millis().clamp(1, u32::MAX as u128) as u32);
        solver.set_params(&params);
        solver.push();
        for b in bounded.at_most(s) {
            solver.assert(&b);
        }
        let probe = match solver.check() {
            z3::SatResult::Sat if !stopped() => match (solver.get_model(), tr.take()) {
                (Some(model), Some(t)) => {
                    let value = bounded.value(&model).min(s);
                    let mut view = ModelView { model, tr: t };
                    best = extract(&mut view);
                    tr = Some(view.tr);
                    Probe::Found(value)
                }
                _ => Probe::Unknown,
            },
            z3::SatResult::Unsat => Probe::Empty,
            _ => Probe::Unknown,
        };
        solver.pop(1);
        probe
    });
    (best, proved)
}

/// A sum of unsigned bit-vector terms taken 8 bits wider than the widest term, so that it
/// cannot wrap around (for [`Objective`] and the DSE's least tied lengths).
pub struct BoundedSum {
    wide: Vec<BV>,
    sum: BV,
}

impl BoundedSum {
    /// `None` for no terms, or more than 256.
    pub fn new(terms: &[BV]) -> Option<BoundedSum> {
        if terms.is_empty() || terms.len() > 1 << 8 {
            return None;
        }
        let width = terms.iter().map(|t| t.get_size()).max().unwrap_or(1) + 8;
        let wide: Vec<BV> = terms.iter().map(|t| t.zero_ext(width - t.get_size())).collect();
        let sum = wide.iter().skip(1).fold(wide[0].clone(), |a, b| a.bvadd(b));
        Some(BoundedSum { wide, sum })
    }

    /// The sum in `model`; a sum past 64 bits counts as the largest value.
    pub fn value(&self, model: &z3::Model) -> u64 {
        model.eval(&self.sum, true).and_then(|v| v.as_u64()).unwrap_or(u64::MAX)
    }

    /// Every term and the sum at most `s`.
    pub fn at_most(&self, s: u64) -> Vec<Bool> {
        let bound = BV::from_u64(s, self.sum.get_size());
        self.wide.iter().chain(std::iter::once(&self.sum)).map(|t| t.bvule(&bound)).collect()
    }
}

/// What one probe of [`least_value`] found for "a model with value at most s".
pub enum Probe {
    /// A model, with its value (at most s).
    Found(u64),
    /// No model.
    Empty,
    /// No answer (timeout, interrupt): the search ends.
    Unknown,
}

/// The search for the least value with a model, given one with value `hi`: probes at most
/// s = 0, 1, 3, 7, ... up to the first model, then bisects between the largest value known to
/// have none and the smallest found, for at most `budget` (each probe gets what is left).
/// Returns the smallest value found, and whether it is proved the least (every value below it
/// had no model).
pub fn least_value(mut hi: u64, budget: Duration, stopped: &dyn Fn() -> bool, mut probe: impl FnMut(u64, Duration) -> Probe) -> (u64, bool) {
    let started = Instant::now();
    let end = started + budget;
    // Every value below `lo` is known to have no model; `hi` has one.
    let (mut lo, mut next, mut galloping) = (0u64, 0u64, true);
    let mut checks = 0u32;
    while lo < hi && !stopped() {
        let left = end.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(2) {
            break;
        }
        let s = if galloping { next.min(hi - 1) } else { lo + (hi - lo) / 2 };
        checks += 1;
        match probe(s, left) {
            Probe::Found(v) => {
                hi = v.min(s);
                galloping = false;
            }
            Probe::Empty => {
                lo = s + 1;
                if galloping {
                    next = next.saturating_mul(2).saturating_add(1);
                }
            }
            Probe::Unknown => break,
        }
    }
    tracing::debug!(checks, smallest = hi, proved_least = lo, seconds = started.elapsed().as_secs_f64(), "objective minimised");
    (hi, lo >= hi)
}

/// The Z3 context of one racing worker, as seen by the thread that interrupts it.
///
/// Life cycle, all under the slot's mutex: `Pending` → `Running(ctx)` (the worker's thread-local
/// context exists and will live until the worker clears the slot) → `Done`. Once the race is
/// decided the slot is `stop`ped: a `Pending` worker then never starts its query, and a
/// `Running` one is interrupted (again and again, until it reports `Done`).
enum WorkerState {
    Pending,
    Running(z3_sys::Z3_context),
    Done,
}

struct Slot {
    state: WorkerState,
    stop: bool,
    /// The worker's thread id once it runs (0 before): a worker left behind is lowered.
    tid: libc::pid_t,
}

// SAFETY: the raw context pointer is only used for `Z3_interrupt` (documented thread-safe),
// and only under the slot's mutex while the state is `Running`: the worker sets `Running` after
// its thread-local context exists and switches to `Done` (under the same mutex) before that
// context can be deleted (it is deleted by the thread-local destructor, after the worker's
// closure returned). So the pointer is never used after `Z3_del_context`.
unsafe impl Send for Slot {}

type SharedSlot = std::sync::Arc<std::sync::Mutex<Slot>>;

/// A worker's first step once its thread-local context exists: `Running` (it may be
/// interrupted from now on), or `Done` at once when the race was already stopped (then it
/// must not start its query: `false`).
fn announce_running(slot: &SharedSlot, ctx: &z3::Context) -> bool {
    let mut g = slot.lock().unwrap_or_else(|e| e.into_inner());
    if g.stop {
        g.state = WorkerState::Done;
        return false;
    }
    g.state = WorkerState::Running(ctx.get_z3_context());
    g.tid = unsafe { libc::gettid() };
    true
}

/// The Z3 context of a thread that another thread may interrupt, outside any race: the APC's
/// build, which the end of the race stops (its summary checks have their own time limits and
/// do not look at its stop flag; a build left in one kept a core busy beside the witness
/// reduction). The same slot protocol as a racing worker's.
#[derive(Clone)]
pub struct Interrupter(SharedSlot);

impl Default for Interrupter {
    fn default() -> Self {
        Interrupter(std::sync::Arc::new(std::sync::Mutex::new(Slot { state: WorkerState::Pending, stop: false, tid: 0 })))
    }
}

thread_local! {
    /// The slot of the [`Interrupter`] the thread has entered, announced at its first check.
    static ENTERED: std::cell::RefCell<Option<SharedSlot>> = const { std::cell::RefCell::new(None) };
}

impl Interrupter {
    /// On the thread to be interrupted: its checks may be interrupted until the guard is
    /// dropped (which must happen on that thread, before it ends), and once stopped, its later
    /// checks answer "interrupted" at once. The thread's Z3 context is made at its first check,
    /// not here: most APCs are built without one (Hello: 1 ms, where making the context took
    /// 6-15 ms, and the DSE waited for the guide the build hands it meanwhile).
    pub fn enter(&self) -> InterruptibleGuard {
        ENTERED.with(|e| *e.borrow_mut() = Some(self.0.clone()));
        InterruptibleGuard(self.0.clone())
    }

    /// Interrupts the thread's current Z3 check, if any (and marks it stopped).
    pub fn interrupt(&self) {
        stop_all(std::slice::from_ref(&self.0));
    }
}

/// For a check on a thread inside an [`Interrupter`]: its slot announced (the thread's context
/// made) at the first check; `false` when it was stopped, and the check must not run.
fn entered_may_check() -> bool {
    let Some(slot) = ENTERED.with(|e| e.borrow().clone()) else { return true };
    let announced = !matches!(slot.lock().unwrap_or_else(|e| e.into_inner()).state, WorkerState::Pending);
    if !announced {
        note_context();
        return announce_running(&slot, &z3::Context::thread_local());
    }
    let stopped = slot.lock().unwrap_or_else(|e| e.into_inner()).stop;
    !stopped
}

/// See [`Interrupter::enter`]: no interrupt reaches the thread's context once this is dropped.
pub struct InterruptibleGuard(SharedSlot);

impl Drop for InterruptibleGuard {
    fn drop(&mut self) {
        ENTERED.with(|e| *e.borrow_mut() = None);
        self.0.lock().unwrap_or_else(|e| e.into_inner()).state = WorkerState::Done;
    }
}

/// Interrupts every worker still running (and stops those not yet started).
fn stop_all(slots: &[SharedSlot]) {
    for s in slots {
        let mut g = s.lock().unwrap_or_else(|e| e.into_inner());
        g.stop = true;
        if let WorkerState::Running(ctx) = g.state {
            unsafe { z3_sys::Z3_interrupt(ctx) };
        }
    }
}

/// The racing worker threads: on drop (normal return *or* unwinding) every worker is stopped
/// and joined, so no Z3 call of a race outlives [`race`].
///
/// Why this matters (`free(): corrupted unsorted chunks` / SIGSEGV after the report was
/// printed): the losers used to be left running detached. When `main` returned, `exit()` ran
/// libz3's static destructors (its global memory manager, symbol table, rational managers) and
/// the thread-local-destructor of the main thread's context while a loser was still inside Z3
/// (solving, unwinding from the interrupt, or deleting its context in its own TLS destructor):
/// a use-after-free of Z3's global state that corrupts the heap. `JoinHandle::join` is
/// `pthread_join`, which returns only after the thread's TLS destructors (the `Z3_del_context` of
/// its thread-local context) have run.
struct Workers<'c> {
    slots: Vec<SharedSlot>,
    handles: Vec<std::thread::JoinHandle<()>>,
    /// Set once another engine has decided: then interrupted workers are waited for only
    /// [`CANCEL_GRACE`], not [`JOIN_GRACE`] (that engine's answer must not wait for ours).
    cancel: &'c std::sync::atomic::AtomicBool,
}

/// How long a race past its deadline waits for the model of a worker interrupted while
/// minimising it ([`Objective`]).
const CLAIMED_GRACE: Duration = Duration::from_millis(500);

/// How long [`Workers`] waits for interrupted workers before leaving them behind.
const JOIN_GRACE: Duration = Duration::from_secs(2);
/// The same after a cancel: Z3 often takes 0.3-0.5 s to notice an interrupt in a bit-blasting
/// query (measured on wp_windriver), and the portfolio's report waited that long after the
/// DSE's witness. Workers left behind end the process through [`exit_now`].
const CANCEL_GRACE: Duration = Duration::from_millis(5);

/// Set when a worker did not leave Z3 within [`JOIN_GRACE`] of being interrupted (some Z3
/// phases never look at the interrupt flag; one such query grew to 4.7 GB and kept a 10 s run
/// going for a minute). Such a worker is left running, detached; the process must then end
/// through [`exit_now`], never through `exit()` and libz3's static destructors.
static WORKERS_LEFT_RUNNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that a thread still inside Z3 was left running, detached (the APC's build once the
/// race no longer needs it): the process must then end through [`exit_now`].
pub fn note_thread_left_running() {
    WORKERS_LEFT_RUNNING.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether some solver thread was left running (see [`exit_now`]).
pub fn workers_left_running() -> bool {
    WORKERS_LEFT_RUNNING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Ends the process at once with `code`, without running static destructors (libz3's global
/// state is still in use by a detached worker). Flush stdout and stderr before.
pub fn exit_now(code: i32) -> ! {
    unsafe { libc::_exit(code) }
}

impl Drop for Workers<'_> {
    fn drop(&mut self) {
        // A worker notices an interrupt only inside Z3; in between (translation, model reading)
        // it checks `stop` itself. Interrupt repeatedly until each has left Z3 for good, or the
        // grace period is over.
        let since = std::time::Instant::now();
        while self.handles.iter().any(|h| !h.is_finished()) {
            let cancelled = self.cancel.load(std::sync::atomic::Ordering::Relaxed);
            if since.elapsed() > JOIN_GRACE || (cancelled && since.elapsed() > CANCEL_GRACE) {
                WORKERS_LEFT_RUNNING.store(true, std::sync::atomic::Ordering::SeqCst);
                tracing::debug!("a solver thread ignores its interrupt; leaving it behind");
                // What it still computes is of no use: at the lowest priority, out of the
                // APC's share, so that it takes no CPU from what comes next (it kept two
                // cores' worth of solving beside doif's witness reduction).
                for slot in &self.slots {
                    // Under the slot's lock a running worker cannot end (it marks itself done
                    // under it first), so its thread id is still its own.
                    let g = slot.lock().unwrap_or_else(|e| e.into_inner());
                    if matches!(g.state, WorkerState::Running(_)) && g.tid > 0 {
                        abandon_worker(g.tid);
                    }
                }
                let (done, running): (Vec<_>, Vec<_>) = self.handles.drain(..).partition(|h| h.is_finished());
                for h in done {
                    let _ = h.join();
                }
                // Detached: dropping a JoinHandle does not stop the thread.
                drop(running);
                return;
            }
            stop_all(&self.slots);
            std::thread::sleep(Duration::from_millis(2));
        }
        for h in self.handles.drain(..) {
            // A panicking worker has already reported through the panic hook; its query simply
            // has no entry.
            let _ = h.join();
        }
    }
}

/// What a racing query does with its model (inside its own thread): pool, solved formula, model.
pub type ModelExtractor<T> = std::sync::Arc<dyn Fn(&ExprPool, ExprId, &mut ModelView) -> T + Send + Sync>;

/// One finished query of a race.
#[derive(Debug)]
pub struct RaceEntry<T> {
    pub name: String,
    pub answer: Answer<T>,
}

/// Runs `queries` in parallel, each in its own thread and Z3 context, and returns as soon as
/// one gives a definite answer (sat or unsat), interrupting the others; or when all are done or
/// `timeout` has passed. Returns the finished queries, the winner (if any) last.
///
/// Every worker thread has been joined when this returns (see [`Workers`]): no Z3 object, context
/// or call of the race survives it, and `T` must be plain data (no Z3 term may leave a worker).
pub fn race<T: Send + 'static>(
    pool: std::sync::Arc<ExprPool>,
    queries: Vec<Query>,
    timeout: Duration,
    extract: ModelExtractor<T>,
) -> Vec<RaceEntry<T>> {
    race_until(pool, queries, timeout, extract, &std::sync::atomic::AtomicBool::new(false))
}

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

/// Runs `work` on a solver thread with a Z3 context of its own, until `timeout` or until
/// `cancel` is set: then the context is interrupted (`work`'s current check answers unknown,
/// and the `stopped` it is given says so from then on, so that it ends its loop) and the
/// thread is left to [`Workers`] (joined briefly, else left behind to end through
/// [`exit_now`]). `Err` says why there is no answer.
pub fn in_worker<T: Send + 'static>(
    name: &str,
    timeout: Duration,
    cancel: &std::sync::atomic::AtomicBool,
    work: impl FnOnce(&dyn Fn() -> bool) -> T + Send + 'static,
) -> Result<T, String> {
    use std::sync::{Arc, Mutex};
    let slot = Arc::new(Mutex::new(Slot { state: WorkerState::Pending, stop: false, tid: 0 }));
    let (tx, rx) = std::sync::mpsc::channel::<T>();
    // Set at a cancel *and* at the deadline: Spacer may take seconds to notice an interrupt,
    // and the worker is then left behind at once (see `Workers`), not waited for.
    let stop_now = std::sync::atomic::AtomicBool::new(false);
    let mut workers = Workers { slots: vec![slot.clone()], handles: vec![], cancel: &stop_now };
    // Not one of the APC's solver workers (`set_worker_share`): its priority is its caller's
    // (a late prover's, `engine::Late`, stays low).
    let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
        note_context();
        let ctx = z3::Context::thread_local();
        if !announce_running(&slot, &ctx) {
            return;
        }
        let stopped = || slot.lock().unwrap_or_else(|e| e.into_inner()).stop;
        let answer = work(&stopped);
        slot.lock().unwrap_or_else(|e| e.into_inner()).state = WorkerState::Done;
        drop(ctx);
        let _ = tx.send(answer);
    });
    match spawned {
        Ok(h) => workers.handles.push(h),
        Err(e) => return Err(format!("cannot start the solver thread: {e}")),
    }
    let deadline = Instant::now() + timeout;
    loop {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            stop_now.store(true, std::sync::atomic::Ordering::SeqCst);
            return Err("cancelled".into());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            stop_now.store(true, std::sync::atomic::Ordering::SeqCst);
            return Err("the time budget ran out".into());
        }
        match rx.recv_timeout(left.min(Duration::from_millis(5))) {
            Ok(a) => return Ok(a),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err("the solver thread ended without an answer".into()),
        }
    }
    // `workers` is dropped here: the worker is interrupted and joined.
}

/// The CPU share of the solver worker threads together (see [`set_worker_share`]), and the
/// threads running now.
static WORKER_SHARE: std::sync::Mutex<WorkerShare> = std::sync::Mutex::new(WorkerShare { total: None, tids: Vec::new(), callers: Vec::new() });

struct WorkerShare {
    /// `None`: every worker at the base priority; else the scheduler weight of all of them
    /// together (a nice-0 thread weighs [`NICE_0_WEIGHT`]).
    total: Option<u32>,
    tids: Vec<libc::pid_t>,
    /// The threads among `tids` that run a race's query themselves (see [`race_until`]), with
    /// the nice value each gets back when its query ends.
    callers: Vec<(libc::pid_t, i32)>,
}

/// The Linux scheduler's weight of a nice-0 thread.
pub const NICE_0_WEIGHT: u32 = 1024;
/// The scheduler's weights of nice values 0 to 19 (`sched_prio_to_weight`): a thread's share of
/// a busy core is its weight over the sum of the runnable threads' weights.
const NICE_WEIGHTS: [u32; 20] = [1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15];

/// The nice value whose weight is nearest `weight` (on a log scale).
fn nice_for_weight(weight: u32) -> i32 {
    let w = (weight.max(1) as f64).ln();
    let distance = |k: usize| ((NICE_WEIGHTS[k] as f64).ln() - w).abs();
    (0..NICE_WEIGHTS.len()).min_by(|&a, &b| distance(a).total_cmp(&distance(b))).unwrap_or(0) as i32
}

impl WorkerShare {
    /// Each worker's nice value now.
    fn nice(&self) -> i32 {
        match self.total {
            None => 0,
            Some(total) => nice_for_weight(total / self.tids.len().max(1) as u32),
        }
    }

    fn apply(&self) {
        let nice = crate::priority::lowered(self.nice());
        for &t in &self.tids {
            // SAFETY: a plain system call; the thread is alive while it is registered (it
            // removes itself under this lock before it ends).
            unsafe { libc::setpriority(libc::PRIO_PROCESS, t as libc::id_t, nice) };
        }
    }
}

/// Registers the calling worker thread for [`set_worker_share`] while it lives.
struct WorkerPriority(libc::pid_t);

impl WorkerPriority {
    fn enter() -> WorkerPriority {
        let tid = unsafe { libc::gettid() };
        let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
        share.tids.push(tid);
        // One more worker: each one's share of the total is smaller.
        if share.total.is_some() {
            share.apply();
        }
        WorkerPriority(tid)
    }

    /// [`Self::enter`] for the thread that calls a race and runs one of its queries: a worker
    /// while the query runs, its own nice value again afterwards (the one it had, or the last
    /// one [`set_thread_nice`] asked for meanwhile).
    fn enter_as_caller() -> WorkerPriority {
        let tid = unsafe { libc::gettid() };
        // SAFETY: plain system calls. `getpriority` may return -1 as a value: errno decides.
        let nice = unsafe {
            *libc::__errno_location() = 0;
            let n = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
            if *libc::__errno_location() != 0 { 0 } else { n }
        };
        WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner()).callers.push((tid, nice));
        Self::enter()
    }
}

impl Drop for WorkerPriority {
    fn drop(&mut self) {
        let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
        share.tids.retain(|t| *t != self.0);
        if let Some(k) = share.callers.iter().position(|(t, _)| *t == self.0) {
            let (_, nice) = share.callers.swap_remove(k);
            // SAFETY: a plain system call on the calling thread.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, self.0 as libc::id_t, nice) };
        }
        if share.total.is_some() {
            share.apply();
        }
    }
}

/// Sets thread `tid`'s nice value (absolute, see `priority::lowered`), unless it is running a
/// race's query as a worker ([`race_until`]'s caller): then it gets it when its query ends,
/// and keeps the workers' share meanwhile.
pub fn set_thread_nice(tid: libc::pid_t, nice: i32) {
    let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
    match share.callers.iter_mut().find(|(t, _)| *t == tid) {
        Some(c) => c.1 = nice,
        // SAFETY: a plain system call; at worst the thread has just ended.
        None => unsafe {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
        },
    }
}

/// Sets worker thread `tid`, left behind, to the lowest priority for good.
fn abandon_worker(tid: libc::pid_t) {
    let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
    share.tids.retain(|t| *t != tid);
    // SAFETY: a plain system call on a thread that is alive (see the caller).
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) };
}

/// Gives the solver worker threads, running or started later, `total` scheduler weight
/// together (`None`: each its full base priority). The portfolio weighs the APC's two or
/// three solvers as a fraction of one engine beside the searches: each worker's nice value
/// follows from their number.
pub fn set_worker_share(total: Option<u32>) {
    let mut share = WORKER_SHARE.lock().unwrap_or_else(|e| e.into_inner());
    if share.total != total {
        share.total = total;
        share.apply();
    }
}

/// [`race`] that also ends, every worker stopped and joined, soon after `cancel` is set (another
/// engine of the portfolio found the answer).
///
/// The first query runs on the calling thread, in its own Z3 context, the others on worker
/// threads; a thread without Z3 watches the race meanwhile (deadline, cancel, the first
/// definite answer) and interrupts the losers, the caller's query included. A context costs
/// 6 ms alone and 10-15 ms beside the other engines (Z3 4.8.12 fills 17 MB of hash tables for
/// each), and the caller's already exists (the apc engine's: its APC's build, its quick check).
/// Should the caller's query ignore its interrupt, the race returns when the query does
/// (a worker would have been left behind).
pub fn race_until<T: Send + 'static>(
    pool: std::sync::Arc<ExprPool>,
    queries: Vec<Query>,
    timeout: Duration,
    extract: ModelExtractor<T>,
    cancel: &std::sync::atomic::AtomicBool,
) -> Vec<RaceEntry<T>> {
    use std::sync::atomic::Ordering;
    use std::sync::{mpsc, Arc, Mutex};
    let (tx, rx) = mpsc::channel::<RaceEntry<T>>();
    let mut workers = Workers { slots: vec![], handles: vec![], cancel };
    // The first worker with a model to minimise: it has won the race, so the others are
    // stopped and leave it the cores for its minimisation.
    let claimed = Arc::new(std::sync::atomic::AtomicUsize::new(usize::MAX));
    let new_slot = || Arc::new(Mutex::new(Slot { state: WorkerState::Pending, stop: false, tid: 0 }));
    let mut queries = queries.into_iter().enumerate();
    let own = queries.next().map(|(index, query)| {
        let slot = new_slot();
        workers.slots.push(slot.clone());
        (index, query, slot)
    });
    for (index, query) in queries {
        let slot = new_slot();
        workers.slots.push(slot.clone());
        let (pool, extract, tx, claimed) = (pool.clone(), extract.clone(), tx.clone(), claimed.clone());
        let handle = std::thread::Builder::new().name(format!("z3-{}", query.name)).spawn(move || {
            #[cfg(test)]
            race_tests::register_worker_thread();
            let _priority = WorkerPriority::enter();
            note_context();
        let ctx = z3::Context::thread_local();
            let entry = run_racer(&pool, index, query, &slot, &ctx, &claimed, &extract);
            // The context goes with the thread (its thread-local destructor, once this closure
            // returned); `run_racer` marked the slot done, so nobody interrupts it any more.
            drop(ctx);
            if let Some(entry) = entry {
                let _ = tx.send(entry);
            }
        });
        match handle {
            Ok(h) => workers.handles.push(h),
            Err(_) => {
                // No thread: the query has no answer (the slot stays `Pending`, harmless).
            }
        }
    }
    let total = workers.handles.len() + usize::from(own.is_some());
    // Stopping is not instantaneous: Z3 notices an interrupt at its next check of the flag and
    // then tears the query down (which can take long on a large query under
    // load). Interrupt that much earlier, so that the joined race still ends within `timeout`.
    let margin = (timeout / 8).min(Duration::from_millis(1500));
    let deadline = Instant::now() + timeout.saturating_sub(margin);
    let watch_claimed = claimed.clone();
    let own_slot = own.as_ref().map(|(_, _, slot)| slot.clone());
    std::thread::scope(|scope| {
        let watcher = std::thread::Builder::new().name("race-watch".into()).spawn_scoped(scope, move || {
            let claimed = watch_claimed;
            let mut done = vec![];
            let mut others_stopped = false;
            while done.len() < total && !cancel.load(Ordering::Relaxed) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    if claimed.load(Ordering::SeqCst) != usize::MAX {
                        // A worker is still minimising a model it already has: stop it and
                        // take the best model so far rather than none.
                        stop_all(&workers.slots);
                        let until = Instant::now() + CLAIMED_GRACE;
                        while let Ok(entry) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                            let definite = entry.answer.outcome.is_definite();
                            done.push(entry);
                            if definite {
                                break;
                            }
                        }
                    }
                    break;
                }
                let winner = claimed.load(Ordering::SeqCst);
                if winner != usize::MAX && !others_stopped {
                    others_stopped = true;
                    let others: Vec<SharedSlot> = workers.slots.iter().enumerate().filter(|(k, _)| *k != winner).map(|(_, s)| s.clone()).collect();
                    stop_all(&others);
                }
                // Answers wake this at once; the period only bounds how late a cancel is seen
                // (another engine's witness: every millisecond here is the portfolio's).
                let entry = match rx.recv_timeout(left.min(Duration::from_millis(5))) {
                    Ok(entry) => entry,
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                };
                let definite = entry.answer.outcome.is_definite();
                done.push(entry);
                if definite {
                    break;
                }
            }
            // Stop whatever still runs, and wait until the workers have left Z3 (including
            // their contexts) and the caller's query has ended: an interrupt that comes before
            // its check has started is lost, so it is repeated, as `Workers` does for theirs.
            let joining = Instant::now();
            let caller = own_slot;
            drop(workers);
            while let Some(slot) = &caller {
                if matches!(slot.lock().unwrap_or_else(|e| e.into_inner()).state, WorkerState::Done) {
                    break;
                }
                stop_all(std::slice::from_ref(slot));
                std::thread::sleep(Duration::from_millis(2));
            }
            tracing::debug!(seconds = joining.elapsed().as_secs_f64(), "race: every worker stopped and joined");
            done
        });
        if let Some((index, query, slot)) = own {
            let _priority = WorkerPriority::enter_as_caller();
            note_context();
        let ctx = z3::Context::thread_local();
            if let Some(entry) = run_racer(&pool, index, query, &slot, &ctx, &claimed, &extract) {
                let _ = tx.send(entry);
            }
        }
        // The watcher sees the end of the answers once every sender is gone.
        drop(tx);
        match watcher {
            Ok(w) => w.join().unwrap_or_default(),
            // No watcher thread: its closure, and with it `workers`, was dropped at once, which
            // stopped every query (the caller's never started) and joined the workers.
            Err(_) => vec![],
        }
    })
}

/// One query of a race, on the thread whose context `ctx` is: announced (so that the race can
/// interrupt it), checked, and marked done before its answer is returned (`None`: the race was
/// stopped before it started).
#[allow(clippy::too_many_arguments)]
fn run_racer<T>(
    pool: &ExprPool,
    index: usize,
    query: Query,
    slot: &SharedSlot,
    ctx: &z3::Context,
    claimed: &std::sync::atomic::AtomicUsize,
    extract: &ModelExtractor<T>,
) -> Option<RaceEntry<T>> {
    use std::sync::atomic::Ordering;
    let Query { name, formula, nonlinear_as_functions, objective } = query;
    if !announce_running(slot, ctx) {
        return None;
    }
    let stopped = || slot.lock().unwrap_or_else(|e| e.into_inner()).stop;
    let claim = |_: &T| {
        let _ = claimed.compare_exchange(usize::MAX, index, Ordering::SeqCst, Ordering::SeqCst);
    };
    let answer = check_minimising(pool, formula, SolverKind::Portfolio, nonlinear_as_functions, None, objective.as_ref(), &stopped, &claim, &mut |m| extract(pool, formula, m));
    // From now on nobody may interrupt this context.
    slot.lock().unwrap_or_else(|e| e.into_inner()).state = WorkerState::Done;
    Some(RaceEntry { name, answer })
}

/// Translates pool expressions into Z3 terms, memoised.
struct Translator<'a> {
    pool: &'a ExprPool,
    memo: HashMap<ExprId, Dynamic>,
    fresh: u32,
    /// See [`Query::nonlinear_as_functions`].
    nonlinear_as_functions: bool,
    /// The uninterpreted function standing for each nonlinear operation, by operation and width.
    functions: HashMap<(BvOp, u32), z3::FuncDecl>,
}

fn z3_sort(s: Sort) -> z3::Sort {
    match s {
        Sort::Bool => z3::Sort::bool(),
        Sort::Bv(w) => z3::Sort::bitvector(w),
        Sort::Array { index, elem } => z3::Sort::array(&z3::Sort::bitvector(index), &z3::Sort::bitvector(elem)),
    }
}

impl<'a> Translator<'a> {
    fn new(pool: &'a ExprPool) -> Self {
        Translator { pool, memo: HashMap::new(), fresh: 0, nonlinear_as_functions: false, functions: HashMap::new() }
    }

    fn bv(&mut self, e: ExprId) -> BV {
        self.translate(e).as_bv().expect("bit-vector term")
    }
    fn boolean(&mut self, e: ExprId) -> Bool {
        self.translate(e).as_bool().expect("Boolean term")
    }
    fn array(&mut self, e: ExprId) -> Array {
        self.translate(e).as_array().expect("array term")
    }

    fn translate(&mut self, root: ExprId) -> Dynamic {
        // Post-order without recursion: deep expressions must not overflow the stack.
        let mut stack = vec![(root, false)];
        while let Some((e, ready)) = stack.pop() {
            if self.memo.contains_key(&e) {
                continue;
            }
            let node = self.pool.get(e);
            if !ready {
                stack.push((e, true));
                for k in crate::expr::children_of(node) {
                    if !self.memo.contains_key(&k) {
                        stack.push((k, false));
                    }
                }
                continue;
            }
            let t = self.node(e);
            self.memo.insert(e, t);
        }
        self.memo[&root].clone()
    }

    fn node(&mut self, e: ExprId) -> Dynamic {
        let sort = self.pool.sort(e);
        match self.pool.get(e).clone() {
            Expr::Bool(b) => Bool::from_bool(b).into(),
            Expr::Const { width, value } => BV::from_u64(value, width).into(),
            Expr::Symbol { name, .. } => Dynamic::new_const(&*name, &z3_sort(sort)),
            Expr::Star(s) => {
                // ⋆ never reaches the solver inside a formula (it absorbs whatever contains it,
                // and ⋆ tests are dropped); should one arrive, an unconstrained constant is sound.
                self.fresh += 1;
                Dynamic::new_const(format!("⋆{}", self.fresh), &z3_sort(s))
            }
            Expr::Not(a) => self.boolean(a).not().into(),
            Expr::And(xs) => {
                let v: Vec<Bool> = xs.iter().map(|&x| self.boolean(x)).collect();
                Bool::and(&v).into()
            }
            Expr::Or(xs) => {
                let v: Vec<Bool> = xs.iter().map(|&x| self.boolean(x)).collect();
                Bool::or(&v).into()
            }
            Expr::Ite(c, a, b) => {
                let c = self.boolean(c);
                let (a, b) = (self.translate(a), self.translate(b));
                c.ite(&a, &b)
            }
            Expr::Bin(op, a, b) if self.nonlinear_as_functions && is_nonlinear(self.pool, op, a, b) => {
                let w = self.pool.width(a);
                let (mut a, mut b) = (self.bv(a), self.bv(b));
                if op == BvOp::Mul {
                    // Multiplication commutes: the function gets (min, max) of its operands, so
                    // `a·κ` and `n·a` are one term as soon as κ = n, whatever the order.
                    let lt = a.bvult(&b);
                    (a, b) = (lt.ite(&a, &b), lt.ite(&b, &a));
                }
                let f = self.functions.entry((op, w)).or_insert_with(|| {
                    let s = z3::Sort::bitvector(w);
                    z3::FuncDecl::new(format!("{op:?}{w}").to_lowercase(), &[&s, &s], &s)
                });
                f.apply(&[&a, &b])
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.bv(a), self.bv(b));
                match op {
                    BvOp::Add => a.bvadd(&b),
                    BvOp::Sub => a.bvsub(&b),
                    BvOp::Mul => a.bvmul(&b),
                    BvOp::UDiv => a.bvudiv(&b),
                    BvOp::SDiv => a.bvsdiv(&b),
                    BvOp::URem => a.bvurem(&b),
                    BvOp::SRem => a.bvsrem(&b),
                    BvOp::Shl => a.bvshl(&b),
                    BvOp::LShr => a.bvlshr(&b),
                    BvOp::AShr => a.bvashr(&b),
                    BvOp::And => a.bvand(&b),
                    BvOp::Or => a.bvor(&b),
                    BvOp::Xor => a.bvxor(&b),
                }
                .into()
            }
            Expr::Cmp(p, a, b) => {
                if self.pool.sort(a) == Sort::Bool {
                    let (x, y) = (self.boolean(a), self.boolean(b));
                    let eq = x.iff(&y);
                    return if p == IntPredicate::Eq { eq.into() } else { eq.not().into() };
                }
                let (a, b) = (self.bv(a), self.bv(b));
                use IntPredicate::*;
                match p {
                    Eq => a.eq(&b),
                    Ne => a.eq(&b).not(),
                    Ugt => a.bvugt(&b),
                    Uge => a.bvuge(&b),
                    Ult => a.bvult(&b),
                    Ule => a.bvule(&b),
                    Sgt => a.bvsgt(&b),
                    Sge => a.bvsge(&b),
                    Slt => a.bvslt(&b),
                    Sle => a.bvsle(&b),
                }
                .into()
            }
            Expr::ZExt(a, w) => {
                let from = self.pool.width(a);
                self.bv(a).zero_ext(w - from).into()
            }
            Expr::SExt(a, w) => {
                let from = self.pool.width(a);
                self.bv(a).sign_ext(w - from).into()
            }
            Expr::Extract { hi, lo, e } => self.bv(e).extract(hi, lo).into(),
            Expr::Load { array, offset, width } => {
                let (arr, off) = (self.array(array), self.bv(offset));
                let mut out: Option<BV> = None;
                for k in 0..width / 8 {
                    let idx = off.bvadd(BV::from_u64(k as u64, 64));
                    let byte = arr.select(&idx).as_bv().expect("memory holds bytes");
                    // Little endian: byte k holds bits 8k..8k+7.
                    out = Some(match out {
                        None => byte,
                        Some(low) => byte.concat(&low),
                    });
                }
                out.expect("loads have at least one byte").into()
            }
            Expr::Store { array, offset, value, width } => {
                let (mut arr, off, val) = (self.array(array), self.bv(offset), self.bv(value));
                for k in 0..width / 8 {
                    let idx = off.bvadd(BV::from_u64(k as u64, 64));
                    arr = arr.store(&idx, &val.extract(8 * k + 7, 8 * k));
                }
                arr.into()
            }
            Expr::ConstArray { index, value } => {
                let v = self.translate(value);
                Array::const_array(&z3::Sort::bitvector(index), &v).into()
            }
            Expr::Select(a, i) => {
                let (a, i) = (self.array(a), self.bv(i));
                a.select(&i)
            }
            Expr::Lambda { var, body } => {
                let bound = self.translate(var);
                let body = self.translate(body);
                z3::ast::lambda_const(&[&bound as &dyn Ast], &body).into()
            }
            Expr::Forall(vars, body) | Expr::Exists(vars, body) => {
                let bound: Vec<Dynamic> = vars.iter().map(|&v| self.translate(v)).collect();
                let refs: Vec<&dyn Ast> = bound.iter().map(|d| d as &dyn Ast).collect();
                let body = self.boolean(body);
                if matches!(self.pool.get(e), Expr::Forall(..)) {
                    z3::ast::forall_const(&refs, &[], &body).into()
                } else {
                    z3::ast::exists_const(&refs, &[], &body).into()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::SymbolKind;

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

#[cfg(test)]
mod race_tests {
    use super::*;
    use crate::expr::SymbolKind;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// Worker threads alive, by thread name; a thread counts until its thread-local destructors
    /// (among them the one deleting its Z3 context) have run.
    static LIVE: Mutex<Option<HashMap<String, i64>>> = Mutex::new(None);

    struct LiveGuard(String);
    impl Drop for LiveGuard {
        fn drop(&mut self) {
            *LIVE.lock().unwrap().get_or_insert_with(HashMap::new).entry(self.0.clone()).or_default() -= 1;
        }
    }
    thread_local! {
        static GUARD: std::cell::RefCell<Option<LiveGuard>> = const { std::cell::RefCell::new(None) };
    }

    /// Called first thing on a race worker thread (tests only).
    pub(super) fn register_worker_thread() {
        let name = std::thread::current().name().unwrap_or("").to_string();
        *LIVE.lock().unwrap().get_or_insert_with(HashMap::new).entry(name.clone()).or_default() += 1;
        GUARD.with(|g| *g.borrow_mut() = Some(LiveGuard(name)));
    }

    fn live(name: &str) -> i64 {
        LIVE.lock().unwrap().get_or_insert_with(HashMap::new).get(&format!("z3-{name}")).copied().unwrap_or(0)
    }

    /// x·y = N for the product N of the two largest 32-bit primes, both factors > 1: Z3 does
    /// not answer this within minutes (bit-blasted 64-bit multiplication).
    fn factoring(p: &mut ExprPool) -> (ExprId, ExprId) {
        let x = p.symbol("x", Sort::Bv(64), SymbolKind::Input);
        let y = p.symbol("y", Sort::Bv(64), SymbolKind::Input);
        let n = p.bv(64, 4_294_967_291u64.wrapping_mul(4_294_967_279));
        let one = p.bv(64, 1);
        let limit = p.bv(64, 1 << 32);
        let xy = p.bin(BvOp::Mul, x, y);
        let c = [
            p.eq(xy, n),
            p.cmp(IntPredicate::Ugt, x, one),
            p.cmp(IntPredicate::Ugt, y, one),
            p.cmp(IntPredicate::Ult, x, limit),
            p.cmp(IntPredicate::Ult, y, limit),
        ];
        (p.and(c), x)
    }

    /// A thread's own check (the APC's build: `check` with Z3's timeout, no race) ends soon
    /// after another thread interrupts it through an [`Interrupter`].
    #[test]
    fn an_interrupter_ends_another_thread_s_check() {
        let mut p = ExprPool::new();
        let (hard, _) = factoring(&mut p);
        let interrupter = Interrupter::default();
        let inside = interrupter.clone();
        let worker = std::thread::spawn(move || {
            let _guard = inside.enter();
            let t = Instant::now();
            let answer = check_portfolio(&p, hard, Duration::from_secs(60), |_| ());
            (answer.outcome.is_definite(), t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        interrupter.interrupt();
        let (definite, took) = worker.join().unwrap();
        assert!(!definite && took > Duration::from_millis(250), "no answer to a factoring query before the interrupt");
        assert!(at.elapsed() < Duration::from_secs(3), "the check ran on {:?} after the interrupt", at.elapsed());
    }

    /// Losing workers used to run on, detached, after `race` returned; when the
    /// process then exited, libz3's static destructors ran under them (heap corruption,
    /// `free(): corrupted unsorted chunks`). Every worker must be gone, thread-local Z3 context
    /// included, when `race` returns, and an interrupted loser must not delay it.
    /// Another engine's answer (the cancel flag) ends a race at once: interrupted workers are
    /// waited for only briefly, never for Z3's slow teardown.
    #[test]
    fn a_cancelled_race_returns_at_once() {
        let mut p = ExprPool::new();
        let (hard, _) = factoring(&mut p);
        let pool = Arc::new(p);
        let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = cancel.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Instant::now()
        });
        let res = race_until(pool, vec![Query::exact("cancel-hard", hard)], Duration::from_secs(60), Arc::new(|_, _, _: &mut ModelView| ()), &cancel);
        let cancelled_at = setter.join().unwrap();
        assert!(res.iter().all(|r| !r.answer.outcome.is_definite()), "no answer to a factoring query in 200 ms");
        assert!(cancelled_at.elapsed() < Duration::from_millis(500), "the race ran on {:?} after the cancel", cancelled_at.elapsed());
    }

    fn minimised(pool: ExprPool, queries: Vec<Query>, read: Vec<ExprId>) -> Vec<u64> {
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let res = race_until(Arc::new(pool), queries, Duration::from_secs(30), Arc::new(move |_, _, m: &mut ModelView| read.iter().map(|&e| m.eval(e).unwrap()).collect::<Vec<u64>>()), &cancel);
        match res.into_iter().last().map(|r| r.answer.outcome) {
            Some(Outcome::Sat(v)) => v,
            other => panic!("expected a model, got {other:?}"),
        }
    }

    /// The smallest counter whose wrapped product passes a bound, and the least sum of two
    /// counters under constraints that have far larger models; terms near 2^64 whose sum would
    /// wrap around do not count as small.
    #[test]
    fn an_objective_gives_the_model_with_the_least_sum() {
        let mut p = ExprPool::new();
        let k = p.symbol("k", Sort::Bv(64), SymbolKind::Kappa(1));
        let (three, hundred, big) = (p.bv(64, 3), p.bv(64, 100), p.bv(64, 1 << 40));
        let times3 = p.bin(BvOp::Mul, k, three);
        let c = [p.cmp(IntPredicate::Ugt, times3, hundred), p.cmp(IntPredicate::Ult, k, big)];
        let f = p.and(c);
        let objective = Objective { terms: vec![k], above: 0, budget: Duration::from_secs(10) };
        assert_eq!(minimised(p.clone(), vec![Query::exact("least-k", f).minimising(objective)], vec![k]), vec![34]);

        let a = p.symbol("a", Sort::Bv(64), SymbolKind::Kappa(2));
        let b = p.symbol("b", Sort::Bv(64), SymbolKind::Kappa(3));
        let (two, seven, top) = (p.bv(64, 2), p.bv(64, 7), p.bv(64, u64::MAX - 3));
        let sum = p.bin(BvOp::Add, a, b);
        // a + b = 7 (mod 2^64) and a ≥ 2: least sum a + b = 7 (not a = 2^64 - 3, b = 10).
        let c = [p.eq(sum, seven), p.cmp(IntPredicate::Uge, a, two), p.cmp(IntPredicate::Ne, a, top)];
        let g = p.and(c);
        let objective = Objective { terms: vec![a, b], above: 0, budget: Duration::from_secs(10) };
        let v = minimised(p.clone(), vec![Query::exact("least-sum", g).minimising(objective.clone())], vec![a, b]);
        assert_eq!(v[0] + v[1], 7, "{v:?}");
        assert!(v[0] >= 2);
        // Racing an unanswerable query: the model's worker stops it and still minimises.
        let (hard, _) = factoring(&mut p);
        let v = minimised(p, vec![Query::exact("least-hard", hard), Query::exact("least-raced", g).minimising(objective)], vec![a, b]);
        assert_eq!(v[0] + v[1], 7, "{v:?}");
    }

    /// The search itself, on a made-up oracle: models exist from 34 up; the probes gallop up to
    /// 63, then bisect down to 34; an unknown ends the search with the best value so far.
    #[test]
    fn least_value_gallops_then_bisects() {
        let mut asked = vec![];
        let least = least_value(1 << 40, Duration::from_secs(5), &|| false, |s, _| {
            asked.push(s);
            if s >= 34 { Probe::Found(s.min(50)) } else { Probe::Empty }
        });
        assert_eq!(least, (34, true));
        assert_eq!(&asked[..7], &[0, 1, 3, 7, 15, 31, 63]);
        assert!(asked.len() <= 7 + 6, "{asked:?}");
        let least = least_value(1000, Duration::from_secs(5), &|| false, |s, _| if s >= 500 { Probe::Found(s) } else if s < 100 { Probe::Empty } else { Probe::Unknown });
        assert_eq!(least, (1000, false), "the first unknown (at 127) ends the search, the least unknown");
    }

    /// A race that ends while its winner is still minimising (a probe that Z3 cannot decide)
    /// returns the model found so far, not nothing.
    #[test]
    fn a_race_past_its_deadline_keeps_the_model_being_minimised() {
        let mut p = ExprPool::new();
        // A prime of 32 bits as a product of two factors > 1: no model, and no quick proof.
        let x = p.symbol("x", Sort::Bv(64), SymbolKind::Input);
        let y = p.symbol("y", Sort::Bv(64), SymbolKind::Input);
        let (n, one, limit) = (p.bv(64, 4_294_967_291), p.bv(64, 1), p.bv(64, 1 << 32));
        let xy = p.bin(BvOp::Mul, x, y);
        let c = [p.eq(xy, n), p.cmp(IntPredicate::Ugt, x, one), p.cmp(IntPredicate::Ugt, y, one), p.cmp(IntPredicate::Ult, x, limit), p.cmp(IntPredicate::Ult, y, limit)];
        let hard = p.and(c);
        let k = p.symbol("k", Sort::Bv(64), SymbolKind::Kappa(1));
        let five = p.bv(64, 5);
        let easy = p.cmp(IntPredicate::Uge, k, five);
        // k ≤ 4 needs the factoring: the first probe (k ≤ 0) runs until the race stops it.
        let f = p.or([easy, hard]);
        let objective = Objective { terms: vec![k], above: 0, budget: Duration::from_secs(60) };
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let start = Instant::now();
        let res = race_until(Arc::new(p), vec![Query::exact("past-deadline", f).minimising(objective)], Duration::from_secs(2), Arc::new(move |_, _, m: &mut ModelView| m.eval(k).unwrap()), &cancel);
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        match res.into_iter().last().map(|r| r.answer.outcome) {
            Some(Outcome::Sat(v)) => assert!(v >= 5, "{v}"),
            other => panic!("the model was lost: {other:?}"),
        }
    }

    /// Below `above`, the first model is kept (no search).
    #[test]
    fn a_small_enough_model_is_kept() {
        let mut p = ExprPool::new();
        let k = p.symbol("k", Sort::Bv(64), SymbolKind::Kappa(1));
        let (lo, hi) = (p.bv(64, 1), p.bv(64, 5));
        let c = [p.cmp(IntPredicate::Uge, k, lo), p.cmp(IntPredicate::Ule, k, hi)];
        let f = p.and(c);
        let objective = Objective { terms: vec![k], above: 5, budget: Duration::from_secs(10) };
        let v = minimised(p, vec![Query::exact("small", f).minimising(objective)], vec![k]);
        assert!((1..=5).contains(&v[0]));
    }

    /// The first query runs on the calling thread, the others on workers: whichever loses is
    /// interrupted, and every worker is joined before the race returns.
    #[test]
    fn race_returns_only_after_every_worker_is_gone() {
        let mut p = ExprPool::new();
        let (hard, x) = factoring(&mut p);
        let z = p.symbol("z", Sort::Bv(16), SymbolKind::Input);
        let c = p.bv(16, 5);
        let easy = p.eq(z, c);
        let pool = Arc::new(p);
        // The caller's query loses.
        let start = Instant::now();
        let res = race(
            pool.clone(),
            vec![Query::exact("join-hard-own", hard), Query::exact("join-easy", easy)],
            Duration::from_secs(120),
            Arc::new(move |_, _, m: &mut ModelView| m.eval(x)),
        );
        assert!(start.elapsed() < Duration::from_secs(20), "the caller's query was not interrupted: {:?}", start.elapsed());
        assert_eq!(res.last().map(|r| r.name.as_str()), Some("join-easy"));
        assert_eq!(live("join-easy"), 0);
        assert_eq!(Arc::strong_count(&pool), 1, "a worker still holds the pool");
        // A worker's query loses.
        let start = Instant::now();
        let res = race(
            pool.clone(),
            vec![Query::exact("join-easy-own", easy), Query::exact("join-hard", hard)],
            Duration::from_secs(120),
            Arc::new(move |_, _, m: &mut ModelView| m.eval(x)),
        );
        assert!(start.elapsed() < Duration::from_secs(20), "the loser was not interrupted: {:?}", start.elapsed());
        assert_eq!(res.last().map(|r| r.name.as_str()), Some("join-easy-own"));
        assert_eq!(live("join-hard"), 0, "the interrupted loser still runs after race returned");
        assert_eq!(Arc::strong_count(&pool), 1, "a worker still holds the pool");

        // The deadline path: nobody wins, every worker is stopped and joined all the same. On a
        // thread of its own: a context that worked on the factoring before may answer it
        // quickly.
        let racer_pool = pool.clone();
        let (res, took) = std::thread::spawn(move || {
            let start = Instant::now();
            let res = race(racer_pool, vec![Query::exact("join-deadline-own", hard), Query::exact("join-deadline", hard)], Duration::from_millis(700), Arc::new(|_, _, _: &mut ModelView| ()));
            (res, start.elapsed())
        })
        .join()
        .unwrap();
        assert!(res.iter().all(|r| !r.answer.outcome.is_definite()), "{res:?}");
        assert!(took < Duration::from_secs(20), "deadline not kept: {took:?}");
        assert_eq!(live("join-deadline"), 0);
        assert_eq!(Arc::strong_count(&pool), 1);
    }

    #[test]
    fn the_first_definite_answer_wins() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(16), SymbolKind::Input);
        let c = p.bv(16, 77);
        let easy = p.eq(x, c);
        let hard_unknown = {
            // A formula Z3 answers quickly either way; both are definite here: just check plumbing.
            let d = p.bv(16, 78);
            p.eq(x, d)
        };
        let pool = Arc::new(p);
        let res = race(
            pool,
            vec![Query::exact("a", easy), Query::exact("b", hard_unknown)],
            Duration::from_secs(5),
            Arc::new(move |_, _, m: &mut ModelView| m.eval(x)),
        );
        let last = res.last().expect("an answer");
        assert!(last.answer.outcome.is_definite());
        match &last.answer.outcome {
            Outcome::Sat(Some(v)) => assert!(*v == 77 || *v == 78),
            other => panic!("{other:?}"),
        }
    }
}
