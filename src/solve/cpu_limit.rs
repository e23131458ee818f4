//! CPU-time limits for the checks nobody else interrupts (the summaries' checks, the APC's quick
//! check), so that they decide the same whatever else runs on the machine.
//!
//! Z3's own `timeout` is wall time: beside the other engines, or under a `make -j` that runs
//! several analyses at once, a check gets a fraction of a core, and a proof that takes 30 ms
//! alone ran past its 40 ms limit (sum_symbolic's quick check: `unreachable` in 0.1 s alone,
//! `unknown` at `--timeout 2` beside three busy processes; a summary check that runs out makes
//! a loop's values ⋆). Z3's `rlimit` is deterministic, but its units are no
//! measure of work: from 250 to 150,000 per millisecond on the benchmarks' checks, and doif's
//! APC spent 5 s on 770,000. So a limit here is the checking thread's own CPU time, read by one
//! watcher thread per process, which interrupts the thread's context (`Z3_interrupt`) once the
//! check has used its budget, or once a wall-clock backstop of [`WALL_FACTOR`] times it has
//! passed (a thread that gets no CPU at all still ends). The watcher sleeps until the earliest
//! moment a limit can be reached (CPU time never runs faster than the wall clock), so a 40 ms
//! check wakes it once or twice.
//!
//! The interrupt lands only while the check is armed: [`CpuLimit`] is dropped right after
//! `check()` returns, under the same mutex the watcher interrupts under, and Z3 4.8 is fragile
//! under interrupts outside a check (ARCHITECTURE.md). A check interrupted in the instant
//! between its end and the disarming reports [`CpuLimit::fired`], and its caller treats a model
//! it had found as no answer (an unsat answer is never the interrupt's).
//!
//! A thread may also name a flag that ends its checks early ([`stop_checks_on`]): the
//! portfolio's engine threads name the flag the race sets once it is over, so that a check
//! nobody needs any more does not keep a core busy past the verdict. (On ai_listing1 the apc
//! engine's 30 ms check ran on through the fuzzer's witness reduction, whose sandboxed runs
//! compete with this whole process as one scheduling group: the reduction took 25-30 ms
//! instead of 14.)

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The wall-clock backstop of a limit, as a multiple of its CPU budget: a check given 40 ms of
/// CPU ends after at most 400 ms, however little of a core it got. Four was too little: beside
/// the portfolio's other engines and three busy processes on two cores, the apc engine's
/// thread got a fifth of a core, and sum_symbolic's 40 ms proof ended at the backstop
/// (`unknown` at `--timeout 2`). Callers that give a fraction of what is left before their
/// deadline (the quick check: a tenth) keep the backstop within it.
pub const WALL_FACTOR: u32 = 10;

/// Shortest sleep of the watcher while something is armed.
const MIN_POLL: Duration = Duration::from_millis(1);

/// CPU time the calling thread has used (zero if it cannot be read).
pub fn thread_cpu_time() -> Duration {
    Duration::from_nanos(cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID))
}

/// The reading of CPU-time clock `clock` in nanoseconds (0 if it cannot be read).
pub fn cpu_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; a clock of a thread that ended gives an error.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's own CPU-time clock (the process's monotonic clock if it has none).
pub fn own_cpu_clock() -> libc::clockid_t {
    let mut clock: libc::clockid_t = libc::CLOCK_MONOTONIC;
    // SAFETY: the calling thread's own CPU-time clock id, written to a valid pointer.
    if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } != 0 {
        clock = libc::CLOCK_MONOTONIC;
    }
    clock
}

struct Armed {
    id: u64,
    /// The checking thread's context, interrupted only while this entry exists.
    context: z3_sys::Z3_context,
    clock: libc::clockid_t,
    cpu_until_ns: u64,
    wall_until: Instant,
    /// The arming thread's stop flags (see [`stop_checks_on`]).
    stop: Vec<Arc<AtomicBool>>,
    fired: bool,
}

thread_local! {
    /// The calling thread's stop flags, see [`stop_checks_on`] and [`also_stop_checks_on`].
    static STOP: RefCell<Vec<Arc<AtomicBool>>> = const { RefCell::new(Vec::new()) };
}

/// From now on, the calling thread's CPU-limited checks also end (answer unknown) once `stop`
/// is set and [`stop_flag_set`] was called after it.
pub fn stop_checks_on(stop: Arc<AtomicBool>) {
    STOP.with(|s| *s.borrow_mut() = vec![stop]);
}

/// [`stop_checks_on`] for one more flag, while the guard lives (the apc engine's quick round
/// ends once another thread's replay of its first model reached the target).
pub fn also_stop_checks_on(stop: Arc<AtomicBool>) -> AlsoStop {
    STOP.with(|s| s.borrow_mut().push(stop.clone()));
    AlsoStop { stop, _this_thread: std::marker::PhantomData }
}

/// See [`also_stop_checks_on`]; dropped on the thread that made it (it is not `Send`).
pub struct AlsoStop {
    stop: Arc<AtomicBool>,
    _this_thread: std::marker::PhantomData<*const ()>,
}

impl Drop for AlsoStop {
    fn drop(&mut self) {
        STOP.with(|s| {
            let mut flags = s.borrow_mut();
            if let Some(i) = flags.iter().rposition(|f| Arc::ptr_eq(f, &self.stop)) {
                flags.remove(i);
            }
        });
    }
}

/// Says that a flag given to [`stop_checks_on`] was set: the checks of the threads that
/// named it are interrupted at once.
pub fn stop_flag_set() {
    if let Some(w) = WATCH.get() {
        let _g = w.armed.lock().unwrap_or_else(|e| e.into_inner());
        w.changed.notify_one();
    }
}

// SAFETY: the context pointer is used only for `Z3_interrupt` (thread-safe in Z3), under the
// watch's mutex, while the entry exists: the checking thread removes it (under that mutex)
// before its context can be deleted.
unsafe impl Send for Armed {}

#[derive(Default)]
struct Watch {
    armed: Mutex<(u64, Vec<Armed>)>,
    changed: Condvar,
}

static WATCH: OnceLock<&'static Watch> = OnceLock::new();

fn watch() -> &'static Watch {
    WATCH.get_or_init(|| {
        let w: &'static Watch = Box::leak(Box::default());
        // Without a watcher no limit fires: the checks then end only at their callers' other
        // limits (the race's end, the process's backstop).
        if let Err(e) = std::thread::Builder::new().name("z3-cpu-limit".into()).spawn(move || watch_loop(w)) {
            tracing::warn!("no watcher for the solver's CPU limits: {e}");
        }
        w
    })
}

fn watch_loop(w: &'static Watch) {
    let mut g = w.armed.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        let mut sleep = Duration::from_secs(3600);
        for a in g.1.iter_mut().filter(|a| !a.fired) {
            let used = cpu_ns(a.clock);
            let stopped = a.stop.iter().any(|s| s.load(Ordering::SeqCst));
            if used >= a.cpu_until_ns || now >= a.wall_until || stopped {
                // SAFETY: see `Armed`.
                unsafe { z3_sys::Z3_interrupt(a.context) };
                a.fired = true;
            } else {
                // Neither limit can be reached before the sooner of these.
                let cpu_left = Duration::from_nanos(a.cpu_until_ns - used);
                sleep = sleep.min(cpu_left).min(a.wall_until - now);
            }
        }
        g = w.changed.wait_timeout(g, sleep.max(MIN_POLL)).unwrap_or_else(|e| e.into_inner()).0;
    }
}

/// A CPU-time limit on the calling thread's Z3 context, armed around one `check()`.
pub struct CpuLimit {
    id: u64,
}

impl CpuLimit {
    /// Arms a limit of `budget` CPU time of the calling thread (and [`WALL_FACTOR`] times it of
    /// wall time) on `context`, which must be the calling thread's.
    pub fn arm(context: &z3::Context, budget: Duration) -> CpuLimit {
        let w = watch();
        let clock = own_cpu_clock();
        let now = Instant::now();
        let wall_until = now.checked_add(budget.saturating_mul(WALL_FACTOR)).unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
        let mut g = w.armed.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        let id = g.0;
        g.1.push(Armed {
            id,
            context: context.get_z3_context(),
            clock,
            cpu_until_ns: cpu_ns(clock).saturating_add(budget.as_nanos().min(u64::MAX as u128) as u64),
            wall_until,
            stop: STOP.with(|s| s.borrow().clone()),
            fired: false,
        });
        w.changed.notify_one();
        CpuLimit { id }
    }

    /// Disarms the limit; whether it interrupted the context.
    pub fn fired(self) -> bool {
        let fired = self.remove();
        std::mem::forget(self);
        fired
    }

    fn remove(&self) -> bool {
        let mut g = watch().armed.lock().unwrap_or_else(|e| e.into_inner());
        match g.1.iter().position(|a| a.id == self.id) {
            Some(i) => g.1.swap_remove(i).fired,
            None => false,
        }
    }
}

impl Drop for CpuLimit {
    fn drop(&mut self) {
        self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use z3::ast::{Bool, BV};

    /// Factoring a 64-bit semiprime: far beyond any budget here.
    fn hard_solver() -> z3::Solver {
        let (x, y) = (BV::new_const("x", 64), BV::new_const("y", 64));
        let one = BV::from_u64(1, 64);
        let s = z3::Solver::new();
        s.assert(&Bool::and(&[
            x.bvmul(&y).eq(BV::from_u64(0xC3A5_C85C_97CB_3127, 64)),
            x.bvugt(&one),
            y.bvugt(&one),
            x.bvult(BV::from_u64(1 << 32, 64)),
            y.bvult(BV::from_u64(1 << 32, 64)),
        ]));
        s
    }

    #[test]
    fn a_check_ends_after_its_cpu_budget_and_the_context_answers_the_next() {
        let s = hard_solver();
        let (cpu, wall) = (thread_cpu_time(), Instant::now());
        let limit = CpuLimit::arm(&z3::Context::thread_local(), Duration::from_millis(60));
        assert_eq!(s.check(), z3::SatResult::Unknown);
        assert!(limit.fired());
        let used = thread_cpu_time() - cpu;
        assert!(used >= Duration::from_millis(55), "stopped before its budget: {used:?}");
        assert!(wall.elapsed() < Duration::from_secs(2), "interrupted late: {:?}", wall.elapsed());
        let x = BV::new_const("z", 32);
        let easy = z3::Solver::new();
        easy.assert(&x.eq(BV::from_u64(7, 32)));
        assert_eq!(easy.check(), z3::SatResult::Sat);
    }

    /// A check on a thread that named a stop flag ends soon after the flag is set and said,
    /// long before its budget; a thread that named no flag is not touched.
    #[test]
    fn a_set_stop_flag_ends_the_checks_of_the_threads_that_named_it() {
        let stop = Arc::new(AtomicBool::new(false));
        let (armed_tx, armed) = std::sync::mpsc::channel();
        let run = |named: Option<Arc<AtomicBool>>| {
            let armed_tx = armed_tx.clone();
            std::thread::spawn(move || {
                if let Some(flag) = named {
                    stop_checks_on(flag);
                }
                let s = hard_solver();
                let (cpu, wall) = (thread_cpu_time(), Instant::now());
                let limit = CpuLimit::arm(&z3::Context::thread_local(), Duration::from_millis(400));
                armed_tx.send(()).unwrap();
                let answer = s.check();
                (answer, limit.fired(), thread_cpu_time() - cpu, wall.elapsed())
            })
        };
        let stopped = run(Some(stop.clone()));
        let other = run(None);
        // Both checks under way (an interrupt is only sent while a check is armed).
        armed.recv().unwrap();
        armed.recv().unwrap();
        std::thread::sleep(Duration::from_millis(40));
        stop.store(true, Ordering::SeqCst);
        stop_flag_set();
        let (answer, fired, used, wall) = stopped.join().unwrap();
        assert_eq!(answer, z3::SatResult::Unknown);
        assert!(fired);
        assert!(used < Duration::from_millis(300), "ran on after the stop: {used:?} of CPU, {wall:?}");
        let (answer, fired, used, _) = other.join().unwrap();
        assert_eq!(answer, z3::SatResult::Unknown);
        assert!(fired);
        assert!(used >= Duration::from_millis(380), "a thread that named no flag was stopped: {used:?}");
    }

    /// A flag added for a while ([`also_stop_checks_on`]) ends the checks armed meanwhile;
    /// once its guard is dropped, setting it ends nothing, and the thread's own flag stays.
    #[test]
    fn a_flag_added_for_a_while_ends_the_checks_armed_meanwhile() {
        let (own, extra) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (own2, extra2) = (own.clone(), extra.clone());
        let (armed_tx, armed) = std::sync::mpsc::channel();
        let (go_tx, go) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            stop_checks_on(own2);
            let s = hard_solver();
            let guard = also_stop_checks_on(extra2.clone());
            let limit = CpuLimit::arm(&z3::Context::thread_local(), Duration::from_millis(2000));
            armed_tx.send(()).unwrap();
            let first = (s.check(), limit.fired());
            drop(guard);
            extra2.store(false, Ordering::SeqCst);
            go.recv().unwrap();
            let cpu = thread_cpu_time();
            let limit = CpuLimit::arm(&z3::Context::thread_local(), Duration::from_millis(150));
            armed_tx.send(()).unwrap();
            let second = (s.check(), limit.fired(), thread_cpu_time() - cpu);
            (first, second, STOP.with(|s| s.borrow().len()))
        });
        armed.recv().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        extra.store(true, Ordering::SeqCst);
        stop_flag_set();
        go_tx.send(()).unwrap();
        armed.recv().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        extra.store(true, Ordering::SeqCst);
        stop_flag_set();
        let ((answer, fired), (answer2, fired2, used2), flags) = t.join().unwrap();
        assert_eq!((answer, fired), (z3::SatResult::Unknown, true));
        assert_eq!((answer2, fired2), (z3::SatResult::Unknown, true));
        assert!(used2 >= Duration::from_millis(140), "the dropped flag still stopped a check: {used2:?}");
        assert_eq!(flags, 1, "the thread's own flag stays");
        assert!(!own.load(Ordering::SeqCst));
    }

    /// The budget is the thread's CPU time: with every core busy the check gets the same
    /// work done, later, where a wall-clock limit would have stopped it after half of it.
    #[test]
    fn the_budget_is_cpu_time_not_wall_time() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let spinners: Vec<_> = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let s = hard_solver();
        let budget = Duration::from_millis(80);
        let cpu = thread_cpu_time();
        let limit = CpuLimit::arm(&z3::Context::thread_local(), budget);
        let answer = s.check();
        let fired = limit.fired();
        let used = thread_cpu_time() - cpu;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in spinners {
            t.join().unwrap();
        }
        assert_eq!(answer, z3::SatResult::Unknown);
        assert!(fired);
        // The wall-clock backstop may end it first only on a machine oversubscribed
        // WALL_FACTOR times.
        assert!(used >= budget.mul_f64(0.9), "a wall-clock limit: {used:?} of CPU for a budget of {budget:?}");
    }

    #[test]
    fn a_limit_not_reached_does_not_fire() {
        let x = BV::new_const("w", 32);
        let s = z3::Solver::new();
        s.assert(&x.bvadd(&BV::from_u64(1, 32)).eq(BV::from_u64(0, 32)));
        let limit = CpuLimit::arm(&z3::Context::thread_local(), Duration::from_secs(5));
        assert_eq!(s.check(), z3::SatResult::Sat);
        assert!(!limit.fired());
    }
}
