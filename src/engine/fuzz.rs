//! The `fuzz` engine: coverage-guided fuzzing of the native program with libFuzzer
//! ([`crate::fuzz`]), seeded by the models of the `apc` engine (from the [`super::SeedBoard`])
//! and by a dictionary of the program's comparison constants and string literals. It never
//! proves anything: a target it cannot reach leaves the verdict to the other engines.

use super::{Context, Engine, EngineKind, EngineResult, Finding};
use crate::fuzz::{CmpConstant, FuzzEnd, FuzzLimits, Fuzzer};
use crate::ir::{InstKind, Operand, Program, Terminator, Ty};
use crate::replay::RunOutcome;
use crate::report::WitnessReport;
use crate::witness::Witness;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The first round's share of the time left: later rounds start again with the seeds the
/// other engines found meanwhile.
const FIRST_ROUND_SHARE: f64 = 0.3;
const FIRST_ROUND_MIN: Duration = Duration::from_secs(2);
/// How long the fuzzer runs at the priority of the other engines when it is not alone; after
/// it, at [`LATER_NICE`]. Where the fuzzer wins on `c-benchmarks/`, it wins within about a
/// second of fuzzing (eqcnt 0.3–1.6 s, hwm 0.7 s); on an unreachable target it can only take
/// the proof's CPU (a quantified APC's proof took 9–11 s beside it at full priority, 3 s
/// alone).
const FULL_PRIORITY_FUZZING: Duration = Duration::from_millis(1500);
/// How long the fuzzing build stays at its background priority once the race has started:
/// the APC's quick proofs and models come within it (OneLoop's in 30 ms), and the fuzzer loses
/// little (its build takes 0.4 s or more).
const RAISE_BUILD_AFTER: Duration = Duration::from_millis(100);
/// Nice value of the fuzzer's later rounds, beside other engines.
const LATER_NICE: libc::c_int = 10;

pub struct FuzzEngine {
    /// The fuzzing executable, built on its own thread since load time.
    pub build: JoinHandle<crate::error::Result<Fuzzer>>,
    /// The build thread's id (0 until it has started): its priority is raised once the
    /// fuzzer joins the race (see [`raise_build_priority`]).
    pub build_tid: std::sync::Arc<std::sync::atomic::AtomicI32>,
    pub dictionary: Vec<Vec<u8>>,
    /// Values of the constant-fill seeds: the comparison constants and their neighbours.
    pub fills: Vec<u64>,
    /// Whether no other engine runs (then the fuzzer keeps its priority).
    pub alone: bool,
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
        let build = std::thread::spawn(move || {
            // In the background of building the APC: at the lowest useful priority (clang, the
            // child processes, inherit it). At nice 5 its compile slowed building the APC of
            // wp_sevens from 0.3 s to 1.7 s. Raised when the fuzzer joins the race.
            if !alone {
                unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, crate::priority::lowered(crate::priority::tune("FUZZ_BUILD_NICE", FUZZ_BUILD_NICE as u64) as i32)) };
            }
            tid.store(unsafe { libc::gettid() }, std::sync::atomic::Ordering::SeqCst);
            Fuzzer::build(&loaded, keep_temps)
        });
        FuzzEngine { build, build_tid, dictionary, fills, alone }
    }
}

/// Gives thread `tid` of this process nice value `nice`, and with it the threads it started
/// (the build compiles program and driver at once, on a thread of its own) and the processes
/// the build started (clang, objcopy, the linker): this process's threads and children still
/// at the build's nice value, and the children's descendants. (Raising only the build thread
/// left its helper thread, and every tool it started, at nice 15: on ai_listing3 an objcopy of
/// 10 ms took 220 ms in the race.) Best effort: a process may just have ended, and raising a
/// priority needs root (or a `RLIMIT_NICE` that allows it).
fn raise_build_priority(tid: i32, nice: i32) {
    if tid <= 0 {
        return;
    }
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    let build_nice = crate::priority::lowered(FUZZ_BUILD_NICE);
    // Nothing else in this process runs at the build's nice value (the lowered engines use 10).
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
            // SAFETY: plain system calls; at worst the thread has just ended.
            if unsafe { libc::getpriority(libc::PRIO_PROCESS, t as libc::id_t) } == build_nice {
                unsafe { libc::setpriority(libc::PRIO_PROCESS, t as libc::id_t, nice) };
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
    let mut raised: Vec<i32> = procs.iter().filter(|(_, parent, n)| *parent == me && *n == crate::priority::lowered(FUZZ_BUILD_NICE) as i64).map(|(pid, _, _)| *pid).collect();
    let mut k = 0;
    while k < raised.len() && raised.len() < 64 {
        let parent = raised[k];
        raised.extend(procs.iter().filter(|(_, p, _)| *p == parent).map(|(pid, _, _)| *pid));
        k += 1;
    }
    for pid in raised {
        unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice) };
    }
}

/// Nice value of the fuzzing build (a clang compile with `-fsanitize=fuzzer`, about a second of
/// CPU): it uses idle cycles only.
const FUZZ_BUILD_NICE: libc::c_int = 15;

impl Engine for FuzzEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Fuzz
    }

    fn run(self: Box<Self>, cx: &Context) -> EngineResult {
        let tb = Instant::now();
        // The build is the fuzzer's work from now on: at the fuzzer's own priority. Left at
        // nice 15 beside the symbolic engines' nice-0 threads it got 2-3% of the machine
        // (eqcnt: a build of under a second alone took 10.6 s, and the portfolio 11 s where
        // the fuzzer alone took 1.7 s).
        // The build thread records its id once it has lowered its own priority: until then
        // there is nothing to raise (raising earlier would be undone by that lowering).
        let nice = crate::priority::current();
        let mut raised = nice == crate::priority::lowered(FUZZ_BUILD_NICE);
        let raise_after = Duration::from_millis(crate::priority::tune("RAISE_FUZZ_BUILD_MS", RAISE_BUILD_AFTER.as_millis() as u64));
        // The build runs at low priority: wait for it, but not past a cancel or the deadline
        // (the race waits for every engine; the build is left to `cleanup::finish`).
        while !self.build.is_finished() {
            if !raised && (self.alone || tb.elapsed() >= raise_after) {
                let tid = self.build_tid.load(std::sync::atomic::Ordering::SeqCst);
                if tid > 0 {
                    raise_build_priority(tid, nice);
                    raised = true;
                }
            }
            if cx.search_cancelled() || cx.left().is_zero() {
                let why = if cx.cancelled() || cx.left().is_zero() { "cancelled" } else { "stopped (no witness can replay)" };
                return EngineResult::new(Finding::Unknown(format!("{why} while the fuzzing executable was being built")));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let fuzzer = match self.build.join() {
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
        let (mut executions, mut rounds, mut seeds_used) = (0u64, 0u64, 0u64);
        let mut seen_seeds = usize::MAX;
        let mut why = String::from("the time budget ran out before fuzzing started");
        while !cx.search_cancelled() && cx.left() > Duration::from_millis(300) {
            let seeds = cx.seeds.snapshot();
            // A new round only when there are new seeds; else the last one runs to the deadline.
            let round_end = if seen_seeds == usize::MAX {
                let first = cx.left().mul_f64(FIRST_ROUND_SHARE).max(FIRST_ROUND_MIN);
                Instant::now() + if self.alone { first } else { first.min(FULL_PRIORITY_FUZZING) }
            } else {
                if !self.alone && rounds == 1 {
                    // SAFETY: a plain system call on this thread's own priority (the next
                    // libFuzzer process inherits it).
                    unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, crate::priority::lowered(LATER_NICE)) };
                }
                cx.deadline
            };
            seen_seeds = seeds.len();
            let limits = FuzzLimits::until(round_end.min(cx.deadline));
            let (end, stats) = fuzzer.search(&seeds, &self.dictionary, &self.fills, &limits, cx.search_cancel(), &replay);
            rounds += 1;
            executions += stats.executions;
            seeds_used = seeds_used.max(stats.seeds_used);
            match end {
                FuzzEnd::Reached(_) => break,
                FuzzEnd::GaveUp(w) => why = w,
            }
            if cx.seeds.snapshot().len() == seen_seeds && round_end >= cx.deadline {
                break;
            }
        }
        for (k, v) in [("executions", executions), ("rounds", rounds), ("seeds_used", seeds_used)] {
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
/// [`MAX_FILLS`]. Zero is left out: libFuzzer starts from the empty input, which reads zeros.
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
    for g in program.globals.iter().filter(|g| g.is_constant) {
        let Some(init) = &g.init else { continue };
        let bytes: Option<Vec<u8>> = init.iter().copied().collect();
        let Some(bytes) = bytes else { continue };
        for s in bytes.split(|b| *b == 0).filter(|s| (2..=64).contains(&s.len())) {
            if !entries.iter().any(|e| e == s) {
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
