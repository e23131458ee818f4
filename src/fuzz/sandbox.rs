//! Running the fuzzer as replay runs the program (`replay::sandbox`), with what fuzzing needs
//! on top: arguments, libFuzzer's log kept in a file, a deadline and a cancel flag polled while
//! it runs, and a writable root (the corpus and the artifacts live there).
//!
//! Same confinement: its own directory as root (chroot; uid "nobody" when run as root, else an
//! unprivileged user namespace mapping the caller's uid, so that the fuzzer can write its
//! corpus), a cleared environment, the replay's rlimits, a new session killed as a whole.

use crate::replay::Limits;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The executable's name inside the jail.
pub const EXE: &str = "fuzz";

/// How long a run stopped from outside may take to print its statistics before it is killed.
const INTERRUPT_GRACE: Duration = Duration::from_millis(100);

/// Why a run was stopped from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    Deadline,
    Cancelled,
}

/// How a sandboxed run ended.
#[derive(Clone, Debug)]
pub struct JailOutcome {
    /// `exit N`, `signal N`, `cpu time limit`, or `stopped` when killed from outside.
    pub status: String,
    pub stopped: Option<Stopped>,
    /// What the run wrote on fd 3 (the call trace of a traced run).
    pub trace: Vec<u8>,
}

fn set_limit(resource: libc::__rlimit_resource_t, value: u64) {
    let lim = libc::rlimit { rlim_cur: value, rlim_max: value };
    unsafe { libc::setrlimit(resource, &lim) };
}

/// Writes `data` to `path` with raw calls (between fork and exec: no allocation).
unsafe fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> bool {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
    if fd < 0 {
        return false;
    }
    let ok = libc::write(fd, data.as_ptr().cast(), data.len()) == data.len() as isize;
    libc::close(fd);
    ok
}

/// Runs `dir/fuzz args...` confined to `dir`, with its stderr appended to `log`, until it ends,
/// `deadline` passes or `cancel` is set.
pub fn run(dir: &Path, args: &[String], limits: Limits, log: &Path, deadline: Instant, cancel: &AtomicBool) -> std::io::Result<JailOutcome> {
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let mut fds = [0i32; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    let root = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in the sandbox path"))?;
    let is_root = unsafe { libc::geteuid() } == 0;
    // Prepared before fork: the id maps of the user namespace (not root).
    let uid_map = format!("0 {} 1", unsafe { libc::geteuid() }).into_bytes();
    let gid_map = format!("0 {} 1", unsafe { libc::getegid() }).into_bytes();
    let mut cmd = Command::new(format!("/{EXE}"));
    cmd.args(args).env_clear().stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::from(log_file));
    let lim = limits;
    unsafe {
        cmd.pre_exec(move || {
            // Only async-signal-safe calls between fork and exec.
            libc::setsid();
            let marker = libc::fcntl(write_fd, libc::F_DUPFD, 100);
            if marker < 0 || libc::dup2(marker, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(marker);
            let confined = if is_root {
                libc::chroot(root.as_ptr()) == 0
            } else {
                libc::unshare(libc::CLONE_NEWUSER) == 0
                    && write_proc(c"/proc/self/setgroups", b"deny")
                    && write_proc(c"/proc/self/uid_map", &uid_map)
                    && write_proc(c"/proc/self/gid_map", &gid_map)
                    && libc::chroot(root.as_ptr()) == 0
            };
            if !confined {
                // No confinement available: refuse rather than run unconfined.
                return Err(std::io::Error::from_raw_os_error(libc::EPERM));
            }
            libc::chdir(c"/".as_ptr());
            if is_root {
                libc::setgroups(0, std::ptr::null());
                libc::setgid(65534);
                libc::setuid(65534);
            }
            set_limit(libc::RLIMIT_CPU, lim.cpu_seconds);
            set_limit(libc::RLIMIT_AS, lim.memory_bytes);
            set_limit(libc::RLIMIT_FSIZE, lim.file_bytes);
            set_limit(libc::RLIMIT_NPROC, lim.processes);
            set_limit(libc::RLIMIT_CORE, 0);
            Ok(())
        });
    }
    let start = Instant::now();
    let child = cmd.spawn();
    unsafe { libc::close(write_fd) };
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            unsafe { libc::close(read_fd) };
            return Err(std::io::Error::new(e.kind(), format!("cannot start the sandboxed fuzzer in {}: {e}", dir.display())));
        }
    };
    let pid = child.id() as i32;
    // The trace pipe is read on a thread; it ends when every writer is gone. A process that
    // left the session could keep it open: the result is waited for a bounded time only.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(read_fd) };
        let mut buf = Vec::new();
        let _ = (&mut f).take(64 << 20).read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    let trace = move || rx.recv_timeout(Duration::from_secs(1)).unwrap_or_default();
    let mut stopped = None;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if cancel.load(Ordering::Relaxed) {
            stopped = Some(Stopped::Cancelled);
            break None;
        }
        if Instant::now() >= deadline || start.elapsed() >= limits.wall {
            stopped = Some(Stopped::Deadline);
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if stopped.is_some() {
        // Stopped from outside: libFuzzer prints its final statistics on SIGINT and exits at
        // once (from the signal handler, even inside a hanging input); a short grace for that.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let grace = Instant::now() + INTERRUPT_GRACE;
        while Instant::now() < grace && child.try_wait()?.is_none() {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    // Whatever is left of the session goes: the run must leave no process behind.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let status = match status {
        Some(s) => s,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(JailOutcome { status: "stopped".into(), stopped, trace: trace() });
        }
    };
    let trace = trace();
    use std::os::unix::process::ExitStatusExt;
    let status = match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (_, Some(libc::SIGXCPU)) => "cpu time limit".into(),
        (_, Some(s)) => format!("signal {s}"),
        _ => "unknown".into(),
    };
    Ok(JailOutcome { status, stopped, trace })
}
