//! When and at what priority the engines run: the late provers ([`Late`]), the APC's head start,
//! share and yields, and the fuzzer's nice values. Every nice value, CPU share and scheduling
//! delay of the portfolio is here.

use super::context::Context;
use super::types::{Engine, EngineKind, EngineResult, Finding};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A prover that joins the race late, at `LATE_NICE`: once half of the budget is gone
/// (`start_at`), or at once when the apc engine ended without a proof (or does not run) or its
/// APC is incomplete (`Context::want_provers`).
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
pub(super) const LATE_NICE: i32 = 10;
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
            if Instant::now() >= self.start_at || cx.apc_ended.load(Ordering::SeqCst) || cx.provers_wanted.load(Ordering::SeqCst) {
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
        if !cx.provers_only_hope.load(Ordering::SeqCst) {
            // SAFETY: a plain system call on this thread's own priority (threads it starts inherit it).
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, crate::priority::lowered(LATE_NICE)) };
        }
        self.inner.run(cx)
    }
}

/// and the APC is built inside the race (see [`pending`]). The fuzzer used to wait 300 ms and
/// run at nice 5 beside the symbolic engines; with the APC's build before the race that made
/// the portfolio 4-13x slower than the fuzzer alone where it wins (matrir 2.7 s against 0.6 s,
/// eqcnt 9.6 s against 0.7 s). With the equal start and the yields (the APC's below, the
/// fuzzer's in `fuzz.rs`), the geometric mean over `c-benchmarks/` went from 2.12x the best
/// single engine to 1.68x.
/// Every engine starts at once and at the same priority, fuzzing included: each is the fastest
/// on some benchmarks (proofs and loop-count targets; string scans; arrays filled from input),
/// How long the APC's solvers run at full priority beside the searches, from when the APC is
/// built: its quick wins come within it (the proofs and first models of `c-benchmarks/`, within
/// 50 ms of solving). After it, while a search (DSE, fuzzing) runs, the APC's solvers together
/// weigh [`APC_SHARE`] of an engine, and [`APC_SHARE_AFTER_A_MISS`] once a model of theirs
/// missed the target.
pub(super) const APC_HEAD_START: Duration = Duration::from_millis(100);
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
pub(super) const APC_SHARE: f64 = 0.1;
/// The APC's share once its first model missed the target: it then searches by trial (block
/// the model, raise K), which won no benchmark, and a proof can no longer come from its
/// quantified query. Its later rounds at a full share kept the fuzzer to a fifth of a core
/// (eqcnt: 16 s in the portfolio, 0.7 s alone).
pub(super) const APC_SHARE_AFTER_A_MISS: f64 = APC_SHARE;
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
pub(super) const APC_YIELD: Duration = Duration::from_millis(100);

/// Nice value of the apc engine's own thread (model extraction, unfolding, replays) beside a
/// search once its first model missed.
pub(super) const APC_THREAD_YIELD_NICE: libc::c_int = 10;

/// How long the fuzzer runs at the priority of the other engines when it is not alone, from
/// its start; after it, only while it gains coverage (see [`PLATEAU`]). Where the fuzzer wins
/// on `c-benchmarks/`, it wins within a second or two of fuzzing (nav_fig1 0.7 s, wp_windriver
/// 0.65 s) and gains coverage all along; on an unreachable target it can only take the proofs'
/// CPU.
pub(super) const FULL_PRIORITY_FUZZING: Duration = Duration::from_millis(1500);
/// How long the fuzzer may go without new coverage (libFuzzer's `NEW` units) before it drops
/// to [`LATER_NICE`], past [`FULL_PRIORITY_FUZZING`]. At that nice value, in a scheduling group
/// of its own beside the analysis, it gets a few percent of a core: eqcnt's fuzzer (before the
/// zero-data seeds), lowered after 1.5 s while still gaining coverage every 0.1-0.3 s, ran 189
/// inputs in 18 s and did not reach the target in 4 runs of 5 (alone: 3,481 inputs, 2.1 s).
pub(super) const PLATEAU: Duration = Duration::from_millis(2000);
/// Nice value of the fuzzer's scheduling group once it has stopped gaining coverage, beside
/// other witness searches (never when only provers remain: see
/// [`Context::other_witness_searches`]).
pub(super) const LATER_NICE: libc::c_int = 10;

/// How long the fuzzing build waits, from the race's start, for the APC's quick check to
/// start; once it has, the build waits until the check ends, and [`BUILD_HOLD_CAP`] at most
/// in all. The quick check (the APC without its quantifiers, then the APC itself when it does
/// not alternate quantifiers: see `engine::apc`) is the whole run of the rows the apc engine
/// decides in tens of milliseconds (OneLoop's and TwoLoops' proofs, unsigned_wrap's model);
/// the build's code generation beside it (lowered, but in the same process: its allocations
/// and page faults, on two cores that also carry the replay build) made those rows 1.3-1.5x
/// slower in the portfolio than the apc engine alone. Held, interleaved medians of 7-9 runs:
/// oneloop 0.047 -> 0.040 s, twoloops 0.052 -> 0.042, unsigned_wrap 0.088 -> 0.074; the rows
/// the fuzzer wins moved within the noise (eqcnt 0.114 -> 0.120, hw 0.199 -> 0.202, ai_listing1
/// 0.141 -> 0.146, wp_hello 0.167 -> 0.178, hello 0.113 -> 0.110), as their APC takes longer
/// than the hold to build. A hold of 10 ms cost those rows 20-30 ms.
pub(super) const BUILD_HOLD: Duration = Duration::from_millis(3);
/// The longest the fuzzing build waits for the quick check: past the quick proofs of
/// `c-benchmarks/` (16-33 ms from the race's start) and unsigned_wrap's model (38 ms).
pub(super) const BUILD_HOLD_CAP: Duration = Duration::from_millis(40);

/// Nice value of the fuzzing build while the APC's quick check runs (see
/// [`Context::quick_check`]): a value no other thread of the portfolio uses, so that
/// what the build started meanwhile is found again when it is raised.
pub(super) const BUILD_YIELD_NICE: libc::c_int = 11;
