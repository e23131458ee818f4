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
    assert_eq!(r["verdict"], "unknown", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("time budget"), "{r:#}");
    assert!(took < Duration::from_secs(12), "took {took:?}");
}
