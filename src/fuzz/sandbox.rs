//! Running the fuzzer as replay runs the program ([`crate::replay::sandbox`]: the same
//! namespaces, seccomp filter, limits, empty environment, read-only directory and raw-`clone`
//! start), with what fuzzing needs on top: arguments, libFuzzer's log kept in a file, a
//! deadline and a cancel flag (SIGINT first, so that libFuzzer prints its final statistics),
//! and a larger tmpfs that the tool fills before the run and reads after it through a
//! descriptor (the corpus, the artifacts and traced inputs live there; see
//! [`crate::jailfs`]): nothing the program writes is ever reached by a path.

use crate::jailfs::Dir;
use crate::replay::sandbox::{execute, Job};
use crate::replay::Limits;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

pub use crate::replay::sandbox::{Exit as JailOutcome, Stopped};

/// The executable's name inside the jail.
pub const EXE: &str = "fuzz";

/// The fuzzing run's tmpfs (`/work`): the corpus (libFuzzer's new entries included), the
/// artifacts, and anything else the program writes. Larger than a replay's 16 MiB: a long
/// session's corpus holds thousands of entries, each at least a page.
pub const TMPFS_OPTIONS: &str = "size=64m,nr_inodes=16384";

/// How long a run stopped from outside may take to print its statistics before it is killed.
const INTERRUPT_GRACE: Duration = Duration::from_millis(100);

/// The owner to give what the tool makes in a run's tmpfs: the runs' own uid as root (the
/// program must write there), none otherwise (the user is root in the run's namespace).
pub fn owner() -> Option<u32> {
    (unsafe { libc::geteuid() } == 0).then(crate::replay::sandbox::run_uid)
}

/// Runs `dir/fuzz args...` confined to `dir` (read-only) with a fresh tmpfs as `/work`, filled
/// by `prepare` before the program starts, with its stderr appended to `log`, until it ends,
/// `deadline` passes, `cancel` is set or `watch` (see [`Job::watch`]) returns `false`. The
/// tmpfs comes back in [`JailOutcome::work`].
#[allow(clippy::too_many_arguments)]
pub fn run(
    dir: &Path,
    args: &[String],
    limits: Limits,
    log: &Path,
    deadline: Instant,
    cancel: &AtomicBool,
    prepare: &dyn Fn(&Dir) -> std::io::Result<()>,
    watch: Option<&dyn Fn(libc::pid_t, Option<&Dir>) -> bool>,
) -> std::io::Result<JailOutcome> {
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let job = Job {
        args,
        stderr: Some(&log_file),
        tmpfs: TMPFS_OPTIONS,
        share_work: true,
        prepare: Some(prepare),
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
        std::fs::create_dir(d.path().join("work")).unwrap();
        // Readable by the runs' own uid, writable by nobody but the tool (as a session's jail).
        std::fs::set_permissions(d.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
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
        let r = run(d.path(), &[], Limits::default(), &d.path().join("log"), Instant::now() + Duration::from_millis(300), &never, &|_| Ok(()), None);
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
        let watch = |pid: libc::pid_t, _: Option<&Dir>| {
            *leader.lock().unwrap() = Some(unsafe { libc::getsid(pid) } == pid);
            started.elapsed() < Duration::from_millis(200)
        };
        let never = AtomicBool::new(false);
        let r = run(d.path(), &[], Limits::default(), &d.path().join("log"), Instant::now() + Duration::from_secs(20), &never, &|_| Ok(()), Some(&watch)).unwrap();
        assert_eq!(r.stopped, Some(Stopped::Asked), "{:?}", r.status);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(*leader.lock().unwrap(), Some(true), "the watch gets the session leader");
    }
}
