//! Clean ends on SIGINT, SIGTERM and SIGHUP: temporary directories registered here are removed
//! and the process exits (128 + signal) with nothing on standard output; the sandboxed runs
//! are killed first (and would die with it anyway: their init has `PR_SET_PDEATHSIG`).
//!
//! The signals are blocked in every thread and taken by one thread with `sigwait`, so the
//! removal runs in ordinary code, not in a signal handler. The report and the process's end
//! go through [`deliver`] and [`conclude`]: the analysis, its runs killed under it, would
//! otherwise conclude `unknown`, print that and exit 0 while the signal thread was still
//! removing directories.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Set first thing when a signal is taken: the process ends with 128 + the signal.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Held, for good, by the thread that printed the report or is ending the process normally
/// ([`deliver`], [`conclude`]); the signal thread takes it before it exits. So either the
/// report is out and the process ends with its status, or there is no report and it ends
/// with 128 + the signal.
static ENDING: Mutex<()> = Mutex::new(());
/// Whether this process holds [`ENDING`] (taken once).
static ENDING_HELD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Helper processes under way (clang, llvm-objcopy): killed on interruption.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A build nobody may need (the fuzzing executable, once the race is decided): the helper
/// processes its thread starts ([`output`]) are killed when it is [`Abandon::abandon`]ed, and
/// none starts after that. The race's verdict came while the fuzzing build's link still ran
/// (hello: its 50 ms of CPU beside the witness's reduction, a run of its own after another).
#[derive(Default)]
pub struct Abandon {
    abandoned: std::sync::atomic::AtomicBool,
    helpers: Mutex<Vec<u32>>,
}

impl Abandon {
    /// Kills the helpers under way and refuses new ones.
    pub fn abandon(&self) {
        let helpers = self.helpers.lock().unwrap_or_else(|e| e.into_inner());
        self.abandoned.store(true, std::sync::atomic::Ordering::SeqCst);
        for &pid in helpers.iter() {
            kill_group(pid);
        }
    }

    pub fn is_abandoned(&self) -> bool {
        self.abandoned.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Runs `work` on this thread with its helpers under `token` (see [`output`]).
    pub fn run<T>(token: &std::sync::Arc<Abandon>, work: impl FnOnce() -> T) -> T {
        CURRENT.with(|c| *c.borrow_mut() = Some(token.clone()));
        let out = work();
        CURRENT.with(|c| *c.borrow_mut() = None);
        out
    }
}

thread_local! {
    /// The calling thread's [`Abandon`] token, if its work may be abandoned.
    static CURRENT: std::cell::RefCell<Option<std::sync::Arc<Abandon>>> = const { std::cell::RefCell::new(None) };
}

/// Runs a helper tool (`cmd`, output captured) so that an interruption kills it too. Its
/// temporary files go to `tmp` (one of our registered directories), so none is left behind.
/// It leads a process group of its own: the clang driver runs `cc1` and the linker as children,
/// and killing the driver alone left them writing into `tmp` after it was removed (hundreds of
/// empty `apc-fuzz-*` directories in `/tmp` after a campaign).
pub fn output(cmd: &mut std::process::Command, tmp: &Path) -> std::io::Result<std::process::Output> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    cmd.env("TMPDIR", tmp).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    // Spawned and registered under the lock, and never after [`finish`]: otherwise a helper
    // started while the run ends escapes its kill and runs on after the process is gone
    // (a fuzzing build's clang, 0.2 s of CPU taken from the next analysis).
    let token = CURRENT.with(|c| c.borrow().clone());
    let child = {
        let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        if finished() {
            return Err(std::io::Error::other("the analysis has ended"));
        }
        // Under the token's lock too: an abandon either sees this helper or comes first.
        let mut helpers = token.as_ref().map(|t| t.helpers.lock().unwrap_or_else(|e| e.into_inner()));
        if token.as_ref().is_some_and(|t| t.is_abandoned()) {
            return Err(std::io::Error::other("the build was abandoned"));
        }
        let child = cmd.spawn()?;
        children.push(child.id());
        if let Some(h) = helpers.as_mut() {
            h.push(child.id());
        }
        child
    };
    let pid = child.id();
    let out = child.wait_with_output();
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != pid);
    if let Some(t) = &token {
        t.helpers.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != pid);
    }
    out
}

/// Sandboxed runs under way (the pid of each run's init, see `replay::sandbox`): killed on
/// interruption and by [`finish`] before the directories go. They would die with the process
/// anyway (`PR_SET_PDEATHSIG`), but only after it: meanwhile a fuzzer kept writing its corpus
/// into the directory being removed, which then stayed (`sandbox_tests::
/// interrupted_runs_leave_nothing_behind`, about one run in twelve).
static RUNS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Registers a sandboxed run's init for as long as the guard lives (see `RUNS`). A run started
/// after [`finish`] is killed at once.
pub struct RunGuard(i32);

impl RunGuard {
    pub fn new(init: i32) -> RunGuard {
        let mut runs = RUNS.lock().unwrap_or_else(|e| e.into_inner());
        if finished() {
            kill_run(init);
        } else {
            runs.push(init);
        }
        RunGuard(init)
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        RUNS.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != self.0);
    }
}

/// Kills a sandboxed run: its init, and with it its PID namespace (every process of the run).
fn kill_run(init: i32) {
    unsafe { libc::kill(init, libc::SIGKILL) };
}

/// Kills every sandboxed run under way.
fn kill_runs() {
    for &init in RUNS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        kill_run(init);
    }
}

/// Set by [`finish`]: directories registered later (a background build that started after
/// the verdict) are removed at once.
static FINISHED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the run has ended ([`finish`]) or is being interrupted: no new work may start.
pub fn finished() -> bool {
    FINISHED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Removes `dir` (recursively) if the process is interrupted before [`forget`].
pub fn register(dir: &Path) {
    let mut dirs = DIRS.lock().unwrap_or_else(|e| e.into_inner());
    if finished() {
        let _ = std::fs::remove_dir_all(dir);
        return;
    }
    dirs.push(dir.to_path_buf());
}

/// Its owner is done with registered `dir`: it goes now, and stays registered (for [`finish`]
/// and interruptions) while something still writes into it (an engine still stopping starts
/// another run in a replay directory while it is removed); an unregistered (kept) directory is
/// left alone. Forgetting it first lost such a directory for good: a whole `apc-replay-*` stayed
/// after about one run in ten as `nobody`.
pub fn release(dir: &Path) {
    if !DIRS.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|d| d == dir) {
        return;
    }
    if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
        forget(dir);
    }
}

/// `dir` is gone or kept on purpose: no longer removed on interruption.
pub fn forget(dir: &Path) {
    DIRS.lock().unwrap_or_else(|e| e.into_inner()).retain(|d| d != dir);
}

/// [`register`]s a directory for as long as the guard lives.
pub struct Guard(PathBuf);

impl Guard {
    pub fn new(dir: &Path) -> Guard {
        register(dir);
        Guard(dir.to_path_buf())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        forget(&self.0);
    }
}

/// A new run in the same process (the library's `Session`): directories registered from now
/// on are kept until the next [`finish`].
pub fn restart() {
    if !interrupted() {
        FINISHED.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// At the end of a run: background work that is no longer needed (a native build the verdict
/// came before) is stopped and its temporary directories go.
pub fn finish() {
    let mut dirs = DIRS.lock().unwrap_or_else(|e| e.into_inner());
    let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    FINISHED.store(true, std::sync::atomic::Ordering::SeqCst);
    for pid in children.drain(..) {
        kill_group(pid);
    }
    drop(children);
    kill_runs();
    for d in dirs.drain(..) {
        remove_dir(&d);
    }
}

/// Whether a signal is ending the process.
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Takes [`ENDING`] for good, unless a signal is ending the process: then this thread waits
/// for that end (the signal thread exits with 128 + the signal).
fn take_ending() {
    if ENDING_HELD.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let guard = ENDING.lock().unwrap_or_else(|e| e.into_inner());
    if interrupted() {
        drop(guard);
        loop {
            std::thread::park();
        }
    }
    ENDING_HELD.store(true, std::sync::atomic::Ordering::SeqCst);
    std::mem::forget(guard);
}

/// Writes the report (`write`), unless a signal is ending the process: no report comes out
/// after an interruption, and none is cut short by it.
pub fn deliver(write: impl FnOnce()) {
    take_ending();
    write();
}

/// Before the process ends normally (with a report, an error or a usage message): waits for
/// the end an interruption already under way gives it instead (see [`deliver`]).
pub fn conclude() {
    take_ending();
}

/// Kills helper `pid` and everything it started (its process group, see [`output`]).
fn kill_group(pid: u32) {
    unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
}

/// Removes `dir` recursively. A killed helper's last write can land between listing and
/// `rmdir`: try again for up to 100 ms while the directory is still there.
fn remove_dir(dir: &Path) {
    for _ in 0..20 {
        if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn signal_set() -> libc::sigset_t {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Call first thing in `main`, before any thread starts (threads inherit the signal mask).
pub fn install() {
    let set = signal_set();
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    let _ = std::thread::Builder::new().name("signals".into()).spawn(move || loop {
        let mut sig = 0;
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        // No report from now on (see `deliver`); no helper, run or directory is started (each
        // checks under its lock).
        INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        FINISHED.store(true, std::sync::atomic::Ordering::SeqCst);
        for pid in CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            kill_group(*pid);
        }
        kill_runs();
        for d in DIRS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            remove_dir(d);
        }
        // Unless the report is out already (then the process ends with its status).
        let _ending = ENDING.lock().unwrap_or_else(|e| e.into_inner());
        eprintln!("apc-llvm: interrupted (signal {sig}); temporary files removed");
        // No static destructors: solver threads may still be inside Z3.
        unsafe { libc::_exit(128 + sig) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn an_abandoned_build_s_helper_is_killed_and_no_new_one_starts() {
        let tmp = crate::scratch::tempdir("apc-abandon-test-").unwrap();
        let token = Arc::new(Abandon::default());
        let (t, dir) = (token.clone(), tmp.path().to_path_buf());
        let start = Instant::now();
        let build = std::thread::spawn(move || Abandon::run(&t, || output(std::process::Command::new("sleep").arg("30"), &dir)));
        // Abandoned once the helper runs.
        while token.helpers.lock().unwrap().is_empty() {
            assert!(start.elapsed() < Duration::from_secs(10), "the helper never started");
            std::thread::sleep(Duration::from_millis(1));
        }
        token.abandon();
        let out = build.join().unwrap().unwrap();
        assert!(!out.status.success(), "killed: {out:?}");
        assert!(start.elapsed() < Duration::from_secs(10), "killed, not waited for: {:?}", start.elapsed());
        assert!(token.helpers.lock().unwrap().is_empty());
        let again = Abandon::run(&token, || output(&mut std::process::Command::new("true"), tmp.path()));
        assert!(again.is_err(), "no helper after the abandon: {again:?}");
        // Other threads' helpers are not the token's.
        assert!(output(&mut std::process::Command::new("true"), tmp.path()).unwrap().status.success());
    }
}
