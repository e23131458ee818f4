//! What every engine shares during a race: the [`Context`] (budget, cancel flag, native build,
//! the quick check's hand-over, replays) and the [`SeedBoard`].

use super::types::EngineKind;
use crate::replay::{Limits, NativeBuild, RunOutcome};
use crate::witness::Witness;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Witnesses worth trying by other engines (APC models that did not replay seed the fuzzer).
#[derive(Default)]
pub struct SeedBoard {
    seeds: Mutex<Vec<Witness>>,
}

impl SeedBoard {
    pub fn offer(&self, w: &Witness) {
        let mut g = self.seeds.lock().unwrap_or_else(|e| e.into_inner());
        if !g.contains(w) && g.len() < 1024 {
            g.push(w.clone());
        }
    }

    pub fn snapshot(&self) -> Vec<Witness> {
        self.seeds.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The seeds offered after the first `known` (in the order offered).
    pub fn since(&self, known: usize) -> Vec<Witness> {
        self.seeds.lock().unwrap_or_else(|e| e.into_inner()).get(known..).map(<[Witness]>::to_vec).unwrap_or_default()
    }
}

/// What every engine shares. Owned (shared by `Arc`s), so that the race can end without
/// waiting for engines that are still stopping (see [`race`](fn@super::race)).
pub struct Context {
    pub native: Arc<NativeBuild>,
    pub deadline: Instant,
    pub cancel: Arc<AtomicBool>,
    pub seeds: Arc<SeedBoard>,
    /// Set with `cancel`, and also when an engine found that no witness can exist
    /// ([`Finding::NoWitness`]): the witness searches (fuzzing) stop, proofs go on.
    pub(super) search_off: AtomicBool,
    /// Replays so far, by every engine.
    replays: std::sync::atomic::AtomicU64,
    /// Seconds each sandboxed run took (the native build's wait excluded).
    run_seconds: Mutex<Vec<f64>>,
    /// Set by the apc engine once its first model missed the target: from then on it searches
    /// by trial (block, raise K), which rarely wins a race, and it yields the machine to the
    /// other searches (see [`APC_SHARE_AFTER_A_MISS`]).
    pub(super) apc_unproductive: AtomicBool,
    /// The apc engine thread's id, for its priority.
    pub(super) apc_tid: std::sync::atomic::AtomicI32,
    /// When the apc engine got its APC and started solving (its head start counts from then).
    pub(super) apc_solving_since: Mutex<Option<Instant>>,
    /// Set once the apc engine has ended without a definite finding (or when it does not run):
    /// the [`Late`] provers then start at once.
    pub(super) apc_ended: AtomicBool,
    /// Set when the evidence says a proof needs the other provers: the APC is incomplete (its
    /// paths exploded or its build was cut) or its first proof attempt failed. The late
    /// provers then start at once instead of at half the budget.
    pub(super) provers_wanted: AtomicBool,
    /// Set with `provers_wanted` when the APC cannot prove at all (it is incomplete): the late
    /// provers then run at the searches' priority, sharing the cores rather than yielding.
    pub(super) provers_only_hope: AtomicBool,
    /// The apc engine's quick first check ([`Context::quick_check`]): under way, done.
    pub(super) quick: Mutex<QuickCheck>,
    /// Signals changes of `quick` (a hand-over, its answer, the check's end).
    pub(super) quick_changed: std::sync::Condvar,
    /// Set while the quick check's proof attempts run (the check clears it before its quick
    /// round, see `engine::apc`): the fuzzing build yields only to them.
    quick_proving: Arc<AtomicBool>,
    /// The [`Late`] engines that started (the others are not reported when the race ends
    /// before they return).
    pub(super) late_started: Mutex<Vec<EngineKind>>,
    /// The witness searches (DSE, fuzzing) racing and not yet returned (see
    /// [`Context::yield_to_searches`]).
    pub(super) searches: std::sync::atomic::AtomicUsize,
    /// Set when the race is over (decided, or everything cancelled): the CPU-limited solver
    /// checks still under way on the engines' threads end then (see
    /// [`crate::solve::cpu_limit::stop_checks_on`]). Not `cancel`: the apc engine cancels the
    /// others itself on a quick proof, and goes on.
    pub(super) race_over: Arc<AtomicBool>,
    /// When the context was made, just before its race.
    pub created: Instant,
}

/// See [`Context::quick_check`].
#[derive(Default)]
pub(super) struct QuickCheck {
    running: bool,
    pub(super) done: bool,
    /// The DSE waits for the check and would run it.
    helper_waiting: bool,
    /// The DSE races and has not come to its wait yet (it waits for the APC's guide, which
    /// comes just before the check).
    helper_coming: bool,
    /// The check, handed over to the waiting DSE until it takes it.
    job: Option<Box<dyn FnOnce() -> bool + Send>>,
    /// The check's answer (proved or not) when the DSE ran it.
    helper_result: Option<bool>,
}

/// How long the apc engine waits for the DSE to take its quick check over before it runs the
/// check itself (the DSE takes it at once when it is waiting; this covers its giving up).
const QUICK_HAND_OVER_WAIT: Duration = Duration::from_millis(5);

impl Context {
    pub fn new(native: Arc<NativeBuild>, deadline: Instant, cancel: Arc<AtomicBool>, seeds: Arc<SeedBoard>) -> Self {
        Context {
            native,
            deadline,
            cancel,
            seeds,
            search_off: AtomicBool::new(false),
            replays: Default::default(),
            run_seconds: Default::default(),
            apc_unproductive: AtomicBool::new(false),
            apc_tid: Default::default(),
            apc_solving_since: Mutex::new(None),
            apc_ended: AtomicBool::new(false),
            provers_wanted: AtomicBool::new(false),
            provers_only_hope: AtomicBool::new(false),
            quick: Mutex::default(),
            quick_changed: std::sync::Condvar::new(),
            quick_proving: Arc::default(),
            late_started: Mutex::default(),
            searches: Default::default(),
            race_over: Arc::default(),
            created: Instant::now(),
        }
    }

    /// Whether a witness search besides the fuzzer still races: the apc engine (its models
    /// are replayed) or the DSE. Once neither does, the fuzzer is the only engine that can
    /// still find a witness, and it keeps its priority beside the provers (see
    /// `engine::fuzz`): lowered beside Horn-clause provers, it ran 6-8 times slower and a
    /// target it reaches alone in 5 s went `unknown` within 20 s.
    pub fn other_witness_searches(&self) -> bool {
        !self.apc_ended.load(Ordering::SeqCst) || self.searches.load(Ordering::SeqCst) > 1
    }

    /// Waits up to `at_most` while a witness search (DSE, fuzzing) still races, and returns
    /// how long it waited: the apc engine does, before the race of its solvers, when its APC
    /// alternates quantifiers (see `APC_YIELD`). Ends at once on a cancel and when the
    /// searches stop (only a proof can then change the answer).
    pub fn yield_to_searches(&self, at_most: Duration) -> Duration {
        let start = Instant::now();
        while start.elapsed() < at_most && self.searches.load(Ordering::SeqCst) > 0 && !self.search_cancelled() && !self.left().is_zero() {
            std::thread::sleep(Duration::from_millis(1));
        }
        start.elapsed()
    }

    /// Runs `check`, the apc engine's first query: a few milliseconds at most (the APC without
    /// its quantifiers, see `engine::apc`), and the proof of most unreachable targets that
    /// have one. Meanwhile the DSE waits ([`Context::wait_for_quick_check`]) and the fuzzing
    /// build runs at a lower priority. `check` says whether it proved the target unreachable:
    /// then every engine is cancelled before the check counts as done, so that the DSE does
    /// not start (its solver context alone is 6 ms that the race would wait for).
    ///
    /// **Where it runs.** When the DSE is already waiting for it, the check is handed to the
    /// DSE's thread, which runs it and then searches in the same Z3 context: a context costs
    /// 10-15 ms of page faults, and the DSE made its own only after the check, beside the
    /// APC's race, whose contexts were being made at the same time (Hello: 18-34 ms from the
    /// check's end to the DSE's first query). The apc engine makes its context at its next
    /// query instead. Otherwise (no DSE, or it gave up waiting) and when `here` (the calling
    /// thread has its context already, from the APC's build: nav_fig1_a17's check took 30 ms
    /// there and 55 on the DSE's thread) the apc engine runs it itself.
    ///
    /// `check` gets a flag that is set while it attempts its proofs: it clears it when it goes
    /// on to work that is no proof attempt (the quick round's model), and the fuzzing build
    /// then no longer yields to it ([`Context::quick_check_running`]).
    pub fn quick_check(&self, here: bool, check: impl FnOnce(&AtomicBool) -> bool + Send + 'static) -> bool {
        let proving = self.quick_proving.clone();
        proving.store(true, Ordering::SeqCst);
        let check = move || check(&proving);
        let mut q = self.quick.lock().unwrap_or_else(|e| e.into_inner());
        q.running = true;
        let hand_over = !here && crate::priority::tune("QUICK_HAND_OVER", 1) == 1;
        if hand_over && q.helper_coming && !q.helper_waiting {
            // The DSE gets the guide when the APC is built, just before this: a moment later
            // it waits here.
            q = self.quick_changed.wait_timeout_while(q, QUICK_HAND_OVER_WAIT, |q| q.helper_coming && !q.helper_waiting).unwrap_or_else(|e| e.into_inner()).0;
        }
        let proved = if q.helper_waiting && hand_over {
            tracing::debug!("quick check handed to the waiting DSE");
            q.job = Some(Box::new(check));
            self.quick_changed.notify_all();
            let (mut q, _) =
                self.quick_changed.wait_timeout_while(q, QUICK_HAND_OVER_WAIT, |q| q.job.is_some()).unwrap_or_else(|e| e.into_inner());
            match q.job.take() {
                // Not taken (the DSE gave up waiting meanwhile): run it here.
                Some(job) => {
                    drop(q);
                    job()
                }
                None => {
                    let q = self.quick_changed.wait_while(q, |q| q.helper_result.is_none()).unwrap_or_else(|e| e.into_inner());
                    let proved = q.helper_result == Some(true);
                    drop(q);
                    proved
                }
            }
        } else {
            drop(q);
            tracing::debug!("quick check on the apc engine's thread");
            check()
        };
        if proved {
            self.cancel_all();
        }
        self.quick_proving.store(false, Ordering::SeqCst);
        let mut q = self.quick.lock().unwrap_or_else(|e| e.into_inner());
        (q.running, q.done) = (false, true);
        self.quick_changed.notify_all();
        proved
    }

    /// Said by the race when the DSE races beside the apc engine (`true`), and by the DSE when
    /// it ends before its wait for the quick check (`false`): while it is coming, the apc
    /// engine waits a moment for it to take the check over.
    pub fn quick_check_helper_coming(&self, coming: bool) {
        self.quick.lock().unwrap_or_else(|e| e.into_inner()).helper_coming = coming;
        self.quick_changed.notify_all();
    }

    /// Whether the apc engine's quick check has started, and whether it is done.
    pub fn quick_check_state(&self) -> (bool, bool) {
        let q = self.quick.lock().unwrap_or_else(|e| e.into_inner());
        (q.running || q.done, q.done)
    }

    /// Whether the apc engine's quick check is under way, attempting its proofs.
    pub fn quick_check_running(&self) -> bool {
        self.quick.lock().unwrap_or_else(|e| e.into_inner()).running && self.quick_proving.load(Ordering::SeqCst)
    }

    /// Waits (at most `at_most`) until the apc engine has done its quick check, when it races,
    /// and runs the check on this thread when the apc engine hands it over (see
    /// [`Context::quick_check`]). The DSE does, before it starts: at a lower priority beside
    /// the check it still took the other core, and creating its solver context (thousands of
    /// page faults, which contend with the check's in the kernel) made a 10 ms proof take 19 ms
    /// (TwoLoops: the portfolio 0.027 s against 0.021 s waiting, medians of 9; DSE-won
    /// benchmarks unchanged).
    pub fn wait_for_quick_check(&self, at_most: Duration) {
        let until = Instant::now() + at_most;
        let mut q = self.quick.lock().unwrap_or_else(|e| e.into_inner());
        q.helper_coming = false;
        q.helper_waiting = true;
        self.quick_changed.notify_all();
        loop {
            if let Some(job) = q.job.take() {
                q.helper_waiting = false;
                self.quick_changed.notify_all();
                drop(q);
                // A panic is the check's failure, not a proof; the apc engine waits for an answer.
                let proved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or(false);
                if proved {
                    self.cancel_all();
                }
                let mut q = self.quick.lock().unwrap_or_else(|e| e.into_inner());
                q.helper_result = Some(proved);
                self.quick_changed.notify_all();
                return;
            }
            let now = Instant::now();
            if q.done || now >= until || self.cancelled() || self.apc_ended.load(Ordering::SeqCst) {
                break;
            }
            // Woken by the hand-over or the end of the check; the apc engine's end and a
            // cancel are seen within a millisecond.
            q = self.quick_changed.wait_timeout(q, (until - now).min(Duration::from_millis(1))).unwrap_or_else(|e| e.into_inner()).0;
        }
        q.helper_waiting = false;
    }

    /// Called by the apc engine when it has its APC and starts solving (its head start begins).
    pub fn apc_starts_solving(&self) {
        self.apc_solving_since.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(Instant::now);
    }

    /// Called by the apc engine when the APC will not prove the target soon (see
    /// `provers_wanted`).
    /// `apc_incomplete`: the APC cannot prove anything (see `provers_only_hope`).
    pub fn want_provers(&self, apc_incomplete: bool) {
        if apc_incomplete {
            self.provers_only_hope.store(true, Ordering::SeqCst);
        }
        if !self.provers_wanted.swap(true, Ordering::SeqCst) {
            tracing::debug!("the APC has no quick proof: the late provers start now");
        }
    }

    /// Called by the apc engine when its first model missed the target (see `apc_unproductive`).
    pub fn apc_searches_by_trial(&self) {
        self.apc_unproductive.store(true, Ordering::SeqCst);
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// The flag a witness search that cannot prove anything (fuzzing) stops on: set on
    /// cancellation and when no witness can exist.
    pub fn search_cancel(&self) -> &AtomicBool {
        &self.search_off
    }

    pub fn search_cancelled(&self) -> bool {
        self.cancelled() || self.search_off.load(Ordering::Relaxed)
    }

    /// Said by an engine that holds a replayed witness but cannot return it at once (the apc
    /// engine, whose quick check still has to see its stop): every engine stops now, as when
    /// the finding arrives, rather than start work the verdict does not need (the DSE made its
    /// solver context in the 10-20 ms ai_listing1's check took to stop, beside the witness's
    /// reduction). The race still waits for the finding.
    pub fn witness_found(&self) {
        self.cancel_all();
    }

    /// Stops every engine.
    pub(super) fn cancel_all(&self) {
        self.search_off.store(true, Ordering::SeqCst);
        self.cancel.store(true, Ordering::SeqCst);
    }

    /// Whether the engine should stop now: cancelled, or past the deadline.
    pub fn out_of_time(&self) -> bool {
        self.cancelled() || Instant::now() >= self.deadline
    }

    /// Time left before the deadline.
    pub fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Runs `w` natively (the one build of this analysis), within what is left of the budget:
    /// `None` when no time is left for a run.
    pub fn replay(&self, w: &Witness) -> crate::error::Result<Option<RunOutcome>> {
        self.replay_within(w, REPLAY_WALL)
    }

    /// [`Context::replay`] with the run's wall time limited to `wall` (a run cut there counts
    /// as a miss, its status `timeout`).
    pub fn replay_within(&self, w: &Witness, wall: Duration) -> crate::error::Result<Option<RunOutcome>> {
        let left = self.left().saturating_sub(Duration::from_millis(250));
        if left < Duration::from_millis(50) {
            return Ok(None);
        }
        let rp = self.native.get()?;
        let wall = wall.min(left);
        let limits = Limits { wall, cpu_seconds: wall.as_secs() + 1, ..Default::default() };
        self.replays.fetch_add(1, Ordering::Relaxed);
        let t = Instant::now();
        let out = rp.run_with(w, limits).map(Some);
        self.run_seconds.lock().unwrap_or_else(|e| e.into_inner()).push(t.elapsed().as_secs_f64());
        out
    }

    /// The median time of one sandboxed run so far (the native build excluded), if any ran.
    pub fn median_run_seconds(&self) -> Option<f64> {
        let mut v = self.run_seconds.lock().unwrap_or_else(|e| e.into_inner()).clone();
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied()
    }

    pub fn replays(&self) -> u64 {
        self.replays.load(Ordering::Relaxed)
    }
}

/// The longest an engine's replay of one witness may run ([`Context::replay`]).
const REPLAY_WALL: Duration = Duration::from_secs(5);

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A context with no native build, for tests of the race and the quick check.
    pub(in crate::engine) fn bare_context() -> Arc<Context> {
        let native = Arc::new(NativeBuild::unavailable("no program in this test"));
        Arc::new(Context::new(native, Instant::now() + Duration::from_secs(60), Arc::default(), Arc::default()))
    }

    /// A DSE already waiting runs the quick check on its own thread (its Z3 context is then
    /// the one it searches in), and the apc engine gets the answer; a proof cancels the race
    /// before the DSE would start.
    #[test]
    fn a_waiting_dse_runs_the_quick_check_on_its_thread() {
        for proves in [false, true] {
            let cx = bare_context();
            let helper = {
                let cx = cx.clone();
                std::thread::spawn(move || {
                    cx.wait_for_quick_check(Duration::from_secs(10));
                    (std::thread::current().id(), cx.cancelled())
                })
            };
            while !cx.quick.lock().unwrap().helper_waiting {
                std::thread::sleep(Duration::from_millis(1));
            }
            let ran_on = Arc::new(Mutex::new(None));
            let r = ran_on.clone();
            let proved = cx.quick_check(false, move |_| {
                *r.lock().unwrap() = Some(std::thread::current().id());
                proves
            });
            let (helper_id, cancelled_when_it_returned) = helper.join().unwrap();
            assert_eq!(proved, proves);
            assert_eq!(*ran_on.lock().unwrap(), Some(helper_id), "the check ran on the waiting thread");
            assert_eq!(cancelled_when_it_returned, proves, "a proof cancels the race before the DSE goes on");
            assert!(cx.quick.lock().unwrap().done);
        }
    }

    /// Without a waiting DSE the apc engine runs the check itself; a DSE that comes later
    /// finds it done and does not wait.
    #[test]
    fn without_a_waiting_dse_the_quick_check_runs_on_the_apc_thread() {
        let cx = bare_context();
        let me = std::thread::current().id();
        assert!(!cx.quick_check(false, move |_| {
            assert_eq!(std::thread::current().id(), me);
            false
        }));
        let t = Instant::now();
        cx.wait_for_quick_check(Duration::from_secs(10));
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    /// A DSE that stopped waiting (its limit) before the check was handed over leaves it to
    /// the apc engine.
    #[test]
    fn a_dse_that_stopped_waiting_leaves_the_check_to_the_apc_engine() {
        let cx = bare_context();
        cx.wait_for_quick_check(Duration::from_millis(5));
        assert!(!cx.quick.lock().unwrap().helper_waiting);
        let me = std::thread::current().id();
        assert!(cx.quick_check(false, move |_| std::thread::current().id() == me));
    }

    /// The fuzzing build yields to the quick check's proof attempts only: not to its quick
    /// round (a model search as much as a proof), nor once the check is done.
    #[test]
    fn the_quick_check_counts_as_running_while_it_attempts_proofs() {
        let cx = bare_context();
        assert!(!cx.quick_check_running());
        let inner = cx.clone();
        let seen = cx.quick_check(true, move |proving| {
            let before = inner.quick_check_running();
            proving.store(false, Ordering::SeqCst);
            before && !inner.quick_check_running()
        });
        assert!(seen, "running while proving, not after");
        assert!(!cx.quick_check_running());
    }

    /// A caller that has its Z3 context already keeps the check, DSE waiting or not.
    #[test]
    fn a_caller_with_a_context_keeps_the_quick_check() {
        let cx = bare_context();
        let helper = {
            let cx = cx.clone();
            std::thread::spawn(move || cx.wait_for_quick_check(Duration::from_secs(10)))
        };
        while !cx.quick.lock().unwrap().helper_waiting {
            std::thread::sleep(Duration::from_millis(1));
        }
        let me = std::thread::current().id();
        assert!(cx.quick_check(true, move |_| std::thread::current().id() == me));
        helper.join().unwrap();
    }
}
