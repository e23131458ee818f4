//! Wrong verdicts the soundness campaign (`scripts/soundness`) found, reduced, kept as they were
//! found (`tests/regressions/campaign_*.c`). Each is checked against the native truth the
//! campaign established; the classes have reachable/unreachable twins in `soundness_tests.rs`.

mod common;
use common::*;
use std::path::Path;

fn run(file: &str, target: &[&str]) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions").join(file);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(file);
    std::fs::copy(&path, &copy).unwrap();
    let mut args = vec!["--function", "f", "--timeout", "20"];
    args.extend_from_slice(target);
    json_report(&copy, &args)
}

/// Natively hit: never `unreachable`; a `reachable` must come from a replay that reached it.
fn natively_hit(file: &str, line: u32) {
    let spec = format!("{file}:{line}");
    let r = run(file, &["--line", &spec]);
    assert_ne!(r["verdict"], "unreachable", "{file}: {r:#}");
    if r["verdict"] == "reachable" {
        assert_eq!(r["witness"]["reached"], true, "{r:#}");
    }
}

#[test]
fn struct_field_pointer_phi() {
    // Hit natively for b = 5.
    natively_hit("campaign_3.c", 19);
    assert_eq!(run("campaign_3.c", &["--line", "campaign_3.c:19"])["verdict"], "reachable");
}

#[test]
fn pointer_equality_across_objects() {
    natively_hit("campaign_4.c", 9);
}

#[test]
fn unknown_call_in_a_loop_condition() {
    natively_hit("campaign_8.c", 13);
}

#[test]
fn two_unknown_results_are_not_one_value() {
    natively_hit("campaign_9.c", 13);
}

#[test]
fn exit_before_a_call_target_in_the_same_block() {
    // target_7 is never called: quit() exits first.
    let r = run("campaign_7.c", &["--call", "target_7"]);
    assert_ne!(r["verdict"], "reachable", "{r:#}");
}
