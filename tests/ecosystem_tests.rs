//! Results where other tools read them: SARIF 2.1.0 and SV-COMP witnesses (format 2.0) checked
//! against their published schemas (Python's jsonschema in a venv under the target directory),
//! the HTML report of a batch rendered by headless Chromium, and shards merged back into the
//! batch they split.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROG: &str = "int classify(int x, int y) {
  int r = 0;
  if (x > 10) {
    r = 1;
    if (y == x * 2)
      r = 2;
  } else {
    if (x > 20)
      r = 3;
  }
  return r;
}
";

const MAIN: &str = "extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);
int main(void) {
  int x = __VERIFIER_nondet_int();
  if (x == 42)
    reach_error();
  if (x > 5 && x < 3)
    reach_error();
  return 0;
}
";

/// A Python with jsonschema and PyYAML: a venv kept under the target directory, made once.
/// Failing to make it fails the test (a schema check must never be skipped).
fn python() -> PathBuf {
    static READY: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = ready.as_ref() {
        return p.clone();
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ecosystem-venv");
    let py = venv.join("bin/python");
    let works = |py: &Path| Command::new(py).args(["-c", "import jsonschema, yaml"]).status().is_ok_and(|s| s.success());
    if !works(&py) {
        let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status();
        assert!(made.is_ok_and(|s| s.success()), "python3 -m venv {} failed: the schema checks need Python 3 with venv", venv.display());
        let pip = Command::new(venv.join("bin/pip")).args(["install", "-q", "jsonschema", "pyyaml"]).status();
        assert!(pip.is_ok_and(|s| s.success()), "pip install jsonschema pyyaml into {} failed", venv.display());
        assert!(works(&py), "{} cannot import jsonschema and yaml", py.display());
    }
    *ready = Some(py.clone());
    py
}

/// Validates `doc` (JSON, or YAML when `yaml`) against `schema` (a file in tests/data), and
/// checks that the validator rejects the document with `breaking` (Python statements on `bad`,
/// a copy) applied: a validator that accepts anything proves nothing.
fn validate(schema: &str, doc: &Path, yaml: bool, breaking: &str) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(schema);
    let script = format!(
        "import sys, json, copy, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
doc = yaml.safe_load(text) if {yaml} else json.loads(text)
cls = jsonschema.validators.validator_for(schema)
v = cls(schema, format_checker=cls.FORMAT_CHECKER)
errors = [e.message for e in v.iter_errors(doc)]
if errors:
    print('invalid:', errors[:5]); sys.exit(1)
bad = copy.deepcopy(doc)
{breaking}
if v.is_valid(bad):
    print('the broken copy validates too'); sys.exit(1)
print('valid')
",
        yaml = if yaml { "True" } else { "False" }
    );
    let out = Command::new(python()).arg("-c").arg(&script).arg(&schema).arg(doc).output().unwrap();
    assert!(
        out.status.success(),
        "{} against {}: {}{}",
        doc.display(),
        schema.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `(target_spec, verdict)` of each target of a batch report, in order.
fn verdicts(batch: &Value) -> Vec<(String, String)> {
    batch["targets"].as_array().unwrap().iter().map(|t| (t["target_spec"].as_str().unwrap().to_string(), t["verdict"].as_str().unwrap().to_string())).collect()
}

fn batch(p: &CProgram, extra: &[&str]) -> Value {
    let mut args = vec!["--function", "classify", "--cover", "--timeout", "10"];
    args.extend_from_slice(extra);
    json_report(&p.path, &args)
}

#[test]
fn sarif_of_a_cover_batch_validates_and_names_each_target_line() {
    let p = c_program("classify", PROG);
    let sarif = p.dir.path().join("out.sarif");
    let b = batch(&p, &["--sarif", sarif.to_str().unwrap()]);
    validate("sarif-schema-2.1.0.json", &sarif, false, "bad['runs'][0]['results'][0]['level'] = 'fatal'");
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    let targets = b["targets"].as_array().unwrap();
    assert_eq!(results.len(), targets.len(), "one result per target");
    let mut placed = 0;
    for (t, r) in targets.iter().zip(results) {
        assert_eq!(r["properties"]["target"], t["target_spec"]);
        assert_eq!(r["ruleId"], t["verdict"], "{r:#}");
        let Some(location) = t["location"].as_str() else { continue };
        let (file, line) = location.rsplit_once(':').unwrap();
        let phys = &r["locations"][0]["physicalLocation"];
        let uri = phys["artifactLocation"]["uri"].as_str().unwrap();
        assert!(file.ends_with(uri.trim_start_matches("file://")) && uri.ends_with("classify.c"), "{uri} is not {file}");
        assert_eq!(phys["region"]["startLine"].to_string(), line, "{r:#}");
        assert!(phys["region"]["startColumn"].as_u64().is_some(), "{r:#}");
        if t["verdict"] == "reachable" {
            assert!(r["properties"]["witness"]["inputs"].is_array(), "witness inputs in properties: {r:#}");
            assert!(r["codeFlows"][0]["threadFlows"][0]["locations"].as_array().unwrap().len() >= 2, "{r:#}");
        }
        placed += 1;
    }
    // Every block with a debug line is named by file:line (one `if.end` block holds only a
    // branch without a line).
    assert!(placed + 1 >= targets.len(), "targets without file:line: {b:#}");
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().iter().filter(|r| r["ruleId"] == "unreachable").count(), 1);
}

#[test]
fn html_report_marks_each_analysed_line_and_renders_in_chromium() {
    let p = c_program("classify", PROG);
    let dir = p.dir.path().join("html");
    let b = batch(&p, &["--html", dir.to_str().unwrap()]);
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for line in PROG.lines() {
        assert!(page.contains(&line.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")), "source line missing: {line}");
    }
    let mut lines: Vec<&str> = b["targets"].as_array().unwrap().iter().filter_map(|t| t["location"].as_str()).collect();
    lines.sort();
    lines.dedup();
    assert_eq!(page.matches("data-verdict=").count(), lines.len(), "one mark per analysed line");
    assert!(page.contains("data-verdict=\"unreachable\"") && page.contains("data-verdict=\"reached\""));
    assert!(page.contains("witness: x = "), "a reached line shows its witness");
    assert!(!page.contains("http://") && !page.contains("https://") && !page.contains("<script"), "offline: no network assets");
    // A real browser draws it: the screenshot is no blank page.
    let chromium = ["chromium", "chromium-browser"].into_iter().find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()));
    let chromium = chromium.expect("no chromium: `make test-deps` installs Debian's chromium");
    let shot = p.dir.path().join("shot.png");
    let out = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1000,700"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", dir.join("index.html").display()))
        .output()
        .unwrap();
    assert!(shot.exists(), "no screenshot: {}", String::from_utf8_lossy(&out.stderr));
    // The PNG's pixels, decoded: a page of one colour gives a handful of distinct bytes.
    let script = "import sys, zlib, struct
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'\\x89PNG\\r\\n\\x1a\\n'
i, idat = 8, b''
while i < len(d):
    n, kind = struct.unpack('>I4s', d[i:i+8])
    if kind == b'IDAT': idat += d[i+8:i+8+n]
    i += 12 + n
raw = zlib.decompress(idat)
print(len(set(raw)), len(raw))";
    let out = Command::new(python()).arg("-c").arg(script).arg(&shot).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let distinct: usize = text.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(distinct > 32, "the screenshot looks blank ({text}, {})", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn witnesses_of_both_kinds_validate_against_the_published_schemas() {
    let p = c_program("task", MAIN);
    let file = p.path.to_str().unwrap();
    let violation = p.dir.path().join("violation.yml");
    let correctness = p.dir.path().join("correctness.yml");
    let r = json_report(&p.path, &["--function", "main", "--line", &format!("{file}:6"), "--timeout", "10", "--witness", violation.to_str().unwrap()]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let r = json_report(&p.path, &["--function", "main", "--line", &format!("{file}:8"), "--timeout", "10", "--witness", correctness.to_str().unwrap()]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    validate("svwitness-2.0-violation.schema.json", &violation, true, "bad[0]['content'][0]['segment'][0]['waypoint']['action'] = 'avoid'");
    validate("svwitness-2.0-correctness.schema.json", &correctness, true, "bad[0]['content'] = []");
    let v = std::fs::read_to_string(&violation).unwrap();
    assert!(v.contains("entry_type: violation_sequence") && v.contains("type: target") && v.contains("line: 6"), "{v}");
    assert!(v.contains(&format!("\"{file}\"")), "the task's file as given: {v}");
    let c = std::fs::read_to_string(&correctness).unwrap();
    assert!(c.contains("entry_type: invariant_set") && c.contains("line: 8"), "{c}");
    // An unknown verdict writes no witness and says so; the run still succeeds.
    let none = p.dir.path().join("none.yml");
    let out = run_on(&p.path, &["--function", "main", "--line", &format!("{file}:6"), "--engine", "chc", "--timeout", "0.3", "--witness", none.to_str().unwrap()]);
    if !none.exists() {
        assert!(String::from_utf8_lossy(&out.stderr).contains("no witness written"));
    }
}

#[test]
fn two_shards_merged_equal_the_unsharded_batch() {
    let p = c_program("classify", PROG);
    let whole = batch(&p, &[]);
    let mut files = vec![];
    for k in 1..=2 {
        let b = batch(&p, &["--shard", &format!("{k}/2")]);
        assert_eq!(b["shard"], format!("{k}/2"));
        assert!(b["targets"].as_array().unwrap().len() < whole["targets"].as_array().unwrap().len());
        let f = p.dir.path().join(format!("shard{k}.json"));
        std::fs::write(&f, b.to_string()).unwrap();
        files.push(f.to_str().unwrap().to_string());
    }
    let sarif = p.dir.path().join("merged.sarif");
    let mut args = vec!["merge", "--json", "--sarif", sarif.to_str().unwrap()];
    args.extend(files.iter().map(String::as_str));
    let out = apc_llvm(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdicts(&merged), verdicts(&whole));
    assert_eq!(merged["summary"], whole["summary"]);
    validate("sarif-schema-2.1.0.json", &sarif, false, "bad['version'] = '2.0'");
    // One shard alone is not the batch: exit 3, naming what is missing.
    let out = apc_llvm(&["merge", &files[0]]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("in no report"));
    // The same shard twice is refused.
    assert_bad_input(&apc_llvm(&["merge", &files[0], &files[0]]), "in two reports");
}

#[test]
fn bad_shards_and_misplaced_outputs_are_bad_input() {
    let p = c_program("classify", PROG);
    for bad in ["0/2", "3/2", "1/0", "x", "2"] {
        assert_bad_input(&run_on(&p.path, &["--function", "classify", "--cover", "--shard", bad]), "--shard");
    }
    assert_bad_input(&run_on(&p.path, &["--function", "classify", "--block", "entry", "--shard", "1/2"]), "--shard needs a batch");
    assert_bad_input(&run_on(&p.path, &["--function", "classify", "--block", "entry", "--html", "h"]), "--html needs a batch");
    assert_bad_input(&run_on(&p.path, &["--function", "classify", "--cover", "--witness", "w.yml"]), "--witness needs one target");
    assert_bad_input(&run_on(&p.path, &["--function", "classify", "--cover", "--sarif", "/nonexistent/dir/x.sarif"]), "--sarif");
    assert_bad_input(&apc_llvm(&["merge", "/nonexistent.json"]), "merge");
}

/// The guide's recipe: the shards run by GNU parallel, then merged.
#[test]
fn the_gnu_parallel_recipe_of_the_guide_merges_to_the_whole_batch() {
    let p = c_program("classify", PROG);
    let whole = batch(&p, &[]);
    assert!(Command::new("parallel").arg("--version").output().is_ok_and(|o| o.status.success()), "no GNU parallel: `make test-deps` installs it");
    let bin = apc_llvm_bin();
    let recipe = format!(
        "parallel --halt now,fail=1 -j 2 '{bin} classify.c --function classify --cover --timeout 10 --json --shard {{}}/3 > shard-{{}}.json' ::: 1 2 3 && {bin} merge --json shard-*.json > batch.json",
        bin = bin.display()
    );
    let out = Command::new("sh").arg("-c").arg(&recipe).current_dir(p.dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(p.dir.path().join("batch.json")).unwrap()).unwrap();
    assert_eq!(verdicts(&merged), verdicts(&whole));
}
