//! Running untrusted native code in its own directory, confined, with limits.
//!
//! The run is started with a `clone` that shares the analyser's memory until `execve` (as
//! `posix_spawn` does; a copy of the page tables of LLVM and Z3 cost 8–10 ms per run), not
//! `fork()`: the analyser is
//! multi-threaded (Z3 workers, other engines), and glibc's `fork()` runs the `pthread_atfork`
//! handlers, which can wait forever on a lock a solver thread holds (replays that hung
//! for the whole budget). Between `clone` and `execve` the child makes raw system calls only
//! (glibc's `setuid` & co. would try to signal threads that do not exist in the child), and every
//! step is checked: a step that fails ends the child before `execve`, the parent learns which
//! step through a close-on-exec pipe, and the run is an error (fail closed).
//!
//! Confinement: new IPC and UTS namespaces and no network at all (as root, an empty network
//! namespace the analysis's runs share, see `shared_network`; else a new one each, inside a
//! new user namespace); `chroot` into the run's directory; as root, a uid and gid of
//! its own for this analysis (no other analysis's runs can signal or trace it) and no
//! supplementary groups; `no_new_privs`; every file descriptor closed except 0–2 (`/dev/null`),
//! the hit channel on fd 3 and the witness on fd 4; a cleared environment; CPU, address-space,
//! file-size, process and core limits; a session of its own, killed as a whole when the run ends.
//! Addresses are not randomised, so that runs of the same input repeat.

use crate::jailfs::Dir;
use std::ffi::CString;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The uid and gid runs take when the tool runs as root: one per analysis (process), from a
/// range no account uses, so that runs of different analyses cannot signal or trace each other.
pub fn run_uid() -> u32 {
    0x7ff0_0000 + (std::process::id() % 0x000f_ff00)
}

/// The steps of the child's setup, reported by number when one fails.
const STEPS: &[&str] = &[
    "setsid",
    "moving the hit channel",
    "moving the witness",
    "opening /dev/null",
    "redirecting standard streams",
    "closing inherited descriptors",
    "chroot",
    "chdir /",
    "setgroups",
    "setgid",
    "setuid",
    "no_new_privs",
    "setrlimit",
    "execve",
    "waiting for the user namespace's id maps",
    "making mounts private",
    "mounting the directory read-only",
    "mounting the run's tmpfs",
    "installing the seccomp filter",
    "joining the runs' network namespace",
    "turning address randomisation off",
    "handing the working directory over",
];

/// Bytes of the trace channel (fd 3) kept in full (the nondet types of about 400k calls).
const TRACE_LIMIT: usize = 4 << 20;
/// The longest wait between two looks at a running run (see the wait in [`execute`]): how late
/// a cancel or the deadline is seen, and how long the trace channel may fill meanwhile.
const MAX_LOOK_INTERVAL: Duration = Duration::from_millis(8);
/// The trace channel's capacity asked for (the system's default is 64 KiB): a run writing a
/// `nondet` line a microsecond fills 64 KiB in about 3 ms, under [`MAX_LOOK_INTERVAL`].
const TRACE_PIPE_BYTES: libc::c_int = 1 << 20;

/// Disk space and files a run may create (its `/work` is a tmpfs of this size).
pub const TMPFS_OPTIONS: &str = "size=16m,nr_inodes=4096";

/// System calls a run may not make (x86-64 numbers), answered with EPERM: tracing, mounts and
/// namespaces, keys, BPF and perf, modules, reboot and swap, and every call that reaches into
/// another process (its memory, its descriptors through a pidfd, its memory policy, a
/// comparison of its kernel objects): a run could otherwise take its init's status pipe.
/// `clone3` answers ENOSYS, so that the C library falls back to `clone`, whose flags the
/// namespaces already contain.
const DENIED_SYSCALLS: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_getfd,
    libc::SYS_process_madvise,
    libc::SYS_process_mrelease,
    libc::SYS_kcmp,
    libc::SYS_move_pages,
    libc::SYS_migrate_pages,
];

/// The seccomp filter: x86-64 only (other ABIs are killed), [`DENIED_SYSCALLS`] refused,
/// sockets other than AF_UNIX refused, everything else allowed.
fn seccomp_filter() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const ARCH_X86_64: u32 = 0xc000_003e;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_KILL_PROCESS: u32 = 0x8000_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let eperm = RET_ERRNO | libc::EPERM as u32;
    let mut f = vec![
        ins(LD_W_ABS, 0, 0, 4), // arch
        ins(JEQ_K, 1, 0, ARCH_X86_64),
        ins(RET_K, 0, 0, RET_KILL_PROCESS),
        ins(LD_W_ABS, 0, 0, 0), // nr
        ins(JGE_K, 0, 1, 0x4000_0000), // the x32 ABI
        ins(RET_K, 0, 0, eperm),
        ins(JEQ_K, 0, 1, libc::SYS_clone3 as u32),
        ins(RET_K, 0, 0, RET_ERRNO | libc::ENOSYS as u32),
    ];
    for nr in DENIED_SYSCALLS {
        f.push(ins(JEQ_K, 0, 1, *nr as u32));
        f.push(ins(RET_K, 0, 0, eperm));
    }
    // socket(domain, ...): only AF_UNIX.
    f.push(ins(JEQ_K, 0, 3, libc::SYS_socket as u32));
    f.push(ins(LD_W_ABS, 0, 0, 16)); // args[0], low half
    f.push(ins(JEQ_K, 1, 0, libc::AF_UNIX as u32));
    f.push(ins(RET_K, 0, 0, eperm));
    f.push(ins(RET_K, 0, 0, RET_ALLOW));
    f
}

/// Everything the child needs, prepared before `clone` (the child must not allocate).
struct ChildPlan {
    root: CString,
    prog: CString,
    /// NULL-terminated; points into strings owned by the caller of `clone`.
    argv: Vec<*const libc::c_char>,
    /// Where the program's standard error goes (-1: /dev/null).
    stderr_fd: i32,
    /// The child's end of the socket on which it hands its tmpfs over (see
    /// [`Job::share_work`]) and waits for the go-ahead; -1: not shared.
    work_sock: i32,
    envp: [*const libc::c_char; 1],
    devnull: CString,
    marker_fd: i32,
    witness_fd: i32,
    error_fd: i32,
    status_fd: i32,
    is_root: bool,
    uid: u32,
    limits: [(u32, u64); 5],
    /// The calling thread's nice value as text (e.g. "10\n"), given to the run's new session
    /// (autogroup): with autogrouping, a new session competes with the whole analysis as an
    /// equal unless its group is niced too. Empty: nothing to do.
    autogroup_nice: Vec<u8>,
    /// Read end of the pipe on which the parent says the user namespace's maps are written.
    sync_fd: i32,
    /// See [`Job::self_init`]: exec the program as the init (fd 6 stays open across it).
    self_init: bool,
    /// `<root>/work`, where the run's tmpfs goes.
    work: CString,
    tmpfs_options: CString,
    filter: libc::sock_fprog,
    /// The network namespace to join ([`shared_network`]), -1: the clone made a new one.
    net_fd: i32,
}

/// A raw system call's result; on failure the child reports `step` and its errno on `error_fd`,
/// and exits.
unsafe fn step(error_fd: libc::c_int, step: usize, r: libc::c_long) -> libc::c_long {
    if r < 0 {
        let errno = *libc::__errno_location();
        let mut msg = [0u8; 8];
        msg[..4].copy_from_slice(&(step as u32).to_le_bytes());
        msg[4..].copy_from_slice(&(errno as u32).to_le_bytes());
        libc::syscall(libc::SYS_write, error_fd, msg.as_ptr(), msg.len());
        libc::syscall(libc::SYS_exit_group, 127);
    }
    r
}

/// The child between `clone` and `execve`: raw system calls only.
unsafe fn child(plan: &ChildPlan) -> ! {
    use libc::*;
    let e = plan.error_fd;
    step(e, 0, syscall(SYS_setsid));
    if plan.net_fd >= 0 {
        step(e, 19, syscall(SYS_setns, plan.net_fd, CLONE_NEWNET));
    }
    if !plan.autogroup_nice.is_empty() {
        // Best effort (no autogroup support is fine).
        let fd = syscall(SYS_open, c"/proc/self/autogroup".as_ptr(), O_WRONLY);
        if fd >= 0 {
            syscall(SYS_write, fd, plan.autogroup_nice.as_ptr(), plan.autogroup_nice.len());
            syscall(SYS_close, fd);
        }
    }
    // Every signal back to its default action before any is unblocked. This process shares
    // the analyser's memory (`CLONE_VM`) and got a copy of its signal handlers, Z3's SIGINT
    // handler among them while a query runs (Z3 installs one per check). The init stays in
    // that memory for the whole run; the SIGINT that stops a run reached it, and the handler
    // then cancelled whatever Z3 query of the analyser was running (an exact DSE search turned
    // inexact, one demo run in three) and ran Z3 code on the analyser's heap from another
    // process. With the default action, an init ignores the signals it has no handler for.
    let default_action: [u64; 4] = [SIG_DFL as u64, 0, 0, 0];
    for sig in 1..=64usize {
        if sig != SIGKILL as usize && sig != SIGSTOP as usize {
            syscall(SYS_rt_sigaction, sig, default_action.as_ptr(), std::ptr::null_mut::<u64>(), 8usize);
        }
    }
    // The tool blocks SIGINT/SIGTERM/SIGHUP for its signal thread; the program starts with none.
    let empty: [u64; 1] = [0];
    step(e, 0, syscall(SYS_rt_sigprocmask, SIG_SETMASK, empty.as_ptr(), std::ptr::null_mut::<u64>(), 8usize));
    if plan.sync_fd >= 0 {
        // In a new user namespace: wait until the parent has mapped the user to root in it.
        let mut byte = 0u8;
        if syscall(SYS_read, plan.sync_fd, &mut byte as *mut u8, 1usize) != 1 {
            *__errno_location() = EPERM;
            step(e, 14, -1);
        }
    }
    // Park the descriptors above the range about to be filled.
    let marker = step(e, 1, syscall(SYS_fcntl, plan.marker_fd, F_DUPFD, 100)) as c_int;
    let witness = if plan.witness_fd >= 0 { step(e, 2, syscall(SYS_fcntl, plan.witness_fd, F_DUPFD, 100)) as c_int } else { -1 };
    let stderr = if plan.stderr_fd >= 0 { step(e, 4, syscall(SYS_fcntl, plan.stderr_fd, F_DUPFD, 100)) as c_int } else { -1 };
    let sock = if plan.work_sock >= 0 { step(e, 21, syscall(SYS_fcntl, plan.work_sock, F_DUPFD_CLOEXEC, 100)) as c_int } else { -1 };
    let e = step(e, 1, syscall(SYS_fcntl, e, F_DUPFD_CLOEXEC, 100)) as c_int;
    let null = step(e, 3, syscall(SYS_open, plan.devnull.as_ptr(), O_RDWR)) as c_int;
    for fd in 0..3 {
        step(e, 4, syscall(SYS_dup2, if fd == 2 && stderr >= 0 { stderr } else { null }, fd));
    }
    step(e, 1, syscall(SYS_dup2, marker, 3));
    step(e, 2, syscall(SYS_dup2, if witness >= 0 { witness } else { null }, 4));
    // Keep the error pipe on 5, the status pipe on 6 (both close-on-exec) and the work socket
    // on 7 (closed before the program starts), and close everything above.
    let status = step(e, 5, syscall(SYS_fcntl, plan.status_fd, F_DUPFD_CLOEXEC, 100)) as c_int;
    let e = step(e, 5, syscall(SYS_dup3, e, 5, O_CLOEXEC)) as c_int;
    step(e, 5, syscall(SYS_dup3, status, 6, if plan.self_init { 0 } else { O_CLOEXEC }));
    let first_closed: u32 = if sock >= 0 {
        step(e, 21, syscall(SYS_dup3, sock, 7, O_CLOEXEC));
        8
    } else {
        7
    };
    if syscall(SYS_close_range, first_closed, u32::MAX, 0u32) < 0 {
        for fd in first_closed as c_long..65536 {
            syscall(SYS_close, fd);
        }
    }
    // The directory, read-only, as the root; a small tmpfs on `/work` for what the run writes.
    let none = std::ptr::null::<c_char>();
    step(e, 15, syscall(SYS_mount, none, c"/".as_ptr(), none, (MS_REC | MS_PRIVATE) as c_ulong, std::ptr::null::<c_void>()));
    step(e, 16, syscall(SYS_mount, plan.root.as_ptr(), plan.root.as_ptr(), none, (MS_BIND | MS_REC) as c_ulong, std::ptr::null::<c_void>()));
    step(
        e,
        16,
        syscall(SYS_mount, none, plan.root.as_ptr(), none, (MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV) as c_ulong, std::ptr::null::<c_void>()),
    );
    step(e, 17, syscall(SYS_mount, c"tmpfs".as_ptr(), plan.work.as_ptr(), c"tmpfs".as_ptr(), (MS_NOSUID | MS_NODEV) as c_ulong, plan.tmpfs_options.as_ptr()));
    if sock >= 0 {
        hand_work_over(e, plan);
    }
    step(e, 6, syscall(SYS_chroot, plan.root.as_ptr()));
    step(e, 7, syscall(SYS_chdir, c"/work".as_ptr()));
    if plan.is_root {
        step(e, 8, syscall(SYS_setgroups, 0, std::ptr::null::<gid_t>()));
        step(e, 9, syscall(SYS_setresgid, plan.uid, plan.uid, plan.uid));
        step(e, 10, syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid));
        // Dropping root must have worked: no way back.
        if syscall(SYS_setuid, 0) == 0 {
            *__errno_location() = EPERM;
            step(e, 10, -1);
        }
    }
    step(e, 11, syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    // If the tool dies (a signal, a crash), this init dies with it, and so the whole namespace.
    // (After the change of credentials, which clears the setting.)
    step(e, 0, syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
    for (resource, value) in plan.limits {
        let lim = rlimit { rlim_cur: value, rlim_max: value };
        step(e, 12, syscall(SYS_setrlimit, resource, &lim as *const rlimit));
    }
    // The same addresses in every run: a program that reads past its inputs (eqcnt's
    // `A[i * m + j]` for large `n`, `m`) then reads the same bytes each time, so a fuzzing
    // session with a fixed seed repeats (with randomised addresses, eqcnt's fuzzer needed 580,
    // 1417 or 2086 executions from one run to the next) and a replay gives the same answer.
    step(e, 20, syscall(SYS_personality, ADDR_NO_RANDOMIZE as c_ulong));
    step(e, 18, syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &plan.filter as *const sock_fprog, 0, 0));
    // This process is the init of a new pid namespace: when it exits, the kernel kills every
    // process left in the namespace (a `setsid` grandchild included). The program runs as its
    // child, so that it keeps ordinary signal semantics (an init ignores signals it has no
    // handler for), and its status goes to the parent over fd 6.
    if plan.self_init {
        // The executable is the init (started with `--apc-init`): this copy of the analyser
        // ends here, and with it the sharing of the analyser's pages.
        step(e, 13, syscall(SYS_execve, plan.prog.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr()));
        syscall(SYS_exit_group, 127);
    }
    let program = step(e, 13, syscall(SYS_clone, SIGCHLD as c_ulong, 0usize, 0usize, 0usize, 0usize));
    if program == 0 {
        syscall(SYS_close, 6);
        step(e, 13, syscall(SYS_execve, plan.prog.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr()));
        syscall(SYS_exit_group, 127);
    }
    syscall(SYS_close, e);
    let mut st: c_int = 0;
    loop {
        // Reap everything (orphans are re-parented to this init) until the program itself ends.
        let r = syscall(SYS_wait4, -1, &mut st as *mut c_int, 0, std::ptr::null_mut::<rusage>());
        if r == program {
            break;
        }
        if r < 0 && *__errno_location() != EINTR {
            st = -1;
            break;
        }
    }
    let report = (st as u32).to_le_bytes();
    syscall(SYS_write, 6, report.as_ptr(), report.len());
    syscall(SYS_exit_group, 0);
    unreachable!("exit_group returned")
}

/// The child's side of [`Job::share_work`]: a descriptor of its fresh tmpfs goes to the parent
/// over the socket on fd 7 (SCM_RIGHTS); the parent fills it and answers one byte, and the
/// child goes on. The tmpfs lives as long as the parent holds the descriptor, also once the
/// run's namespaces are gone; the parent never reaches it by a path.
unsafe fn hand_work_over(e: libc::c_int, plan: &ChildPlan) {
    use libc::*;
    let dir = step(e, 21, syscall(SYS_open, plan.work.as_ptr(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) as c_int;
    // A control message holding one descriptor: the header (16 bytes on x86-64), the int, and
    // padding to 8 bytes.
    let mut control = [0u64; 3];
    let header = control.as_mut_ptr() as *mut cmsghdr;
    (*header).cmsg_len = std::mem::size_of::<cmsghdr>() + std::mem::size_of::<c_int>();
    (*header).cmsg_level = SOL_SOCKET;
    (*header).cmsg_type = SCM_RIGHTS;
    *(control.as_mut_ptr().add(2) as *mut c_int) = dir;
    let mut byte = 0u8;
    let mut iov = iovec { iov_base: &mut byte as *mut u8 as *mut c_void, iov_len: 1 };
    let mut msg: msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut c_void;
    msg.msg_controllen = std::mem::size_of_val(&control);
    step(e, 21, syscall(SYS_sendmsg, 7, &msg as *const msghdr, 0));
    syscall(SYS_close, dir);
    if syscall(SYS_read, 7, &mut byte as *mut u8, 1usize) != 1 {
        *__errno_location() = EPERM;
        step(e, 21, -1);
    }
    syscall(SYS_close, 7);
}

fn cstring(p: &[u8]) -> std::io::Result<CString> {
    CString::new(p).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a path"))
}

/// Why a run was stopped from outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    Deadline,
    Cancelled,
    /// The job's [`Job::watch`] asked for it.
    Asked,
}

/// One sandboxed execution: `dir/exe args...` confined to `dir`.
pub struct Job<'a> {
    pub dir: &'a Path,
    /// The executable's name inside `dir`.
    pub exe: &'a str,
    pub args: &'a [String],
    pub limits: Limits,
    /// Open for reading on fd 4 (the witness).
    pub input: Option<&'a std::fs::File>,
    /// Receives the program's standard error (else `/dev/null`).
    pub stderr: Option<&'a std::fs::File>,
    /// The mount options of the run's tmpfs (its working directory `/work`, the only place it
    /// can write): its size and its number of files.
    pub tmpfs: &'a str,
    /// The run's tmpfs is handed to the caller (for the fuzzer: its corpus, artifacts and
    /// traced inputs live there): given empty to `prepare` (if any) before the program starts,
    /// to `watch` while it runs, and returned in [`Exit::work`]. The tool reaches what the
    /// program wrote there only through that descriptor (see [`crate::jailfs`]), never by a
    /// path; the run's directory `dir` stays read-only to the program.
    pub share_work: bool,
    pub prepare: Option<&'a dyn Fn(&Dir) -> std::io::Result<()>>,
    /// Stopped at this time (besides `limits.wall`) or when `cancel` is set: SIGINT first, then,
    /// after `interrupt_grace`, SIGKILL.
    pub deadline: Option<Instant>,
    pub cancel: Option<&'a AtomicBool>,
    pub interrupt_grace: Duration,
    /// The executable is its own init: started as `exe --apc-init`, it forks the run, reaps
    /// orphans and writes the run's wait status to fd 6 (the replay driver does, see
    /// `driver::INIT_C`). Otherwise the init is a copy of this process, which then shares (copy
    /// on write) every page of the analyser for the whole run: under a portfolio whose solver
    /// threads keep writing memory, a replay took 50–60 ms instead of 4.
    pub self_init: bool,
    /// Called at each look at the running job (every few milliseconds) with the pid of its init
    /// (its session leader: `/proc/PID/autogroup` is the run's scheduling group); `false` stops
    /// the run as the deadline does. For steering a long run (the fuzzer's priority and new
    /// corpus entries, written into the shared tmpfs, see [`Job::share_work`]); it should
    /// return quickly.
    pub watch: Option<&'a dyn Fn(libc::pid_t, Option<&Dir>) -> bool>,
}

/// The argument that starts a self-init executable (see [`Job::self_init`]) as the init.
pub const INIT_ARG: &str = "--apc-init";

impl<'a> Job<'a> {
    pub fn new(dir: &'a Path, exe: &'a str, limits: Limits) -> Self {
        Job {
            dir,
            exe,
            args: &[],
            limits,
            input: None,
            stderr: None,
            tmpfs: TMPFS_OPTIONS,
            share_work: false,
            prepare: None,
            deadline: None,
            cancel: None,
            interrupt_grace: Duration::ZERO,
            self_init: false,
            watch: None,
        }
    }
}

/// How a job ended.
#[derive(Debug)]
pub struct Exit {
    /// `exit N`, `signal N`, `cpu time limit`, `timeout` (the wall limit), `stopped` (deadline or
    /// cancel), or `unknown ...`.
    pub status: String,
    pub stopped: Option<Stopped>,
    /// What the run wrote on fd 3 (at most 64 MiB).
    pub trace: Vec<u8>,
    /// The run's tmpfs, when it was shared ([`Job::share_work`]).
    pub work: Option<Dir>,
}

/// Runs the statically linked executable `dir/prog` inside `dir`, with `input` (if any) open
/// for reading on fd 4. With a `token`, only hit messages carrying it count (`hit TOKEN ID`,
/// the token in hex); without, `hit ID`.
pub fn run(dir: &Path, limits: Limits, input: Option<&std::fs::File>, token: Option<u64>) -> std::io::Result<RunOutcome> {
    run_with_stderr(dir, limits, input, token, None)
}

/// [`run`], with the program's standard error written to `stderr` (a sanitizer's report).
pub fn run_with_stderr(dir: &Path, limits: Limits, input: Option<&std::fs::File>, token: Option<u64>, stderr: Option<&std::fs::File>) -> std::io::Result<RunOutcome> {
    let job = Job { input, stderr, self_init: true, ..Job::new(dir, "prog", limits) };
    let exit = execute(&job)?;
    if exit.status == "timeout" {
        return Ok(RunOutcome { reached: None, nondet_types: vec![], status: exit.status, confined: true });
    }
    let trace = String::from_utf8_lossy(&exit.trace);
    let mut reached = None;
    let mut nondet_types = vec![];
    for line in trace.lines() {
        match line.split_once(' ') {
            Some(("hit", rest)) => {
                let id = match (token, rest.split_once(' ')) {
                    (Some(t), Some((tok, id))) if u64::from_str_radix(tok, 16) == Ok(t) => id,
                    (None, None) => rest,
                    _ => continue,
                };
                reached = reached.or(id.trim().parse().ok());
            }
            Some(("nondet", t)) => {
                let t: usize = t.trim().parse().unwrap_or(0);
                nondet_types.push(super::driver::NONDET_TYPES.get(t).unwrap_or(&"long long").to_string());
            }
            _ => {}
        }
    }
    Ok(RunOutcome { reached, nondet_types, status: exit.status, confined: true })
}

/// The stack of the child between `clone` and `execve` (and of the init it stays when the
/// program is not its own init): raw system calls in a few small frames.
const CHILD_STACK_BYTES: usize = 256 << 10;

/// The child's stack. Every normal return of [`execute`] comes after the child was reaped;
/// should the parent unwind before that, the stack is leaked rather than freed under a child
/// that may still run on it.
struct ChildStack(Vec<u8>);

impl Drop for ChildStack {
    fn drop(&mut self) {
        if std::thread::panicking() {
            std::mem::forget(std::mem::take(&mut self.0));
        }
    }
}

/// An empty network namespace (only its loopback device, down) that the runs of this process
/// join, as root; -1 when there is none (then each run gets a new one). A new network
/// namespace per run cost 0.4 ms of a run's 2 ms (creating it, and tearing it down in the
/// kernel after the run), and a run needs no network at all: what a shared empty one allows
/// beyond a new one is runs of the same analysis reaching each other through abstract Unix
/// sockets. Without root, a run's user namespace could not join it.
fn shared_network() -> libc::c_int {
    static NET: std::sync::OnceLock<libc::c_int> = std::sync::OnceLock::new();
    *NET.get_or_init(|| {
        // On a thread of its own, which ends after leaving the namespace behind in a
        // descriptor (unsharing a network namespace moves only the calling thread).
        std::thread::spawn(|| {
            // SAFETY: plain system calls on this thread's own namespaces and a descriptor it opens.
            unsafe {
                if libc::unshare(libc::CLONE_NEWNET) != 0 {
                    return -1;
                }
                libc::open(c"/proc/thread-self/ns/net".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC)
            }
        })
        .join()
        .unwrap_or(-1)
    })
}

/// Runs `job` to its end, its wall limit, its deadline or its cancellation.
pub fn execute(job: &Job) -> std::io::Result<Exit> {
    use std::os::fd::AsRawFd;
    let limits = job.limits;
    let is_root = unsafe { libc::geteuid() } == 0;
    let uid = run_uid();
    // The socket on which the run hands its tmpfs over ([`Job::share_work`]).
    let mut work_sock = [-1i32; 2];
    if job.share_work && unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, work_sock.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Closed on every return (the child's end right after the clone).
    let parent_sock = (work_sock[0] >= 0).then(|| unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(work_sock[0]) });
    let mut child_sock = (work_sock[1] >= 0).then(|| unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(work_sock[1]) });
    let mut pipes = [[0i32; 2]; 4];
    for k in 0..4 {
        if unsafe { libc::pipe2(pipes[k].as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            let e = std::io::Error::last_os_error();
            for q in &pipes[..k] {
                unsafe {
                    libc::close(q[0]);
                    libc::close(q[1]);
                }
            }
            return Err(e);
        }
    }
    let [marker, error, status_pipe, sync] = pipes;
    let prog = cstring(format!("/{}", job.exe).as_bytes())?;
    let init_arg = job.self_init.then(|| INIT_ARG.to_string());
    let args: Vec<CString> = init_arg.iter().chain(job.args.iter()).map(|a| cstring(a.as_bytes())).collect::<std::io::Result<_>>()?;
    let mut argv: Vec<*const libc::c_char> = vec![prog.as_ptr()];
    argv.extend(args.iter().map(|a| a.as_ptr()));
    argv.push(std::ptr::null());
    let mut filter = seccomp_filter();
    let tmpfs_options = if is_root { format!("{},mode=0700,uid={uid},gid={uid}", job.tmpfs) } else { format!("{},mode=0700", job.tmpfs) };
    // The thread's own nice value (the portfolio lowers its secondary engines').
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
    let net_fd = if is_root { shared_network() } else { -1 };
    let plan = ChildPlan {
        net_fd,
        autogroup_nice: if nice > 0 { format!("{nice}\n").into_bytes() } else { vec![] },
        root: cstring(job.dir.as_os_str().as_encoded_bytes())?,
        argv,
        prog,
        stderr_fd: job.stderr.map_or(-1, |f| f.as_raw_fd()),
        work_sock: work_sock[1],
        envp: [std::ptr::null()],
        devnull: cstring(b"/dev/null")?,
        marker_fd: marker[1],
        witness_fd: job.input.map_or(-1, |f| f.as_raw_fd()),
        error_fd: error[1],
        status_fd: status_pipe[1],
        is_root,
        uid,
        sync_fd: if is_root { -1 } else { sync[0] },
        self_init: job.self_init,
        work: cstring(job.dir.join("work").as_os_str().as_encoded_bytes())?,
        tmpfs_options: cstring(tmpfs_options.as_bytes())?,
        filter: libc::sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() },
        limits: [
            (libc::RLIMIT_CPU, limits.cpu_seconds),
            (libc::RLIMIT_AS, limits.memory_bytes),
            (libc::RLIMIT_FSIZE, limits.file_bytes),
            (libc::RLIMIT_NPROC, limits.processes),
            (libc::RLIMIT_CORE, 0),
        ],
    };
    // No network, no shared IPC objects, a host name, mounts and pids of its own; without root,
    // inside a user namespace of its own (which also makes chroot and the mounts possible).
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS | libc::CLONE_NEWNS;
    if net_fd < 0 {
        flags |= libc::CLONE_NEWNET;
    }
    if !is_root {
        flags |= libc::CLONE_NEWUSER;
    }
    let start = Instant::now();
    // The child shares the analyser's memory (CLONE_VM, as posix_spawn does) on a stack of its
    // own: a fork-like copy costs page tables for every mapping of LLVM, Z3 and the solver
    // threads, copied at the clone and torn down again at the execve (4–5 ms each, a third of a
    // replay). `stack` and `plan` outlive the child's use of them: this function returns only
    // after the child has exited (every path below reaps it), and the child touches nothing
    // else but its own stack (raw system calls; a failing one writes this thread's errno, which
    // nothing here reads until the child is gone).
    let mut stack = ChildStack(vec![0u8; CHILD_STACK_BYTES]);
    let top = (stack.0.as_mut_ptr() as usize + stack.0.len()) & !15;
    extern "C" fn entry(plan: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `plan` is the `ChildPlan` of `execute`, alive until the child has exited.
        unsafe { child(&*(plan as *const ChildPlan)) }
    }
    // SAFETY: `entry` runs on `stack`, never returns, and makes raw system calls only.
    let pid: libc::c_long = unsafe { libc::clone(entry, top as *mut libc::c_void, flags | libc::CLONE_VM | libc::SIGCHLD, &plan as *const ChildPlan as *mut libc::c_void) }.into();
    unsafe {
        libc::close(marker[1]);
        libc::close(error[1]);
        libc::close(status_pipe[1]);
        libc::close(sync[0]);
    }
    child_sock.take();
    if pid > 0 && !is_root {
        // Map the user to root in the run's user namespace (so that it may mount its tmpfs and
        // own what it writes there), then let the child go on.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let proc = format!("/proc/{pid}");
        let mapped = std::fs::write(format!("{proc}/setgroups"), "deny")
            .and_then(|_| std::fs::write(format!("{proc}/uid_map"), format!("0 {euid} 1")))
            .and_then(|_| std::fs::write(format!("{proc}/gid_map"), format!("0 {egid} 1")));
        if mapped.is_ok() {
            unsafe { libc::write(sync[1], [1u8].as_ptr().cast(), 1) };
        }
    }
    unsafe { libc::close(sync[1]) };
    let status_file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(status_pipe[0]) };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        unsafe {
            libc::close(marker[0]);
            libc::close(error[0]);
        }
        return Err(std::io::Error::new(e.kind(), format!("cannot start the sandboxed run (clone with new namespaces: {e})")));
    }
    let pid = pid as libc::pid_t;
    // Killed if the analysis ends or is interrupted meanwhile; unregistered once reaped (the
    // guard outlives every `waitpid` below).
    let _registered = crate::cleanup::RunGuard::new(pid);
    // The run's tmpfs, handed over before the program starts ([`Job::share_work`]); none if
    // the setup failed before (the error pipe below says where).
    let mut work = None;
    if let Some(sock) = &parent_sock {
        use std::os::fd::AsRawFd;
        if let Some(fd) = receive_fd(sock.as_raw_fd()) {
            let dir = Dir::from_fd(fd);
            if let Some(prepare) = job.prepare {
                if let Err(e) = prepare(&dir) {
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, std::ptr::null_mut(), 0);
                        libc::close(marker[0]);
                        libc::close(error[0]);
                    }
                    return Err(std::io::Error::new(e.kind(), format!("preparing the run's directory: {e}")));
                }
            }
            // The go-ahead (a failed write is the child's failure, reported below).
            unsafe { libc::write(sock.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
            work = Some(dir);
        }
    }
    drop(parent_sock);
    // The setup's verdict: EOF means execve succeeded (the pipe is close-on-exec).
    let mut failure = [0u8; 8];
    let got = {
        let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(error[0]) };
        let mut n = 0;
        while n < 8 {
            match f.read(&mut failure[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        n
    };
    if got == 8 {
        let mut st = 0;
        unsafe { libc::waitpid(pid, &mut st, 0) };
        unsafe { libc::close(marker[0]) };
        let s = u32::from_le_bytes(failure[..4].try_into().expect("4 bytes")) as usize;
        let errno = i32::from_le_bytes(failure[4..].try_into().expect("4 bytes"));
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "sandbox setup failed at {} ({}); the program was not run",
                STEPS.get(s).unwrap_or(&"an unknown step"),
                std::io::Error::from_raw_os_error(errno)
            ),
        ));
    }
    // The trace channel is read while the run goes on (non-blocking), and drained once it
    // ended: a process that escaped the session and keeps fd 3 open cannot hold the tool up.
    let read_fd = marker[0];
    let mut pipe = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(read_fd) };
    unsafe { libc::fcntl(read_fd, libc::F_SETFL, libc::O_NONBLOCK) };
    // Room for what a run writes between two looks of the wait below (best effort: the
    // default 64 KiB when the system's pipe limit is lower).
    unsafe { libc::fcntl(read_fd, libc::F_SETPIPE_SZ, TRACE_PIPE_BYTES) };
    let mut trace = Vec::new();
    // Past TRACE_LIMIT bytes the channel is still drained (a full pipe would block the run),
    // but only hit messages are kept.
    let mut overflow: Vec<u8> = vec![];
    // Returns the bytes read.
    let mut drain = |buf: &mut Vec<u8>| -> usize {
        let mut chunk = [0u8; 16384];
        let mut read = 0;
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => break read,
                Ok(k) if buf.len() < TRACE_LIMIT => {
                    read += k;
                    buf.extend_from_slice(&chunk[..k]);
                }
                Ok(k) => {
                    read += k;
                    // (The fuzzer's traced runs mark a hit with a bare 'H'.)
                    if chunk[..k].contains(&b'H') {
                        buf.push(b'H');
                    }
                    overflow.extend_from_slice(&chunk[..k]);
                    while let Some(nl) = overflow.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = overflow.drain(..=nl).collect();
                        if line.starts_with(b"hit ") {
                            // The kept part may end mid-line: start the hit on a line of its own.
                            if buf.last().is_some_and(|b| *b != b'\n') {
                                buf.push(b'\n');
                            }
                            buf.extend_from_slice(&line);
                        }
                    }
                    if overflow.len() > 4096 {
                        overflow.clear();
                    }
                }
            }
        }
    };
    let mut status = 0;
    let mut stopped = None;
    let mut interrupted_at: Option<Instant> = None;
    // The run's end wakes this thread at once (a pidfd, polled); sleeping a millisecond
    // between looks added 0.5-1 ms to every run of 2-3 ms. Between looks the trace channel is
    // drained, not on every write (a wake per `nondet` line would ping-pong the two
    // processes), and a cancel or the deadline is noticed. The looks start a millisecond apart
    // and, while the run writes no trace, space out to [`MAX_LOOK_INTERVAL`]: a look every
    // millisecond through a fuzzing session woke this thread a thousand times a second,
    // mostly on the fuzzer's core, each wake a preemption of libFuzzer (doif's portfolio:
    // 5000 context switches, 2300 with the spacing). Without pidfds (Linux before 5.3) it
    // sleeps a millisecond instead.
    // SAFETY: a plain system call; the descriptor is closed below.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    let mut look_ms: libc::c_int = 1;
    let exited = loop {
        if drain(&mut trace) > 0 {
            // A run that writes its trace is looked at every millisecond, as before.
            look_ms = 1;
        }
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break true;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break true;
        }
        if start.elapsed() >= limits.wall {
            break false;
        }
        let stop = if job.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            Some(Stopped::Cancelled)
        } else if job.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stopped::Deadline)
        } else if interrupted_at.is_some() {
            // Asked by the watch: stopping goes on (the grace, then the kill).
            stopped
        } else if job.watch.is_some_and(|w| !w(pid, work.as_ref())) {
            Some(Stopped::Asked)
        } else {
            None
        };
        if let Some(why) = stop {
            match interrupted_at {
                None if !job.interrupt_grace.is_zero() => {
                    // SIGINT to the program's process group (its init ignores it).
                    unsafe { libc::kill(-pid, libc::SIGINT) };
                    interrupted_at = Some(Instant::now());
                    stopped = Some(why);
                }
                Some(at) if at.elapsed() < job.interrupt_grace => {}
                _ => {
                    stopped = Some(why);
                    break false;
                }
            }
        }
        if pidfd >= 0 {
            let mut fd = libc::pollfd { fd: pidfd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd entry.
            unsafe { libc::poll(&mut fd, 1, look_ms) };
            look_ms = (look_ms * 2).min(MAX_LOOK_INTERVAL.as_millis() as libc::c_int);
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    if pidfd >= 0 {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(pidfd) };
    }
    if !exited {
        // The init goes, and with it the whole namespace.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut status, 0);
        }
        drain(&mut trace);
        let status = if stopped.is_some() { "stopped" } else { "timeout" };
        return Ok(Exit { status: status.into(), stopped, trace, work });
    }
    drain(&mut trace);
    // The program's own status, as its init saw it.
    let mut word = [0u8; 4];
    let status = match (&status_file).read_exact(&mut word) {
        Ok(()) if i32::from_le_bytes(word) != -1 => i32::from_le_bytes(word),
        _ => return Ok(Exit { status: "unknown (the run's init ended early)".into(), stopped, trace, work }),
    };
    let status = if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        match libc::WTERMSIG(status) {
            libc::SIGXCPU => "cpu time limit".into(),
            s => format!("signal {s}"),
        }
    } else {
        "unknown".into()
    };
    Ok(Exit { status, stopped, trace, work })
}

/// One descriptor received on `sock` (SCM_RIGHTS); `None` at the end of the stream (the child
/// failed before sending) or on an error.
fn receive_fd(sock: libc::c_int) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    let mut control = [0u64; 8];
    let mut byte = 0u8;
    let mut iov = libc::iovec { iov_base: (&mut byte as *mut u8).cast(), iov_len: 1 };
    // SAFETY: a zeroed msghdr pointing at buffers that outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    let n = loop {
        // SAFETY: as above; received descriptors are close-on-exec.
        let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break n;
    };
    if n <= 0 {
        return None;
    }
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        let mut got = None;
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let count = ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<libc::c_int>();
                let fds = libc::CMSG_DATA(c) as *const libc::c_int;
                for k in 0..count {
                    let fd = OwnedFd::from_raw_fd(*fds.add(k));
                    if got.is_none() {
                        got = Some(fd);
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        got
    }
}
