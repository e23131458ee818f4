//! Clean ends on SIGINT, SIGTERM and SIGHUP: temporary directories registered here are removed
//! and the process exits (130 + signal); the replayed programs die with it (their init has
//! `PR_SET_PDEATHSIG`).
//!
//! The signals are blocked in every thread and taken by one thread with `sigwait`, so the
//! removal runs in ordinary code, not in a signal handler.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Helper processes under way (clang, llvm-objcopy): killed on interruption.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Runs a helper tool (`cmd`, output captured) so that an interruption kills it too. Its
/// temporary files go to `tmp` (one of our registered directories), so none is left behind.
pub fn output(cmd: &mut std::process::Command, tmp: &Path) -> std::io::Result<std::process::Output> {
    cmd.env("TMPDIR", tmp).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = cmd.spawn()?;
    let pid = child.id();
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
    let out = child.wait_with_output();
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != pid);
    out
}

/// Set by [`finish`]: directories registered later (a background build that started after
/// the verdict) are removed at once.
static FINISHED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Removes `dir` (recursively) if the process is interrupted before [`forget`].
pub fn register(dir: &Path) {
    let mut dirs = DIRS.lock().unwrap_or_else(|e| e.into_inner());
    if FINISHED.load(std::sync::atomic::Ordering::SeqCst) {
        let _ = std::fs::remove_dir_all(dir);
        return;
    }
    dirs.push(dir.to_path_buf());
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

/// At the end of a run: background work that is no longer needed (a native build the verdict
/// came before) is stopped and its temporary directories go.
pub fn finish() {
    let mut dirs = DIRS.lock().unwrap_or_else(|e| e.into_inner());
    FINISHED.store(true, std::sync::atomic::Ordering::SeqCst);
    for pid in CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    for d in dirs.drain(..) {
        let _ = std::fs::remove_dir_all(&d);
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
        for pid in CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
        }
        for d in DIRS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = std::fs::remove_dir_all(d);
        }
        eprintln!("apc-llvm: interrupted (signal {sig}); temporary files removed");
        // No static destructors: solver threads may still be inside Z3.
        unsafe { libc::_exit(128 + sig) };
    });
}
