//! The `apc` engine (DESIGN.md section 6): race the quantified APC against its unfolding APC^K;
//! an unsatisfiable APC of a complete enumeration is a proof; a model is replayed natively; when
//! it misses the target, block it, raise K, and ask again, until the budget runs out. Every model
//! is offered to the other engines as a seed.

use super::{Context, Engine, EngineKind, EngineResult, Finding};
use crate::apc::{unfold::unfold_until, Apc};
use crate::expr::{ExprId, ExprPool, Printer};
use crate::ir::{IntPredicate, Program, Ty};
use crate::report::WitnessReport;
use crate::solve::{self, ModelView, Outcome};
use crate::replay::pure::PureEvaluator;
use crate::witness::{self, ParamInput, Witness};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, info};

/// Most expressions one unfolding APC^K may add (nested quantifiers multiply their instances).
const MAX_UNFOLD_NODES: usize = 400_000;

/// Expressions the first unfolding may add: above it, K is halved until it fits (down to
/// [`MIN_START_K`]). The unfolding's size grows as K^depth with nested loops (three nested loops
/// spent 12 s unfolding at K = 25, where K = 4 unfolds in a fraction of it), and every missed
/// model doubles K again anyway.
const START_UNFOLD_NODES: usize = 40_000;
/// Smallest K the adaptive start goes down to.
const MIN_START_K: u32 = 2;

/// The quantifier-free weakening of the APC, checked before the race ([`crate::expr::without_quantifiers`]).
const SOLVE_QUANTIFIER_FREE: &str = "solve_apc_qf";
/// Its budget (CPU time of the engine's thread, see `solve::cpu_limit`): it is worth having
/// only when it is quick.
const QUANTIFIER_FREE_LIMIT: Duration = Duration::from_millis(40);
/// The query of the APC with its nonlinear operations uninterpreted ([`solve::Query`]).
const SOLVE_NONLINEAR_UF: &str = "solve_apc_nonlinear_uf";
/// Its budget in the quick check (CPU time): sum_symbolic's proof takes 28-41 ms of CPU there,
/// so 40 ms proved it only now and then; the DSE waits for the quick check 50 ms at most.
const NONLINEAR_QUICK_LIMIT: Duration = Duration::from_millis(80);

/// Iterations of a loop above which a model is first traded for one of the bounded unfolding
/// (`ai_listing3`: κ = 1,091,363,841 took 2.7 s to replay; κ = 14 reaches the same target in a
/// millisecond).
const SMALL_COUNT: u64 = 1 << 16;
/// How long that query may take (at most a quarter of what is left): it takes 0.2 s on
/// ai_listing3, 0.4 s under AddressSanitizer; replaying the large model would take seconds.
const SMALL_COUNT_QUERY: Duration = Duration::from_millis(1500);

/// Budget (CPU time) of the quick round: the APC itself, asked exactly in the quick check (see
/// [`crate::engine::Context::quick_check`]), in the Z3 context the check already has, when it
/// does not alternate quantifiers. Its answer is the first round's: a proof (`i < n` left
/// with `i > n`: the quantified APC, decided in a millisecond) or a model (counting loops),
/// without the race's contexts (10-15 ms of page faults each) beside the other engines. A
/// hard APC spends it on the DSE's thread, while the DSE waits.
const QUICK_ROUND_LIMIT: Duration = Duration::from_millis(30);
/// How long the quick round may look for a smaller model after its first (see
/// [`MINIMAL_ENOUGH`]): a model counts only when it is known to be the smallest (or small
/// enough), else the race asks again with the whole budget for it. sv_nondet_loop's (κ = 100,
/// the only count) takes 8 checks, 20-33 ms.
const QUICK_ROUND_MINIMISE: Duration = Duration::from_millis(60);

/// The longest the native run of the quick round's first model may take (see
/// [`EarlyReplay`]): a run cut there is dropped, and the smallest model is replayed as usual.
const EARLY_REPLAY_WALL: Duration = Duration::from_millis(100);
/// The same for a model of the quantifier-free weakening, a guess whose path counters say
/// nothing of how long it runs: a sandboxed run that reaches takes 3-5 ms alone and up to
/// 15 ms beside the other engines, while a guess whose loop runs two billion times would keep
/// a core busy for the whole limit.
const EARLY_GUESS_WALL: Duration = Duration::from_millis(30);

/// Path counters (and length parameters tied to buffers) whose sum in a model is at most this
/// are left as they are; above it the solver is asked for the model with the smallest sum
/// ([`solve::Objective`]): users read the witness and keep it as a regression test, and a loop
/// run 134,217,728 times where 34 would do also takes seconds to replay.
const MINIMAL_ENOUGH: u64 = 4;
/// How long that search may take, at most (and at most an eighth of the time left).
const MINIMISE_BUDGET: Duration = Duration::from_millis(400);

/// What one model yields: the witness, the values of the path counters, and the arguments and
/// result of each `--pure` call (`apc.inputs.pure_calls`, in order).
type ModelData = (Witness, BTreeMap<String, u64>, Vec<(Vec<u64>, u64)>);

/// Rounds of mixed concrete-symbolic solving (native results added, solved again) per model
/// search.
const MAX_PURE_ROUNDS: u32 = 64;

/// The knobs of the search (from `Config`).
#[derive(Clone, Copy, Debug)]
pub struct ApcSearchConfig {
    /// Unfolding bound K of APC^K to start with.
    pub unfold_k: u32,
    /// Largest K the search raises the bound to.
    pub max_unfold_k: u32,
    /// Models replayed before giving up.
    pub max_models: u32,
}

/// The APC of the target as its build hands it to the engine: the formula, its expressions and
/// whether it has quantifiers (then APC^K races the quantified APC); or why there is none.
pub type BuiltApc = Result<(Apc, ExprPool, bool), String>;

/// The APC's build, which the apc engine runs first, on its own thread (it also hands the DSE
/// its guide). The build's Z3 context (its summaries' checks) is then the one the engine solves
/// in: a context costs 6 ms alone and 10-15 ms beside the other engines (Z3 4.8.12 fills 17 MB
/// of hash tables for each), and when the APC was built on a thread of its own, that thread
/// ended just as the engine's thread made its own context, on the way to a quick proof
/// (OneLoop: 9 ms of its 29).
pub type ApcBuild = Box<dyn FnOnce() -> BuiltApc + Send>;

/// The APC of the target, solved once it is built.
pub struct ApcEngine {
    pub config: ApcSearchConfig,
    pub program: Arc<Program>,
    pub build: ApcBuild,
    /// The native evaluator of the `--pure` functions, being built (mixed solving).
    pub pure: Option<std::thread::JoinHandle<crate::error::Result<PureEvaluator>>>,
}

/// [`ApcEngine`] with its APC.
struct ApcSearch {
    config: ApcSearchConfig,
    program: Arc<Program>,
    apc: Arc<Apc>,
    pool: ExprPool,
    has_quantifiers: bool,
    pure: Option<std::thread::JoinHandle<crate::error::Result<PureEvaluator>>>,
}

impl Engine for ApcEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Apc
    }

    fn run(self: Box<Self>, cx: &Context) -> EngineResult {
        let ApcEngine { config, program, build, pure } = *self;
        let search = match build() {
            Ok((apc, pool, has_quantifiers)) => ApcSearch { config, program, apc: Arc::new(apc), pool, has_quantifiers, pure },
            Err(why) => return EngineResult::new(Finding::Unknown(why)),
        };
        cx.apc_starts_solving();
        let mut out = EngineResult::new(Finding::Unknown(String::new()));
        let finding = match search.search(cx, &mut out) {
            Ok(f) => f,
            Err(e) => Finding::Unknown(format!("replay failed: {e}")),
        };
        out.finding = finding;
        out
    }
}

/// The reason's mention of the proved loop invariants that strengthened the APC.
fn strengthened(invariants: usize) -> String {
    match invariants {
        0 => String::new(),
        1 => ", strengthened by a proved loop invariant".to_string(),
        n => format!(", strengthened by {n} proved loop invariants"),
    }
}

/// What the reason says of the query with nonlinear operations uninterpreted.
fn nonlinear_uf_description(has_quantifiers: bool) -> String {
    let apc = if has_quantifiers { "quantified APC" } else { "APC" };
    format!("{apc}, with its multiplications and divisions of two variables as uninterpreted functions")
}

/// Models of the quick check replayed natively while the check goes on: the model of the
/// quantifier-free weakening (a guess: the looping conditions are left out, but a native run
/// judges it, and most often it reaches), then the quick round's first model, beside the search
/// for a smaller one (`ai_listing1`: any model reaches the target, and that search spent
/// 45-60 ms proving κ = 20 the least while the fuzzer won the race). The first that reaches
/// ends the check (its solver is interrupted) and is the engine's witness; the witness's
/// reduction makes its inputs small afterwards, as for every engine. A first model whose loops
/// run more than [`SMALL_COUNT`] times is not tried (it would take seconds), nor one that is
/// small enough already (it is the round's answer, replayed at once anyway).
/// `APC_LLVM_TUNE_EARLY_REPLAY=0` turns this off.
struct EarlyReplay {
    /// Where the check sends its models (the check, which may run on the DSE's thread, gets a
    /// clone); dropped once the check is over, so that the replayer's wait ends.
    tx: std::sync::Mutex<Option<std::sync::mpsc::Sender<EarlyModel>>>,
    rx: std::sync::Mutex<Option<std::sync::mpsc::Receiver<EarlyModel>>>,
    /// Set once the check is over: a model not yet replayed then is not (the engine goes on
    /// with the round's answer).
    over: std::sync::atomic::AtomicBool,
    /// Set when a model reached the target: the check stops.
    reached: Arc<std::sync::atomic::AtomicBool>,
}

/// A model [`EarlyReplay`] tries.
enum EarlyModel {
    /// Of the quantifier-free weakening (its path counters are left out: without the looping
    /// conditions they say nothing of how often the loops run).
    Guess(Witness),
    /// The quick round's first model of the APC.
    First(ModelData),
}

impl EarlyReplay {
    /// `wanted`: whether the quick check may send models.
    fn new(wanted: bool) -> EarlyReplay {
        let wanted = wanted && crate::priority::tune("EARLY_REPLAY", 1) == 1;
        let (tx, rx) = std::sync::mpsc::channel();
        let (tx, rx) = if wanted { (Some(tx), Some(rx)) } else { (None, None) };
        EarlyReplay { tx: std::sync::Mutex::new(tx), rx: std::sync::Mutex::new(rx), over: Default::default(), reached: Default::default() }
    }

    fn wanted(&self) -> bool {
        self.rx.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// The check's end of the channel (`None` when nothing is replayed early).
    fn sender(&self) -> Option<std::sync::mpsc::Sender<EarlyModel>> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Says that the check is over (and its sender gone).
    fn done(&self) {
        self.over.store(true, std::sync::atomic::Ordering::SeqCst);
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Replays the models the check sends, in turn, until one reaches the target (its replay's
    /// seconds and the finding) or the check is over.
    fn run(&self, cx: &Context) -> Option<(f64, Finding)> {
        let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        let over = || self.over.load(std::sync::atomic::Ordering::SeqCst) || cx.cancelled();
        while let Ok(model) = rx.recv() {
            let (w, counters, wall) = match model {
                EarlyModel::Guess(w) => (w, BTreeMap::new(), EARLY_GUESS_WALL),
                EarlyModel::First((w, counters, _)) if counters.values().all(|&c| c <= SMALL_COUNT) => (w, counters, EARLY_REPLAY_WALL),
                EarlyModel::First(_) => continue,
            };
            cx.seeds.offer(&w);
            // The native build may still be under way: waited for while the check goes on
            // (the engine goes on with its queries once it is over, and replays later).
            while !cx.native.is_done() {
                if over() {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            cx.native.get().ok()?;
            if over() {
                return None;
            }
            let t = Instant::now();
            let run = cx.replay_within(&w, wall).ok()??;
            debug!(reached = run.reached.is_some(), status = %run.status, "a model of the quick check replayed");
            if run.reached.is_some() {
                self.reached.store(true, std::sync::atomic::Ordering::SeqCst);
                cx.witness_found();
                solve::cpu_limit::stop_flag_set();
                let report = WitnessReport::replayed(&w, &run, 1, counters);
                return Some((t.elapsed().as_secs_f64(), Finding::Reached { witness: w, run, report }));
            }
        }
        None
    }
}

/// How the replay of one model ended.
enum Replayed {
    Reached(Finding),
    Missed,
    OutOfTime,
}

impl ApcSearch {
    fn search(self, cx: &Context, out: &mut EngineResult) -> crate::error::Result<Finding> {
        let ApcSearch { config, program, apc, pool, has_quantifiers, pure } = self;
        // Mixed solving: facts f(a) = v learnt from native runs, part of every query (they hold
        // of every run, given that the functions are pure).
        let mut lemmas: Vec<ExprId> = vec![];
        let mut pure_rounds = 0u32;
        let mut pure = pure.map(|h| {
            // The build (llvm-extract, clang) started at load time; not waited for past the
            // budget or a cancel (the thread is then left to finish on its own).
            while !h.is_finished() {
                if cx.cancelled() || cx.left() < Duration::from_millis(300) {
                    return Err(crate::error::Error::internal("the evaluator was not built within the time budget"));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            h.join().unwrap_or_else(|_| Err(crate::error::Error::internal("the evaluator build panicked")))
        });
        if let Some(Err(e)) = &pure {
            // Said as what it is: the evaluator could not be had, not a fault of the tool.
            let why = e.to_string();
            tracing::warn!("mixed solving of the --pure functions is off for this target: {}", why.trim_start_matches("internal error: "));
            out.stats.insert("pure_unavailable".into(), 1);
        }
        let counters: Vec<ExprId> = apc.summaries.iter().flat_map(|(_, s)| s.counters.clone()).collect();
        let extract: solve::ModelExtractor<ModelData> = {
            let (apc, program, counters) = (apc.clone(), program.clone(), counters.clone());
            Arc::new(move |pool: &ExprPool, solved: ExprId, m: &mut ModelView| {
                let w = witness::from_model(&program, &apc, pool, solved, m);
                let c = counters.iter().filter_map(|&c| m.eval(c).map(|v| (Printer::new(pool).print(c), v))).collect();
                let calls = apc
                    .inputs
                    .pure_calls
                    .iter()
                    .map(|call| (call.args.iter().map(|&a| m.eval(a).unwrap_or(0)).collect(), m.eval(call.result).unwrap_or(0)))
                    .collect();
                (w, c, calls)
            })
        };
        let mut pool = Arc::new(pool);
        let mut k = config.unfold_k;
        let mut k_chosen = false;
        let mut blocking: Vec<ExprId> = vec![];
        // Preferences, not facts: tied buffer lengths at most PREFERRED_MAX_LEN (see
        // `witness::length_ties`), so that witnesses stay small (a 16 KB buffer for a 6-byte
        // answer otherwise). Dropped for good when the APC with them is unsatisfiable (a proof
        // then takes a second query); never part of a proof.
        let mut hints: Vec<ExprId> = vec![];
        // When recursion was cut (`load::recursion`), models that reach only a cut site cannot
        // replay into the target: ask first for one that reaches a real target block.
        // (Likewise for the clobber sites of stores, `load::bounds`; a pseudo-target whose
        // backbones are already `false` needs no preference.)
        let real = program.target_names.len() as u32;
        if apc.backbones.iter().any(|b| b.target.is_some_and(|t| t >= real) && pool.as_bool(b.formula) != Some(false)) {
            let p = Arc::make_mut(&mut pool);
            let primary = p.or(apc.backbones.iter().filter(|b| b.target.is_some_and(|t| t < real)).map(|b| b.formula));
            hints.push(primary);
        }
        // The length parameters tied to buffers: kept small twice, by a preference and by the
        // objective (with the path counters) of every model.
        let lengths: Vec<(ExprId, u32)> = {
            let params = &program.function.params;
            witness::length_ties(&program)
                .into_iter()
                .filter_map(|(_, l)| {
                    let Ty::Int(w) = params[l].ty else { return None };
                    Some((apc.inputs.param_input(&params[l].name)?, w))
                })
                .collect()
        };
        hints.extend({
            let p = Arc::make_mut(&mut pool);
            lengths
                .iter()
                .map(|&(s, w)| {
                    let bound = p.bv(w, witness::PREFERRED_MAX_LEN.min(crate::expr::mask(w, u64::MAX)));
                    p.cmp(IntPredicate::Ule, s, bound)
                })
                .collect::<Vec<_>>()
        });
        let small_terms: Vec<ExprId> = counters.iter().copied().chain(lengths.iter().map(|&(s, _)| s)).collect();
        hints.extend(apc.hints.iter().copied());
        let mut models = 0u32;
        let timing = |out: &mut EngineResult, key: &str, secs: f64| {
            *out.timings.entry(key.to_string()).or_insert(0.0) += secs;
        };
        // The APC without its quantified parts (looping conditions) is weaker, so still a
        // necessary condition, and quantifier-free: a few milliseconds often prove what the
        // race below needs a Z3 context per query and the quantifier (OneLoop's parity) for.
        // Then the APC with its nonlinear operations uninterpreted, an over-approximation too:
        // alone and at full priority it proves an accumulator's `a·κ ≠ n·a` in 30 ms
        // (sum_symbolic), where in the race, beside the other queries and the searches, it
        // took 0.1-0.2 s; when it has a model, it cannot prove anything in this round and
        // stays out of the race.
        // The DSE waits for these and the fuzzing build yields meanwhile; they may run on the
        // DSE's thread (see `Context::quick_check`), so they take what they need along.
        #[derive(Default)]
        struct QuickAnswer {
            proof: Option<&'static str>,
            abstraction_has_a_model: bool,
            timings: Vec<(&'static str, f64)>,
            /// The answer of the first round's query, when the quick round gave one.
            first_round: Option<Vec<solve::RaceEntry<ModelData>>>,
        }
        let weak = (apc.complete && has_quantifiers).then(|| crate::expr::without_quantifiers(Arc::make_mut(&mut pool), apc.formula));
        // An APC that alternates quantifiers waits for the searches before its race (see
        // `APC_YIELD`); any other is asked once more in the quick check, exactly, as the first
        // round's query (see `QUICK_ROUND_LIMIT`).
        let alternating = has_quantifiers && crate::expr::alternates_quantifiers(&pool, apc.formula);
        let quick_round = (!alternating && crate::priority::tune("QUICK_ROUND", 1) == 1).then(|| {
            let p = Arc::make_mut(&mut pool);
            // As the loop below builds it the first time (no lemmas, nothing blocked yet).
            let facts = p.and(std::iter::once(apc.formula));
            let base = p.and(std::iter::once(facts).chain(hints.iter().copied()));
            let budget = QUICK_ROUND_MINIMISE.min(cx.left() / 10);
            let objective = (!small_terms.is_empty()).then(|| solve::Objective { terms: small_terms.clone(), above: MINIMAL_ENOUGH, budget });
            (base, objective)
        });
        let answer: Arc<std::sync::Mutex<QuickAnswer>> = Arc::default();
        let early = EarlyReplay::new(apc.complete && (weak.is_some() || quick_round.as_ref().is_some_and(|(_, o)| o.is_some())));
        let (proved_quickly, early_found) = std::thread::scope(|scope| {
            let replayer = early.wanted().then(|| scope.spawn(|| early.run(cx)));
            let (pool, formula, complete, cancel, answer) = (pool.clone(), apc.formula, apc.complete, cx.cancel.clone(), answer.clone());
            let (first_model, early_reached) = (early.sender(), early.reached.clone());
            let (extract, round_limit) = (extract.clone(), (cx.left() / 10).min(QUICK_ROUND_LIMIT));
            let (qf_limit, nonlinear_limit) = ((cx.left() / 10).min(QUANTIFIER_FREE_LIMIT), (cx.left() / 10).min(NONLINEAR_QUICK_LIMIT));
            let proved = cx.quick_check(solve::thread_has_context(), move |proving| {
                let mut a = answer.lock().unwrap_or_else(|e| e.into_inner());
                if !complete || cancel.load(std::sync::atomic::Ordering::Relaxed) {
                    return false;
                }
                // A model that reached the target natively (see `EarlyReplay`) ends the
                // checks below.
                let _early_stops = solve::cpu_limit::also_stop_checks_on(early_reached.clone());
                if let Some(weak) = weak.filter(|w| pool.as_bool(*w) != Some(true)) {
                    let tq = Instant::now();
                    let outcome = solve::check(&pool, weak, qf_limit, |m| extract(&pool, weak, m)).outcome;
                    a.timings.push((SOLVE_QUANTIFIER_FREE, tq.elapsed().as_secs_f64()));
                    match outcome {
                        Outcome::Unsat => {
                            a.proof = Some(SOLVE_QUANTIFIER_FREE);
                            return true;
                        }
                        // A guess, which a native run judges while the APC itself is solved.
                        Outcome::Sat((w, _, _)) => {
                            if let Some(tx) = &first_model {
                                let _ = tx.send(EarlyModel::Guess(w));
                            }
                        }
                        Outcome::Unknown(_) => {}
                    }
                }
                if solve::has_nonlinear(&pool, formula) && !cancel.load(std::sync::atomic::Ordering::Relaxed) {
                    let tq = Instant::now();
                    let outcome = solve::check_abstraction(&pool, formula, nonlinear_limit).outcome;
                    a.timings.push((SOLVE_NONLINEAR_UF, tq.elapsed().as_secs_f64()));
                    match outcome {
                        Outcome::Unsat => {
                            a.proof = Some(SOLVE_NONLINEAR_UF);
                            return true;
                        }
                        Outcome::Sat(()) => a.abstraction_has_a_model = true,
                        Outcome::Unknown(_) => {}
                    }
                }
                // What follows looks for a model as much as for a proof: the fuzzing build no
                // longer yields to it.
                proving.store(false, std::sync::atomic::Ordering::SeqCst);
                if let Some((base, objective)) = quick_round.filter(|_| !cancel.load(std::sync::atomic::Ordering::Relaxed)) {
                    // On this thread, in the context the checks above made. A first model that
                    // reached the target natively ends the search for a smaller one.
                    let stopped = || cancel.load(std::sync::atomic::Ordering::Relaxed) || early_reached.load(std::sync::atomic::Ordering::SeqCst);
                    let searching = |first: &ModelData| {
                        if let Some(tx) = &first_model {
                            let _ = tx.send(EarlyModel::First(first.clone()));
                        }
                    };
                    let answer = solve::check_small(&pool, base, round_limit, objective.as_ref(), &stopped, &searching, |m| extract(&pool, base, m));
                    // A model counts only when it is known to be small (a loop run 1.8 billion
                    // times where 34 would do, when the search for a smaller one was cut short):
                    // else the race asks again, with the whole budget for it.
                    if answer.outcome.is_definite() && answer.least {
                        a.first_round = Some(vec![solve::RaceEntry { name: "solve_apc".into(), answer }]);
                    } else {
                        a.timings.push(("solve_apc", answer.seconds));
                    }
                }
                false
            });
            // The check (and with it the sender) is done: the replayer ends unless it runs.
            early.done();
            (proved, replayer.and_then(|h| h.join().ok().flatten()))
        });
        let QuickAnswer { proof: quick_proof, abstraction_has_a_model, timings: quick_timings, mut first_round } =
            std::mem::take(&mut *answer.lock().unwrap_or_else(|e| e.into_inner()));
        for (key, secs) in quick_timings {
            timing(out, key, secs);
        }
        if let Some((seconds, found)) = early_found {
            if proved_quickly {
                // Checked before the native run stopped it: a proof of a target a run reached
                // is wrong, and the run is what the verdict rests on.
                tracing::error!("the quick check proved unreachable a target a native run reached (a soundness bug; please report it)");
            }
            timing(out, "replay_early", seconds);
            out.stats.insert("models_tried".into(), 1);
            info!("a model of the quick check reached the target");
            return Ok(found);
        }
        if proved_quickly {
            let invariants: usize = apc.summaries.iter().map(|(_, s)| s.invariants.facts.len()).sum();
            let query = quick_proof.unwrap_or(SOLVE_QUANTIFIER_FREE);
            info!(query, "definite answer");
            return Ok(Finding::Unreachable(format!(
                "the abstract path condition is unsatisfiable ({}{})",
                if query == SOLVE_NONLINEAR_UF { nonlinear_uf_description(has_quantifiers) } else { "even without its quantified looping conditions".to_string() },
                strengthened(invariants)
            )));
        }
        // No complete APC to prove with: the other provers start now. (After a mere miss of
        // the quick check they keep their late start: most such targets are reached, and
        // cancelling a prover started for nothing is not free.)
        if !apc.complete {
            cx.want_provers(true);
        }
        // An APC that alternates quantifiers leaves the first moments to the searches (see
        // `APC_YIELD`).
        if alternating {
            let at_most = Duration::from_millis(crate::priority::tune("APC_YIELD_MS", super::schedule::APC_YIELD.as_millis() as u64));
            let waited = cx.yield_to_searches(at_most);
            if !waited.is_zero() {
                tracing::debug!(?waited, "the APC alternates quantifiers: its solvers waited for the searches");
                timing(out, "apc_yield", waited.as_secs_f64());
            }
        }
        let mut reason = String::new();
        loop {
            out.stats.insert("models_tried".into(), models as u64);
            if cx.cancelled() {
                return Ok(Finding::Unknown(format!("cancelled after {models} model(s)")));
            }
            if cx.left() < Duration::from_millis(50) {
                return Ok(Finding::Unknown(format!("the time budget ran out after {models} model(s)")));
            }
            // The queries: the APC itself and, when it has quantifiers, its unfolding APC^K.
            let p = Arc::make_mut(&mut pool);
            let facts = p.and(std::iter::once(apc.formula).chain(lemmas.iter().copied()));
            let base = p.and(std::iter::once(facts).chain(blocking.iter().chain(hints.iter()).copied()));
            let objective = solve::Objective { terms: small_terms.clone(), above: MINIMAL_ENOUGH, budget: (cx.left() / 8).min(MINIMISE_BUDGET) };
            let minimising = |q: solve::Query| if small_terms.is_empty() { q } else { q.minimising(objective.clone()) };
            let mut queries = vec![minimising(solve::Query::exact("solve_apc", base))];
            // Nonlinear terms (`a·κ` of an accumulator `s += a`, `n·(n+1)`) are where Z3's
            // bit-blasting gives up: an abstraction that leaves them uninterpreted proves many
            // such APCs unsatisfiable at once (it can only prove, never give a model).
            // (Its model in the quick check stands while no lemma was added.)
            if solve::has_nonlinear(p, facts) && !(abstraction_has_a_model && lemmas.is_empty()) {
                queries.push(solve::Query::nonlinear_as_functions(SOLVE_NONLINEAR_UF, facts));
            }
            let mut bounded = None;
            if has_quantifiers {
                let tu = Instant::now();
                // Within the budget: the unfolding alone took 10 s on EQCNT.
                let until = Some(cx.deadline);
                // The adaptive start: the largest K (at most --unfold) whose unfolding is small.
                if !k_chosen {
                    k_chosen = true;
                    while k > MIN_START_K && unfold_until(p, apc.formula, k, false, START_UNFOLD_NODES, until).is_none() && cx.left() > Duration::from_millis(100) {
                        k = (k / 2).max(MIN_START_K);
                    }
                    out.stats.insert("unfold_start_k".into(), k as u64);
                }
                if let Some(unfolded) = unfold_until(p, apc.formula, k, false, MAX_UNFOLD_NODES, until) {
                    let unfolded = p.and(std::iter::once(unfolded).chain(lemmas.iter().chain(blocking.iter()).chain(hints.iter()).copied()));
                    // For witnesses only, never for verdicts: with every κ < K all instances of each
                    // ∀τ are present, and the interleaving constraints make the iterations fit
                    // together, so models of this query are far more likely to be real runs.
                    if let Some(consistent) = unfold_until(p, apc.formula, k, true, MAX_UNFOLD_NODES, until) {
                        let kk = p.bv(64, k as u64);
                        let bounds: Vec<ExprId> = counters.iter().map(|&c| p.cmp(IntPredicate::Ult, c, kk)).collect();
                        bounded = Some(p.and([consistent].into_iter().chain(lemmas.iter().chain(blocking.iter()).chain(hints.iter()).copied()).chain(bounds)));
                    }
                    queries.push(minimising(solve::Query::exact("solve_apc_k", unfolded)));
                }
                timing(out, "unfold", tu.elapsed().as_secs_f64());
            }
            // Leave the solvers a little less than what is left now, for model extraction and
            // the report.
            let solver_budget = cx.left().saturating_sub(Duration::from_millis(150)).max(Duration::from_millis(50));
            // The first round's query may have been answered in the quick check already.
            let results = match first_round.take() {
                Some(results) => results,
                None => solve::race_until(pool.clone(), queries, solver_budget, extract.clone(), &cx.cancel),
            };
            for r in &results {
                timing(out, &r.name, r.answer.seconds);
            }
            let Some(last) = results.into_iter().last().filter(|r| r.answer.outcome.is_definite()) else {
                if cx.cancelled() {
                    return Ok(Finding::Unknown(format!("cancelled after {models} model(s)")));
                }
                return Ok(Finding::Unknown(if models == 0 {
                    "the solver gave no answer within the time budget".into()
                } else {
                    format!("{reason}; the solver gave no further answer within the time budget")
                }));
            };
            info!(query = %last.name, k, "definite answer");
            // Asked of the APC alone (no blocked models, no hints): its unsat is a proof.
            let abstraction = last.name == SOLVE_NONLINEAR_UF;
            match last.answer.outcome {
                Outcome::Unsat if !hints.is_empty() && !abstraction => {
                    // Only the preferred lengths are ruled out: ask again without them.
                    debug!("no model with the preferred buffer lengths; asking without them");
                    hints.clear();
                    continue;
                }
                Outcome::Unsat if (blocking.is_empty() || abstraction) && apc.complete => {
                    let invariants: usize = apc.summaries.iter().map(|(_, s)| s.invariants.facts.len()).sum();
                    return Ok(Finding::Unreachable(format!(
                        "the abstract path condition is unsatisfiable ({}{})",
                        match last.name.as_str() {
                            "solve_apc" => "quantified APC".to_string(),
                            SOLVE_NONLINEAR_UF => nonlinear_uf_description(has_quantifiers),
                            _ => format!("APC^K, K = {k}"),
                        },
                        strengthened(invariants)
                    )));
                }
                Outcome::Unsat if blocking.is_empty() || abstraction => {
                    return Ok(Finding::Unknown("the APC of the enumerated backbones is unsatisfiable, but the backbone bound was hit".into()));
                }
                Outcome::Unsat => {
                    return Ok(Finding::Unknown(format!("no further model: {models} model(s) tried, none reached the target natively")));
                }
                Outcome::Unknown(_) => unreachable!("filtered above"),
                Outcome::Sat(first) => {
                    // Mixed concrete-symbolic solving: the model's pure-call results checked
                    // against native runs; a wrong one becomes a fact, and the solver goes again.
                    if let (Some(Ok(ev)), true) = (&pure, pure_rounds < MAX_PURE_ROUNDS) {
                        let tp = Instant::now();
                        let learnt = learn_pure_results(Arc::make_mut(&mut pool), &program, &apc, ev, &first.2, cx);
                        timing(out, "pure_eval", tp.elapsed().as_secs_f64());
                        match learnt {
                            Ok((new, fixed)) if !new.is_empty() => {
                                pure_rounds += 1;
                                out.stats.insert("pure_rounds".into(), pure_rounds as u64);
                                lemmas.extend(new);
                                // As the paper does: keep the arguments at the values just run
                                // (a preference, dropped when it leaves no model), so that the
                                // solver adjusts the rest of the inputs to the native results.
                                hints.push(fixed);
                                continue;
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!("mixed solving stopped: {e}");
                                pure = None;
                            }
                        }
                    }
                    // A model whose loops run a billion times takes seconds to replay natively
                    // (and to reach the target, when it does): ask briefly for one of the
                    // bounded, consistent unfolding (every κ < K) first.
                    let mut refined = false;
                    let first = match bounded {
                        Some(q) if first.1.values().any(|&c| c > SMALL_COUNT) => {
                            let limit = (cx.left() / 4).min(SMALL_COUNT_QUERY);
                            let results = solve::race_until(pool.clone(), vec![minimising(solve::Query::exact("solve_apc_k_bounded", q))], limit, extract.clone(), &cx.cancel);
                            let mut first = Some(first);
                            for r in results {
                                timing(out, &r.name, r.answer.seconds);
                                // Answered: not asked again after a miss (it would say the same).
                                refined |= r.answer.outcome.is_definite();
                                if let Outcome::Sat(data) = r.answer.outcome {
                                    // The large model stays a seed for the fuzzer.
                                    if let Some((w, _, _)) = first.replace(data) {
                                        cx.seeds.offer(&w);
                                    }
                                }
                            }
                            first.expect("a model")
                        }
                        _ => first,
                    };
                    // The model of the race first; when it misses the target, a model of the
                    // bounded, consistent query (found only now, as it costs a query of its own).
                    let mut tried = vec![];
                    let mut candidate = Some(first);
                    while let Some((w, counter_values, _)) = candidate.take() {
                        models += 1;
                        out.stats.insert("models_tried".into(), models as u64);
                        cx.seeds.offer(&w);
                        let tr = Instant::now();
                        let replayed = replay_model(cx, models, &w, counter_values, out)?;
                        timing(out, "replay", tr.elapsed().as_secs_f64());
                        match replayed {
                            Replayed::Reached(f) => return Ok(f),
                            Replayed::OutOfTime => {
                                return Ok(Finding::Unknown(format!("the time budget ran out before model {models} could be replayed")))
                            }
                            Replayed::Missed => {}
                        }
                        reason = format!(
                            "the model's inputs did not reach the target natively ({})",
                            out.attempt.as_ref().map_or("", |a| a.run.as_str())
                        );
                        tried.push(w);
                        if models >= config.max_models {
                            return Ok(Finding::Unknown(format!("{reason}; gave up after {models} model(s)")));
                        }
                        if let (false, Some(b)) = (refined, bounded) {
                            refined = true;
                            let left = (cx.left() / 2).min(Duration::from_secs(10));
                            let results = solve::race_until(pool.clone(), vec![minimising(solve::Query::exact("solve_apc_k_bounded", b))], left, extract.clone(), &cx.cancel);
                            for r in results {
                                timing(out, &r.name, r.answer.seconds);
                                if let Outcome::Sat(data) = r.answer.outcome {
                                    if !tried.contains(&data.0) {
                                        candidate = Some(data);
                                    }
                                }
                            }
                        }
                    }
                    cx.apc_searches_by_trial();
                    // Block this model (on the inputs it fixes) and widen the unfolding, only with
                    // time left. (`race` joined its workers, so `make_mut` does not copy the pool.)
                    if cx.left() < Duration::from_millis(500) {
                        return Ok(Finding::Unknown(format!("{reason}; the time budget ran out after {models} model(s)")));
                    }
                    let p = Arc::make_mut(&mut pool);
                    let blocks: Vec<ExprId> = tried.iter().filter_map(|w| block(p, &program, &apc, w)).collect();
                    if blocks.is_empty() {
                        return Ok(Finding::Unknown(reason));
                    }
                    blocking.extend(blocks);
                    k = (k * 2).min(config.max_unfold_k);
                }
            }
        }
    }
}

/// Runs the `--pure` functions natively on the model's arguments (`values`, one entry per call
/// in `apc.inputs.pure_calls`) and returns a fact for every call whose model result differs:
/// for each call c of that function, (args(c) = a) → result(c) = f(a). Also the conjunction of
/// those calls' arguments fixed at the model's values.
fn learn_pure_results(
    pool: &mut ExprPool,
    program: &Program,
    apc: &Apc,
    ev: &PureEvaluator,
    values: &[(Vec<u64>, u64)],
    cx: &Context,
) -> crate::error::Result<(Vec<ExprId>, ExprId)> {
    let calls = &apc.inputs.pure_calls;
    let index = |name: &str| program.pure_functions.iter().position(|s| s.name == name);
    let requests: Vec<(usize, Vec<u64>)> = calls.iter().zip(values).filter_map(|(c, (a, _))| Some((index(&c.function)?, a.clone()))).collect();
    let nothing = pool.bool(true);
    if requests.len() != calls.len() {
        return Ok((vec![], nothing));
    }
    let left = cx.left().saturating_sub(Duration::from_millis(250));
    if left < Duration::from_millis(50) {
        return Ok((vec![], nothing));
    }
    let wall = Duration::from_secs(2).min(left);
    let native = ev.eval(&requests, crate::replay::Limits { wall, cpu_seconds: wall.as_secs() + 1, ..Default::default() })?;
    let mut lemmas = vec![];
    let mut fixed = vec![];
    // `args` = the values, one equality per argument.
    let equal = |pool: &mut ExprPool, args: &[ExprId], values: &[u64]| -> Vec<ExprId> {
        args.iter().zip(values).map(|(&a, &v)| { let c = pool.constant_like(a, v); pool.eq(a, c) }).collect()
    };
    for (k, (call, (args, result))) in calls.iter().zip(values).enumerate() {
        let width = pool.value_bits(call.result);
        let real = crate::expr::mask(width, native[k]);
        if crate::expr::mask(width, *result) == real {
            continue;
        }
        debug!(function = %call.function, ?args, model = result, native = real, "pure call result learnt");
        fixed.extend(equal(pool, &call.args, args));
        for other in calls.iter().filter(|o| o.function == call.function) {
            let same = equal(pool, &other.args, args);
            let cond = pool.and(same);
            let r = pool.constant_like(other.result, real);
            let then = pool.eq(other.result, r);
            lemmas.push(pool.implies(cond, then));
        }
    }
    Ok((lemmas, pool.and(fixed)))
}

/// Replays model number `models`; a miss is recorded as the engine's last attempt.
fn replay_model(cx: &Context, models: u32, w: &Witness, counters: BTreeMap<String, u64>, out: &mut EngineResult) -> crate::error::Result<Replayed> {
    let Some(run) = cx.replay(w)? else { return Ok(Replayed::OutOfTime) };
    let report = WitnessReport::replayed(w, &run, models, counters);
    if run.reached.is_some() {
        return Ok(Replayed::Reached(Finding::Reached { witness: w.clone(), run, report }));
    }
    out.attempt = Some(report);
    Ok(Replayed::Missed)
}

/// A formula excluding the inputs of `w`: some parameter, buffer byte or nondet value differs.
fn block(pool: &mut ExprPool, program: &Program, apc: &Apc, w: &Witness) -> Option<ExprId> {
    let mut differs = vec![];
    for (p, input) in program.function.params.iter().zip(&w.params) {
        match input {
            ParamInput::Int { value, width, .. } => {
                if let Some(sym) = apc.inputs.param_input(&p.name) {
                    let v = if *width == 1 { pool.bool(*value & 1 == 1) } else { pool.bv(*width, *value) };
                    differs.push(pool.cmp(IntPredicate::Ne, sym, v));
                }
            }
            ParamInput::Buffer { bytes, front, .. } => {
                if let Some(obj) = apc.inputs.param_buffer_object(&p.name) {
                    let meaningful = bytes.len().saturating_sub(witness::BUFFER_SLACK);
                    for (k, b) in bytes.iter().take(meaningful).enumerate() {
                        // Byte k of the witness is at index k - front of the array.
                        let off = pool.bv(64, (k as u64).wrapping_sub(*front));
                        let cell = pool.load(obj.initial, off, 8);
                        let v = pool.bv(8, *b as u64);
                        differs.push(pool.cmp(IntPredicate::Ne, cell, v));
                    }
                }
            }
            ParamInput::Null { .. } | ParamInput::Function { .. } => {
                // Another pointer: another address (NULL, another function or a buffer).
                let obj = apc.inputs.param_buffer_object(&p.name).map(|o| o.id);
                if let Some(a) = obj.and_then(|o| apc.inputs.address_symbol(o)) {
                    let was = match input {
                        ParamInput::Function { function, .. } => apc.inputs.function_addresses().iter().find(|(_, n)| n == function).map(|(s, _)| *s),
                        _ => Some(pool.bv(64, 0)),
                    };
                    if let Some(was) = was {
                        differs.push(pool.cmp(IntPredicate::Ne, a, was));
                    }
                }
            }
            ParamInput::Zero { .. } => {}
        }
    }
    if let Some(stream) = apc.inputs.nondet_stream {
        for (k, v) in w.nondet.iter().enumerate() {
            let idx = pool.bv(64, k as u64);
            let cell = pool.select(stream, idx);
            let val = pool.bv(64, *v);
            differs.push(pool.cmp(IntPredicate::Ne, cell, val));
        }
    }
    (!differs.is_empty()).then(|| pool.or(differs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guess(value: u64) -> EarlyModel {
        EarlyModel::Guess(Witness { params: vec![ParamInput::Int { name: "x".into(), width: 32, value }], nondet: vec![] })
    }

    /// The replayer's wait ends once the check is over and its sender gone: the models sent
    /// before come out in order, then nothing (the engine joins the replayer after the check).
    #[test]
    fn the_replayer_sees_the_models_sent_and_then_the_end() {
        let early = EarlyReplay::new(true);
        assert!(early.wanted());
        let rx = early.rx.lock().unwrap().take().expect("a receiver");
        let check = early.sender().expect("the check's sender");
        check.send(guess(7)).unwrap();
        check.send(guess(21)).unwrap();
        drop(check);
        early.done();
        assert!(early.over.load(std::sync::atomic::Ordering::SeqCst));
        assert!(early.sender().is_none(), "no sender after the check");
        let values: Vec<u64> = rx
            .iter()
            .map(|m| match m {
                EarlyModel::Guess(w) => match w.params[0] {
                    ParamInput::Int { value, .. } => value,
                    _ => unreachable!(),
                },
                EarlyModel::First(_) => unreachable!(),
            })
            .collect();
        assert_eq!(values, vec![7, 21]);
    }

    #[test]
    fn nothing_is_replayed_early_when_not_wanted() {
        let early = EarlyReplay::new(false);
        assert!(!early.wanted());
        assert!(early.sender().is_none());
    }
}
