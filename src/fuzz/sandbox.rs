//! Running the fuzzer as replay runs the program ([`crate::replay::sandbox`]: the same
//! namespaces, seccomp filter, limits and raw-`clone` start), with what fuzzing needs on top:
//! arguments, libFuzzer's log kept in a file, a deadline and a cancel flag (SIGINT first, so
//! that libFuzzer prints its final statistics), and a writable directory (the corpus and the
//! artifacts live there and are read afterwards).

use crate::replay::sandbox::{execute, Job};
use crate::replay::Limits;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

pub use crate::replay::sandbox::{Exit as JailOutcome, Stopped};

/// The executable's name inside the jail.
pub const EXE: &str = "fuzz";

/// How long a run stopped from outside may take to print its statistics before it is killed.
const INTERRUPT_GRACE: Duration = Duration::from_millis(100);

/// Runs `dir/fuzz args...` confined to `dir`, with its stderr appended to `log`, until it ends,
/// `deadline` passes, `cancel` is set or `watch` (see [`Job::watch`]) returns `false`.
pub fn run(
    dir: &Path,
    args: &[String],
    limits: Limits,
    log: &Path,
    deadline: Instant,
    cancel: &AtomicBool,
    watch: Option<&dyn Fn(libc::pid_t) -> bool>,
) -> std::io::Result<JailOutcome> {
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let job = Job {
        args,
        stderr: Some(&log_file),
        writable_dir: true,
        deadline: Some(deadline),
        cancel: Some(cancel),
        interrupt_grace: INTERRUPT_GRACE,
        watch,
        ..Job::new(dir, EXE, limits)
    };
    execute(&job)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    static HANDLER_RAN: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_sigint(_: libc::c_int) {
        HANDLER_RAN.store(true, Ordering::SeqCst);
    }

    /// The run's init shares the analyser's memory (`CLONE_VM`) and never execs: when a stopped
    /// run's SIGINT reached it with a handler inherited from the analyser (Z3 installs one per
    /// query), the handler ran there, on the analyser's memory, and cancelled its running
    /// query. Here the analyser's handler sets a flag in that shared memory: it must stay unset.
    /// A directory holding, as the fuzzer, a static program that spins forever.
    fn spinning() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("spin.c");
        std::fs::write(&src, "int main(void) { for (;;) {} }\n").unwrap();
        let out = std::process::Command::new(crate::load::clang_path()).args(["-static", "-O0", "-w"]).arg(&src).arg("-o").arg(d.path().join(EXE)).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        d
    }

    #[test]
    fn stopping_a_run_never_runs_the_analysers_signal_handlers() {
        let d = spinning();
        let old = unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
        let never = AtomicBool::new(false);
        let started = Instant::now();
        let r = run(d.path(), &[], Limits::default(), &d.path().join("log"), Instant::now() + Duration::from_millis(300), &never, None);
        unsafe { libc::signal(libc::SIGINT, old) };
        let r = r.unwrap();
        assert_eq!(r.stopped, Some(Stopped::Deadline), "{:?}", r.status);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!HANDLER_RAN.load(Ordering::SeqCst), "the init ran the analyser's SIGINT handler");
    }

    /// A watch that returns `false` stops the run as the deadline would, and is told the pid of
    /// the run's init, which leads its session.
    #[test]
    fn a_watch_stops_the_run_when_it_says_so() {
        let d = spinning();
        let started = Instant::now();
        let leader = std::sync::Mutex::new(None);
        let watch = |pid: libc::pid_t| {
            *leader.lock().unwrap() = Some(unsafe { libc::getsid(pid) } == pid);
            started.elapsed() < Duration::from_millis(200)
        };
        let never = AtomicBool::new(false);
        let r = run(d.path(), &[], Limits::default(), &d.path().join("log"), Instant::now() + Duration::from_secs(20), &never, Some(&watch)).unwrap();
        assert_eq!(r.stopped, Some(Stopped::Asked), "{:?}", r.status);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(*leader.lock().unwrap(), Some(true), "the watch gets the session leader");
    }
}
