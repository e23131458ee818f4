//! Undefined behaviour on witnesses (issue 13, item 3): the reaching witness is run a second
//! time on the program rebuilt from its C source under UndefinedBehaviorSanitizer.
//!
//! The analysis is bit-precise for the program *as compiled* (wrapping arithmetic, masked shift
//! counts), so a witness may rely on an operation C leaves undefined: a signed overflow, a
//! shift past the width, a division by zero, an out-of-bounds index into an array of known
//! size. Whether that counts is the user's call (SV-COMP's tasks treat signed overflow as an
//! error); the report names the operation and the source line either way.
//!
//! UBSan's checks are inserted by clang's code generation, not by an LLVM pass, so they cannot be
//! added to the analysed bitcode: the C source is compiled again with
//! `-fsanitize=undefined -fno-sanitize-recover=all`, loaded with the same function and target
//! (which inserts the same target markers), and linked with the replay driver and UBSan's
//! runtime (statically, as every replay program). The first undefined operation ends the run
//! with the sanitizer's report on standard error; a run that enters the target first did not
//! rely on any (what happens after the target does not matter to reachability).
//!
//! AddressSanitizer is not used: its runtime cannot be linked statically, and replays run
//! confined to a directory that holds nothing but the executable.

use super::{Limits, Replayer};
use crate::error::{Error, Result};
use crate::load::{self, LoadOptions, TargetSpec};
use crate::witness::Witness;
use std::path::Path;
use std::time::{Duration, Instant};

/// The clang flags of the sanitized build.
const UB_COMPILE_FLAGS: &[&str] = &["-fsanitize=undefined", "-fno-sanitize-recover=all"];

/// An undefined operation the witness relies on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UbFinding {
    /// What UBSan calls it: `signed integer overflow`, `shift exponent 40 is too large ...`,
    /// `division by zero`, `index 9 out of bounds for type 'int[8]'`, ...
    pub operation: String,
    /// `file:line:column` of the operation, as UBSan reports it.
    pub location: String,
    /// UBSan's whole message.
    pub message: String,
}

/// The outcome of the check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UbCheck {
    /// The sanitized run entered the target before any undefined operation.
    Clean,
    /// An undefined operation came first (and ended the run).
    Ub(UbFinding),
    /// The check could not be made: why.
    NotChecked(String),
}

/// Least time before the analysis' deadline the check starts with (a compile, a link, a run).
const MIN_TIME: Duration = Duration::from_millis(1500);

/// Runs `w` on the program of `source` (a C file) rebuilt under UBSan, with the function and
/// target of the analysis, if it can end before `deadline` (`--timeout` holds for it too).
pub fn check(source: &Path, function: &str, target: &TargetSpec, options: &LoadOptions, w: &Witness, deadline: Instant) -> UbCheck {
    if deadline.saturating_duration_since(Instant::now()) < MIN_TIME {
        return UbCheck::NotChecked("the time budget ran out before the check".into());
    }
    match try_check(source, function, target, options, w, deadline) {
        Ok(c) => c,
        Err(e) => UbCheck::NotChecked(e.to_string()),
    }
}

fn try_check(source: &Path, function: &str, target: &TargetSpec, options: &LoadOptions, w: &Witness, deadline: Instant) -> Result<UbCheck> {
    let is_c = matches!(source.extension().and_then(|e| e.to_str()), Some("c") | Some("i"));
    if !is_c || !options.extra_inputs.is_empty() || options.compile_commands.is_some() {
        return Ok(UbCheck::NotChecked("the check needs the program as one C source file".into()));
    }
    let dir = tempfile::Builder::new()
        .prefix("apc-ub-")
        .tempdir()
        .map_err(|e| Error::internal(format!("cannot create a temporary directory: {e}")))?;
    // Removed on an interruption too (SIGINT/SIGTERM end the process without unwinding).
    let _registered = crate::cleanup::Guard::new(dir.path());
    let flags: Vec<String> = UB_COMPILE_FLAGS.iter().map(|f| f.to_string()).collect();
    let bc = load::input::compile_c_with(source, dir.path(), "ub-", &flags, None)?;
    let loaded = load::load_with(&bc, function, target, options)?;
    let rp = Replayer::with_link_flags(&loaded, false, &["-fsanitize=undefined"])?;
    let err_path = dir.path().join("stderr");
    let err = std::fs::File::create(&err_path).map_err(|e| Error::internal(format!("creating {}: {e}", err_path.display())))?;
    let left = deadline.saturating_duration_since(Instant::now());
    if left < Duration::from_millis(100) {
        return Ok(UbCheck::NotChecked("the time budget ran out before the sanitized run".into()));
    }
    let wall = Limits::default().wall.min(left);
    let run = rp.run_observed(w, Limits { wall, cpu_seconds: wall.as_secs() + 1, ..Limits::default() }, Some(&err))?;
    drop(err);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    if run.reached.is_some() {
        return Ok(UbCheck::Clean);
    }
    Ok(match parse_report(&stderr) {
        Some(f) => UbCheck::Ub(f),
        None => UbCheck::NotChecked(format!("the sanitized program did not enter the target ({}) and reported nothing", run.status)),
    })
}

/// The first `FILE:LINE:COL: runtime error: MESSAGE` line of UBSan's output.
pub fn parse_report(stderr: &str) -> Option<UbFinding> {
    let line = stderr.lines().find(|l| l.contains(": runtime error: "))?;
    let (location, message) = line.split_once(": runtime error: ")?;
    let message = message.trim().to_string();
    // The kind without the values (`signed integer overflow: 1 + 2147483647 cannot ...`).
    let operation = message.split_once(": ").map_or(message.as_str(), |(k, _)| k).to_string();
    Some(UbFinding { operation, location: location.trim().to_string(), message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_name_the_operation_and_the_place() {
        let out = "prog.c:3:26: runtime error: signed integer overflow: 100 + 2147483600 cannot be represented in type 'int'\n\
                   SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior prog.c:3:26\n";
        let f = parse_report(out).expect("a report");
        assert_eq!(f.operation, "signed integer overflow");
        assert_eq!(f.location, "prog.c:3:26");
        assert!(f.message.ends_with("in type 'int'"));
        let shift = parse_report("a.c:2:12: runtime error: shift exponent 40 is too large for 32-bit type 'int'").unwrap();
        assert_eq!(shift.operation, "shift exponent 40 is too large for 32-bit type 'int'");
        assert_eq!(parse_report("hit 1\n"), None);
    }
}
