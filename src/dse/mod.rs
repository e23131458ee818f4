//! Directed symbolic execution: the second stage of the witness search.
//!
//! States are exact (bit-precise values, byte-exact memory per object, the nondet stream as
//! fresh symbols in call order, the path condition in one incremental Z3 solver), and the engine
//! follows only edges whose path condition is satisfiable. It is *directed*: the frontier is
//! best-first by the CFG distance to the target (then by the iteration counts a guide's APC
//! still allows), never blind depth-first; and it is *pruned* by the APC of the rest of the path
//! (see [`guide`]). A witness is reported only when the native replay enters the target;
//! `Exhausted` only when every path was explored exactly, without any pruning, bound or
//! give-up (so it is a proof of unreachability for the program as the engine models it).
//!
//! Z3 objects are made on the calling thread (z3 0.22 contexts are thread-local) and never
//! leave [`search`].

mod exec;
pub mod guide;
pub mod nav;
mod prefer;
mod reach;
mod solver;
mod state;
mod value;

pub use exec::{Names, PARAM_BUFFER_BYTES};
pub use guide::Guide;

use crate::ir::{BlockId, Program, Ty};
use crate::witness::{ParamInput, Witness};
use exec::{Executor, Step};
use solver::{PathSolver, Sat};
use state::{DseState, PathCondition};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tracing::{debug, info};
use z3::ast::{Bool, BV};

/// The knobs of one search: its bounds and what the native program it must agree with does.
#[derive(Clone, Debug)]
pub struct DseConfig {
    pub deadline: Instant,
    /// Most states popped from the frontier.
    pub max_states: usize,
    /// Functions without a definition that the native builds stub (they return 0 and write
    /// nothing, see [`crate::replay::stubs`]). The search executes a call to one as its stub
    /// does, so the witnesses it finds are runs of the replayed program; it then no longer
    /// claims to have explored every run of the real one (the real function may differ).
    pub stubbed: std::collections::BTreeSet<String>,
}

impl DseConfig {
    pub fn new(deadline: Instant) -> Self {
        DseConfig { deadline, max_states: 100_000, stubbed: Default::default() }
    }
}

/// Statistics like Table 3 of the loop-navigation paper.
#[derive(Default, Clone, Debug, serde::Serialize)]
pub struct DseStats {
    pub states_explored: u64,
    pub states_pruned_by_apc: u64,
    /// States whose own constants rule every target out (`reach::distance`; exact).
    pub states_pruned_by_values: u64,
    pub solver_calls: u64,
    /// Path queries answered by a model of an earlier query (no solver call).
    pub model_cache_hits: u64,
    pub models_tried: u64,
    /// Pruning queries (path condition ∧ APC ∧ counter constraints) and the time they took.
    pub apc_checks: u64,
    pub apc_check_seconds: f64,
}

/// How a search ended.
#[derive(Debug)]
pub enum DseEnd {
    /// `replay` returned true for this witness (a native run entered the target).
    Reached(Witness),
    /// Every path was explored exactly (no loop cut, no bound hit): the target is unreachable.
    Exhausted,
    /// Stopped without an answer (deadline, cancel, state bound, unsupported instruction): why.
    GaveUp(String),
    /// Every run of the *replayed* program was explored (exactly, or pruned by the APC, a
    /// necessary condition) and none enters the target: no witness can replay. Not claimed as
    /// a proof: some runs called functions the native builds stub (the real ones may behave
    /// otherwise), or states were pruned by the APC. The other witness searches can stop; a
    /// proof may still come from the apc engine. The reason says which.
    NoReplayableWitness(String),
}

/// Blocks a state runs before it goes back to the frontier (so that a loop without symbolic
/// branches cannot keep the search from its deadline or from better states).
const SLICE_BLOCKS: u32 = 4_096;
/// Whether the frontier orders states by their iterations beyond the APC model's counter
/// values before distance. Off: measured on the wp_* benchmarks, one APC^K model's counters
/// misled the search more often than they helped (wp_sevens regressed from reached to
/// time-out, wp_hw did not improve).
const USE_COUNTER_GUESS: bool = false;
/// Whether the frontier prefers paths that took more symbolic equalities on their equal side.
const USE_MATCH_ORDER: bool = true;
/// When the full APC starts pruning, in CPU time of the search (see `search_inner`): the
/// scalar skeleton prunes from the start.
const FULL_APC_AFTER: Duration = Duration::from_millis(40);
/// Longest pruning query (the APC may be large): undecided means "keep the state".
const PRUNE_QUERY_MS: u32 = 250;
/// The least time a pruning query is given after earlier ones ran out of time.
const MIN_PRUNE_QUERY_MS: u32 = 20;
/// Longest query against the APC's scalar skeleton.
const SKELETON_QUERY_MS: u32 = 200;
/// Models of one target-reaching path tried before it is dropped.
const MODELS_PER_PATH: u32 = 3;

/// Added to the distance of a block from which only pseudo-targets (a store's clobber site,
/// `load::bounds`; a recursion cut) can be reached: explored last, never pruned.
const PSEUDO_TARGET_DISTANCE: u32 = 1 << 20;

/// Distance in blocks from each block to the nearest real target, or [`PSEUDO_TARGET_DISTANCE`]
/// plus the distance to the nearest pseudo-target (`u32::MAX`: no path to any). A search led by
/// the pseudo-targets, which sit beside every store into an array, went after them first: the
/// DSE no longer reached wp_matrir's target within 30 s (5 s before).
fn distances(program: &Program) -> Vec<u32> {
    let real = program.target_names.len() as u32;
    let near_real = distances_to(program, |t| t < real);
    let near_any = distances_to(program, |_| true);
    near_real
        .into_iter()
        .zip(near_any)
        .map(|(r, a)| if r != u32::MAX { r } else if a != u32::MAX { PSEUDO_TARGET_DISTANCE.saturating_add(a) } else { u32::MAX })
        .collect()
}

/// Distance in blocks from each block to the nearest target whose id passes `counts`.
fn distances_to(program: &Program, counts: impl Fn(u32) -> bool) -> Vec<u32> {
    let f = &program.function;
    let mut preds: Vec<Vec<usize>> = vec![vec![]; f.blocks.len()];
    for b in &f.blocks {
        for s in b.term.successors() {
            if let Some(p) = preds.get_mut(s.index()) {
                p.push(b.id.index());
            }
        }
    }
    let mut dist = vec![u32::MAX; f.blocks.len()];
    let mut queue = VecDeque::new();
    for t in f.target_blocks() {
        if f.block(t).target.is_some_and(&counts) {
            dist[t.index()] = 0;
            queue.push_back(t.index());
        }
    }
    while let Some(b) = queue.pop_front() {
        for &p in &preds[b] {
            if dist[p] == u32::MAX {
                dist[p] = dist[b] + 1;
                queue.push_back(p);
            }
        }
    }
    dist
}

/// The frontier: best-first by (iterations beyond the APC model's guess, branches taken on
/// their preferred side ([`prefer`]: the equal side of an equality, the side toward an
/// increment a later guard wants), distance to the target, newest first among equals).
///
/// Preferred sides first: targets behind loops over input data usually need rare events (a
/// byte that matches the next character of a keyword, an element that counts), and the static
/// distance prefers the other side, which leaves the inner loop sooner. A path whose match
/// leads nowhere is soon cut by the value pruning or the APC, and the search backtracks.
struct Frontier {
    heap: BinaryHeap<(Reverse<u64>, u32, Reverse<u32>, u64, usize)>,
    states: Vec<Option<DseState>>,
    seq: u64,
}

impl Frontier {
    fn new() -> Self {
        Frontier { heap: BinaryHeap::new(), states: vec![], seq: 0 }
    }
    fn push(&mut self, st: DseState, dist: u32, excess: u64) {
        let st_matched = if USE_MATCH_ORDER { st.matched } else { 0 };
        self.seq += 1;
        self.states.push(Some(st));
        let matched = st_matched;
        self.heap.push((Reverse(excess), matched, Reverse(dist), self.seq, self.states.len() - 1));
    }
    fn pop(&mut self) -> Option<DseState> {
        let (_, _, _, _, i) = self.heap.pop()?;
        self.states[i].take()
    }
    fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// Everything that makes an empty frontier not a proof.
struct Incomplete {
    reasons: Vec<String>,
    /// Whether every reason is pruning by the APC, which a run of the replayed program cannot
    /// escape either (the APC holds whatever the stubbed functions return).
    only_apc_pruning: bool,
}

impl Default for Incomplete {
    fn default() -> Self {
        Incomplete { reasons: vec![], only_apc_pruning: true }
    }
}

const PRUNED_BY_APC: &str = "states were pruned by the APC";

impl Incomplete {
    fn note(&mut self, why: impl Into<String>) {
        let why = why.into();
        self.only_apc_pruning &= why == PRUNED_BY_APC;
        if self.reasons.len() < 8 && !self.reasons.contains(&why) {
            self.reasons.push(why);
        }
    }
}

/// How long the search for the least tied lengths of a target path's model may take (see
/// [`least_lengths`]).
const LEAST_LENGTHS_BUDGET: Duration = Duration::from_millis(150);

/// After a satisfiable `pc`: the model with the least sum of the length parameters tied to
/// buffers (`tied_lengths`, see `witness::length_ties`), searched for briefly, so that the
/// witness of a path that reads four bytes says `len = 6`, not `len = 16`; the
/// last model when there is nothing to minimise or no better one is found in time.
fn least_lengths(solver: &mut PathSolver, pc: &PathCondition, tied_lengths: &[BV], deadline: Instant) -> Option<std::rc::Rc<z3::Model>> {
    let first = solver.model()?;
    let Some(bounded) = crate::solve::BoundedSum::new(tied_lengths) else { return Some(first) };
    let hi = bounded.value(&first);
    if hi <= 1 {
        return Some(first);
    }
    let budget = LEAST_LENGTHS_BUDGET.min(deadline.saturating_duration_since(Instant::now()) / 8);
    let mut best = first;
    crate::solve::least_value(hi, budget, &|| false, |s, left| match solver.check_within(pc, &bounded.at_most(s), left.as_millis().max(1) as u32) {
        Sat::Yes => match solver.model() {
            Some(m) => {
                let v = bounded.value(&m).min(s);
                best = m;
                crate::solve::Probe::Found(v)
            }
            None => crate::solve::Probe::Unknown,
        },
        Sat::No => crate::solve::Probe::Empty,
        Sat::Unknown => crate::solve::Probe::Unknown,
    });
    Some(best)
}

/// Builds the witness of a satisfiable path condition from the solver's model.
fn witness_of(program: &Program, names: &Names, exec: &Executor, st: &DseState, model: &z3::Model) -> Witness {
    let eval = |t: &BV| model.eval(t, true).and_then(|v| v.as_u64()).unwrap_or(0);
    let mut params = vec![];
    for (k, p) in program.function.params.iter().enumerate() {
        match &p.ty {
            Ty::Int(w) => {
                let value = eval(&BV::new_const(names.params[k].as_str(), *w));
                params.push(ParamInput::Int { name: p.name.clone(), width: *w, value });
            }
            Ty::Ptr => {
                let arr = names.buffer_array(k);
                // The object starts `front_bytes` before the address (see `Executor::initial`).
                let front = p.front_bytes;
                let mut bytes: Vec<u8> = (0..front + p.buffer_bytes.unwrap_or(PARAM_BUFFER_BYTES))
                    .map(|i| eval(&arr.select(&BV::from_u64(i.wrapping_sub(front), 64)).as_bv().expect("bytes")) as u8)
                    .collect();
                if p.buffer_bytes.is_none() {
                    bytes.extend(std::iter::repeat_n(0, crate::witness::BUFFER_SLACK));
                }
                // Buffers the search created behind pointers read from this one.
                let obj = st.objects.iter().position(|o| o.kind == state::ObjKind::ParamBuffer { param: k });
                let null = obj.and_then(|o| exec.null_flag(st, o as u32)).and_then(|f| model.eval(&f, true)).and_then(|b| b.as_bool());
                if null == Some(true) && p.buffer_bytes.is_none() {
                    params.push(ParamInput::Null { name: p.name.clone() });
                    continue;
                }
                let pointees = obj.map_or_else(Vec::new, |o| exec.pointees_of(st, o as u32, model));
                params.push(ParamInput::Buffer { name: p.name.clone(), bytes, pointees, front });
            }
            other => params.push(ParamInput::Zero { name: p.name.clone(), c_type: other.to_string() }),
        }
    }
    let nondet = (0..st.nondet).map(|k| eval(&names.nondet(k))).collect();
    Witness { params, nondet }
}

/// The calling thread's Z3 context, for a watchdog to interrupt.
struct ContextHandle(z3_sys::Z3_context);
// SAFETY: only used for `Z3_interrupt`, which Z3 documents as callable from any thread, and only
// while the owning thread is inside `search` (the watchdog is joined before it returns).
unsafe impl Send for ContextHandle {}
unsafe impl Sync for ContextHandle {}

/// Runs the directed symbolic execution of `program` towards its target blocks.
///
/// Z3 treats its timeouts loosely under load (preprocessing a large APC can run on well past
/// them), so a watchdog interrupts this thread's Z3 context at the deadline or on `cancel`: the
/// search then ends within a few milliseconds of it, as the portfolio needs.
pub fn search(
    program: &Program,
    guide: Option<&Guide>,
    limits: &DseConfig,
    cancel: &AtomicBool,
    replay: &(dyn Fn(&Witness) -> bool + Sync),
) -> (DseEnd, DseStats) {
    // Creating the solver context and parsing the APC take milliseconds that a race already
    // decided should not wait for.
    if cancel.load(Ordering::Relaxed) {
        return (DseEnd::GaveUp("cancelled".into()), DseStats::default());
    }
    let ctx = ContextHandle(z3::Context::thread_local().get_z3_context());
    let done = AtomicBool::new(false);
    let clock = std::sync::Arc::new(solver::QueryClock::new());
    std::thread::scope(|scope| {
        let (ctx, done, watched) = (&ctx, &done, clock.clone());
        scope.spawn(move || {
            while !done.load(Ordering::SeqCst) {
                // Only while a query runs: the search sees the deadline and a cancel itself
                // between queries, and Z3 4.8 is fragile under interrupts that land outside a
                // check (building terms, reading a model, freeing a solver; cf. Z3's GitHub #595).
                // One run of the soundness campaign died of an uncaught `rewriter_exception`
                // while interrupts went on every 5 ms after a cancel.
                let stop = Instant::now() >= limits.deadline || cancel.load(Ordering::Relaxed);
                if watched.armed() && (stop || watched.overdue()) {
                    // SAFETY: see `ContextHandle`; repeated, as Z3 may miss one between checks.
                    unsafe { z3_sys::Z3_interrupt(ctx.0) };
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        let out = search_inner(program, guide, limits, cancel, replay, clock);
        done.store(true, Ordering::SeqCst);
        out
    })
}

fn search_inner(
    program: &Program,
    guide: Option<&Guide>,
    limits: &DseConfig,
    cancel: &AtomicBool,
    replay: &(dyn Fn(&Witness) -> bool + Sync),
    clock: std::sync::Arc<solver::QueryClock>,
) -> (DseEnd, DseStats) {
    let mut stats = DseStats::default();
    debug!("dse: started");
    let names = guide.map_or_else(|| Names::defaults(program), |g| g.names.clone());
    let dist = distances(program);
    let prefer = prefer::Preferences::new(&program.function, &dist);
    let mut solver = PathSolver::with_clock(limits.deadline, clock);
    // The length parameters tied to buffers, which a witness keeps as small as it can.
    let tied_lengths: Vec<BV> = crate::witness::length_ties(program)
        .into_iter()
        .filter_map(|(_, l)| match program.function.params[l].ty {
            Ty::Int(w) => Some(BV::new_const(names.params[l].as_str(), w)),
            _ => None,
        })
        .collect();
    let mut exec = Executor { program, names: &names, stubbed: &limits.stubbed, stubbed_calls: Default::default(), inexact: None, comparison_results: 0 };
    let mut incomplete = Incomplete::default();

    // The APC's scalar skeleton, in a solver of its own (see `PathSolver::check_skeleton`);
    // the full APC is parsed (tens of milliseconds for a few kilobytes) only once the search
    // has run `FULL_APC_AFTER`: many targets are found before it would have pruned anything.
    let mut full_apc_pending = guide.is_some();
    if cancel.load(Ordering::Relaxed) {
        return (DseEnd::GaveUp("cancelled".into()), stats);
    }
    if let Some(g) = guide {
        if let Some(f) = g.skeleton_formula() {
            solver.set_skeleton(&f, g.skeleton_stream_reads.clone());
        }
        debug!("dse: APC and skeleton parsed");
    }
    // The search's own clock for its shares and for when the full APC joins: CPU time of this
    // thread, so that what it does does not depend on the load. With wall time, beside the
    // other engines on two cores (half a core), the full APC joined after half the states and
    // its checks got twice the share: DoIfEx's search made 98 solver calls in the portfolio
    // against 74 alone, and used half again as much CPU.
    let started = solver::thread_cpu_time();
    // The first guess of each loop's iteration counts: a model of the APC (loop navigation).
    let guess = match guide {
        // Only when the order uses it: the query can take seconds on a large APC.
        Some(g) if USE_COUNTER_GUESS => solver.apc_counter_guess(&g.loops.iter().map(|l| l.backbones.iter().map(|(_, n)| n.clone()).collect()).collect::<Vec<_>>()),
        _ => vec![],
    };
    debug!(?guess, "APC counter guess");
    // Iterations a state has made beyond the guess: the counter deficit of the search order.
    let excess = |st: &DseState| -> u64 {
        if !USE_COUNTER_GUESS {
            return 0;
        }
        st.loops
            .iter()
            .zip(&guess)
            .map(|(p, gs)| p.counts.iter().zip(gs).map(|(c, g)| g.map_or(0, |g| c.saturating_sub(g))).sum::<u64>())
            .sum()
    };
    let end = |end: DseEnd, mut stats: DseStats, solver: &PathSolver| {
        stats.solver_calls = solver.calls;
        stats.model_cache_hits = solver.cache_hits;
        info!(?stats, "dse finished");
        (end, stats)
    };

    let mut init = match exec.initial_state() {
        Ok(s) => s,
        Err(why) => return end(DseEnd::GaveUp(format!("cannot start: {why}")), stats, &solver),
    };
    if let Some(g) = guide {
        init.loops = g.initial_progress();
    }
    let entry = program.function.entry();
    if dist[entry.index()] == u32::MAX {
        return end(DseEnd::Exhausted, stats, &solver);
    }
    let mut frontier = Frontier::new();
    frontier.push(init, dist[entry.index()], 0);

    // Pruning queries: the APC's scalar skeleton first (cheap, always), then the whole APC
    // when affordable. A full query that Z3 does not decide in time halves the time the next
    // one gets: an APC of nested loops over an array can take seconds per query and then
    // decides nothing.
    let mut full_query_ms = PRUNE_QUERY_MS;
    let (mut full_checks, mut full_pruned, mut full_seconds) = (0u64, 0u64, 0f64);
    let (mut skeleton_checks, mut skeleton_pruned, mut skeleton_seconds) = (0u64, 0u64, 0f64);

    while let Some(mut st) = frontier.pop() {
        if cancel.load(Ordering::Relaxed) {
            return end(DseEnd::GaveUp("cancelled".into()), stats, &solver);
        }
        if Instant::now() >= limits.deadline {
            return end(DseEnd::GaveUp("the time budget ran out".into()), stats, &solver);
        }
        if stats.states_explored as usize >= limits.max_states {
            return end(DseEnd::GaveUp(format!("the bound of {} states was hit", limits.max_states)), stats, &solver);
        }
        stats.states_explored += 1;
        if st.unchecked {
            match solver.check(&st.pc, &[]) {
                Sat::Yes => {}
                Sat::No => continue,
                Sat::Unknown => {
                    incomplete.note("a path condition was not decided in time");
                    continue;
                }
            }
            let pruned = match guide {
                None => Sat::Yes,
                Some(g) => {
                    let t = Instant::now();
                    let extra = g.counter_constraints(&st.loops);
                    let link = |k| names.nondet_link(k);
                    // Each check gets up to 80% of the search's time while it prunes at all
                    // (one state in twenty is plenty: each prune removes a whole subtree;
                    // WinDriver needs it), and about 10% when it almost never does (a string
                    // scan makes thousands of states the APC never prunes; `strtol`'s model
                    // spent 65% of the search in skeleton checks that pruned nothing).
                    let share_of = |pruned: u64, checks: u64| 0.1 + 0.7 * ((pruned as f64 + 1.0) / (checks as f64 + 2.0) * 20.0).min(1.0);
                    let running = solver::thread_cpu_time().saturating_sub(started);
                    let mut r = Sat::Yes;
                    if skeleton_seconds <= share_of(skeleton_pruned, skeleton_checks) * running.as_secs_f64() + 0.05 {
                        let f = solver::thread_cpu_time();
                        r = solver.check_skeleton(&st.pc, &extra, st.nondet, &link, SKELETON_QUERY_MS);
                        skeleton_checks += 1;
                        skeleton_pruned += (r == Sat::No) as u64;
                        skeleton_seconds += solver::thread_cpu_time().saturating_sub(f).as_secs_f64();
                    }
                    let share = share_of(full_pruned, full_checks);
                    if r != Sat::No && full_apc_pending && running >= FULL_APC_AFTER {
                        full_apc_pending = false;
                        if let Some(f) = g.apc_formula() {
                            solver.set_apc(&f, g.apc_stream_reads.clone());
                        }
                        debug!("dse: the full APC joins the pruning");
                    }
                    if r != Sat::No && !full_apc_pending && full_seconds <= share * running.as_secs_f64() + 0.05 {
                        let f = solver::thread_cpu_time();
                        r = solver.check_apc(&st.pc, &extra, st.nondet, &link, full_query_ms);
                        full_checks += 1;
                        full_pruned += (r == Sat::No) as u64;
                        full_seconds += solver::thread_cpu_time().saturating_sub(f).as_secs_f64();
                        if r == Sat::Unknown {
                            full_query_ms = (full_query_ms / 2).max(MIN_PRUNE_QUERY_MS);
                        }
                    }
                    stats.apc_checks += 1;
                    stats.apc_check_seconds += t.elapsed().as_secs_f64();
                    tracing::trace!(block = %program.function.label(st.block), ?r, ms = t.elapsed().as_millis() as u64, "apc check");
                    r
                }
            };
            match pruned {
                Sat::No => {
                    debug!(block = %program.function.label(st.block), "state pruned by the APC");
                    stats.states_pruned_by_apc += 1;
                    incomplete.note(PRUNED_BY_APC);
                    continue;
                }
                Sat::Yes | Sat::Unknown => {}
            }
            st.unchecked = false;
        }
        // Run the state until it forks, ends, or its time slice is over.
        let mut budget = SLICE_BLOCKS;
        loop {
            if budget == 0 {
                let d = dist[st.block.index()];
                let e = excess(&st);
                frontier.push(st, d, e);
                break;
            }
            budget -= 1;
            let from = st.block;
            match exec.step(&mut st, &mut solver) {
                Step::Continue => {
                    if let Some(g) = guide {
                        g.on_edge(&mut st.loops, st.block);
                    }
                    if dist[st.block.index()] == u32::MAX {
                        break;
                    }
                    if st.unchecked && exec_needs_check(&st) {
                        // An assumption made inside the block: decide it before going on.
                        match solver.check(&st.pc, &[]) {
                            Sat::Yes => st.unchecked = false,
                            Sat::No => break,
                            Sat::Unknown => {
                                incomplete.note("a path condition was not decided in time");
                                break;
                            }
                        }
                    }
                }
                Step::Fork(succs) => {
                    // A write's bounds test (`load::bounds`) that this path cannot fail: the
                    // state goes on to the in-bounds side as it is (its condition is implied),
                    // without a state of its own and the APC check each new state gets (the
                    // matrix loops of wp_matrir test at every store: 1,400 checks, 14 s).
                    if let Some(inside) = in_bounds_side(program, &succs) {
                        let out = succs.iter().find(|(b, _)| *b != inside).map(|(_, c)| c.clone()).expect("two sides");
                        if solver.check(&st.pc, &[out]) == Sat::No {
                            st.prev = Some(from);
                            st.block = inside;
                            if let Some(g) = guide {
                                g.on_edge(&mut st.loops, inside);
                            }
                            if dist[inside.index()] == u32::MAX {
                                break;
                            }
                            continue;
                        }
                    }
                    let preferred = prefer.preferred(from, st.prev);
                    for (to, cond) in succs {
                        if dist[to.index()] == u32::MAX {
                            continue;
                        }
                        let mut child = st.clone();
                        child.pc = solver.extend(&st.pc, &cond);
                        child.unchecked = true;
                        child.prev = Some(from);
                        child.block = to;
                        if preferred == Some(to) {
                            child.matched += 1;
                        }
                        if let Some(g) = guide {
                            g.on_edge(&mut child.loops, to);
                        }
                        // The state's own constants may rule the target out for good.
                        let Some(d) = reach::distance(&program.function, program.target_names.len() as u32, &child, dist[to.index()]) else {
                            stats.states_pruned_by_values += 1;
                            continue;
                        };
                        let e = excess(&child);
                        tracing::trace!(block = %program.function.label(to), d, static_d = dist[to.index()], "fork child");
                        frontier.push(child, d, e);
                    }
                    break;
                }
                Step::Target => {
                    let mut pc = st.pc.clone();
                    let mut tried = 0;
                    loop {
                        if tried == MODELS_PER_PATH || Instant::now() >= limits.deadline || cancel.load(Ordering::Relaxed) {
                            incomplete.note("a path reached the target but its models did not replay");
                            break;
                        }
                        match solver.check(&pc, &[]) {
                            Sat::Yes => {}
                            Sat::No => break,
                            Sat::Unknown => {
                                incomplete.note("a target path condition was not decided in time");
                                break;
                            }
                        }
                        let Some(model) = least_lengths(&mut solver, &pc, &tied_lengths, limits.deadline) else { break };
                        let w = witness_of(program, &names, &exec, &st, &model);
                        stats.models_tried += 1;
                        tried += 1;
                        debug!(nondet = w.nondet.len(), "replaying a DSE witness");
                        if replay(&w) {
                            return end(DseEnd::Reached(w), stats, &solver);
                        }
                        // Another model of the same path: some nondet value must differ.
                        let differ: Vec<Bool> = w.nondet.iter().enumerate().map(|(k, v)| names.nondet(k as u64).eq(BV::from_u64(*v, 64)).not()).collect();
                        if differ.is_empty() {
                            incomplete.note("a path reached the target but its model did not replay");
                            break;
                        }
                        pc = solver.extend(&pc, &Bool::or(&differ));
                    }
                    break;
                }
                Step::Dead => break,
                Step::GiveUp(why) => {
                    debug!(%why, block = %program.function.label(from), "state given up");
                    incomplete.note(format!("a state was given up: {why}"));
                    break;
                }
            }
        }
        if frontier.is_empty() {
            break;
        }
    }
    if let Some(why) = exec.inexact.take() {
        incomplete.note(why);
    }
    if incomplete.reasons.is_empty() && exec.stubbed_calls.is_empty() {
        end(DseEnd::Exhausted, stats, &solver)
    } else if incomplete.only_apc_pruning {
        let mut why = String::from("every run of the replayed program was explored");
        if !incomplete.reasons.is_empty() {
            why.push_str(" (states that cannot satisfy the APC pruned)");
        }
        why.push_str(" and none enters the target");
        if !exec.stubbed_calls.is_empty() {
            let names: Vec<_> = exec.stubbed_calls.iter().cloned().collect();
            why.push_str(&format!("; it calls {}, which have no definition and return 0 in replays (the real ones may differ)", names.join(", ")));
        }
        end(DseEnd::NoReplayableWitness(why), stats, &solver)
    } else if cancel.load(Ordering::Relaxed) {
        end(DseEnd::GaveUp("cancelled".into()), stats, &solver)
    } else if Instant::now() + solver::DEADLINE_MARGIN >= limits.deadline {
        // The frontier emptied because the deadline cut the last queries short.
        end(DseEnd::GaveUp("the time budget ran out".into()), stats, &solver)
    } else {
        if !exec.stubbed_calls.is_empty() {
            let names: Vec<_> = exec.stubbed_calls.iter().cloned().collect();
            incomplete.note(format!("calls to {} were executed as the replay's stubs (return 0)", names.join(", ")));
        }
        end(DseEnd::GaveUp(format!("every state was explored, but not exactly: {}", incomplete.reasons.join("; "))), stats, &solver)
    }
}

/// Whether a state's pending assumptions should be decided now rather than at its next pop
/// (always: an infeasible assumption must stop the path before it runs on).
fn exec_needs_check(_st: &DseState) -> bool {
    true
}

/// The in-bounds successor of a two-way branch whose other successor is a write's clobber site
/// (`load::bounds`).
fn in_bounds_side(program: &Program, succs: &[(BlockId, Bool)]) -> Option<BlockId> {
    match succs {
        [(a, _), (b, _)] if a != b && program.is_clobber_site(*a) && !program.is_clobber_site(*b) => Some(*b),
        [(a, _), (b, _)] if a != b && program.is_clobber_site(*b) && !program.is_clobber_site(*a) => Some(*a),
        _ => None,
    }
}
