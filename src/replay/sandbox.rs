//! Running untrusted native code: its own directory as root (chroot, uid "nobody", or an
//! unprivileged user namespace when not root), a cleared environment, CPU/memory/file-size/
//! process limits, a new session killed as a whole on timeout, and a pipe on fd 3 for the
//! target marker.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Limits of one sandboxed run.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub wall: Duration,
    pub cpu_seconds: u64,
    pub memory_bytes: u64,
    pub file_bytes: u64,
    pub processes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { wall: Duration::from_secs(5), cpu_seconds: 5, memory_bytes: 1 << 30, file_bytes: 16 << 20, processes: 64 }
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// The target number the marker reported, if it was reached.
    pub reached: Option<u32>,
    /// C types of the nondet calls the run made, in order.
    pub nondet_types: Vec<String>,
    /// `exit N`, `signal N` or `timeout`.
    pub status: String,
    /// Whether the run was confined to its directory (chroot).
    pub confined: bool,
}

fn set_limit(resource: libc::__rlimit_resource_t, value: u64) {
    let lim = libc::rlimit { rlim_cur: value, rlim_max: value };
    unsafe { libc::setrlimit(resource, &lim) };
}

/// Runs the statically linked executable `dir/prog` inside `dir`, with `input` (if any) open
/// for reading on fd 4.
pub fn run(dir: &Path, limits: Limits, input: Option<&std::fs::File>) -> std::io::Result<RunOutcome> {
    use std::os::fd::AsRawFd;
    let input_fd = input.map_or(-1, |f| f.as_raw_fd());
    let mut fds = [0i32; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    let root = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).expect("no NUL in paths");
    let is_root = unsafe { libc::geteuid() } == 0;
    // Decided before fork: whether chroot can work (root, or an unprivileged user namespace).
    let mut cmd = Command::new("/prog");
    cmd.env_clear().stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let lim = limits;
    unsafe {
        cmd.pre_exec(move || {
            // Only async-signal-safe calls between fork and exec.
            libc::setsid();
            // Move both descriptors out of the way first: either may already be 3 or 4.
            let marker = libc::fcntl(write_fd, libc::F_DUPFD, 100);
            let witness = if input_fd >= 0 { libc::fcntl(input_fd, libc::F_DUPFD, 100) } else { -1 };
            if marker < 0 || libc::dup2(marker, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if witness >= 0 && libc::dup2(witness, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(marker);
            if witness >= 0 {
                libc::close(witness);
            }
            let confined = if is_root {
                libc::chroot(root.as_ptr()) == 0
            } else {
                libc::unshare(libc::CLONE_NEWUSER) == 0 && libc::chroot(root.as_ptr()) == 0
            };
            if !confined {
                // No confinement available: run in the directory, by absolute path.
                return Err(std::io::Error::from_raw_os_error(libc::EPERM));
            }
            libc::chdir(c"/".as_ptr());
            if is_root {
                // Drop root inside the chroot so that it cannot be escaped; "nobody".
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
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot start the sandboxed run (chroot into {} failed: {e})", dir.display()),
            ));
        }
    };
    let pid = child.id() as i32;
    // Read the marker pipe in a thread: it ends when every writer (the whole session) is gone.
    let reader = std::thread::spawn(move || {
        let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(read_fd) };
        let mut buf = Vec::new();
        let _ = (&mut f).take(1 << 20).read_to_end(&mut buf);
        buf
    });
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if start.elapsed() >= limits.wall {
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    // Whatever is left of the session goes: the run must leave no process behind.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let status = match status {
        Some(s) => s,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(RunOutcome { reached: None, nondet_types: vec![], status: "timeout".into(), confined: true });
        }
    };
    let buf = reader.join().unwrap_or_default();
    let trace = String::from_utf8_lossy(&buf);
    let mut reached = None;
    let mut nondet_types = vec![];
    for line in trace.lines() {
        match line.split_once(' ') {
            Some(("hit", id)) => reached = reached.or(id.trim().parse().ok()),
            Some(("nondet", t)) => {
                let t: usize = t.trim().parse().unwrap_or(0);
                nondet_types.push(super::driver::NONDET_TYPES.get(t).unwrap_or(&"long long").to_string());
            }
            _ => {}
        }
    }
    use std::os::unix::process::ExitStatusExt;
    let status = match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (_, Some(libc::SIGXCPU)) => "cpu time limit".into(),
        (_, Some(s)) => format!("signal {s}"),
        _ => "unknown".into(),
    };
    Ok(RunOutcome { reached, nondet_types, status, confined: true })
}
