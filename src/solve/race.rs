//! Queries raced on worker threads, each in its own Z3 context: the first definite answer wins
//! and the others are interrupted and joined.

use super::logic::{note_context, SolverKind};
use super::share::WorkerPriority;
use super::worker::{announce_running, stop_all, SharedSlot, Slot, WorkerState, Workers, CLAIMED_GRACE};
use super::{check_minimising, Answer, ModelView, Query};
use crate::expr::{ExprId, ExprPool};
use std::time::{Duration, Instant};

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
/// Every worker thread has been joined when this returns (see `Workers`): no Z3 object, context
/// or call of the race survives it, and `T` must be plain data (no Z3 term may leave a worker).
pub fn race<T: Send + 'static>(
    pool: std::sync::Arc<ExprPool>,
    queries: Vec<Query>,
    timeout: Duration,
    extract: ModelExtractor<T>,
) -> Vec<RaceEntry<T>> {
    race_until(pool, queries, timeout, extract, &std::sync::atomic::AtomicBool::new(false))
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
            tests::register_worker_thread();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BvOp, Sort, SymbolKind};
    use crate::ops::IntPredicate;
    use crate::solve::{check_portfolio, least_value, Interrupter, Objective, Outcome, Probe};
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
