//! The incremental solver shared by every state of one search.
//!
//! Each path-condition node gets a fresh guard literal `g` and the solver keeps `g → cond`
//! forever; a state's path condition is the list of its guards, passed as assumptions. So
//! jumping between states of a best-first frontier costs no push/pop replay, and Z3 keeps what it
//! learnt across states.

use super::state::{PathCondition, PcNode};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Instant;
use z3::ast::Bool;
use z3::{Model, SatResult, Solver};

/// Longest single query, in CPU time of the search's thread (see [`QueryClock`]): a state whose
/// query times out is given up, not decided.
const QUERY_MS: u32 = 3_000;

/// Queries end this long before the search's deadline.
pub const DEADLINE_MARGIN: std::time::Duration = std::time::Duration::from_millis(300);

/// The end of the query under way, for the search's watchdog, which interrupts the thread's
/// context once a query is [`QUERY_GRACE`] past its budget: the DSE's only time limit on a
/// query (see [`PathSolver::check_within`] for why not Z3's `timeout`).
///
/// The budget is CPU time of the querying thread, not wall time: beside the other engines on
/// two cores a query gets a fraction of a core, and with a wall-clock budget whether a search
/// was exact depended on the load. The search's deadline stays wall time (checked by the
/// watchdog).
#[derive(Debug)]
pub struct QueryClock {
    /// The CPU-time clock of the thread whose query runs.
    cpu_clock: std::sync::atomic::AtomicI32,
    /// Its reading (ns) when the running query is overdue; `u64::MAX`: none runs.
    until_ns: std::sync::atomic::AtomicU64,
}

/// How far past its budget a query may run before the watchdog interrupts it.
pub const QUERY_GRACE: std::time::Duration = std::time::Duration::from_millis(0);

/// CPU time the calling thread has used (zero if it cannot be read): the clock of the search's
/// own decisions (its checks' shares, when the full APC joins), which then do not depend on
/// how many other engines share the machine.
pub use crate::solve::cpu_limit::thread_cpu_time;
use crate::solve::cpu_limit::cpu_ns;

impl QueryClock {
    pub fn new() -> Self {
        QueryClock { cpu_clock: std::sync::atomic::AtomicI32::new(libc::CLOCK_MONOTONIC), until_ns: std::sync::atomic::AtomicU64::new(u64::MAX) }
    }

    /// Arms the clock for a query of `budget_ms` of the calling thread's CPU time.
    fn arm(&self, budget_ms: u32) {
        let clock = crate::solve::cpu_limit::own_cpu_clock();
        let budget = std::time::Duration::from_millis(budget_ms as u64) + QUERY_GRACE;
        self.cpu_clock.store(clock, std::sync::atomic::Ordering::SeqCst);
        self.until_ns.store(cpu_ns(clock).saturating_add(budget.as_nanos() as u64), std::sync::atomic::Ordering::SeqCst);
    }

    fn disarm(&self) {
        self.until_ns.store(u64::MAX, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether a query is running (armed and not yet disarmed).
    pub fn armed(&self) -> bool {
        self.until_ns.load(std::sync::atomic::Ordering::SeqCst) != u64::MAX
    }

    /// Whether a query is running past its budget.
    pub fn overdue(&self) -> bool {
        let until = self.until_ns.load(std::sync::atomic::Ordering::SeqCst);
        until != u64::MAX && cpu_ns(self.cpu_clock.load(std::sync::atomic::Ordering::SeqCst)) > until
    }
}

impl Default for QueryClock {
    fn default() -> Self {
        Self::new()
    }
}

pub struct PathSolver {
    pub solver: Solver,
    clock: std::sync::Arc<QueryClock>,
    /// A second solver holding the APC at its base level (preprocessed once) and a copy of
    /// every path-condition implication: pruning queries go there, path queries never pay
    /// for the APC.
    apc: Option<Solver>,
    /// Stream positions the APC reads (`None`: any); only those are tied to the path's nondet
    /// values (each tie is an array read Z3 must carry through every query).
    apc_reads: Option<BTreeSet<u64>>,
    /// The same for the APC's scalar skeleton (the cheap first pruning query), with its own
    /// count of linked nondet positions.
    skeleton: Option<Solver>,
    skeleton_reads: Option<BTreeSet<u64>>,
    skeleton_linked: u64,
    /// The APC itself (for [`PathSolver::apc_counter_guess`]).
    apc_formula: Option<Bool>,
    /// Nondet positions whose link to the APC's stream is asserted in `apc`.
    linked: u64,
    next_guard: u64,
    /// Every guard implication asserted so far, for an APC installed late.
    implications: Vec<Bool>,
    pub calls: u64,
    /// Queries answered by a cached model instead of Z3.
    pub cache_hits: u64,
    /// Models of the latest satisfiable queries, newest first (at most [`MODEL_CACHE`]).
    models: std::collections::VecDeque<Rc<Model>>,
    /// The model of the last satisfiable query (Z3's or a cached one).
    last_model: Option<Rc<Model>>,
    deadline: Instant,
}

/// How many recent models a query tries before it asks Z3. A fork's two children each need a
/// check, and the parent's model satisfies one of them (the side the parent's model takes):
/// about half the queries of a search are answered by evaluating conditions in a model, which
/// takes microseconds where a query takes milliseconds (KLEE's counterexample cache does the
/// same).
const MODEL_CACHE: usize = 4;

/// Path conditions longer than this are not tried on cached models (evaluating them all would
/// cost more than the query).
const MODEL_CACHE_MAX_DEPTH: usize = 20_000;

/// The answer to a query.
#[derive(Debug, PartialEq, Eq)]
pub enum Sat {
    Yes,
    No,
    Unknown,
}

impl PathSolver {
    /// A solver whose queries a watchdog can see through `clock`.
    pub fn with_clock(deadline: Instant, clock: std::sync::Arc<QueryClock>) -> Self {
        PathSolver {
            // Every query has assumptions, so the default solver would only ever use its
            // incremental `smt` solver, after building its whole default tactic (5 ms) for
            // nothing (see `solve::Logic::Incremental`).
            solver: crate::solve::Logic::Incremental.solver(),
            clock,
            apc: None,
            apc_reads: None,
            skeleton: None,
            skeleton_reads: None,
            skeleton_linked: 0,
            apc_formula: None,
            implications: vec![],
            linked: 0,
            next_guard: 0,
            calls: 0,
            cache_hits: 0,
            models: std::collections::VecDeque::new(),
            last_model: None,
            deadline,
        }
    }

    /// `pc ∧ cond` as a new path condition (the old one is unchanged, forks share it).
    pub fn extend(&mut self, pc: &PathCondition, cond: &Bool) -> PathCondition {
        if cond.as_bool() == Some(true) {
            return pc.clone();
        }
        self.next_guard += 1;
        let guard = Bool::new_const(format!("dse.g{}", self.next_guard));
        let imp = guard.implies(cond);
        for a in self.apc.iter().chain(&self.skeleton) {
            a.assert(&imp);
        }
        self.solver.assert(&imp);
        self.implications.push(imp);
        PathCondition { head: Some(Rc::new(PcNode { parent: pc.head.clone(), guard, cond: cond.clone(), depth: pc.len() + 1 })) }
    }

    /// Milliseconds a query may take: at most `cap`, and ending [`DEADLINE_MARGIN`] before the
    /// deadline (Z3 overshoots its timeouts under load; the portfolio waits for every engine).
    fn budget_ms(&self, cap: u32) -> u32 {
        self.deadline.saturating_duration_since(Instant::now()).saturating_sub(DEADLINE_MARGIN).as_millis().clamp(1, cap as u128) as u32
    }

    /// Satisfiability of `pc ∧ extra`, within [`QUERY_MS`] (and the deadline).
    pub fn check(&mut self, pc: &PathCondition, extra: &[Bool]) -> Sat {
        let ms = self.budget_ms(QUERY_MS);
        self.check_within(pc, extra, ms)
    }

    /// Satisfiability of `pc ∧ extra` within `ms` milliseconds. The time limit is the
    /// watchdog's interrupt ([`QueryClock`]), not Z3's `timeout` parameter: Z3 4.8 serves
    /// timeouts from a pool of timer threads shared by every context, and a query's end waits,
    /// spinning on `sched_yield`, for its timer thread; when that thread was spawned by a
    /// reniced solver thread of the `apc` engine it starves behind the solvers, and a
    /// millisecond query of the DSE took six seconds (wp_hello in the portfolio, one run in two).
    pub fn check_within(&mut self, pc: &PathCondition, extra: &[Bool], ms: u32) -> Sat {
        if extra.iter().any(|b| b.as_bool() == Some(false)) {
            return Sat::No;
        }
        if let Some(k) = self.cached_model(pc, extra) {
            self.cache_hits += 1;
            let m = self.models.remove(k).expect("the index of a cached model");
            self.models.push_front(m.clone());
            self.last_model = Some(m);
            return Sat::Yes;
        }
        self.calls += 1;
        let mut assumptions = pc.guards();
        assumptions.extend(extra.iter().filter(|b| b.as_bool() != Some(true)).cloned());
        self.clock.arm(ms);
        let r = self.solver.check_assumptions(&assumptions);
        self.clock.disarm();
        match r {
            SatResult::Sat => {
                self.last_model = self.solver.get_model().map(Rc::new);
                if let Some(m) = &self.last_model {
                    self.models.push_front(m.clone());
                    self.models.truncate(MODEL_CACHE);
                }
                Sat::Yes
            }
            SatResult::Unsat => Sat::No,
            SatResult::Unknown => {
                tracing::debug!(reason = ?self.solver.get_reason_unknown(), ms, "path query undecided");
                Sat::Unknown
            }
        }
    }

    /// The index of a cached model in which every condition of `pc` and `extra` is true (model
    /// completion gives symbols the model never saw a fixed value, so the model, completed, is a
    /// real assignment that satisfies the query).
    fn cached_model(&self, pc: &PathCondition, extra: &[Bool]) -> Option<usize> {
        if pc.len() > MODEL_CACHE_MAX_DEPTH {
            return None;
        }
        let holds = |m: &Model, c: &Bool| m.eval(c, true).and_then(|v| v.as_bool()) == Some(true);
        self.models.iter().position(|m| extra.iter().all(|c| holds(m, c)) && pc.conds().all(|c| holds(m, c)))
    }

    /// Installs the APC for [`PathSolver::check_apc`] (at any time: the path conditions'
    /// guard implications so far are asserted with it); `reads`: the stream positions it reads
    /// (`None`: unknown, any).
    pub fn set_apc(&mut self, apc: &Bool, reads: Option<BTreeSet<u64>>) {
        let s = Solver::new();
        s.assert(apc);
        for imp in &self.implications {
            s.assert(imp);
        }
        self.linked = 0;
        self.apc = Some(s);
        self.apc_reads = reads;
        self.apc_formula = Some(apc.clone());
    }

    /// Installs the APC's scalar skeleton for [`PathSolver::check_skeleton`] (before any path
    /// condition exists).
    pub fn set_skeleton(&mut self, skeleton: &Bool, reads: Option<BTreeSet<u64>>) {
        // Checked only with assumptions, as the path conditions' solver.
        let s = crate::solve::Logic::Incremental.solver();
        s.assert(skeleton);
        self.skeleton = Some(s);
        self.skeleton_reads = reads;
    }

    /// Satisfiability of `pc ∧ APC ∧ extra` within `ms` milliseconds, where nondet positions
    /// below `nondet` are tied to the APC's stream by `link`.
    pub fn check_apc(&mut self, pc: &PathCondition, extra: &[Bool], nondet: u64, link: &dyn Fn(u64) -> Bool, ms: u32) -> Sat {
        let left = self.budget_ms(ms);
        let Some(a) = &self.apc else { return Sat::Yes };
        self.calls += 1;
        let reads = self.apc_reads.as_ref();
        check_linked(a, (&mut self.linked, reads), &self.clock, pc, extra, nondet, link, left)
    }

    /// [`PathSolver::check_apc`] against the scalar skeleton (`Yes` when there is none).
    pub fn check_skeleton(&mut self, pc: &PathCondition, extra: &[Bool], nondet: u64, link: &dyn Fn(u64) -> Bool, ms: u32) -> Sat {
        let left = self.budget_ms(ms);
        let Some(a) = &self.skeleton else { return Sat::Yes };
        self.calls += 1;
        let reads = self.skeleton_reads.as_ref();
        check_linked(a, (&mut self.skeleton_linked, reads), &self.clock, pc, extra, nondet, link, left)
    }

    /// Values of the named 64-bit counters in some model of the APC alone (the first guess of
    /// how often each loop runs).
    pub fn apc_counter_guess(&mut self, names: &[Vec<Option<String>>]) -> Vec<Vec<Option<u64>>> {
        let none = || names.iter().map(|l| vec![None; l.len()]).collect();
        let Some(apc) = &self.apc_formula else { return none() };
        // A solver of its own, running the `smt` tactic: the default solver's first check of a
        // quantifier-free APC over arrays runs its array tactics (Hello: 150 ms against 15 ms),
        // and `self.apc` must stay incremental for the pruning queries.
        let a = crate::solve::light_solver();
        a.assert(apc);
        self.calls += 1;
        self.clock.arm(self.budget_ms(2_000));
        let r = a.check();
        self.clock.disarm();
        if r != SatResult::Sat {
            return none();
        }
        let Some(m) = a.get_model() else { return none() };
        names
            .iter()
            .map(|l| l.iter().map(|n| n.as_ref().and_then(|n| m.eval(&z3::ast::BV::new_const(n.as_str(), 64), true)).and_then(|v| v.as_u64())).collect())
            .collect()
    }

    /// The model of the last satisfiable [`PathSolver::check`].
    pub fn model(&self) -> Option<Rc<Model>> {
        self.last_model.clone()
    }
}

/// `pc ∧ extra` in a solver that holds an APC at its base level, after tying the nondet
/// positions below `nondet` that the APC reads to its stream (`linked`: positions done so far).
#[allow(clippy::too_many_arguments)]
fn check_linked(
    a: &Solver,
    (linked, reads): (&mut u64, Option<&BTreeSet<u64>>),
    clock: &QueryClock,
    pc: &PathCondition,
    extra: &[Bool],
    nondet: u64,
    link: &dyn Fn(u64) -> Bool,
    ms: u32,
) -> Sat {
    while *linked < nondet {
        if reads.is_none_or(|r| r.contains(linked)) {
            a.assert(link(*linked));
        }
        *linked += 1;
    }
    a.push();
    for e in extra {
        a.assert(e);
    }
    clock.arm(ms);
    let r = a.check_assumptions(&pc.guards());
    clock.disarm();
    a.pop(1);
    match r {
        SatResult::Sat => Sat::Yes,
        SatResult::Unsat => Sat::No,
        SatResult::Unknown => Sat::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;
    use z3::ast::BV;

    /// The search's clock counts its thread's work, not the time it waits (beside other
    /// engines, for the CPU).
    #[test]
    fn the_search_clock_counts_work_not_waiting() {
        let t0 = thread_cpu_time();
        std::thread::sleep(Duration::from_millis(60));
        let slept = thread_cpu_time() - t0;
        assert!(slept < Duration::from_millis(20), "sleeping counted {slept:?}");
        let t1 = thread_cpu_time();
        let busy_until = Instant::now() + Duration::from_millis(40);
        let mut x = 0u64;
        while Instant::now() < busy_until {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        // Most of the 40 ms, unless the test machine took the core away meanwhile.
        assert!(thread_cpu_time() - t1 > Duration::from_millis(5), "working counted nothing");
    }

    /// A query that a model of an earlier one satisfies is answered without Z3, with that
    /// model; one it does not satisfy goes to Z3, and an unsatisfiable one is never answered
    /// from the cache.
    #[test]
    fn models_of_earlier_queries_answer_the_queries_they_satisfy() {
        let mut s = PathSolver::with_clock(Instant::now() + Duration::from_secs(60), Arc::new(QueryClock::new()));
        let x = BV::new_const("x", 32);
        let root = PathCondition::default();
        let small = s.extend(&root, &x.bvult(BV::from_u64(10, 32)));
        assert_eq!(s.check(&small, &[]), Sat::Yes);
        assert_eq!((s.calls, s.cache_hits), (1, 0));
        let v = s.model().unwrap().eval(&x, true).unwrap().as_u64().unwrap();
        // The same side as the model: from the cache, and the model it gives satisfies it.
        let same = s.extend(&small, &x.eq(BV::from_u64(v, 32)));
        assert_eq!(s.check(&same, &[]), Sat::Yes);
        assert_eq!((s.calls, s.cache_hits), (1, 1));
        assert_eq!(s.model().unwrap().eval(&x, true).unwrap().as_u64(), Some(v));
        // The other side: Z3 answers, with a model that differs.
        let other = s.extend(&small, &x.eq(BV::from_u64(v, 32)).not());
        assert_eq!(s.check(&other, &[]), Sat::Yes);
        assert_eq!((s.calls, s.cache_hits), (2, 1));
        let w = s.model().unwrap().eval(&x, true).unwrap().as_u64().unwrap();
        assert!(w != v && w < 10);
        // Extra conditions count too; a contradiction is Z3's to refute.
        assert_eq!(s.check(&small, &[x.eq(BV::from_u64(10, 32))]), Sat::No);
        assert_eq!(s.calls, 3);
    }

    /// The search's watchdog ends an overdue query with `Z3_interrupt`, and the same context
    /// must then answer the next query (no cancel flag left behind).
    #[test]
    fn an_interrupted_query_leaves_the_solver_usable() {
        let clock = Arc::new(QueryClock::new());
        let mut s = PathSolver::with_clock(Instant::now() + Duration::from_secs(60), clock.clone());
        let ctx = z3::Context::thread_local().get_z3_context().as_ptr() as usize;
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (watched, stop) = (clock.clone(), done.clone());
        let dog = std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                if watched.overdue() {
                    unsafe { z3_sys::Z3_interrupt(std::ptr::NonNull::new(ctx as *mut z3_sys::_Z3_context).expect("a context")) };
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        // Factoring a 64-bit semiprime: far beyond 50 ms.
        let (x, y) = (BV::new_const("x", 64), BV::new_const("y", 64));
        let one = BV::from_u64(1, 64);
        let hard = Bool::and(&[
            x.bvmul(&y).eq(BV::from_u64(0xC3A5_C85C_97CB_3127, 64)),
            x.bvugt(&one),
            y.bvugt(&one),
            x.bvult(BV::from_u64(1 << 32, 64)),
            y.bvult(BV::from_u64(1 << 32, 64)),
        ]);
        let pc = PathCondition::default();
        let hard_pc = s.extend(&pc, &hard);
        let t = Instant::now();
        assert_eq!(s.check_within(&hard_pc, &[], 50), Sat::Unknown);
        assert!(t.elapsed() < Duration::from_secs(2), "interrupted late: {:?}", t.elapsed());
        let easy = s.extend(&pc, &x.eq(BV::from_u64(7, 64)));
        assert_eq!(s.check(&easy, &[]), Sat::Yes);
        let contradiction = s.extend(&easy, &x.eq(BV::from_u64(8, 64)));
        assert_eq!(s.check(&contradiction, &[]), Sat::No);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        dog.join().unwrap();
    }
}
