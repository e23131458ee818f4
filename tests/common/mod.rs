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

/// Runs the real binary. Every integration test runs it under glibc's heap checks: a corrupted
/// heap (issue 8: Z3 used after its owner was gone) aborts the run and fails the test, at a cost
/// of a few percent.
pub fn apc_llvm(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_apc-llvm"));
    cmd.args(args);
    if Path::new(MALLOC_DEBUG).exists() && std::env::var_os("APC_NO_MALLOC_CHECK").is_none() {
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
    let mut all = args.to_vec();
    all.push("--json");
    let out = run_on(path, &all);
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
