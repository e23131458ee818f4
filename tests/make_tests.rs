//! Make integration (scripts/apc.mk, scripts/apc-run) on the examples/apc-demo project, copied
//! to a fresh directory as a clean checkout would have it: `make apc`, `make apc-check` and
//! `make apc-tests` work, and after an edit that changes behaviour the kept tests fail.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A copy of examples/apc-demo (its tracked files only).
fn demo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for f in ["Makefile", "app.c", "util.c", "util.h", "apc-targets"] {
        std::fs::copy(repo().join("examples/apc-demo").join(f), d.path().join(f)).unwrap();
    }
    d
}

fn make(dir: &Path, goal: &str) -> Output {
    let out = Command::new("make")
        .arg("-C")
        .arg(dir)
        .arg(goal)
        .arg(format!("APC_MK={}", repo().join("scripts/apc.mk").display()))
        .arg(format!("APC_LLVM={}", apc_llvm_bin().display()))
        .arg("APC_TIMEOUT=30")
        .output()
        .expect("run make");
    eprintln!("make {goal}:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_demo_projects_targets_are_analysed_checked_and_kept_as_tests() {
    let d = demo();
    let apc = make(d.path(), "apc");
    assert!(apc.status.success());
    let lines: Vec<String> = stdout(&apc).lines().filter(|l| l.contains("line:") || l.contains("call:")).map(str::to_string).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].contains("parse_num") && lines[0].contains(" reachable"), "{lines:?}");
    assert!(lines[1].contains("set_level") && lines[1].contains(" reachable"), "{lines:?}");
    assert!(lines[2].contains("call:abort") && lines[2].contains("unreachable"), "{lines:?}");
    // The project's own build is untouched: no `app`, bitcode only under .apc/.
    assert!(!d.path().join("app").exists());
    assert!(d.path().join(".apc/program.bc").exists());

    let check = make(d.path(), "apc-check");
    assert!(check.status.success());
    assert_eq!(stdout(&check).lines().filter(|l| l.starts_with("ok ")).count(), 3);

    let tests = make(d.path(), "apc-tests");
    assert!(tests.status.success());
    assert_eq!(stdout(&tests).lines().filter(|l| l.starts_with("PASS ")).count(), 2);
    assert!(d.path().join("apc-tests/parse_num-line_util.c_18").is_dir());

    // A recorded verdict that no longer holds fails apc-check.
    let targets = std::fs::read_to_string(d.path().join("apc-targets")).unwrap();
    std::fs::write(d.path().join("apc-targets"), targets.replace("call:abort      unreachable", "call:abort      reachable")).unwrap();
    let check = make(d.path(), "apc-check");
    assert!(!check.status.success());
    assert!(stdout(&check).lines().any(|l| l.starts_with("FAIL") && l.contains("call:abort")), "{}", stdout(&check));
    std::fs::write(d.path().join("apc-targets"), targets).unwrap();

    // An edit that changes what parse_num does with the kept witness (4711): both kept tests fail.
    let util = std::fs::read_to_string(d.path().join("util.c")).unwrap();
    std::fs::write(d.path().join("util.c"), util.replace("value == 4711", "value == 4712")).unwrap();
    let tests = make(d.path(), "apc-tests");
    assert!(!tests.status.success());
    assert_eq!(stdout(&tests).lines().filter(|l| l.starts_with("FAIL ")).count(), 2, "{}", stdout(&tests));
}

#[test]
fn expect_and_fail_on_set_the_exit_status() {
    let p = c_program("exp", "int f(int x) {\n  if (x == 3)\n    return 1;\n  return 0;\n}\n");
    let ok = run_on(&p.path, &["--function", "f", "--line", "exp.c:3", "--expect", "reachable", "--timeout", "20"]);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    let differs = run_on(&p.path, &["--function", "f", "--line", "exp.c:3", "--expect", "unreachable,unknown", "--timeout", "20"]);
    assert_eq!(differs.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&differs.stderr).contains("verdict reachable, expected unreachable or unknown"));
    let fail = run_on(&p.path, &["--function", "f", "--line", "exp.c:3", "--fail-on", "reachable", "--timeout", "20"]);
    assert_eq!(fail.status.code(), Some(3));
    assert_bad_input(&run_on(&p.path, &["--function", "f", "--line", "exp.c:3", "--expect", "maybe"]), "--expect");
}

#[test]
fn emit_instrumented_writes_only_the_marked_bitcode() {
    let p = c_program("ins", "int f(int x) {\n  if (x == 3)\n    return 1;\n  return 0;\n}\n");
    let out = p.dir.path().join("f.bc");
    let o = run_on(&p.path, &["--function", "f", "--line", "ins.c:3", "--emit-instrumented", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let text = Command::new("llvm-dis-19").arg(&out).arg("-o").arg("-").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("__apc_target_hit"));
    // A bad target writes nothing.
    let bad = p.dir.path().join("g.bc");
    let o = run_on(&p.path, &["--function", "f", "--line", "ins.c:99", "--emit-instrumented", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!bad.exists());
}

/// `make apc-check` leaves JUnit XML (one testcase per target), `make apc-sarif` one SARIF log
/// of every target, and `APC_SHARD=K/N` analyses a share of the targets.
#[test]
fn junit_sarif_and_shards_of_the_make_fragment() {
    let d = demo();
    assert!(make(d.path(), "apc-check").status.success());
    let junit = std::fs::read_to_string(d.path().join(".apc/results/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let cases: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(cases.len(), 3, "{junit}");
    assert!(cases.iter().all(|c| c.children().all(|k| !k.is_element())), "no failure: {junit}");
    assert_eq!(doc.root_element().attribute("failures"), Some("0"));

    assert!(make(d.path(), "apc-sarif").status.success());
    let sarif: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.path().join(".apc/sarif/results.sarif")).unwrap()).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[2]["ruleId"], "unreachable");

    let out = Command::new("make")
        .arg("-C")
        .arg(d.path())
        .arg("apc")
        .arg(format!("APC_MK={}", repo().join("scripts/apc.mk").display()))
        .arg(format!("APC_LLVM={}", apc_llvm_bin().display()))
        .arg("APC_SHARD=2/2")
        .output()
        .unwrap();
    assert!(out.status.success());
    let analysed: Vec<String> = stdout(&out).lines().filter(|l| l.contains("line:") || l.contains("call:")).map(str::to_string).collect();
    assert_eq!(analysed.len(), 1, "the second of two shares of three targets: {analysed:?}");
    assert!(analysed[0].contains("line:app.c:9"), "{analysed:?}");
}
