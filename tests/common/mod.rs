//! Shared helpers for integration tests: write C to a temporary file, run the real `apc-llvm`
//! binary on it, and read its JSON report.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct CProgram {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

/// Writes `source` to `<tmp>/<name>.c`.
pub fn c_program(name: &str, source: &str) -> CProgram {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("{name}.c"));
    std::fs::write(&path, source).expect("write C source");
    CProgram { dir, path }
}

/// glibc's checking allocator (glibc >= 2.34 needs it preloaded for `MALLOC_CHECK_`).
const MALLOC_DEBUG: &str = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0";

/// The binary under test: `APC_LLVM_TEST_BIN` when set (e.g. the AddressSanitizer build of
/// `make asan`, see CONTRIBUTING.md "Memory checks"), cargo's `apc-llvm` otherwise.
pub fn apc_llvm_bin() -> PathBuf {
    match std::env::var_os("APC_LLVM_TEST_BIN") {
        Some(b) if !b.is_empty() => PathBuf::from(b),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_apc-llvm")),
    }
}

/// `APC_LLVM_TEST_WRAPPER` split on whitespace (e.g. `valgrind --error-exitcode=99 -q`): the
/// command every run of the binary under test goes through. Empty when unset.
pub fn apc_llvm_wrapper() -> Vec<String> {
    std::env::var("APC_LLVM_TEST_WRAPPER").unwrap_or_default().split_whitespace().map(String::from).collect()
}

/// Whether the binary under test is not cargo's, run directly: a sanitizer build or a wrapper
/// (valgrind) brings its own allocator, which glibc's preloaded debugging allocator would fight.
pub fn instrumented() -> bool {
    std::env::var_os("APC_LLVM_TEST_BIN").is_some_and(|b| !b.is_empty()) || !apc_llvm_wrapper().is_empty()
}

/// The command line that starts the binary under test: the wrapper's words, then the binary.
/// For tests that hand the binary to another program (`setpriv`, `sh -c`).
pub fn apc_llvm_argv() -> Vec<std::ffi::OsString> {
    let mut argv: Vec<std::ffi::OsString> = apc_llvm_wrapper().into_iter().map(Into::into).collect();
    argv.push(apc_llvm_bin().into());
    argv
}

/// With `APC_LLVM_TEST_BIN` and no `ASAN_OPTIONS` in the environment: `ASAN_OPTIONS` for an
/// AddressSanitizer build, leak detection off (Z3 and LLVM keep global caches; leaks are not what
/// this looks for) and exit status 86 on a report (1 is the tool's internal error). For any
/// command that starts the binary under test, also through `setpriv` or `sh`.
pub fn sanitizer_env(cmd: &mut Command) -> &mut Command {
    if std::env::var_os("APC_LLVM_TEST_BIN").is_some() && std::env::var_os("ASAN_OPTIONS").is_none() {
        cmd.env("ASAN_OPTIONS", "detect_leaks=0:exitcode=86");
    }
    cmd
}

/// A `Command` for the binary under test (through the wrapper, if any), with `sanitizer_env`.
pub fn apc_llvm_command() -> Command {
    let argv = apc_llvm_argv();
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    sanitizer_env(&mut cmd);
    cmd
}

/// Runs the binary under test. With cargo's binary run directly, every integration test runs it
/// under glibc's heap checks: a corrupted heap (such as Z3 used after its owner was gone) aborts
/// the run and fails the test, at a cost of a few percent. An instrumented binary or a wrapper
/// checks the heap itself (an error is a non-zero exit with the report on stderr).
pub fn apc_llvm(args: &[&str]) -> Output {
    apc_llvm_with_env(args, &[])
}

/// [`apc_llvm`] with more environment variables (an `APC_LLVM_TUNE_*` knob that pins one path).
pub fn apc_llvm_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = apc_llvm_command();
    cmd.args(args).envs(env.iter().copied());
    if !instrumented() && Path::new(MALLOC_DEBUG).exists() && std::env::var_os("APC_NO_MALLOC_CHECK").is_none() {
        cmd.env("LD_PRELOAD", MALLOC_DEBUG).env("MALLOC_CHECK_", "3").env("MALLOC_PERTURB_", "165");
    }
    cmd.output().expect("run apc-llvm")
}

pub fn run_on(path: &Path, args: &[&str]) -> Output {
    let mut all = vec![path.to_str().unwrap()];
    all.extend_from_slice(args);
    apc_llvm(&all)
}

/// Runs with `--json` and parses the report; panics with stderr when the run failed.
pub fn json_report(path: &Path, args: &[&str]) -> Value {
    json_report_with_env(path, args, &[])
}

/// [`json_report`] with more environment variables (see [`apc_llvm_with_env`]).
pub fn json_report_with_env(path: &Path, args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut all = vec![path.to_str().unwrap()];
    all.extend_from_slice(args);
    all.push("--json");
    let out = apc_llvm_with_env(&all, env);
    assert!(
        out.status.success(),
        "apc-llvm {args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

/// Compiles C and analyses it, returning the JSON report.
pub fn analyse(name: &str, source: &str, args: &[&str]) -> Value {
    let p = c_program(name, source);
    json_report(&p.path, args)
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array().expect("array").iter().map(|s| s.as_str().expect("string").to_string()).collect()
}

/// The loops of a report whose entry block is `entry`.
pub fn loops_entered_at<'a>(report: &'a Value, entry: &str) -> Vec<&'a Value> {
    report["loops"].as_array().unwrap().iter().filter(|l| l["entry"] == entry).collect()
}

/// Asserts a bad-input failure: exit status 2, one line on stderr containing `needle`, no panic.
pub fn assert_bad_input(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "expected exit status 2, stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "panic on bad input: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "expected one line, got: {stderr}");
    assert!(stderr.contains(needle), "stderr should mention '{needle}': {stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout for bad input");
}

/// clang-19 as the tool uses it.
pub fn clang() -> PathBuf {
    apc_llvm::load::clang_path()
}

/// Compiles `p` to bitcode beside it with the flags the README gives (`<name>.bc`).
pub fn compile_bitcode(p: &CProgram) -> PathBuf {
    let bc = p.path.with_extension("bc");
    let st = Command::new(clang())
        .args(["-g", "-O0", "-Xclang", "-disable-O0-optnone", "-fno-discard-value-names", "-emit-llvm", "-c"])
        .arg(&p.path)
        .arg("-o")
        .arg(&bc)
        .status()
        .expect("run clang");
    assert!(st.success(), "clang failed on {}", p.path.display());
    bc
}

/// Analyses `source` for a call of `reach_error` in `function`, with `extra` options.
pub fn reach(name: &str, source: &str, function: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--function", function, "--call", "reach_error"];
    args.extend_from_slice(extra);
    analyse(name, source, &args)
}

/// `reachable`, backed by a native run that entered the target.
pub fn assert_reachable(r: &Value) {
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["replayed"], true, "{r:#}");
    assert_eq!(r["witness"]["reached"], true, "{r:#}");
}

/// The witness's input named `name`.
pub fn input<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["witness"]["inputs"].as_array().and_then(|a| a.iter().find(|i| i["name"] == name)).unwrap_or_else(|| panic!("no input '{name}': {r:#}"))
}

/// The declarations the loop-invariant tests' programs rely on.
pub const VERIFIER_HEADER: &str = "extern void reach_error(void);\n\
                                   extern int __VERIFIER_nondet_int(void);\n\
                                   extern unsigned __VERIFIER_nondet_uint(void);\n";

/// Every loop's invariants, as the JSON report lists them.
pub fn invariants_of(r: &Value) -> Vec<String> {
    let loops = r["loops"].as_array().expect("loops");
    loops.iter().filter(|l| !l["invariants"].is_null()).flat_map(|l| strings(&l["invariants"])).collect()
}

/// The unreachable program (after [`VERIFIER_HEADER`]) is proven by the APC with invariants
/// (listed under its loop, one containing `shown`); the twin is reachable and replayed.
pub fn proven_and_twin(name: &str, unreachable: &str, twin: &str, shown: &str) {
    let r = reach(name, &format!("{VERIFIER_HEADER}{unreachable}"), "f", &["--engine", "apc", "--timeout", "30"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("loop invariant"), "{r:#}");
    let invariants = invariants_of(&r);
    assert!(invariants.iter().any(|i| i.contains(shown)), "an invariant with `{shown}` among {invariants:?}");
    let r = reach(&format!("{name}_twin"), &format!("{VERIFIER_HEADER}{twin}"), "f", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["replayed"], true, "{r:#}");
}
