//! The witness-search and proof engines, and the portfolio that races them within `--timeout`.
//!
//! Every engine answers the same question (is the target reachable?) its own way: `apc` solves
//! the abstract path condition (a proof when unsatisfiable, models to replay otherwise); `dse`
//! executes paths exactly, pruned by the APC; `fuzz` mutates inputs natively. They run side by
//! side, each on its own thread, and the first *definite* finding wins and cancels the rest:
//! a witness that a native replay confirmed entered the target, or a proof of unreachability.
//! No engine says `reachable` on its own: [`Context::replay`] is the only way to a
//! [`Finding::Reached`].

pub mod apc;
pub mod chc;
pub mod dse;
pub mod fuzz;
pub mod pending;

use crate::replay::{Limits, NativeBuild, RunOutcome};
pub use crate::report::{EngineSummary, Invariant};
use crate::report::WitnessReport;
use crate::witness::Witness;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The engines, by the name `--engine` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The abstract path condition, solved with Z3 (proofs and models).
    Apc,
    /// Directed symbolic execution, pruned by the APC.
    Dse,
    /// Coverage-guided fuzzing (libFuzzer), seeded by APC models. Never proves.
    Fuzz,
    /// Constrained Horn clauses of the function, solved by Z3's Spacer. Only proves.
    Chc,
    /// k-induction over the Horn clauses' steps. Only proves.
    KInduction,
}

impl EngineKind {
    pub const ALL: &'static [EngineKind] = &[EngineKind::Apc, EngineKind::Dse, EngineKind::Fuzz, EngineKind::Chc, EngineKind::KInduction];
    /// The portfolio without `--engine`, from the start. The Horn-clause provers join it late
    /// ([`EngineKind::LATE_DEFAULT`], see [`Late`]): their clauses are solved quickly only for
    /// small loops (seconds to never for two nested ones), and from the start, beside the others
    /// on two cores, they would slow down their witnesses.
    pub const DEFAULT: &'static [EngineKind] = &[EngineKind::Apc, EngineKind::Dse, EngineKind::Fuzz];
    /// The provers the portfolio without `--engine` adds late (see [`Late`]).
    pub const LATE_DEFAULT: &'static [EngineKind] = &[EngineKind::Chc, EngineKind::KInduction];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Apc => "apc",
            EngineKind::Dse => "dse",
            EngineKind::Fuzz => "fuzz",
            EngineKind::Chc => "chc",
            EngineKind::KInduction => "k-induction",
        }
    }

    /// Parses a comma-separated list such as `apc,dse`.
    pub fn parse_list(s: &str) -> Result<Vec<EngineKind>, String> {
        let mut out = vec![];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let kind = EngineKind::ALL
                .iter()
                .copied()
                .find(|k| k.name() == part)
                .ok_or_else(|| format!("--engine: unknown engine `{part}` (known: {})", EngineKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")))?;
            if !out.contains(&kind) {
                out.push(kind);
            }
        }
        if out.is_empty() {
            return Err("--engine: name at least one engine".into());
        }
        Ok(out)
    }
}

/// What an engine found.
#[derive(Debug)]
pub enum Finding {
    /// A native replay of `witness` entered the target.
    Reached { witness: Witness, run: RunOutcome, report: WitnessReport },
    /// A proof that no run reaches the target (the reason says which).
    Unreachable(String),
    /// No answer: why (budget, cancelled, models that did not replay, ...).
    Unknown(String),
    /// No answer, but no witness can exist: no input makes the *replayed* program (external
    /// functions stubbed) enter the target. The witness searches stop; a proof may still come.
    NoWitness(String),
}

impl Finding {
    pub fn is_definite(&self) -> bool {
        matches!(self, Finding::Reached { .. } | Finding::Unreachable(_))
    }
}

/// The last model an engine replayed without reaching the target (for the report when nobody
/// wins).
pub type Attempt = WitnessReport;

/// What an engine hands back: its finding, its last unsuccessful attempt, its time split, its
/// statistics.
#[derive(Debug)]
pub struct EngineResult {
    pub finding: Finding,
    pub attempt: Option<Attempt>,
    pub timings: BTreeMap<String, f64>,
    pub stats: BTreeMap<String, u64>,
    /// With a proof by invariants: the invariants.
    pub invariants: Vec<Invariant>,
    /// A [`Late`] engine the race ended before it started: left out of the report.
    pub never_started: bool,
}

impl EngineResult {
    pub fn new(finding: Finding) -> Self {
        EngineResult { finding, attempt: None, timings: BTreeMap::new(), stats: BTreeMap::new(), invariants: vec![], never_started: false }
    }
}

/// A prover that joins the race late, at [`LATE_NICE`]: once half of the budget is gone
/// (`start_at`), or at once when the apc engine ended without a proof (or does not run).
/// The default portfolio's Horn-clause provers (`chc`, `k-induction`): alone they decide
/// targets in seconds that the others do not, but on `c-benchmarks/` and the differential cases
/// they decide nothing the three engines do not, and from the start they would take CPU from
/// the witness searches on two cores. Most runs end before they start; a run that did not is
/// a hard one, where a second kind of proof is worth the share.
pub struct Late {
    pub inner: Box<dyn Engine>,
    pub start_at: Instant,
}

/// Nice value of a [`Late`] engine's thread (and of the solver threads it starts).
const LATE_NICE: i32 = 10;
/// How often a [`Late`] engine waiting for its start looks at the race (a cancel, the apc
/// engine's end).
const LATE_LOOK_INTERVAL: Duration = Duration::from_millis(20);

impl Engine for Late {
    fn kind(&self) -> EngineKind {
        self.inner.kind()
    }

    fn joins_late(&self) -> bool {
        true
    }

    fn run(self: Box<Self>, cx: &Context) -> EngineResult {
        loop {
            if cx.cancelled() {
                return EngineResult { never_started: true, ..EngineResult::new(Finding::Unknown("not started".into())) };
            }
            if Instant::now() >= self.start_at || cx.apc_ended.load(Ordering::SeqCst) {
                // Under the lock the race reads when it ends, so that a late engine is either
                // reported or known not to have started.
                let mut started = cx.late_started.lock().unwrap_or_else(|e| e.into_inner());
                if cx.cancelled() {
                    return EngineResult { never_started: true, ..EngineResult::new(Finding::Unknown("not started".into())) };
                }
                started.push(self.inner.kind());
                break;
            }
            // The race does not wait for this thread once decided; every look wakes it (a
            // look every 2 ms took the fuzzer's core from it hundreds of times a second, see
            // `replay::sandbox`'s wait).
            std::thread::sleep(self.start_at.saturating_duration_since(Instant::now()).clamp(Duration::from_millis(1), LATE_LOOK_INTERVAL));
        }
        // SAFETY: a plain system call on this thread's own priority (threads it starts inherit it).
        unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, crate::priority::lowered(LATE_NICE)) };
        self.inner.run(cx)
    }
}

/// An engine of the portfolio. `run` returns at a definite finding, at `cx.deadline`, or soon
/// after `cx.cancel` is set.
pub trait Engine: Send {
    fn kind(&self) -> EngineKind;
    /// Whether the engine joins the race late ([`Late`]): not reported if the race ends
    /// before it started.
    fn joins_late(&self) -> bool {
        false
    }
    fn run(self: Box<Self>, cx: &Context) -> EngineResult;
}

/// Every engine starts at once and at the same priority, fuzzing included: each is the fastest
/// on some benchmarks (proofs and loop-count targets; string scans; arrays filled from input),
/// and the APC is built inside the race (see [`pending`]). The fuzzer used to wait 300 ms and
/// run at nice 5 beside the symbolic engines; with the APC's build before the race that made
/// the portfolio 4-13x slower than the fuzzer alone where it wins (matrir 2.7 s against 0.6 s,
/// eqcnt 9.6 s against 0.7 s). With the equal start and the yields (the APC's below, the
/// fuzzer's in `fuzz.rs`), the geometric mean over `c-benchmarks/` went from 2.12x the best
/// single engine to 1.68x.
/// How long the APC's solvers run at full priority beside the searches, from when the APC is
/// built: its quick wins come within it (the proofs and first models of `c-benchmarks/`, within
/// 50 ms of solving). After it, while a search (DSE, fuzzing) runs, the APC's solvers together
/// weigh [`APC_SHARE`] of an engine, and [`APC_SHARE_AFTER_A_MISS`] once a model of theirs
/// missed the target.
const APC_HEAD_START: Duration = Duration::from_millis(100);
/// The APC's share of the machine beside a search, as a fraction of one engine's (one nice-0
/// thread), its two or three solver workers together; the apc engine's own thread (unfolding,
/// model extraction) keeps its priority until a model missed. At full priority past the head
/// start (three threads), or at nice 4 each (1.2 engines), the solvers kept the DSE to 40% of a
/// core (wp_windriver: 2.8 s in the portfolio against 1.06 s alone, the APC's solvers taking
/// 2.6 s of CPU). Measured against one engine's share, interleaved runs of `c-benchmarks/`
/// (5 each): geometric mean of the portfolio's ratio to the best single engine 1.46 against
/// 1.62, doif 1.17 s against 1.81, eqcnt 0.37 against 1.21 (its fuzzer gets the core the
/// solvers gave up, while the apc thread still unfolds at full priority for the model that
/// seeds it). A tenth of an engine, not more: the solvers' CPU beyond the head start
/// cost the DSE more than its share, as every Z3 thread beside it slows its checks (memory,
/// page faults): on doif, the DSE's checks took 0.72 s beside the solvers at a third, 0.57 s
/// with none past the head start, 0.46 s without the apc engine. Interleaved runs of
/// `c-benchmarks/` (5 each, 11 where they differed): doif 1.17 -> 1.07 s, doifex 0.76 -> 0.67,
/// hw 0.23 -> 0.20, windriver 0.95 -> 0.85, wp_windriver 1.83 -> 1.57, nav_fig1 1.55 -> 1.36;
/// no row slower beyond the noise (hello, wp_hello, hwm within 3% over 11 runs). Only the DSE
/// feels the share: the fuzzer runs in a scheduling group of its own (a session per sandboxed
/// process), and once the searches end the solvers have the machine.
const APC_SHARE: f64 = 0.1;
/// The APC's share once its first model missed the target: it then searches by trial (block
/// the model, raise K), which won no benchmark, and a proof can no longer come from its
/// quantified query. Its later rounds at a full share kept the fuzzer to a fifth of a core
/// (eqcnt: 16 s in the portfolio, 0.7 s alone).
const APC_SHARE_AFTER_A_MISS: f64 = APC_SHARE;
/// How long the apc engine waits, after its quick check, before its solvers race, when its
/// APC alternates quantifiers (∀τ2 … ∃κ1 … ∀τ1: nested loops over memory) and a witness
/// search races beside it. Z3 decided no such APC of `c-benchmarks/` within 0.6 s (Hello 0.7 s
/// alone, HW 1.8, running_example 0.64, the others not at all), while the race's Z3 contexts
/// (10-15 ms of page faults each) and solvers landed in the first tens of milliseconds in
/// which the DSE decides small programs: Hello 0.13 s in the portfolio against 0.07 for the
/// DSE alone, 0.09 with the solvers 150 ms later. The quick check (the quantifier-free and
/// uninterpreted APC: the proofs of such APCs, nav_fig1_a17's) is not delayed, nor are APCs
/// without alternation (a single ∀ of counting loops: their models and proofs come within
/// tens of milliseconds, often from the apc engine alone).
const APC_YIELD: Duration = Duration::from_millis(100);

/// Nice value of the apc engine's own thread (model extraction, unfolding, replays) beside a
/// search once its first model missed.
const APC_THREAD_YIELD_NICE: libc::c_int = 10;

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
/// waiting for engines that are still stopping (see [`race`]).
pub struct Context {
    pub native: Arc<NativeBuild>,
    pub deadline: Instant,
    pub cancel: Arc<AtomicBool>,
    pub seeds: Arc<SeedBoard>,
    /// Set with `cancel`, and also when an engine found that no witness can exist
    /// ([`Finding::NoWitness`]): the witness searches (fuzzing) stop, proofs go on.
    search_off: AtomicBool,
    /// Replays so far, by every engine.
    replays: std::sync::atomic::AtomicU64,
    /// Seconds each sandboxed run took (the native build's wait excluded).
    run_seconds: Mutex<Vec<f64>>,
    /// Set by the apc engine once its first model missed the target: from then on it searches
    /// by trial (block, raise K), which rarely wins a race, and it yields the machine to the
    /// other searches (see [`APC_SHARE_AFTER_A_MISS`]).
    apc_unproductive: AtomicBool,
    /// The apc engine thread's id, for its priority.
    apc_tid: std::sync::atomic::AtomicI32,
    /// When the apc engine got its APC and started solving (its head start counts from then).
    apc_solving_since: Mutex<Option<Instant>>,
    /// Set once the apc engine has ended without a definite finding (or when it does not run):
    /// the [`Late`] provers then start at once.
    apc_ended: AtomicBool,
    /// The apc engine's quick first check ([`Context::quick_check`]): under way, done.
    quick: Mutex<QuickCheck>,
    /// Signals changes of `quick` (a hand-over, its answer, the check's end).
    quick_changed: std::sync::Condvar,
    /// Set while the quick check's proof attempts run (the check clears it before its quick
    /// round, see `engine::apc`): the fuzzing build yields only to them.
    quick_proving: Arc<AtomicBool>,
    /// The [`Late`] engines that started (the others are not reported when the race ends
    /// before they return).
    late_started: Mutex<Vec<EngineKind>>,
    /// The witness searches (DSE, fuzzing) racing and not yet returned (see
    /// [`Context::yield_to_searches`]).
    searches: std::sync::atomic::AtomicUsize,
    /// Set when the race is over (decided, or everything cancelled): the CPU-limited solver
    /// checks still under way on the engines' threads end then (see
    /// [`crate::solve::cpu_limit::stop_checks_on`]). Not `cancel`: the apc engine cancels the
    /// others itself on a quick proof, and goes on.
    race_over: Arc<AtomicBool>,
    /// When the context was made, just before its race.
    pub created: Instant,
}

/// See [`Context::quick_check`].
#[derive(Default)]
struct QuickCheck {
    running: bool,
    done: bool,
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
    /// alternates quantifiers (see [`APC_YIELD`]). Ends at once on a cancel and when the
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
    fn cancel_all(&self) {
        self.search_off.store(true, Ordering::SeqCst);
        self.cancel.store(true, Ordering::SeqCst);
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
/// for [`STOP_GRACE`] at most), or all have ended.
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
    while results.len() < total {
        let wait = match stop_by {
            Some(t) if Instant::now() >= t => break,
            Some(t) => t.saturating_duration_since(Instant::now()),
            None => Duration::from_millis(10),
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
            results.push((kind, at.elapsed().as_secs_f64(), EngineResult::new(Finding::Unknown("cancelled; still stopping when the race ended".into()))));
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

    #[test]
    fn engine_lists_parse_and_refuse_unknown_names() {
        assert_eq!(EngineKind::parse_list("dse, apc,dse").unwrap(), vec![EngineKind::Dse, EngineKind::Apc]);
        assert!(EngineKind::parse_list("apc,klee").unwrap_err().contains("klee"));
        assert!(EngineKind::parse_list("").is_err());
    }

    fn bare_context() -> Arc<Context> {
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
