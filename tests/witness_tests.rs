//! Witnesses: native replay verdicts and the regression tests of `--emit-tests`, built and run
//! with plain clang outside apc-llvm.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn dtd() -> roxmltree::ParsingOptions {
    roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() }
}

/// Analyses with `--emit-tests DIR` and returns the report, and the program, which the tests
/// include (they build against the current source).
fn emit(name: &str, src: &str, function: &str, dir: &Path) -> (Value, CProgram) {
    let p = c_program(name, src);
    let r = json_report(&p.path, &["--function", function, "--call", "reach_error", "--emit-tests", dir.to_str().unwrap()]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    (r, p)
}

/// The emitted test's C file.
fn emitted_test(r: &Value) -> PathBuf {
    let files = strings(&r["tests"]);
    files.iter().find(|f| f.ends_with(".c") && !f.ends_with(".env.c")).expect("a .c test").into()
}

/// Builds and checks the emitted test `c` with plain make in its directory (against the
/// program's current source); 0 when it passes.
fn build_and_run(c: &Path) -> i32 {
    let stem = c.file_stem().unwrap().to_str().unwrap();
    let out = Command::new("make").arg("-s").arg("-C").arg(c.parent().unwrap()).arg(format!("{stem}.run")).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("error:"), "the emitted test must build with plain make: {text}");
    if out.status.success() {
        assert!(text.contains(&format!("PASS {stem}")), "{text}");
    }
    out.status.code().unwrap_or(-1)
}

/// A copy of the emitted test `c` named `name`, its C text changed by `edit`.
fn variant(c: &Path, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let stem = c.file_stem().unwrap().to_str().unwrap();
    let dir = c.parent().unwrap();
    for ext in ["env.c", "target", "mk"] {
        std::fs::copy(dir.join(format!("{stem}.{ext}")), dir.join(format!("{name}.{ext}"))).unwrap();
    }
    let to = dir.join(format!("{name}.c"));
    std::fs::write(&to, edit(&std::fs::read_to_string(c).unwrap())).unwrap();
    to
}

#[test]
fn running_example_test_builds_and_passes() {
    let d = tempfile::tempdir().unwrap();
    let (r, _program) = emit("foo", include_str!("../c-benchmarks/running_example.c"), "foo", d.path());
    let c = emitted_test(&r);
    assert_eq!(build_and_run(&c), 0);
    // The generated Makefile builds and runs every test.
    let make = Command::new("make").arg("-C").arg(d.path()).arg(format!("CC={}", clang().display())).output().unwrap();
    assert!(make.status.success(), "{}", String::from_utf8_lossy(&make.stdout));
    assert!(String::from_utf8_lossy(&make.stdout).contains("PASS"));
}

/// Every engine's witness becomes a test that passes. The fuzzer's witness for the running
/// example is a 313-byte buffer with n = 65536: the function reads past the buffer, which in the
/// replay driver's arena are zeros. The emitted test used to give each buffer its own static
/// array, so those reads hit other data and the test crashed (signal 11); it now lays the
/// buffers out in the same arena.
#[test]
fn every_engines_witness_of_the_running_example_becomes_a_passing_test() {
    for engine in ["apc", "dse", "fuzz"] {
        let d = tempfile::tempdir().unwrap();
        let p = c_program("foo", include_str!("../c-benchmarks/running_example.c"));
        let r = json_report(&p.path, &["--function", "foo", "--call", "reach_error", "--engine", engine, "--timeout", "30", "--emit-tests", d.path().to_str().unwrap()]);
        assert_eq!(r["verdict"], "reachable", "{engine}: {r:#}");
        let c = emitted_test(&r);
        assert_eq!(build_and_run(&c), 0, "{engine}: the emitted test must pass: {}", std::fs::read_to_string(&c).unwrap_or_default());
    }
}

#[test]
fn wrap_around_test_passes_and_fails_when_its_input_changes() {
    let d = tempfile::tempdir().unwrap();
    let src = "extern void reach_error(void);\nvoid f(unsigned x) { if (x + 1 == 0) reach_error(); }";
    let (r, _program) = emit("wrap", src, "f", d.path());
    let c = emitted_test(&r);
    assert_eq!(build_and_run(&c), 0);
    // The test is not vacuous: with another input it fails.
    let text = std::fs::read_to_string(&c).unwrap();
    assert!(text.contains("f(4294967295);"), "{text}");
    let broken = variant(&c, "broken", |t| t.replace("f(4294967295);", "f(5);"));
    assert_ne!(build_and_run(&broken), 0);
}

#[test]
fn string_comparison_on_a_char_pointer() {
    let d = tempfile::tempdir().unwrap();
    let src = "#include <string.h>\nextern void reach_error(void);\nvoid f(const char *s) { if (strcmp(s, \"hello\") == 0) reach_error(); }";
    let (r, _program) = emit("str", src, "f", d.path());
    let bytes: Vec<u8> = r["witness"]["inputs"][0]["bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8).collect();
    assert!(bytes.starts_with(b"hello\0"), "{bytes:?}");
    let c = emitted_test(&r);
    assert_eq!(build_and_run(&c), 0);
}

#[test]
fn nondet_calls_in_main_give_testcomp_xml() {
    let d = tempfile::tempdir().unwrap();
    let src = "extern void reach_error(void);\nextern int __VERIFIER_nondet_int(void);\nextern unsigned char __VERIFIER_nondet_uchar(void);\n\
               int main(void) { int a = __VERIFIER_nondet_int(); unsigned char c = __VERIFIER_nondet_uchar(); if (a < -5 && a > -9 && c == 'z') reach_error(); return 0; }";
    let (r, _program) = emit("nd", src, "main", d.path());
    let c = emitted_test(&r);
    assert_eq!(build_and_run(&c), 0);

    // testcase-N.xml: a <testcase> of <input> elements, one per nondet value, in call order.
    let xml = std::fs::read_to_string(d.path().join("testcase-1.xml")).unwrap();
    assert!(xml.contains("<!DOCTYPE testcase PUBLIC \"+//IDN sosy-lab.org//DTD test-format testcase 1.1//EN\""));
    let doc = roxmltree::Document::parse_with_options(&xml, dtd()).expect("well-formed testcase");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testcase");
    let inputs: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert!(inputs.iter().all(|n| n.tag_name().name() == "input"));
    assert_eq!(inputs.len(), 2);
    let a: i64 = inputs[0].text().unwrap().parse().unwrap();
    assert!(a < -5 && a > -9, "int input written signed: {a}");
    assert_eq!(inputs[1].text(), Some("122"));

    // metadata.xml: the DTD's elements in the DTD's order.
    let meta = std::fs::read_to_string(d.path().join("metadata.xml")).unwrap();
    let doc = roxmltree::Document::parse_with_options(&meta, dtd()).expect("well-formed metadata");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "test-metadata");
    let names: Vec<&str> = root.children().filter(|n| n.is_element()).map(|n| n.tag_name().name()).collect();
    assert_eq!(
        names,
        ["sourcecodelang", "producer", "specification", "programfile", "programhash", "entryfunction", "architecture", "creationtime"]
    );
    let get = |tag: &str| root.children().find(|n| n.tag_name().name() == tag).and_then(|n| n.text()).unwrap_or("").to_string();
    assert_eq!(get("entryfunction"), "main");
    assert_eq!(get("architecture"), "64bit");
    assert_eq!(get("programhash").len(), 64, "sha256 in hex");
    assert!(get("producer").starts_with("apc-llvm"));
}

#[test]
fn a_second_target_takes_the_next_number_and_user_files_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let src = "extern void reach_error(void);\nvoid f(int x) { if (x * 3 == 21) reach_error(); }\nvoid g(int x) { if (x * 5 == 35) reach_error(); }";
    let p = c_program("mul", src);
    let args = ["--function", "f", "--call", "reach_error", "--emit-tests", d.path().to_str().unwrap()];
    json_report(&p.path, &args);
    json_report(&p.path, &["--function", "g", "--call", "reach_error", "--emit-tests", d.path().to_str().unwrap()]);
    assert!(d.path().join("f_if_then_1.c").exists() && d.path().join("g_if_then_2.c").exists());
    assert!(d.path().join("testcase-2.xml").exists());

    // A Makefile of the user's own: exit status 2, nothing written, the file untouched.
    let mine = tempfile::tempdir().unwrap();
    std::fs::write(mine.path().join("Makefile"), "all:\n\techo mine\n").unwrap();
    let out = run_on(&p.path, &["--function", "f", "--call", "reach_error", "--emit-tests", mine.path().to_str().unwrap()]);
    assert_bad_input(&out, "not written by apc-llvm");
    assert_eq!(std::fs::read_to_string(mine.path().join("Makefile")).unwrap(), "all:\n\techo mine\n");
    assert_eq!(std::fs::read_dir(mine.path()).unwrap().count(), 1, "nothing written half-way");
}

#[test]
fn main_with_argc_and_argv_gets_a_real_argv() {
    let d = tempfile::tempdir().unwrap();
    let src = "#include <stdio.h>\nextern void reach_error(void);\nint main(int argc, char **argv) { printf(\"%s\\n\", argv[0]); if (argc == 3 && argv[2][0] == 0) reach_error(); return 0; }";
    let (r, _program) = emit("argv", src, "main", d.path());
    let c = emitted_test(&r);
    assert_eq!(build_and_run(&c), 0);
}

/// The strings of argv are inputs: the replay and the emitted test pass the witness's, and the
/// fuzzer mutates them, so a target behind a command-line option is reached (it ended
/// `unknown`: every argument was "").
#[test]
fn main_gets_the_witness_argument_strings() {
    let d = tempfile::tempdir().unwrap();
    let src = "#include <string.h>\nextern void reach_error(void);\nint main(int argc, char **argv) {\n  if (argc > 2 && strcmp(argv[1], \"-x\") == 0 && argv[2][0] == '7') reach_error();\n  return 0;\n}\n";
    for engine in ["apc", "dse", "fuzz"] {
        let p = c_program("argvstr", src);
        let r = json_report(&p.path, &["--function", "main", "--call", "reach_error", "--engine", engine]);
        assert_eq!(r["verdict"], "reachable", "{engine}: {r:#}");
    }
    let (r, _program) = emit("argvstr", src, "main", d.path());
    let c = emitted_test(&r);
    assert!(std::fs::read_to_string(&c).unwrap().contains("static char *argv[] = {(char *)\"apc\", (char *)\"-x\", (char *)\"7"));
    assert_eq!(build_and_run(&c), 0);
    // The twin: no argument string passes both tests.
    let twin = src.replace("argv[2][0] == '7'", "argv[1][1] == 'y'");
    let p = c_program("argvtwin", &twin);
    let r = json_report(&p.path, &["--function", "main", "--call", "reach_error", "--engine", "apc"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

#[test]
fn emit_tests_problems_are_found_before_the_analysis_and_symlinks_are_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let src = "extern void reach_error(void);\nvoid f(unsigned x) { if (x == 7) reach_error(); }";
    let p = c_program("emitcheck", src);
    // A foreign Makefile: refused at once (exit 2), before any analysis.
    let foreign = d.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("Makefile"), "all:\n\techo mine\n").unwrap();
    let out = run_on(&p.path, &["--function", "f", "--call", "reach_error", "--emit-tests", foreign.to_str().unwrap()]);
    assert_bad_input(&out, "not written by apc-llvm");
    // A planted symbolic link at the temporary name: the file it points to is left alone.
    let dir = d.path().join("tests");
    std::fs::create_dir(&dir).unwrap();
    let victim = d.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(".Makefile.apc-tmp")).unwrap();
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--emit-tests", dir.to_str().unwrap(), "--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::read_to_string(dir.join("Makefile")).unwrap().contains("generated by apc-llvm"));
}

/// A `(buffer, length)` parameter pair: the witness's buffer holds at least `len` bytes, so the
/// replay never reads past it (a `len` of gigabytes over a 64-byte buffer crashed replays).
#[test]
fn a_length_parameter_never_exceeds_its_buffer() {
    let src = "#include <stddef.h>
int count_q(const char *s, size_t len) {
  int q = 0;
  for (size_t i = 0; i < len; i++)
    if (s[i] == '\"')
      q++;
  if (q == 3)
    return 1;
  return 0;
}
";
    let p = c_program("countlen", src);
    let r = json_report(&p.path, &["--function", "count_q", "--line", "countlen.c:8", "--timeout", "30", "--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let inputs = r["witness"]["inputs"].as_array().unwrap();
    let buf = inputs[0]["bytes"].as_array().unwrap().len() as u64;
    let len = inputs[1]["value"].as_u64().unwrap();
    assert!(len <= buf, "len {len} over a {buf}-byte buffer: {r:#}");
    assert!(buf <= len + 64, "the buffer is cut to its length (and the slack): {r:#}");
}

/// Integer inputs are shown as their C types read them (from `-g` debug information): a
/// `long long` negative, an `unsigned long` (through a `size_t`-like typedef) unsigned.
#[test]
fn integer_inputs_are_shown_with_their_c_types() {
    let src = "typedef unsigned long my_size;
int g(long long a, my_size b) {
  if (a < -5 && b > 0xfffffffffffffff0UL)
    return 1;
  return 0;
}
";
    let p = c_program("ctypes", src);
    let args = ["--function", "g", "--line", "ctypes.c:4", "--timeout", "30"];
    let r = json_report(&p.path, &args);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let inputs = r["witness"]["inputs"].as_array().unwrap();
    assert_eq!(inputs[0]["c_type"], "long long");
    assert!(inputs[0]["c_value"].as_i64().unwrap() < -5, "{r:#}");
    assert_eq!(inputs[1]["c_type"], "my_size");
    assert!(inputs[1]["c_value"].as_u64().unwrap() > 0xffff_ffff_ffff_fff0, "{r:#}");
    let text = String::from_utf8_lossy(&run_on(&p.path, &args).stdout).into_owned();
    assert!(text.lines().any(|l| l.starts_with("  a = -") && l.ends_with("(long long)")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("  b = 18446744073709551") && l.ends_with("(my_size)")), "{text}");
}

/// `--emit-tests` into the same directory again: the same witness is not kept twice, and after
/// a source edit the directory follows the new program instead of refusing it.
#[test]
fn emitting_again_is_idempotent_and_follows_source_edits() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t");
    let src = "int f(int x) {\n  if (x * 3 == 51)\n    return 1;\n  return 0;\n}\n";
    let p = c_program("again", src);
    let args = ["--function", "f", "--line", "again.c:3", "--timeout", "30", "--engine", "apc", "--emit-tests", dir.to_str().unwrap()];
    for _ in 0..2 {
        let r = json_report(&p.path, &args);
        assert_eq!(r["verdict"], "reachable", "{r:#}");
    }
    let tests = |dir: &Path| std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "target")).count();
    assert_eq!(tests(&dir), 1, "the same witness twice is one test");
    // An edit (the constant changes): accepted, the metadata names the new program.
    let before = std::fs::read_to_string(dir.join("metadata.xml")).unwrap();
    std::fs::write(&p.path, src.replace("51", "54")).unwrap();
    let r = json_report(&p.path, &args);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(r["test_error"].is_null(), "{r:#}");
    assert_ne!(std::fs::read_to_string(dir.join("metadata.xml")).unwrap(), before);
    assert_eq!(tests(&dir), 2, "a new witness for the new program");
}

/// A function the bitcode lacks runs as a stub returning 0 in replays: the report names it (the
/// `--call` target's own stub is expected and not listed).
#[test]
fn replay_stubs_are_reported() {
    let src = "extern int get_mode(void);\nextern void reach_error(void);\nint f(int x) {\n  int m = get_mode();\n  if (x == 12 && m == 0)\n    reach_error();\n  return 0;\n}\n";
    let r = analyse("stubbed", src, &["--function", "f", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(strings(&r["stubs"]), vec!["get_mode".to_string()], "{r:#}");
}

/// A `--line` target whose line names another block after an edit (code moved under it): the
/// tool warns that the kept tests were written for another block.
#[test]
fn a_line_target_that_moved_to_another_block_warns() {
    let dir = tempfile::tempdir().unwrap();
    let tests = dir.path().join("tests");
    let before = "int f(int x) {\n  if (x == 3)\n    return 1;\n  if (x == 9)\n    return 2;\n  return 0;\n}\n";
    // Two lines inserted above: line 5 is now the first `return`, in another block.
    let after = "/* one */\n/* two */\nint f(int x) {\n  if (x == 3)\n    return 1;\n  if (x == 9)\n    return 2;\n  return 0;\n}\n";
    let src = dir.path().join("moved.c");
    let run = |text: &str| {
        std::fs::write(&src, text).unwrap();
        apc_llvm(&["moved.c", "--function", "f", "--line", "moved.c:5", "--json", "--emit-tests", tests.to_str().unwrap()].map(|a| if a == "moved.c" { src.to_str().unwrap() } else { a }))
    };
    let first = run(before);
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(!String::from_utf8_lossy(&first.stderr).contains("warning"), "{}", String::from_utf8_lossy(&first.stderr));
    // Same source again: same block, no warning.
    let again = run(before);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("now names block"), "{}", String::from_utf8_lossy(&again.stderr));
    let moved = run(after);
    let stderr = String::from_utf8_lossy(&moved.stderr);
    assert_eq!(moved.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: line moved.c:5 now names block") && stderr.contains("did an edit move the code?"), "{stderr}");
}

/// A string library keeps its length in a header in front of the characters (`s[-1]` holds
/// the type, `((struct hdr *)(s - 3))->len` the length): the bytes the function reads before
/// the address are inputs too. Every engine finds a witness with those bytes, the
/// replay and the emitted test put them in front of the buffer, and the human report shows
/// them as `s[-8..-1]`. The twin asks for a header byte that contradicts itself.
const STRING_HEADER: &str = r#"
#include <stdint.h>
#include <stddef.h>
extern void reach_error(void);
struct __attribute__((packed)) hdr8 { uint8_t len; uint8_t alloc; unsigned char flags; char buf[]; };
static size_t slen(const char *s) {
    unsigned char flags = s[-1];
    if ((flags & 7) == 1)
        return ((const struct hdr8 *)(s - sizeof(struct hdr8)))->len;
    return 0;
}
void check(const char *s) {
    if (slen(s) == 42 && s[0] == 'x')
        reach_error();
}
void twin(const char *s) {
    if ((s[-1] & 7) == 1 && (s[-1] & 3) == 2)
        reach_error();
}
"#;

#[test]
fn bytes_in_front_of_a_string_are_inputs() {
    for engine in ["apc", "dse", "fuzz"] {
        let d = tempfile::tempdir().unwrap();
        let p = c_program("hdr", STRING_HEADER);
        let r = json_report(&p.path, &["--function", "check", "--call", "reach_error", "--engine", engine, "--timeout", "30", "--emit-tests", d.path().to_str().unwrap()]);
        assert_eq!(r["verdict"], "reachable", "{engine}: {r:#}");
        let s = &r["witness"]["inputs"][0];
        let front = s["front"].as_u64().expect("the buffer has bytes in front of the address");
        assert!(front >= 3, "{engine}: {s}");
        let bytes: Vec<u64> = s["bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).collect();
        let f = front as usize;
        assert_eq!(bytes[f - 1] & 7, 1, "{engine}: the type byte at s[-1]: {s}");
        assert_eq!(bytes[f - 3], 42, "{engine}: the length at s[-3]: {s}");
        assert_eq!(bytes[f], u64::from(b'x'), "{engine}: {s}");
        let c = emitted_test(&r);
        assert_eq!(build_and_run(&c), 0, "{engine}: the emitted test passes");
    }
    let p = c_program("hdr", STRING_HEADER);
    let out = run_on(&p.path, &["--function", "check", "--call", "reach_error", "--engine", "apc"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("s[-8..-1] = [0, 0, 0, 0, 0, 42, 0, 1]"), "{text}");
    let r = json_report(&p.path, &["--function", "twin", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

/// Minimal witnesses: the model asked for is the one with the fewest loop iterations
/// (the least sum of path counters), so a loop whose count comes from an input runs just as
/// often as the target needs, and a scanned buffer is just as long. A model replayed early (see
/// `engine::apc`'s `EarlyReplay`: the quick check's models are tried while the least one is
/// searched for) gets there by the witness's reduction instead; with that off, the model itself
/// is the least.
#[test]
fn witnesses_run_their_loops_no_more_often_than_the_target_needs() {
    let src = "#include <stddef.h>
int grow(int n) {
  int i = 0, s = 0;
  while (i < n) { s += 3; i++; }
  if (s > 100)
    return 1;
  return 0;
}
int count_a(const char *p, size_t len) {
  unsigned c = 0;
  for (size_t k = 0; k < len; k++)
    if (p[k] == 'a')
      c++;
  if (c >= 3)
    return 1;
  return 0;
}
";
    let p = c_program("minimal", src);
    let grow = ["--function", "grow", "--line", "minimal.c:6", "--timeout", "30", "--engine", "apc"];
    let r = json_report(&p.path, &grow);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["inputs"][0]["value"], 34, "the least n with 3n > 100: {r:#}");
    let r = json_report_with_env(&p.path, &grow, &[("APC_LLVM_TUNE_EARLY_REPLAY", "0")]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["inputs"][0]["value"], 34, "{r:#}");
    assert!(r["timings"].get("replay_early").is_none(), "{r:#}");
    let counters: u64 = r["witness"]["counters"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(counters, 34, "{r:#}");

    let r = json_report(&p.path, &["--function", "count_a", "--line", "minimal.c:15", "--timeout", "30", "--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let inputs = r["witness"]["inputs"].as_array().unwrap();
    assert_eq!(inputs[1]["value"], 3, "three bytes, all 'a': {r:#}");
    let bytes: Vec<u64> = inputs[0]["bytes"].as_array().unwrap().iter().take(3).map(|b| b.as_u64().unwrap()).collect();
    assert_eq!(bytes, vec![97, 97, 97], "{r:#}");
}

const KV_PARSER: &str = "#include <stddef.h>\n\nint parse(const char *s, size_t len) {\n    if (len < 3)\n        return -1;\n    if (s[0] == 'K' && s[1] == 'V') {\n        if (s[2] == 2)\n            return 7;\n        return 1;\n    }\n    return 0;\n}\n";

/// The files of `dir`, name and bytes, in name order.
fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())).collect();
    v.sort();
    v
}

/// `--seed` (fixed by default): the same command twice gives the same JSON witness and the same
/// emitted files, byte for byte; with `--reduce 0` too, where the fuzzer's length (random, far
/// past its buffer) is still fitted into the buffer.
#[test]
fn two_runs_give_the_same_witness_and_the_same_test_files() {
    let d = tempfile::tempdir().unwrap();
    let p = c_program("kv", KV_PARSER);
    for reduce in [None, Some("0")] {
        let mut seen: Vec<(String, Vec<(String, Vec<u8>)>)> = vec![];
        for k in 0..2 {
            let dir = d.path().join(format!("t{k}{}", reduce.unwrap_or("")));
            let mut args = vec!["--function", "parse", "--line", "kv.c:8", "--engine", "fuzz", "--timeout", "30", "--emit-tests", dir.to_str().unwrap()];
            if let Some(r) = reduce {
                args.extend(["--reduce", r]);
            }
            let r = json_report(&p.path, &args);
            assert_eq!(r["verdict"], "reachable", "{r:#}");
            let inputs = r["witness"]["inputs"].as_array().unwrap();
            let (buffer, len) = (inputs[0]["bytes"].as_array().unwrap().len() as u64, inputs[1]["value"].as_u64().unwrap());
            assert!(len <= buffer, "the length fits its buffer ({len} > {buffer}): {r:#}");
            seen.push((serde_json::to_string(&r["witness"]).unwrap(), files_of(&dir)));
        }
        assert_eq!(seen[0].0, seen[1].0, "the same JSON witness (--reduce {reduce:?})");
        assert_eq!(seen[0].1, seen[1].1, "the same emitted files (--reduce {reduce:?})");
    }
}

/// The emitted test includes the current source and calls the function with literals: it
/// passes on the source as analysed and after an edit above the target, fails when the
/// target's branch is deleted or no longer taken, and `make coverage` lists the lines it ran.
#[test]
fn an_emitted_test_follows_the_current_source() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("kv.c");
    std::fs::write(&src, KV_PARSER).unwrap();
    let tests = d.path().join("tests");
    let out = apc_llvm(&[src.to_str().unwrap(), "--function", "parse", "--line", "kv.c:8", "--engine", "apc", "--timeout", "30", "--json", "--emit-tests", tests.to_str().unwrap()]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let c = emitted_test(&r);
    let text = std::fs::read_to_string(&c).unwrap();
    assert!(text.contains("#include \"../kv.c\"") && text.contains("static char s[") && text.contains("= \"KV\\x02\";") && text.contains("parse(s, 3);"), "{text}");
    for generated in std::fs::read_dir(&tests).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "c")) {
        let t = std::fs::read_to_string(&generated).unwrap();
        assert!(!t.contains("syscall") && !t.contains("__asm__") && !t.contains("apc_arena"), "{}: {t}", generated.display());
    }
    let make = |target: &str| {
        let o = Command::new("make").arg("-C").arg(&tests).arg(target).output().unwrap();
        (o.status.success(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
    };
    let (ok, log) = make("all");
    assert!(ok && log.contains("PASS parse_if_then12_1: reached ../kv.c:8:13"), "{log}");
    let (ok, log) = make("coverage");
    assert!(ok, "{log}");
    let covered: Vec<&str> = log.lines().filter(|l| l.contains("kv.c:")).collect();
    assert!(covered.iter().any(|l| l.trim_end().ends_with("kv.c:8: 1")) && !covered.iter().any(|l| l.contains("kv.c:9:")), "{log}");
    // Lines inserted above: the target's line is found again.
    std::fs::write(&src, format!("/* a header */\n\n{KV_PARSER}")).unwrap();
    let (ok, log) = make("test");
    assert!(ok && log.contains("reached ../kv.c:10:13"), "{log}");
    // The branch no longer taken by this input.
    std::fs::write(&src, KV_PARSER.replace("s[2] == 2", "s[2] == 3")).unwrap();
    let (ok, log) = make("test");
    assert!(!ok && log.contains("FAIL parse_if_then12_1: the target ../kv.c:8:13 did not run"), "{log}");
    // The branch deleted.
    std::fs::write(&src, KV_PARSER.replace("        if (s[2] == 2)\n            return 7;\n", "")).unwrap();
    let (ok, log) = make("test");
    assert!(!ok && log.contains("FAIL parse_if_then12_1: the target line is gone"), "{log}");
    std::fs::write(&src, KV_PARSER).unwrap();
    assert!(make("test").0);
}

/// Pointer fields, a function pointer and a string behind a struct become real objects of the
/// test (no address from replay's layout): it builds and passes with plain make.
#[test]
fn a_witness_with_pointer_fields_builds_with_plain_make() {
    let d = tempfile::tempdir().unwrap();
    let src = "#include <stddef.h>\nstruct buf { char *data; size_t len; };\nstruct node { int kind; struct buf *b; int (*cb)(int); };\nstatic int twice(int x) { return 2 * x; }\n\
               int walk(struct node *n) {\n    if (n && n->kind == 7 && n->b && n->b->len > 2 && n->b->data && n->b->data[1] == 'Q' && n->cb == twice)\n        return 1;\n    return 0;\n}\n";
    let p = c_program("node", src);
    let r = json_report(&p.path, &["--function", "walk", "--line", "node.c:7", "--timeout", "30", "--emit-tests", d.path().to_str().unwrap()]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let c = emitted_test(&r);
    let text = std::fs::read_to_string(&c).unwrap();
    assert!(text.contains("*(void **)(n + 8) = n_0;") && text.contains("(void *)&twice"), "{text}");
    assert_eq!(build_and_run(&c), 0, "{text}");
}
