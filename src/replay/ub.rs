//! Undefined behaviour on witnesses: the reaching witness is run a second
//! time on the program rebuilt from its C source under UndefinedBehaviorSanitizer and
//! AddressSanitizer.
//!
//! The analysis is bit-precise for the program *as compiled* (wrapping arithmetic, masked shift
//! counts), so a witness may rely on an operation C leaves undefined: a signed overflow, a
//! shift past the width, a division by zero, an out-of-bounds index into an array of known
//! size. Whether that counts is the user's call (SV-COMP's tasks treat signed overflow as an
//! error); the report names the operation and the source line either way.
//!
//! UBSan's checks are inserted by clang's code generation, not by an LLVM pass, so they cannot be
//! added to the analysed bitcode: the C source is compiled again with
//! `-fsanitize=address,undefined -fno-sanitize-recover=all` and LLVM's passes off (so the
//! bitcode carries UBSan's checks and ASan's function attributes, not yet ASan's
//! instrumentation, which would double if it ran again), loaded with the same function and
//! target (which inserts the same target markers), and built as the
//! [`Flavour::Sanitized`] replay program: ASan's pass runs on the code, every witness buffer is
//! an allocation of exactly its length (reading one byte past it is reported, where the plain
//! replay's arena reads a zero), and the program is linked dynamically with both runtimes and
//! run in the usual sandbox with its shared libraries in the jail.
//!
//! The first undefined operation ends the run with the sanitizer's report on standard error; a
//! run that enters the target first did not rely on any (what happens after the target does not
//! matter to reachability). UBSan's reports carry their source location; ASan's stack frames
//! are module offsets (the jail has no symbolizer), symbolized here with `llvm-symbolizer`
//! against the executable, the first frame in the user's source naming the place.

use super::{Flavour, Limits, Replayer};
use crate::error::{Error, Result};
use crate::load::{self, LoadOptions, TargetSpec};
use crate::witness::Witness;
use std::path::Path;
use std::time::{Duration, Instant};

/// The clang flags of the sanitized build.
const UB_COMPILE_FLAGS: &[&str] = &["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-Xclang", "-disable-llvm-passes"];

/// An undefined operation the witness relies on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UbFinding {
    /// What UBSan calls it: `signed integer overflow`, `shift exponent 40 is too large ...`,
    /// `division by zero`, `index 9 out of bounds for type 'int[8]'`, ...; or ASan:
    /// `heap-buffer-overflow` (past a buffer), `stack-buffer-overflow`, `null pointer
    /// dereference`, ...
    pub operation: String,
    /// `file:line:column` of the operation, as UBSan reports it (ASan: symbolized; `?` when the
    /// executable has no debug information for it).
    pub location: String,
    /// The sanitizer's message (UBSan's line; ASan's error line and access line).
    pub message: String,
    /// Which sanitizer saw it: `UBSan` or `ASan`.
    pub sanitizer: &'static str,
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
    let flags: Vec<String> = options.cflags.iter().cloned().chain(UB_COMPILE_FLAGS.iter().map(|f| f.to_string())).collect();
    let bc = load::input::compile_c_with(source, dir.path(), "ub-", &flags, None)?;
    // The sanitised bitcode, not the batch's shared module.
    let options = LoadOptions { module_cache: None, ..options.clone() };
    let loaded = load::load_with(&bc, function, target, &options)?;
    let rp = Replayer::build(&loaded, false, Flavour::Sanitized)?;
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
    tracing::debug!(status = %run.status, reached = ?run.reached, %stderr, "sanitized run");
    if run.reached.is_some() {
        return Ok(UbCheck::Clean);
    }
    let source_name = source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(match parse_report(&stderr).or_else(|| parse_asan_report(&stderr, &|offsets| symbolize(rp.exe_path(), offsets), &source_name)) {
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
    Some(UbFinding { operation, location: location.trim().to_string(), message, sanitizer: "UBSan" })
}

/// The first AddressSanitizer error in `stderr`: its kind, the access, and the place of the
/// first stack frame in the user's source (`source_name`, else the first that symbolizes).
/// `symbolize` maps module offsets of the executable to `file:line:column` each (`None` where
/// it knows no place).
pub fn parse_asan_report(stderr: &str, symbolize: &dyn Fn(&[u64]) -> Vec<Option<String>>, source_name: &str) -> Option<UbFinding> {
    let lines: Vec<&str> = stderr.lines().collect();
    let at = lines.iter().position(|l| l.contains("ERROR: AddressSanitizer: "))?;
    let error = lines[at].split_once("ERROR: AddressSanitizer: ")?.1.trim();
    let kind = error.split_whitespace().next().unwrap_or("memory error");
    // A fault on the zero page is a null dereference (ASan says SEGV, with a hint).
    let null = kind == "SEGV" && lines[at..].iter().take(4).any(|l| l.contains("address points to the zero page"));
    let operation = if null { "null pointer dereference".to_string() } else { kind.to_string() };
    // ASan prefixes some lines with `==PID==`.
    let unprefixed = |l: &str| -> String {
        let l = l.trim();
        l.strip_prefix("==").and_then(|r| r.split_once("==")).map_or(l, |(_, rest)| rest).to_string()
    };
    let access = lines[at + 1..].iter().map(|l| unprefixed(l)).find(|l| l.starts_with("READ of") || l.starts_with("WRITE of") || l.starts_with("The signal is caused by"));
    let message = match access {
        Some(a) => format!("{error}; {}", a.trim_end_matches('.')),
        None => error.to_string(),
    };
    // Frames of the first stack (up to the blank line after it): `#N 0xPC
    // (/proc/self/exe+0xOFFSET)` or `(/prog+0xOFFSET)`; those in the executable, symbolized at once.
    let mut offsets = vec![];
    let mut in_stack = false;
    for l in &lines[at + 1..] {
        let l = l.trim();
        if l.is_empty() && in_stack {
            break;
        }
        if !l.starts_with('#') {
            continue;
        }
        in_stack = true;
        let Some((module, off)) = l.split('(').filter_map(|m| m.split_once(')')).find_map(|(m, _)| m.rsplit_once("+0x")) else { continue };
        if module.ends_with("/exe") || module.ends_with("/prog") {
            offsets.extend(u64::from_str_radix(off, 16).ok());
        }
    }
    let places: Vec<String> = if offsets.is_empty() { vec![] } else { symbolize(&offsets).into_iter().flatten().collect() };
    let location = places
        .iter()
        .find(|p| !source_name.is_empty() && p.split(':').next().is_some_and(|f| f.ends_with(source_name)))
        .or(places.first())
        .cloned()
        .unwrap_or_else(|| "?".into());
    Some(UbFinding { operation, location, message, sanitizer: "ASan" })
}

/// `file:line:column` of each module offset of `exe`, in one run of `llvm-symbolizer` (ASan
/// prints frames' return addresses minus one, which are still in the call's line). Its answer
/// per address: the function, the place, a blank line.
fn symbolize(exe: &Path, offsets: &[u64]) -> Vec<Option<String>> {
    let out = std::process::Command::new(crate::load::llvm_tool("llvm-symbolizer"))
        .arg(format!("--obj={}", exe.display()))
        .args(offsets.iter().map(|o| format!("0x{o:x}")))
        .output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    tracing::debug!(?offsets, %text, "symbolized");
    let mut places: Vec<Option<String>> =
        text.split("\n\n").filter(|b| !b.trim().is_empty()).map(|b| b.lines().nth(1).map(str::trim).filter(|p| !p.starts_with("??")).map(str::to_string)).collect();
    places.resize(offsets.len(), None);
    places
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

    #[test]
    fn asan_reports_are_symbolized_at_the_first_frame_in_the_source() {
        let out = "==4==WARNING: reading executable name failed with errno 2\n\
                   =================================================================\n\
                   ==4==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x502000000013 at pc 0x5 bp 0x7 sp 0x7\n\
                   READ of size 1 at 0x502000000013 thread T0\n\
                   \x20   #0 0x55e98ad81b78  (/proc/self/exe+0x10ba10) (BuildId: 3c)\n\
                   \x20   #1 0x55e98ad81a91  (/proc/self/exe+0x10bab0) (BuildId: 3c)\n\
                   \x20   #2 0x7f6b6437f249  (/lib/x86_64-linux-gnu/libc.so.6+0x27249) (BuildId: 93)\n\
                   \n\
                   0x502000000013 is located 0 bytes after 3-byte region\n\
                   \x20   #0 0x55e98ad81000  (/proc/self/exe+0xcb5cf) (BuildId: 3c)\n";
        let places = |offs: &[u64]| {
            offs.iter()
                .map(|off| match off {
                    0x10ba10 => Some("/usr/src/compiler-rt/asan_interceptors.cpp:12:3".to_string()),
                    0x10bab0 => Some("/tmp/prog.c:7:14".to_string()),
                    _ => None,
                })
                .collect()
        };
        let f = parse_asan_report(out, &places, "prog.c").expect("a report");
        assert_eq!(f.operation, "heap-buffer-overflow");
        assert_eq!(f.location, "/tmp/prog.c:7:14");
        assert!(f.message.ends_with("READ of size 1 at 0x502000000013 thread T0"), "{}", f.message);
        // Without a frame in the source, the first frame that symbolizes.
        assert_eq!(parse_asan_report(out, &places, "other.c").unwrap().location, "/usr/src/compiler-rt/asan_interceptors.cpp:12:3");
        let segv = "==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x1 bp 0x2 sp 0x3 T0)\n\
                    ==1==The signal is caused by a READ memory access.\n\
                    ==1==Hint: address points to the zero page.\n\
                    \x20   #0 0x1  (/proc/self/exe+0x10) (BuildId: 3c)\n";
        let n = parse_asan_report(segv, &|o| vec![None; o.len()], "prog.c").unwrap();
        assert_eq!((n.operation.as_str(), n.location.as_str()), ("null pointer dereference", "?"));
        assert_eq!(parse_asan_report("hit 1\n", &places, "prog.c"), None);
    }
}
