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
/// `deadline` passes or `cancel` is set.
pub fn run(dir: &Path, args: &[String], limits: Limits, log: &Path, deadline: Instant, cancel: &AtomicBool) -> std::io::Result<JailOutcome> {
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let job = Job {
        args,
        stderr: Some(&log_file),
        writable_dir: true,
        deadline: Some(deadline),
        cancel: Some(cancel),
        interrupt_grace: INTERRUPT_GRACE,
        ..Job::new(dir, EXE, limits)
    };
    execute(&job)
}
