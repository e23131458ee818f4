//! Many targets at once: `--cover` (every block of a function: a replayed test or a proof each)
//! `--all-calls F` (every call site of F on its own) and `--all-lines FILE` (every line with code).

mod common;
use common::*;

const DEAD_BODY: &str = "int h(unsigned char x) {\n  int n = 0;\n  while (x > 300) {\n    n++;\n    x--;\n  }\n  return n;\n}\n";

/// (target, verdict) of each entry of a batch report, in order.
fn targets_and_verdicts(r: &serde_json::Value) -> Vec<(String, String)> {
    r["targets"].as_array().unwrap().iter().map(|t| (t["target_spec"].as_str().unwrap().to_string(), t["verdict"].as_str().unwrap().to_string())).collect()
}

/// A function with a dead block and three live ones: three replayed tests and one proof, each
/// regression test written.
#[test]
fn cover_gives_a_test_per_live_block_and_a_proof_per_dead_one() {
    let p = c_program("cover", DEAD_BODY);
    let tests = tempfile::tempdir().unwrap();
    let out = run_on(&p.path, &["--function", "h", "--cover", "--timeout", "20", "--json", "--emit-tests", tests.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["summary"], serde_json::json!({"reachable": 3, "unreachable": 1, "unknown": 0}), "{r:#}");
    let verdict = |label: &str| r["targets"].as_array().unwrap().iter().find(|t| t["target_spec"] == format!("block {label}")).unwrap()["verdict"].clone();
    assert_eq!(verdict("while.body"), "unreachable", "{r:#}");
    for live in ["entry", "while.cond", "while.end"] {
        assert_eq!(verdict(live), "reachable", "{r:#}");
    }
    // A test of C sources is `T.c` with its target file `T.target`.
    let tests_written = std::fs::read_dir(tests.path()).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "target")).count();
    assert_eq!(tests_written, 3, "one regression test per reached block");
    let make = std::process::Command::new("make").arg("-s").arg("-C").arg(tests.path()).output().unwrap();
    assert!(make.status.success(), "{}{}", String::from_utf8_lossy(&make.stdout), String::from_utf8_lossy(&make.stderr));
    // The human report: one line per block and the summary.
    let out = run_on(&p.path, &["--function", "h", "--cover", "--timeout", "20"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("summary: 3 reachable (replayed), 1 unreachable (proved), 0 unknown"), "{text}");
    assert!(text.lines().any(|l| l.contains("block while.body") && l.contains("proof")), "{text}");
    // --fail-on applies to every verdict.
    let out = run_on(&p.path, &["--function", "h", "--cover", "--timeout", "20", "--fail-on", "unreachable"]);
    assert_eq!(out.status.code(), Some(3));
}

/// Every call site on its own: one reached, one dead.
#[test]
fn all_calls_analyses_each_call_site() {
    let src = "extern void reach_error(void);\nvoid f(int x) {\n  if (x == 7)\n    reach_error();\n  if (x > 5 && x < 3)\n    reach_error();\n}\n";
    let p = c_program("calls", src);
    let r = json_report(&p.path, &["--function", "f", "--all-calls", "reach_error", "--timeout", "20"]);
    let got = targets_and_verdicts(&r);
    assert_eq!(got.len(), 2, "{r:#}");
    assert_eq!(got[0].1, "reachable", "{r:#}");
    assert_eq!(got[1].1, "unreachable", "{r:#}");
    assert_bad_input(&run_on(&p.path, &["--function", "f", "--all-calls", "nothere"]), "--all-calls nothere: the module has no function 'nothere'");
}

/// `--targets FILE`: the listed targets, each on its own; a target the program lacks is an
/// unknown entry with the reason, a malformed line is bad input naming the line.
#[test]
fn a_targets_file_lists_the_targets() {
    let p = c_program("listed", DEAD_BODY);
    let list = p.dir.path().join("targets");
    std::fs::write(&list, "# the loop\nblock:while.body\nline:listed.c:7   # the return\n\nblock:nothere\n").unwrap();
    let r = json_report(&p.path, &["--function", "h", "--targets", list.to_str().unwrap(), "--timeout", "20"]);
    let verdicts: Vec<&str> = r["targets"].as_array().unwrap().iter().map(|t| t["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, vec!["unreachable", "reachable", "unknown"], "{r:#}");
    assert!(r["targets"][2]["reason"].as_str().unwrap().contains("no block labelled 'nothere'"), "{r:#}");
    std::fs::write(&list, "block:entry\nfunc:h\n").unwrap();
    assert_bad_input(&run_on(&p.path, &["--function", "h", "--targets", list.to_str().unwrap()]), "targets:2: 'func:h' is not a target");
}

/// `--jobs 2` analyses two targets at once: the same verdicts, in the same order, and the
/// regression tests of both workers in one directory.
#[test]
fn parallel_jobs_give_the_same_batch() {
    let p = c_program("cover", DEAD_BODY);
    let run = |jobs: &str, tests: &std::path::Path| -> serde_json::Value {
        let out = run_on(&p.path, &["--function", "h", "--cover", "--timeout", "20", "--json", "--jobs", jobs, "--emit-tests", tests.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (t1, t2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (one, two) = (run("1", t1.path()), run("2", t2.path()));
    let specs = |r: &serde_json::Value| -> Vec<(String, String)> {
        r["targets"].as_array().unwrap().iter().map(|t| (t["target_spec"].as_str().unwrap().to_string(), t["verdict"].as_str().unwrap().to_string())).collect()
    };
    assert_eq!(specs(&one), specs(&two));
    assert_eq!(two["summary"], serde_json::json!({"reachable": 3, "unreachable": 1, "unknown": 0}), "{two:#}");
    let tests_written = |d: &std::path::Path| std::fs::read_dir(d).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "target")).count();
    assert_eq!(tests_written(t2.path()), 3);
    let out = run_on(&p.path, &["--function", "h", "--cover", "--jobs", "0"]);
    assert_bad_input(&out, "--jobs");
}

/// `--all-lines FILE`: every line of the file with code, each on its own: the loop body's two
/// lines proved dead, the others replayed; a file the function has no code from is bad input.
#[test]
fn all_lines_analyses_every_line_with_code() {
    let p = c_program("lines", DEAD_BODY);
    let r = json_report(&p.path, &["--function", "h", "--all-lines", "lines.c", "--timeout", "20"]);
    let got = targets_and_verdicts(&r);
    let verdict = |line: u32| got.iter().find(|(t, _)| *t == format!("line lines.c:{line}")).map(|(_, v)| v.as_str());
    for dead in [4, 5] {
        assert_eq!(verdict(dead), Some("unreachable"), "{r:#}");
    }
    for live in [2, 3, 7] {
        assert_eq!(verdict(live), Some("reachable"), "{r:#}");
    }
    assert_eq!(verdict(6), None, "a line without code is no target: {r:#}");
    let numbers: Vec<u32> = got.iter().map(|(t, _)| t.rsplit(':').next().unwrap().parse().unwrap()).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "in line order: {r:#}");
    assert_bad_input(&run_on(&p.path, &["--function", "h", "--all-lines", "other.c"]), "--all-lines other.c: no code of 'h' or its callees comes from 'other.c'");
}
