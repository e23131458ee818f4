//! The `fuzz` engine: coverage-guided fuzzing of the native program with libFuzzer
//! ([`crate::fuzz`]), seeded by the models of the `apc` engine (from the [`super::SeedBoard`])
//! and by a dictionary of the program's comparison constants and string literals. It never
//! proves anything: a target it cannot reach leaves the verdict to the other engines.

use super::schedule::{BUILD_HOLD, BUILD_HOLD_CAP, BUILD_YIELD_NICE, FULL_PRIORITY_FUZZING, LATER_NICE, PLATEAU};
use super::{Context, Engine, EngineKind, EngineResult, Finding};
use crate::fuzz::{CmpConstant, FuzzEnd, FuzzLimits, Fuzzer, Live};
use crate::ir::{InstKind, Operand, Program, Terminator, Ty};
use crate::replay::RunOutcome;
use crate::report::WitnessReport;
use crate::witness::Witness;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct FuzzEngine {
    /// The fuzzing executable, built on its own thread since load time.
    pub build: Option<JoinHandle<crate::error::Result<Fuzzer>>>,
    /// The build thread's id (0 until it has started): lowered while the APC's quick check
    /// runs (see `set_build_priority`).
    pub build_tid: std::sync::Arc<std::sync::atomic::AtomicI32>,
    pub dictionary: Vec<Vec<u8>>,
    /// Values of the constant-fill seeds: the comparison constants and their neighbours.
    pub fills: Vec<u64>,
    /// Whether no other engine runs (then the fuzzer and its build keep their priority).
    pub alone: bool,
    /// The build's helper processes (the link), killed once the race no longer needs it.
    pub abandon: std::sync::Arc<crate::cleanup::Abandon>,
    /// Set when the build may start (see `BUILD_HOLD`); from the start when alone.
    pub may_start: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// libFuzzer's first seed (`--seed`): the same seed repeats the same search.
    pub seed: u64,
}

/// An engine dropped without racing (the analysis ended before its race) leaves no build
/// behind: a build still held never starts, one under way loses its helpers.
impl Drop for FuzzEngine {
    fn drop(&mut self) {
        self.abandon.abandon();
    }
}

impl FuzzEngine {
    /// Starts building the fuzzing executable for `loaded`; `alone`: no other engine runs (then
    /// at full priority).
    pub fn start(loaded: &crate::load::Loaded, keep_temps: bool, alone: bool) -> FuzzEngine {
        let constants = comparison_constants(&loaded.program);
        let dictionary = dictionary(&loaded.program, &constants);
        let fills = fill_values(&constants);
        let loaded = loaded.clone();
        let build_tid = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
        let tid = build_tid.clone();
        let abandon = std::sync::Arc::new(crate::cleanup::Abandon::default());
        let token = abandon.clone();
        let may_start = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(alone));
        let start_now = may_start.clone();
        let build = std::thread::spawn(move || {
            // Held until the race lets it start (see `BUILD_HOLD`), or abandoned meanwhile.
            while !start_now.load(std::sync::atomic::Ordering::SeqCst) {
                if token.is_abandoned() {
                    return Err(crate::error::Error::internal("the fuzzing build was abandoned before it started"));
                }
                std::thread::sleep(Duration::from_micros(500));
            }
            // At the base priority from the start, in the background of building the APC
            // (lowered only while the APC's quick check runs, see `FuzzEngine::run`). At nice 15
            // until the race had run 100 ms, the build (0.06 s alone) took 0.6 s on ai_listing3
            // beside the APC's solvers' head start, and the portfolio 0.61 s where the fuzzer
            // alone takes 0.15 s (0.20 s built at nice 0, interleaved runs). A clang compile
            // at nice 5 once slowed building an APC from 0.3 s to 1.7 s (wp_sevens); the build
            // is now code generation in this process and a link.
            tid.store(unsafe { libc::gettid() }, std::sync::atomic::Ordering::SeqCst);
            crate::cleanup::Abandon::run(&token, || Fuzzer::build(&loaded, keep_temps))
        });
        FuzzEngine { build: Some(build), build_tid, dictionary, fills, alone, abandon, may_start, seed: crate::fuzz::DEFAULT_SEED }
    }
}

/// Sets the fuzzing build's priority: its thread `tid` to nice value `to`, and when raising
/// from `from`, also the threads it started and the processes the build started (the linker,
/// clang on a cache miss), which are still at `from`: this process's threads and children at
/// that nice value, and the children's descendants. `from` is [`BUILD_YIELD_NICE`] when
/// raising, a value nothing else in this process uses. (Raising only the build thread once
/// left its helper thread, and every tool it started, lowered: on ai_listing3 an objcopy of
/// 10 ms took 220 ms in the race.) Best effort: a process may just have ended, and raising a
/// priority needs root (or a `RLIMIT_NICE` that allows it).
fn set_build_priority(tid: i32, from: i32, to: i32) {
    if tid <= 0 {
        return;
    }
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, to) };
    if to >= from {
        // Lowering: the build thread only (the others run at the base priority, as the
        // engines do, and cannot be told apart by it).
        return;
    }
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
            // SAFETY: plain system calls; at worst the thread has just ended.
            if unsafe { libc::getpriority(libc::PRIO_PROCESS, t as libc::id_t) } == from {
                unsafe { libc::setpriority(libc::PRIO_PROCESS, t as libc::id_t, to) };
            }
        }
    }
    // (pid, parent, nice) of every process: fields 4 and 19 of /proc/PID/stat, counted after
    // the command name's closing parenthesis.
    let procs: Vec<(i32, i32, i64)> = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter_map(|pid| {
                    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                    let rest: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split_whitespace().collect();
                    Some((pid, rest.get(1)?.parse().ok()?, rest.get(16)?.parse().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    let me = std::process::id() as i32;
    let mut raised: Vec<i32> = procs.iter().filter(|(_, parent, n)| *parent == me && *n == from as i64).map(|(pid, _, _)| *pid).collect();
    let mut k = 0;
    while k < raised.len() && raised.len() < 64 {
        let parent = raised[k];
        raised.extend(procs.iter().filter(|(_, p, _)| *p == parent).map(|(pid, _, _)| *pid));
        k += 1;
    }
    for pid in raised {
        unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, to) };
    }
}

impl Engine for FuzzEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Fuzz
    }

    fn run(mut self: Box<Self>, cx: &Context) -> EngineResult {
        let tb = Instant::now();
        // The build starts once the APC's quick check has had its moment (see `BUILD_HOLD`),
        // and runs at the fuzzer's priority, except while the quick check attempts its proofs
        // (a few milliseconds, the proof of most unreachable targets that have one). Wait for
        // it, but not past a cancel or the deadline (the race waits for every engine; the
        // build is left to `cleanup::finish`).
        let nice = crate::priority::current();
        let mut applied = nice;
        let hold = Duration::from_millis(crate::priority::tune("FUZZ_BUILD_HOLD_MS", BUILD_HOLD.as_millis() as u64));
        let hold_cap = Duration::from_millis(crate::priority::tune("FUZZ_BUILD_HOLD_CAP_MS", BUILD_HOLD_CAP.as_millis() as u64));
        let Some(build) = self.build.take() else {
            return EngineResult::new(Finding::Unknown("no fuzzing build".into()));
        };
        while !build.is_finished() {
            if !self.may_start.load(std::sync::atomic::Ordering::SeqCst) {
                let (check_started, check_done) = cx.quick_check_state();
                let waited = cx.created.elapsed();
                if check_done || (!check_started && waited >= hold) || waited >= hold_cap || cx.apc_ended.load(std::sync::atomic::Ordering::SeqCst) {
                    tracing::debug!(?waited, "the fuzzing build starts");
                    self.may_start.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            let want = if !self.alone && cx.quick_check_running() { crate::priority::lowered(BUILD_YIELD_NICE) } else { nice };
            let tid = self.build_tid.load(std::sync::atomic::Ordering::SeqCst);
            if want != applied && tid > 0 {
                set_build_priority(tid, applied, want);
                applied = want;
            }
            if cx.search_cancelled() || cx.left().is_zero() {
                // Its link (about 50 ms of CPU) would run on beside the witness's reduction.
                self.abandon.abandon();
                let why = if cx.cancelled() || cx.left().is_zero() { "cancelled" } else { "stopped (no witness can replay)" };
                return EngineResult::new(Finding::Unknown(format!("{why} while the fuzzing executable was being built")));
            }
            // Short: the build's priority follows the quick check, and a cancel is noticed here.
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let fuzzer = match build.join() {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => return EngineResult::new(Finding::Unknown(format!("no fuzzing executable: {e}"))),
            Err(_) => return EngineResult::new(Finding::Unknown("the fuzzing build panicked".into())),
        };
        let mut out = EngineResult::new(Finding::Unknown(String::new()));
        out.timings.insert("fuzz_build_wait".into(), tb.elapsed().as_secs_f64());
        let reached: Mutex<Option<(Witness, RunOutcome)>> = Mutex::new(None);
        let replay = |w: &Witness| -> bool {
            match cx.replay(w) {
                Ok(Some(run)) if run.reached.is_some() => {
                    *reached.lock().unwrap_or_else(|e| e.into_inner()) = Some((w.clone(), run));
                    true
                }
                _ => false,
            }
        };
        let (mut executions, mut rounds, mut seeds_used, mut trace_runs) = (0u64, 0u64, 0u64, 0u64);
        let mut why = String::from("the time budget ran out before fuzzing started");
        // Beside other engines, one libFuzzer run goes on to the deadline: the seeds the other
        // engines offer meanwhile are fed to it, and it keeps its priority while it gains
        // coverage (see `Live`).
        let since = |known: usize| cx.seeds.since(known);
        let started = Instant::now();
        let full = Duration::from_millis(crate::priority::tune("FULL_PRIORITY_FUZZING_MS", FULL_PRIORITY_FUZZING.as_millis() as u64));
        let plateau = Duration::from_millis(crate::priority::tune("FUZZ_PLATEAU_MS", PLATEAU.as_millis() as u64));
        let later = crate::priority::lowered(crate::priority::tune("LATER_NICE", LATER_NICE as u64) as i32);
        let priority = |quiet: Duration| if started.elapsed() < full || quiet < plateau || !cx.other_witness_searches() { nice } else { later };
        let live = if self.alone { Live::default() } else { Live { seeds_since: Some(&since), nice: Some(&priority) } };
        while !cx.search_cancelled() && cx.left() > Duration::from_millis(300) {
            let seeds = cx.seeds.snapshot();
            let limits = FuzzLimits { seed: self.seed, ..FuzzLimits::until(cx.deadline) };
            let (end, stats) = fuzzer.search(&seeds, &self.dictionary, &self.fills, &limits, cx.search_cancel(), &replay, &live);
            rounds += 1;
            executions += stats.executions;
            seeds_used = seeds_used.max(stats.seeds_used);
            trace_runs += stats.trace_runs;
            match end {
                FuzzEnd::Reached(_) => break,
                FuzzEnd::GaveUp(w) => {
                    why = w;
                    break;
                }
                // Again, with the seeds it could not take running.
                FuzzEnd::Reseed => {}
            }
        }
        for (k, v) in [("executions", executions), ("rounds", rounds), ("seeds_used", seeds_used), ("trace_runs", trace_runs)] {
            out.stats.insert(k.into(), v);
        }
        out.finding = match reached.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some((witness, run)) => {
                let report = WitnessReport::replayed(&witness, &run, 0, Default::default());
                Finding::Reached { witness, run, report }
            }
            None if cx.cancelled() => Finding::Unknown("cancelled".into()),
            None if cx.search_cancelled() => Finding::Unknown("stopped: another engine found that no witness can replay".into()),
            None => Finding::Unknown(why),
        };
        out
    }
}

/// The constants the program's integer comparisons and switches test against, with the width
/// of the value compared.
pub fn comparison_constants(program: &Program) -> Vec<CmpConstant> {
    let f = &program.function;
    let width_of = |o: &Operand| match o {
        Operand::Int { width, .. } => Some(*width),
        Operand::Value(v) => match f.value_types.get(v.0 as usize) {
            Some(Ty::Int(w)) => Some(*w),
            _ => None,
        },
        _ => None,
    };
    let mut constants = vec![];
    for b in &f.blocks {
        for i in &b.insts {
            if let InstKind::ICmp { lhs, rhs, .. } = &i.kind {
                for (c, other) in [(lhs, rhs), (rhs, lhs)] {
                    if let Operand::Int { width, value } = c {
                        let w = width_of(other).unwrap_or(*width);
                        constants.push(CmpConstant { value: *value, width: w });
                    }
                }
            }
        }
        if let Terminator::Switch { value, cases, .. } = &b.term {
            let w = width_of(value).unwrap_or(64);
            constants.extend(cases.iter().map(|(v, _)| CmpConstant { value: *v, width: w }));
        }
    }
    constants
}

/// Most constant-fill seeds.
const MAX_FILLS: usize = 64;

/// Values of the constant-fill seeds: each comparison constant `c` and `c ± 1` (a strict
/// comparison's first value inside), in the program's order, without repeats, at most
/// `MAX_FILLS`. Zero is left out: libFuzzer starts from the empty input, which reads zeros.
pub fn fill_values(constants: &[CmpConstant]) -> Vec<u64> {
    let mut out: Vec<u64> = vec![];
    for c in constants {
        let w = c.width.clamp(1, 64);
        for v in [c.value, c.value.wrapping_add(1), c.value.wrapping_sub(1)] {
            let v = crate::expr::mask(w, v);
            if v != 0 && !out.contains(&v) && out.len() < MAX_FILLS {
                out.push(v);
            }
        }
    }
    out
}

/// Dictionary entries: the constants the program compares with (in the bytes the input format
/// holds them) and its constant strings.
pub fn dictionary(program: &Program, constants: &[CmpConstant]) -> Vec<Vec<u8>> {
    let mut entries = crate::fuzz::constant_entries(constants);
    let mut seen: std::collections::HashSet<Vec<u8>> = entries.iter().cloned().collect();
    for g in program.globals.iter().filter(|g| g.is_constant) {
        let Some(init) = &g.init else { continue };
        let bytes: Option<Vec<u8>> = init.iter().copied().collect();
        let Some(bytes) = bytes else { continue };
        for s in bytes.split(|b| *b == 0).filter(|s| (2..=64).contains(&s.len())) {
            if seen.insert(s.to_vec()) {
                entries.push(s.to_vec());
            }
        }
    }
    entries.truncate(512);
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_values_are_the_constants_and_their_neighbours_in_width() {
        let c = |value, width| CmpConstant { value, width };
        let v = fill_values(&[c(20, 32), c(0, 8), c(21, 32), c(255, 8)]);
        assert_eq!(v, vec![20, 21, 19, 1, 0xff, 22, 0xfe]);
        let many: Vec<CmpConstant> = (1..200).map(|k| c(k * 10, 32)).collect();
        assert_eq!(fill_values(&many).len(), MAX_FILLS);
    }
}
