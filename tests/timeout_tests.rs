//! A replay that never ends: killed within --timeout, nothing left behind. Kept in its own test
//! binary so that no other test's sandboxed runs exist while it looks for leftovers.

mod common;
use common::*;
use std::time::{Duration, Instant};

#[test]
fn a_run_that_never_ends_is_killed_within_the_timeout() {
    // The loop never terminates (i flips between 1 and 9), and the APC is satisfiable: no
    // invariant template tells 5 from 1 and 9. (The paper's incompleteness example, i flipping
    // between 1 and 2 below 3, is now proved: `i ≤ 2` is an invariant.)
    let src = "extern void reach_error(void);\n\
               void f(void) { int i = 1; while (i != 5) i = 10 - i; reach_error(); }";
    let p = c_program("inf", src);
    let start = Instant::now();
    // The witness engines only: the default portfolio's late Horn-clause prover proves the
    // target unreachable (`i ∈ {1, 9}` is inductive), and this test is about the replay.
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--timeout", "3", "--engine", "apc,dse,fuzz"]);
    let took = start.elapsed();
    assert_eq!(r["verdict"], "unknown", "{r:#}");
    if r["witness"].is_null() {
        // On a loaded machine the sandbox's teardown can outlast the grace period: the backstop
        // answers for the analysis, naming the stage.
        assert!(r["reason"].as_str().unwrap().contains("time budget"), "{r:#}");
    } else {
        assert_eq!(r["witness"]["reached"], false);
        assert_eq!(r["witness"]["run"], "timeout");
    }
    assert!(took < Duration::from_secs(6), "took {took:?}");
    // No process of the run is left behind.
    let leftover = std::process::Command::new("pgrep").args(["-f", "^/prog$"]).output().unwrap();
    assert!(leftover.stdout.is_empty(), "left behind: {}", String::from_utf8_lossy(&leftover.stdout));
}
