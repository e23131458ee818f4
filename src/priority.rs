//! Scheduling priorities relative to the one the tool was started with: the portfolio lowers
//! some threads (the fuzzer, the APC's solvers beside the DSE) by a few nice levels, and a
//! user's `nice -n 19 apc-llvm` must keep every thread and every process it starts at 19, not
//! have them raised to those levels (as root, setting nice 5 on a thread at 19 raises it).

use std::sync::OnceLock;

static BASE: OnceLock<i32> = OnceLock::new();

/// The nice value the analysis started with; call [`init`] first from an unlowered thread.
pub fn base() -> i32 {
    *BASE.get_or_init(current)
}

/// Records the calling thread's nice value as the base (once per process; later calls keep
/// the first).
pub fn init() {
    base();
}

/// The nice value `delta` levels below the base priority (at most 19).
pub fn lowered(delta: i32) -> i32 {
    (base() + delta).clamp(-20, 19)
}

/// The calling thread's nice value.
pub fn current() -> i32 {
    // SAFETY: plain system calls on the calling thread's own priority.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
}

/// Puts every thread of the process back at the base priority, as far as allowed (raising a
/// thread's priority back needs root or `RLIMIT_NICE`). Called just before the process ends:
/// the last thread to leave tears the address space down, and when that is a thread lowered to
/// nice 19 on a busy machine, unmapping a large analysis delayed the end long after the report.
pub fn restore_all() {
    let Some(base) = BASE.get().copied() else { return };
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return };
    for t in tasks.flatten() {
        if let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<libc::id_t>().ok()) {
            // SAFETY: plain system calls; at worst the thread has just ended.
            unsafe {
                if libc::getpriority(libc::PRIO_PROCESS, tid) > base {
                    libc::setpriority(libc::PRIO_PROCESS, tid, base);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowering_is_relative_and_capped() {
        let b = base();
        assert_eq!(lowered(0), b);
        assert_eq!(lowered(100), 19);
        assert!(lowered(5) >= b);
    }
}

/// A scheduling constant, or its override from the environment variable `APC_LLVM_TUNE_<name>`
/// (a whole number: milliseconds, percents or nice values, as the caller says). For measuring
/// the portfolio's scheduling (`scripts/bench`, interleaved A/B runs) without rebuilding; not an
/// interface for users, and read anew at each use.
pub fn tune(name: &str, default: u64) -> u64 {
    std::env::var(format!("APC_LLVM_TUNE_{name}")).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
