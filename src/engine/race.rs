//! The race: each engine on a thread of its own, the first definite finding wins and the others
//! are cancelled.

use super::context::Context;
use super::schedule::{APC_HEAD_START, APC_SHARE, APC_SHARE_AFTER_A_MISS, APC_THREAD_YIELD_NICE};
use super::types::{Attempt, Engine, EngineKind, EngineResult, Finding};
use crate::report::{EngineSummary, Invariant};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The portfolio's answer.
pub struct PortfolioResult {
    /// The engine whose finding decided, if one did.
    pub winner: Option<EngineKind>,
    pub finding: Finding,
    /// The last unsuccessful replay of any engine (the apc engine's first), when nobody won.
    pub attempt: Option<Attempt>,
    pub engines: BTreeMap<String, EngineSummary>,
    /// Each engine's time split, merged (the apc engine's keys as before: `solve_apc`, ...).
    pub timings: BTreeMap<String, f64>,
    /// The winner's invariants, when it proved by invariants.
    pub invariants: Vec<Invariant>,
}

/// How long the end of a race waits for the engines still at work once every engine was
/// cancelled without a winner (their reasons make the `unknown` verdict's). What returns
/// meanwhile is reported as it ended; the rest are reported cancelled and left to stop on
/// their own: they hold only shared state, and the process ends without waiting for them.
/// Stopping took 4-15 ms (a Z3 context being made, a libFuzzer process being killed, a build
/// reaching its next step), a quarter of a 20 ms proof's run, while the verdict was known.
/// Once an engine has won, the race waits for nobody: what has returned by then is reported
/// as it ended (2 ms more cost OneLoop's 25 ms proof 3 ms, interleaved medians of 15).
const STOP_GRACE: Duration = Duration::from_millis(2);

/// How long past the engines' deadline the race waits for an engine that has not returned.
/// Every engine checks the deadline itself, but some steps do not look (enumerating the paths
/// of a huge straight-line function, a Z3 call between two interrupts): the race ends without them,
/// so that the verdict comes at the deadline and not from the last-resort watcher after it.
const DEADLINE_GRACE: Duration = Duration::from_millis(100);

/// Engine threads a race ended without (see [`STOP_GRACE`]).
static STOPPING: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());

/// Waits until the engines that races ended without have stopped (they were cancelled, so
/// within milliseconds). For a program using the library that returns from `main` right after
/// an analysis: its C++ static destructors (LLVM's, Z3's) must not run under an engine still
/// inside them. The command line ends through `solve::exit_now` instead, which runs none.
pub fn wait_for_stopping_engines() {
    let handles = std::mem::take(&mut *STOPPING.lock().unwrap_or_else(|e| e.into_inner()));
    for h in handles {
        let _ = h.join();
    }
}

/// Races `engines` until one has a definite finding (the others are cancelled, and waited
/// for `STOP_GRACE` at most), or all have ended.
pub fn race(engines: Vec<Box<dyn Engine>>, cx: &Arc<Context>) -> PortfolioResult {
    let (tx, rx) = std::sync::mpsc::channel::<(EngineKind, f64, EngineResult)>();
    let mut results: Vec<(EngineKind, f64, EngineResult)> = vec![];
    let mut winner: Option<usize> = None;
    let kinds: Vec<EngineKind> = engines.iter().map(|e| e.kind()).collect();
    // The DSE will take the apc engine's quick check over (see `Context::quick_check`); its
    // thread may start after the APC is built, on two busy cores.
    if kinds.contains(&EngineKind::Dse) && kinds.contains(&EngineKind::Apc) {
        cx.quick_check_helper_coming(true);
    }
    if !kinds.contains(&EngineKind::Apc) {
        cx.apc_ended.store(true, Ordering::SeqCst);
    }
    // The witness searches still racing (see `Context::yield_to_searches`), counted down as
    // they return.
    let is_search = |k: &EngineKind| matches!(k, EngineKind::Dse | EngineKind::Fuzz);
    cx.searches.store(kinds.iter().filter(|k| is_search(k)).count(), Ordering::SeqCst);
    let returned = |kind: EngineKind| {
        if is_search(&kind) {
            cx.searches.fetch_sub(1, Ordering::SeqCst);
        }
    };
    let total = engines.len();
    tracing::debug!(engines = ?kinds, "the race starts");
    // The engines running, with when they started and whether they join late.
    let mut started: Vec<(EngineKind, Instant, bool)> = vec![];
    let mut handles: Vec<std::thread::JoinHandle<()>> = vec![];
    for engine in engines {
        let tx = tx.clone();
        let kind = engine.kind();
        let late = engine.joins_late();
        let cx = cx.clone();
        let spawned = std::thread::Builder::new().name(format!("engine-{}", kind.name())).spawn(move || {
            let start = Instant::now();
            crate::solve::cpu_limit::stop_checks_on(cx.race_over.clone());
            if kind == EngineKind::Apc {
                cx.apc_tid.store(unsafe { libc::gettid() }, Ordering::SeqCst);
            }
            let result = if cx.cancelled() { EngineResult::new(Finding::Unknown("cancelled before it started".into())) } else { engine.run(&cx) };
            let _ = tx.send((kind, start.elapsed().as_secs_f64(), result));
        });
        match spawned {
            Ok(h) => {
                started.push((kind, Instant::now(), late));
                handles.push(h);
            }
            Err(e) => results.push((kind, 0.0, EngineResult::new(Finding::Unknown(format!("cannot start the engine: {e}"))))),
        }
    }
    drop(tx);
    let mut applied: Option<(Option<u32>, i32)> = None;
    // The scheduling constants (overridable for measurements, see `priority::tune`).
    let head_start = Duration::from_millis(crate::priority::tune("HEAD_START_MS", APC_HEAD_START.as_millis() as u64));
    let weight = |default: f64, name: &str| (crate::solve::NICE_0_WEIGHT as f64 * crate::priority::tune(name, (default * 100.0) as u64) as f64 / 100.0) as u32;
    let (share, share_after_a_miss) = (weight(APC_SHARE, "APC_SHARE_PERCENT"), weight(APC_SHARE_AFTER_A_MISS, "APC_SHARE_AFTER_A_MISS_PERCENT"));
    // Set once the race has cancelled everything (a winner, or nothing left to prove): it ends
    // then, whoever has not returned. Not on a cancel an engine made itself (the apc engine's
    // quick-check proof, `Context::quick_check`): its finding is still to come.
    let mut stop_by: Option<Instant> = None;
    let mut out_of_time = false;
    while results.len() < total {
        if stop_by.is_none() && Instant::now() >= cx.deadline + DEADLINE_GRACE {
            tracing::debug!("the deadline passed with engines still at work: the race ends without them");
            cx.cancel_all();
            stop_by = Some(Instant::now());
            out_of_time = true;
        }
        let wait = match stop_by {
            Some(t) if Instant::now() >= t => break,
            Some(t) => t.saturating_duration_since(Instant::now()),
            None => (cx.deadline + DEADLINE_GRACE).saturating_duration_since(Instant::now()).clamp(Duration::from_millis(1), Duration::from_millis(10)),
        };
        // The APC's priority (its solver workers' share, its own thread's nice), from what
        // runs now.
        let running = |k: EngineKind| kinds.contains(&k) && !results.iter().any(|(r, _, _)| *r == k);
        let searches_beside = running(EngineKind::Dse) || running(EngineKind::Fuzz);
        let solving_for = cx.apc_solving_since.lock().unwrap_or_else(|e| e.into_inner()).map(|t| t.elapsed());
        let wanted = if !searches_beside || solving_for.is_none_or(|t| t < head_start) {
            (None, 0)
        } else if cx.apc_unproductive.load(Ordering::Relaxed) {
            (Some(share_after_a_miss), APC_THREAD_YIELD_NICE)
        } else {
            (Some(share), 0)
        };
        if running(EngineKind::Apc) && applied != Some(wanted) && stop_by.is_none() {
            crate::solve::set_worker_share(wanted.0);
            let tid = cx.apc_tid.load(Ordering::Relaxed);
            if tid > 0 {
                crate::solve::set_thread_nice(tid, crate::priority::lowered(wanted.1));
            }
            applied = Some(wanted);
        }
        let r = match rx.recv_timeout(wait) {
            Ok(r) => r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(_) => break,
        };
        let definite = r.2.finding.is_definite();
        returned(r.0);
        if definite && winner.is_none() {
            // Before `apc_ended` below: a late prover must not start on the apc engine's end.
            cx.cancel_all();
        }
        if r.0 == EngineKind::Apc {
            cx.apc_ended.store(true, Ordering::SeqCst);
            // It may have ended before its quick check (no APC): nobody waits for it.
            cx.quick.lock().unwrap_or_else(|e| e.into_inner()).done = true;
            cx.quick_changed.notify_all();
        }
        results.push(r);
        if definite && winner.is_none() {
            winner = Some(results.len() - 1);
        } else if results.iter().any(|(_, _, r)| matches!(r.finding, Finding::NoWitness(_))) {
            // Only a proof can still change the answer: the searches stop, and everything
            // stops once the apc engine is not (or no longer) at work.
            cx.search_off.store(true, Ordering::SeqCst);
            let proving = |k: EngineKind| kinds.contains(&k) && !results.iter().any(|(r, _, _)| *r == k);
            if !proving(EngineKind::Apc) && !proving(EngineKind::Chc) && !proving(EngineKind::KInduction) {
                cx.cancel_all();
            }
        }
        let still_proving = [EngineKind::Apc, EngineKind::Chc, EngineKind::KInduction].iter().any(|k| kinds.contains(k) && !results.iter().any(|(r, _, _)| r == k));
        if stop_by.is_none() && (winner.is_some() || (cx.cancelled() && !still_proving)) {
            stop_by = Some(Instant::now() + if winner.is_some() { Duration::ZERO } else { STOP_GRACE });
        }
    }
    cx.race_over.store(true, Ordering::SeqCst);
    crate::solve::cpu_limit::stop_flag_set();
    // What has returned meanwhile, without waiting for the rest.
    while let Ok(r) = rx.try_recv() {
        returned(r.0);
        results.push(r);
    }
    // Those still stopping are left to end on their own (see `wait_for_stopping_engines`).
    STOPPING.lock().unwrap_or_else(|e| e.into_inner()).extend(handles.into_iter().filter(|h| !h.is_finished()));
    // The engines still stopping: cancelled (a late one only if it had started).
    let late_started = cx.late_started.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (kind, at, late) in started {
        if !results.iter().any(|(k, _, _)| *k == kind) && (!late || late_started.contains(&kind)) {
            let why = if out_of_time { "the time budget ran out while it was still at work" } else { "cancelled; still stopping when the race ended" };
            results.push((kind, at.elapsed().as_secs_f64(), EngineResult::new(Finding::Unknown(why.into()))));
        }
    }
    crate::solve::set_worker_share(None);
    let mut engines = BTreeMap::new();
    let mut timings = BTreeMap::new();
    // Late engines the race ended before they started are not reported (kinds are unique, so
    // the winner is found again by its kind).
    let winner_kind = winner.map(|w| results[w].0);
    results.retain(|(_, _, r)| !r.never_started);
    let winner = winner_kind.and_then(|k| results.iter().position(|(r, _, _)| *r == k));
    for (k, secs, r) in &results {
        let (outcome, reason) = match &r.finding {
            Finding::Reached { .. } => ("reachable", "a native run entered the target".to_string()),
            Finding::Unreachable(why) => ("unreachable", why.clone()),
            // Another engine decided while this one had no answer yet.
            Finding::Unknown(why) if winner.is_some() => ("cancelled", why.clone()),
            Finding::Unknown(why) | Finding::NoWitness(why) => ("unknown", why.clone()),
        };
        engines.insert(k.name().to_string(), EngineSummary { outcome: outcome.into(), reason, seconds: *secs, stats: r.stats.clone() });
        for (key, v) in &r.timings {
            *timings.entry(key.clone()).or_insert(0.0) += v;
        }
        if *k != EngineKind::Apc {
            timings.insert(format!("engine_{}", k.name()), *secs);
        }
    }
    match winner {
        Some(w) => {
            let (kind, _, r) = results.swap_remove(w);
            PortfolioResult { winner: Some(kind), finding: r.finding, attempt: None, engines, timings, invariants: r.invariants }
        }
        None => {
            // Nobody decided: the reasons of all engines, the apc engine's first.
            results.sort_by_key(|(k, _, _)| *k);
            let reason = results
                .iter()
                .map(|(k, _, r)| match &r.finding {
                    Finding::Unknown(why) | Finding::NoWitness(why) if results.len() > 1 => format!("{}: {why}", k.name()),
                    Finding::Unknown(why) | Finding::NoWitness(why) => why.clone(),
                    _ => unreachable!("no definite finding"),
                })
                .collect::<Vec<_>>()
                .join("; ");
            let attempt = results.iter_mut().find_map(|(_, _, r)| r.attempt.take());
            PortfolioResult { winner: None, finding: Finding::Unknown(reason), attempt, engines, timings, invariants: vec![] }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::context::tests::bare_context;
    use crate::engine::EngineResult;
    use crate::replay::NativeBuild;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    /// An engine of the test: answers `finding` after `delay`, or gives up when cancelled.
    struct Scripted {
        kind: EngineKind,
        delay: Duration,
        finding: fn() -> Finding,
    }

    impl Engine for Scripted {
        fn kind(&self) -> EngineKind {
            self.kind
        }
        fn run(self: Box<Self>, cx: &Context) -> EngineResult {
            let until = Instant::now() + self.delay;
            while Instant::now() < until {
                if cx.cancelled() {
                    return EngineResult::new(Finding::Unknown("cancelled".into()));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            EngineResult::new((self.finding)())
        }
    }

    fn race_of(engines: Vec<Box<dyn Engine>>, budget: Duration) -> (PortfolioResult, Duration) {
        let native = Arc::new(NativeBuild::unavailable("no program in this test"));
        let cx = Arc::new(Context::new(native, Instant::now() + budget, Arc::default(), Arc::default()));
        let start = Instant::now();
        let r = race(engines, &cx);
        (r, start.elapsed())
    }

    /// The apc engine's yield (see [`APC_YIELD`]) lasts while a search races: until the DSE
    /// returns here (30 ms), not its whole limit.
    #[test]
    fn the_apc_engine_yields_until_the_searches_return() {
        struct Yielding(Arc<Mutex<Option<Duration>>>);
        impl Engine for Yielding {
            fn kind(&self) -> EngineKind {
                EngineKind::Apc
            }
            fn run(self: Box<Self>, cx: &Context) -> EngineResult {
                *self.0.lock().unwrap() = Some(cx.yield_to_searches(Duration::from_secs(20)));
                EngineResult::new(Finding::Unknown("yielded".into()))
            }
        }
        let waited = Arc::new(Mutex::new(None));
        let (r, _) = race_of(
            vec![
                Box::new(Yielding(waited.clone())),
                Box::new(Scripted { kind: EngineKind::Dse, delay: Duration::from_millis(30), finding: || Finding::Unknown("gave up".into()) }),
            ],
            Duration::from_secs(60),
        );
        assert_eq!(r.winner, None);
        let waited = waited.lock().unwrap().expect("the apc engine ran");
        assert!(waited >= Duration::from_millis(25) && waited < Duration::from_secs(10), "{waited:?}");
    }

    /// The fuzzer keeps its priority once it is the only witness search left (the provers
    /// racing beside it): `other_witness_searches` goes false when the apc engine and the DSE
    /// have both returned, not before.
    #[test]
    fn the_fuzzer_is_the_last_witness_search_once_apc_and_dse_return() {
        struct Watching(Arc<Mutex<Vec<bool>>>);
        impl Engine for Watching {
            fn kind(&self) -> EngineKind {
                EngineKind::Fuzz
            }
            fn run(self: Box<Self>, cx: &Context) -> EngineResult {
                let until = Instant::now() + Duration::from_secs(20);
                while Instant::now() < until && !cx.cancelled() {
                    let others = cx.other_witness_searches();
                    self.0.lock().unwrap().push(others);
                    if !others {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                EngineResult::new(Finding::Unknown("watched".into()))
            }
        }
        let seen = Arc::new(Mutex::new(vec![]));
        let gave_up = || Finding::Unknown("gave up".into());
        let (r, took) = race_of(
            vec![
                Box::new(Scripted { kind: EngineKind::Apc, delay: Duration::from_millis(20), finding: gave_up }),
                Box::new(Scripted { kind: EngineKind::Dse, delay: Duration::from_millis(80), finding: gave_up }),
                Box::new(Watching(seen.clone())),
                Box::new(Scripted { kind: EngineKind::Chc, delay: Duration::from_millis(300), finding: gave_up }),
            ],
            Duration::from_secs(60),
        );
        assert_eq!(r.winner, None);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.first(), Some(&true), "the apc engine and the DSE race at first");
        assert_eq!(seen.last(), Some(&false), "both returned: the fuzzer is the last search ({took:?})");
        // Once false, it stays false: the fuzzer stopped watching at the first false.
        assert_eq!(seen.iter().filter(|s| !**s).count(), 1);
    }

    #[test]
    fn a_yield_ends_without_searches_and_on_a_cancel() {
        let cx = bare_context();
        assert!(cx.yield_to_searches(Duration::from_secs(20)) < Duration::from_secs(5), "no search races");
        cx.searches.store(1, Ordering::SeqCst);
        let waited = cx.yield_to_searches(Duration::from_millis(20));
        assert!(waited >= Duration::from_millis(20), "a search races: the whole limit ({waited:?})");
        cx.cancel.store(true, Ordering::SeqCst);
        assert!(cx.yield_to_searches(Duration::from_secs(20)) < Duration::from_secs(5), "cancelled");
    }

    #[test]
    fn the_first_definite_finding_wins_and_stops_the_others() {
        let (r, took) = race_of(
            vec![
                Box::new(Scripted { kind: EngineKind::Apc, delay: Duration::from_millis(30), finding: || Finding::Unreachable("proof".into()) }),
                Box::new(Scripted { kind: EngineKind::Fuzz, delay: Duration::from_secs(60), finding: || Finding::Unknown("slow".into()) }),
            ],
            Duration::from_secs(60),
        );
        assert_eq!(r.winner, Some(EngineKind::Apc));
        assert!(matches!(r.finding, Finding::Unreachable(_)));
        assert_eq!(r.engines["fuzz"].outcome, "cancelled");
        assert!(took < Duration::from_secs(5), "the loser was not stopped: {took:?}");
    }

    /// An engine that takes `linger` to stop once cancelled (a Z3 context being made).
    struct SlowToStop {
        linger: Duration,
        stopped: Arc<AtomicBool>,
    }

    impl Engine for SlowToStop {
        fn kind(&self) -> EngineKind {
            EngineKind::Dse
        }
        fn run(self: Box<Self>, cx: &Context) -> EngineResult {
            while !cx.cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(self.linger);
            self.stopped.store(true, Ordering::SeqCst);
            EngineResult::new(Finding::Unknown("cancelled".into()))
        }
    }

    #[test]
    fn the_race_ends_without_waiting_for_an_engine_slow_to_stop() {
        let stopped = Arc::new(AtomicBool::new(false));
        let (r, took) = race_of(
            vec![
                Box::new(Scripted { kind: EngineKind::Apc, delay: Duration::from_millis(20), finding: || Finding::Unreachable("proof".into()) }),
                Box::new(SlowToStop { linger: Duration::from_millis(400), stopped: stopped.clone() }),
            ],
            Duration::from_secs(60),
        );
        assert_eq!(r.winner, Some(EngineKind::Apc));
        assert!(took < Duration::from_millis(300), "the race waited for the slow engine: {took:?}");
        assert_eq!(r.engines["dse"].outcome, "cancelled");
        assert!(r.engines["dse"].reason.contains("still stopping"), "{:?}", r.engines["dse"]);
        wait_for_stopping_engines();
        assert!(stopped.load(Ordering::SeqCst), "waited for until it stopped");
    }

    /// An engine in a step that looks at neither the deadline nor the cancel flag: the race
    /// ends at the deadline without it, and says so.
    struct Deaf;

    impl Engine for Deaf {
        fn kind(&self) -> EngineKind {
            EngineKind::Apc
        }
        fn run(self: Box<Self>, _: &Context) -> EngineResult {
            std::thread::sleep(Duration::from_secs(3));
            EngineResult::new(Finding::Unknown("late".into()))
        }
    }

    #[test]
    fn the_race_ends_at_the_deadline_without_an_engine_that_ignores_it() {
        let gave_up = || Finding::Unknown("gave up".into());
        let (r, took) = race_of(
            vec![Box::new(Deaf), Box::new(Scripted { kind: EngineKind::Dse, delay: Duration::from_millis(10), finding: gave_up })],
            Duration::from_millis(300),
        );
        assert_eq!(r.winner, None);
        assert!(took < Duration::from_millis(300) + DEADLINE_GRACE + Duration::from_millis(400), "{took:?}");
        assert!(r.engines["apc"].reason.contains("time budget ran out"), "{}", r.engines["apc"].reason);
        assert_eq!(r.engines["dse"].reason, "gave up");
    }

    /// The apc engine's quick-check proof cancels the race itself (`Context::quick_check`)
    /// before it returns its finding: the race waits for that finding, however late.
    struct ProvesAfterCancelling;

    impl Engine for ProvesAfterCancelling {
        fn kind(&self) -> EngineKind {
            EngineKind::Apc
        }
        fn run(self: Box<Self>, cx: &Context) -> EngineResult {
            assert!(cx.quick_check(false, |_| true));
            std::thread::sleep(Duration::from_millis(50));
            EngineResult::new(Finding::Unreachable("proof".into()))
        }
    }

    #[test]
    fn a_proof_that_cancelled_the_race_itself_still_wins() {
        let stopped = Arc::new(AtomicBool::new(false));
        let (r, _) = race_of(
            vec![Box::new(ProvesAfterCancelling), Box::new(SlowToStop { linger: Duration::ZERO, stopped })],
            Duration::from_secs(60),
        );
        assert_eq!(r.winner, Some(EngineKind::Apc), "{:?}", r.engines);
        assert!(matches!(r.finding, Finding::Unreachable(_)));
    }

    #[test]
    fn without_a_definite_finding_every_reason_is_kept() {
        let (r, _) = race_of(
            vec![
                Box::new(Scripted { kind: EngineKind::Apc, delay: Duration::ZERO, finding: || Finding::Unknown("no model replayed".into()) }),
                Box::new(Scripted { kind: EngineKind::Dse, delay: Duration::from_millis(10), finding: || Finding::Unknown("budget".into()) }),
            ],
            Duration::from_secs(10),
        );
        assert_eq!(r.winner, None);
        let Finding::Unknown(why) = r.finding else { panic!("no engine decided") };
        assert_eq!(why, "apc: no model replayed; dse: budget");
        assert_eq!(r.engines["apc"].outcome, "unknown");
    }

    #[test]
    fn the_other_engines_start_as_soon_as_apc_gives_up() {
        // apc ends at once without an answer: dse wins at once.
        let (r, took) = race_of(
            vec![
                Box::new(Scripted { kind: EngineKind::Apc, delay: Duration::ZERO, finding: || Finding::Unknown("nothing".into()) }),
                Box::new(Scripted { kind: EngineKind::Dse, delay: Duration::ZERO, finding: || Finding::Unreachable("exhausted".into()) }),
            ],
            Duration::from_secs(60),
        );
        assert_eq!(r.winner, Some(EngineKind::Dse));
        assert!(took < Duration::from_millis(300), "{took:?}");
    }
}
