//! `--timeout` holds in stages before the solver: a Csmith program (found by the soundness
//! campaign) whose path enumeration walks exponentially many paths that reach no target ran
//! far past its budget; it now ends `unknown` within it.

mod common;
use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

#[test]
fn path_enumeration_stops_at_the_deadline() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions/overrun_paths.c");
    let dir = tempfile::tempdir().unwrap();
    let bc = dir.path().join("overrun_paths.bc");
    let out = std::process::Command::new(clang())
        .args(["-g", "-O0", "-Xclang", "-disable-O0-optnone", "-fno-discard-value-names", "-w", "-I/usr/include/csmith", "-emit-llvm", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&bc)
        .output()
        .expect("run clang");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let start = Instant::now();
    let r = json_report(&bc, &["--function", "main", "--block", "for.end29", "--timeout", "4"]);
    let took = start.elapsed();
    // The APC never gets built in time; the fuzzer (keeping its priority once it is the last
    // witness search) may reach the target within the budget, with a native run.
    match r["verdict"].as_str() {
        Some("unknown") => assert!(r["reason"].as_str().unwrap().contains("time budget"), "{r:#}"),
        Some("reachable") => assert_eq!(r["witness"]["reached"], true, "{r:#}"),
        _ => panic!("neither unknown nor a replayed witness: {r:#}"),
    }
    assert!(took < Duration::from_secs(12), "took {took:?}");
}

/// Counting loops nested `depth` deep, each up to 0xfffffffe, the target in the innermost body
/// behind a test on the accumulated sum (the shape of scripts/stress).
fn nested_loops(depth: usize) -> String {
    let mut s = String::from("void reach(void);\nint f(unsigned n) {\n  unsigned s = 0;\n");
    for d in 0..depth {
        s += &format!("for (unsigned i{d} = 0; i{d} < 0xfffffffeu; i{d}++) {{\n");
    }
    s += "s += n; if (s == 12345u) { reach(); return 1; }\n";
    s += &"}\n".repeat(depth);
    s + "  return 0;\n}\n"
}

/// Compiles `src`, runs it with a 2 s budget (and `extra`), and asserts the run ended near the
/// budget with a report: any verdict but a false proof; `unknown` names a stage or a cause.
fn ends_within_two_seconds(name: &str, src: &str, extra: &[&str]) {
    let p = c_program(name, src);
    let bc = compile_bitcode(&p);
    let mut args = vec!["--function", "f", "--call", "reach", "--timeout", "2"];
    args.extend_from_slice(extra);
    let start = Instant::now();
    let r = json_report(&bc, &args);
    let took = start.elapsed();
    // The contract is budget + 0.5 s; the slack on top is for a loaded test machine.
    assert!(took < Duration::from_secs(4), "took {took:?}: {r:#}");
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    if r["verdict"] == "unknown" {
        let why = r["reason"].as_str().unwrap();
        assert!(why.contains("time budget") || why.contains("while") || why.contains("gave no answer"), "{r:#}");
    }
}

#[test]
fn thirty_nested_loops_end_within_the_budget() {
    ends_within_two_seconds("nested30", &nested_loops(30), &[]);
}

#[test]
fn a_huge_unfolding_bound_ends_within_the_budget() {
    ends_within_two_seconds("nested5", &nested_loops(5), &["--unfold", "4294967295", "--engine", "apc"]);
}

/// A 500 KB straight-line function: path enumeration and the APC grow with it.
#[test]
fn a_large_straight_line_function_ends_within_the_budget() {
    let mut src = String::from("void reach(void);\nint f(int x) {\n  int r = 0;\n");
    let mut k = 0;
    while src.len() < 500_000 {
        src += &format!("  if (x == {k}) r += {};\n", k % 97);
        k += 1;
    }
    src += "  if (r == 3) { reach(); return 1; }\n  return 0;\n}\n";
    ends_within_two_seconds("line500k", &src, &[]);
}

/// `--max-memory`: a run that would grow past the bound ends `unknown`, saying so.
#[test]
fn the_memory_bound_ends_a_run_that_grows_past_it() {
    let p = c_program("nested10", &nested_loops(10));
    let bc = compile_bitcode(&p);
    let r = json_report(&bc, &["--function", "f", "--call", "reach", "--timeout", "30", "--max-memory", "64", "--engine", "apc"]);
    assert_eq!(r["verdict"], "unknown", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("memory bound of 64 MiB"), "{r:#}");
}

#[test]
fn a_nonsense_memory_bound_is_bad_input() {
    let p = c_program("tiny", "int f(int x) { if (x) return 1; return 0; }");
    let out = run_on(&p.path, &["--function", "f", "--line", "tiny.c:1", "--max-memory", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-memory"));
}

