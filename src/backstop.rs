//! The last line of `--timeout` and `--max-memory`: the analysis runs on a worker thread while
//! the calling thread watches the clock and the process's memory.
//!
//! Every stage checks the deadline itself and Z3 is interrupted at it (cooperative
//! cancellation), but Z3 does not always listen: some of its rewriting and quantifier code runs
//! for seconds past an interrupt, and a formula can grow by gigabytes between two checks. So when
//! the worker has not delivered its report [`GRACE`] after the deadline, or the resident memory
//! passes the bound, the watcher answers `unknown` itself, naming the stage that was running
//! ([`Progress`]), and the worker is abandoned: the caller must then end the process with
//! [`crate::solve::exit_now`] (no static destructors run under a thread still inside Z3).
//!
//! The worker also gets a large stack, so recursion over very large functions ends in a verdict,
//! not a stack overflow.

use crate::config::Config;
use crate::error::Result;
use crate::report::{Report, Verdict};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::info;

/// How long after the deadline the worker may still deliver its own report.
pub const GRACE: Duration = Duration::from_millis(400);

/// Extra time granted while a stage that must not be cut short runs (writing regression
/// tests: nothing is left half-written).
const CRITICAL_GRACE: Duration = Duration::from_secs(5);

/// Stack of the analysis thread. Only touched pages are committed.
const WORKER_STACK: usize = 1 << 30;

/// How often the watcher samples the clock and the resident memory.
const POLL: Duration = Duration::from_millis(10);

/// What the analysis is doing, for the watcher's report.
#[derive(Default)]
pub struct Progress {
    inner: Mutex<ProgressState>,
}

#[derive(Default)]
struct ProgressState {
    stage: &'static str,
    critical: bool,
    /// The report as far as it is known (function, loops, backbones), once the structure is.
    partial: Option<Report>,
}

impl Progress {
    /// The analysis enters `stage` (a phrase that completes "while ...").
    pub fn enter(&self, stage: &'static str) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.stage = stage;
        s.critical = false;
    }

    /// Like [`Progress::enter`], for a stage the watcher lets finish (bounded work whose
    /// interruption would leave files half-written).
    pub fn enter_critical(&self, stage: &'static str) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.stage = stage;
        s.critical = true;
    }

    /// The report skeleton the watcher starts from if it has to answer.
    pub fn set_partial(&self, report: &Report) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).partial = Some(report.clone());
    }

    fn snapshot(&self) -> (&'static str, bool, Option<Report>) {
        let s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (s.stage, s.critical, s.partial.clone())
    }
}

/// How a bounded run ended.
pub struct Bounded {
    pub result: Result<Report>,
    /// The worker is still running (it ignored the deadline or the memory bound): end the
    /// process with [`crate::solve::exit_now`] once the report is out.
    pub abandoned: bool,
}

/// Resident memory of this process, in bytes.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Runs `analysis` (given the shared [`Progress`]) on a worker thread and watches it.
pub fn run(config: &Config, analysis: fn(&Config, &Progress) -> Result<Report>) -> Bounded {
    let t0 = Instant::now();
    let deadline = t0 + config.timeout;
    // Z3 refuses to grow past the bound itself (its queries then answer unknown), so the
    // watcher rarely has to step in for the solver.
    // Once per process: a batch's targets share the bound, and setting a global parameter while
    // another target's solvers run (`--jobs`) races with them inside Z3.
    static MEMORY_BOUND: std::sync::Once = std::sync::Once::new();
    MEMORY_BOUND.call_once(|| z3::set_global_param("memory_max_size", &(config.max_memory / (1 << 20)).max(64).to_string()));
    let progress = Arc::new(Progress::default());
    let (tx, rx) = mpsc::channel();
    let worker = {
        let (config, progress) = (config.clone(), progress.clone());
        std::thread::Builder::new().name("analysis".into()).stack_size(WORKER_STACK).spawn(move || {
            let r = analysis(&config, &progress);
            let _ = tx.send(r);
        })
    };
    if let Err(e) = worker {
        return Bounded { result: Err(crate::Error::internal(format!("cannot start the analysis thread: {e}"))), abandoned: false };
    }
    loop {
        match rx.recv_timeout(POLL) {
            Ok(result) => return Bounded { result, abandoned: false },
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // The worker panicked (the hook printed it).
                return Bounded { result: Err(crate::Error::internal("the analysis thread panicked")), abandoned: false };
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        let (stage, critical, partial) = progress.snapshot();
        let late = now >= deadline + if critical { CRITICAL_GRACE } else { GRACE };
        let rss = resident_bytes().unwrap_or(0);
        let over = rss > config.max_memory;
        if !late && !over {
            continue;
        }
        let stage = if stage.is_empty() { "starting" } else { stage };
        let reason = if over {
            format!(
                "the memory bound of {} MiB was exceeded ({} MiB resident) while {stage}",
                config.max_memory >> 20,
                rss >> 20
            )
        } else {
            format!("the time budget ran out while {stage} (that stage did not stop at the deadline)")
        };
        info!(%reason, "abandoning the analysis thread");
        let mut report = partial.unwrap_or_else(|| Report::bare(&config.function, config.target.describe()));
        report.verdict = Verdict::Unknown;
        report.reason = reason;
        report.timings.insert("total".into(), t0.elapsed().as_secs_f64());
        return Bounded { result: Ok(report), abandoned: true };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::TargetSpec;

    fn config(timeout_ms: u64) -> Config {
        let mut c = Config::new("x.c", "f", TargetSpec::Block("b".into()));
        c.timeout = Duration::from_millis(timeout_ms);
        c
    }

    #[test]
    fn a_prompt_worker_gives_its_own_report() {
        fn quick(c: &Config, p: &Progress) -> Result<Report> {
            p.enter("building the abstract path condition");
            let mut r = Report::bare(&c.function, "x".into());
            r.verdict = Verdict::Unreachable;
            Ok(r)
        }
        let b = run(&config(2_000), quick);
        assert!(!b.abandoned);
        assert_eq!(b.result.unwrap().verdict, Verdict::Unreachable);
    }

    #[test]
    fn a_worker_past_the_deadline_is_abandoned_with_its_stage_named() {
        fn stuck(_: &Config, p: &Progress) -> Result<Report> {
            p.enter("solving the abstract path condition");
            std::thread::sleep(Duration::from_secs(3));
            Ok(Report::bare("late", "x".into()))
        }
        let t = Instant::now();
        let b = run(&config(200), stuck);
        let took = t.elapsed();
        assert!(b.abandoned);
        let r = b.result.unwrap();
        assert_eq!(r.verdict, Verdict::Unknown);
        assert!(r.reason.contains("solving the abstract path condition"), "{}", r.reason);
        assert!(took >= Duration::from_millis(200) && took < Duration::from_millis(200) + GRACE + Duration::from_millis(200), "{took:?}");
    }

    #[test]
    fn a_critical_stage_gets_more_time() {
        fn writing(c: &Config, p: &Progress) -> Result<Report> {
            p.enter_critical("writing regression tests");
            std::thread::sleep(Duration::from_millis(700));
            Ok(Report::bare(&c.function, "x".into()))
        }
        let b = run(&config(100), writing);
        assert!(!b.abandoned);
    }

    #[test]
    fn the_memory_bound_stops_a_growing_worker() {
        fn hungry(_: &Config, p: &Progress) -> Result<Report> {
            p.enter("unfolding the loops");
            let mut keep: Vec<Vec<u8>> = vec![];
            for _ in 0..32 {
                keep.push(vec![1u8; 16 << 20]);
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(Report::bare(&format!("late {}", keep.len()), "x".into()))
        }
        let mut c = config(30_000);
        c.max_memory = resident_bytes().unwrap() + (128 << 20);
        let b = run(&c, hungry);
        assert!(b.abandoned);
        let r = b.result.unwrap();
        assert!(r.reason.contains("memory bound") && r.reason.contains("unfolding the loops"), "{}", r.reason);
    }
}
