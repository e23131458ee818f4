//! The engine portfolio through the real binary: `--engine` selects engines, the report names
//! the one that decided, only replayed witnesses make `reachable`, and only `apc` and an
//! exhausted `dse` make `unreachable`.

mod common;
use common::*;

/// A whole program comparing a string read from the nondet stream (HW-like).
const STRING_FROM_NONDET: &str = "\
extern char __VERIFIER_nondet_char(void);
extern void reach_error(void);
int main(void) {
  char s[8];
  for (int i = 0; i < 8; i++) s[i] = __VERIFIER_nondet_char();
  if (s[0] == 'W' && s[1] == 'o' && s[2] == 'r' && s[3] == 'l' && s[4] == 'd')
    reach_error();
  return 0;
}
";

/// A triangular nest whose total step count must hit a value (DSE's shape).
const TRIANGULAR: &str = "\
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);
int main(void) {
  int n = __VERIFIER_nondet_int();
  if (n < 0 || n > 20) return 0;
  int steps = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      steps++;
  if (steps == 45) reach_error();
  return 0;
}
";

fn engines(r: &serde_json::Value) -> Vec<String> {
    r["engines"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

#[test]
fn the_default_portfolio_runs_every_engine_and_names_the_winner() {
    let r = analyse("portfolio", STRING_FROM_NONDET, &["--function", "main", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(engines(&r), vec!["apc", "dse", "fuzz"], "{r:#}");
    let winner = r["engine"].as_str().expect("the deciding engine is named");
    assert_eq!(r["engines"][winner]["outcome"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["reached"], true);
    let bytes: Vec<u64> = r["witness"]["nondet"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() & 0xff).collect();
    assert_eq!(&bytes[..5], &[b'W' as u64, b'o' as u64, b'r' as u64, b'l' as u64, b'd' as u64], "{r:#}");
}

#[test]
fn fuzzing_alone_finds_the_string_and_the_emitted_test_passes() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("tests");
    // The program outlives the analysis: the emitted test builds against its source.
    let p = c_program("fuzzonly", STRING_FROM_NONDET);
    let r = json_report(&p.path, &["--function", "main", "--call", "reach_error", "--timeout", "30", "--engine", "fuzz", "--emit-tests", dir.to_str().unwrap()]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["engine"], "fuzz");
    assert!(r["engines"]["fuzz"]["stats"]["executions"].as_u64().unwrap() > 0);
    let make = std::process::Command::new("make").arg("-C").arg(&dir).output().unwrap();
    assert!(make.status.success(), "{}{}", String::from_utf8_lossy(&make.stdout), String::from_utf8_lossy(&make.stderr));
}

#[test]
fn fuzzing_never_proves() {
    let src = "extern void reach_error(void);\nvoid f(unsigned x) { if (x * x == 0xffffffffu) reach_error(); }";
    let r = analyse("fuzzunreach", src, &["--function", "f", "--call", "reach_error", "--timeout", "3", "--engine", "fuzz"]);
    assert_eq!(r["verdict"], "unknown", "{r:#}");
    // The APC proves it (x * x is never 2^32 - 1 modulo 2^32: squares are 0 or 1 modulo 4).
    let r = analyse("fuzzunreach2", src, &["--function", "f", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    // A proving engine decided (the DSE, exhausting this loop-free function, may come first).
    assert!(r["engine"] == "apc" || r["engine"] == "dse", "{r:#}");
}

#[test]
fn directed_symbolic_execution_alone_reaches_the_step_count() {
    let r = analyse("dseonly", TRIANGULAR, &["--function", "main", "--call", "reach_error", "--timeout", "30", "--engine", "dse"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["engine"], "dse");
    assert_eq!(r["witness"]["nondet"][0].as_u64().map(|v| v & 0xffff_ffff), Some(10), "{r:#}");
    assert!(r["engines"]["dse"]["stats"]["states_explored"].as_u64().unwrap() > 0);
}

#[test]
fn an_exhausted_search_proves_and_a_cut_one_does_not() {
    let loop_free = "extern void reach_error(void);\nvoid f(int x, int y) { if (x > 5 && y < 2 && x + y == 3 && x < 100) reach_error(); }";
    let r = analyse("dseproof", loop_free, &["--function", "f", "--call", "reach_error", "--timeout", "20", "--engine", "dse"]);
    // x = 6, y = -3: found and replayed.
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    // The loop's value is beyond the APC's rules (s = 3s + 1 is not a closed form it knows), so
    // the APC stays satisfiable; the exact search runs the four iterations and ends: a proof.
    let dead = "extern void reach_error(void);\nvoid f(int x) { int s = 0; for (int i = 0; i < 4; i++) s = s * 3 + 1;\n\
                if (s == 41 && x == 2) reach_error(); }";
    let r = analyse("dseproof2", dead, &["--function", "f", "--call", "reach_error", "--timeout", "20", "--engine", "apc"]);
    assert_eq!(r["verdict"], "unknown", "the APC alone cannot prove it: {r:#}");
    let r = analyse("dseproof3", dead, &["--function", "f", "--call", "reach_error", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert_eq!(r["engine"], "dse");
    assert!(r["reason"].as_str().unwrap().contains("every path"), "{r:#}");
    // An unbounded loop: never exhausted, so never a proof from DSE.
    let unbounded = "extern void reach_error(void);\nvoid f(unsigned n) { unsigned k = 0; while (k != n) k += 2; if (k == 7 && n == 7) reach_error(); }";
    let r = analyse("dseloop", unbounded, &["--function", "f", "--call", "reach_error", "--timeout", "3", "--engine", "dse"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    assert_ne!(r["verdict"], "reachable", "{r:#}");
}

/// MatrIR as a whole program (c-benchmarks/wp_matrir.c): the DSE alone does not get 16 matrix
/// elements of a row into (10, 100) in time (tests/dse_tests.rs), the portfolio does, through
/// the fuzzer's constant-fill seeds.
#[test]
fn the_portfolio_reaches_the_whole_program_matrir() {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/c-benchmarks/wp_matrir.c")).unwrap();
    let r = analyse("wp_matrir", &src, &["--function", "main", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["reached"], true, "{r:#}");
    let nondet: Vec<i64> = r["witness"]["nondet"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32 as i32 as i64).collect();
    assert!(nondet[0] > 20 && nondet[1] > 20, "m, n > 20: {r:#}");
}

/// A pointer field of a struct parameter: the search gives it a buffer of its own when the
/// program first reads it (lazy initialisation), and the witness lists that buffer.
#[test]
fn pointer_fields_of_inputs_are_initialised_lazily() {
    let src = "struct msg { const char *body; int kind; };
int handle(struct msg *m) {
  if (m->kind == 3 && m->body[0] == 'Z' && m->body[1] == '!')
    return 1;
  return 0;
}
";
    let p = c_program("msg", src);
    let r = json_report(&p.path, &["--function", "handle", "--line", "msg.c:4", "--timeout", "30", "--engine", "dse"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let m = &r["witness"]["inputs"][0];
    assert_eq!(m["pointees"][0]["offset"], 0, "{r:#}");
    let body: Vec<u64> = m["pointees"][0]["bytes"].as_array().unwrap().iter().take(2).map(|b| b.as_u64().unwrap()).collect();
    assert_eq!(body, vec![b'Z' as u64, b'!' as u64]);
    // Lazily initialised pointers are taken to be fresh buffers, one assumption among others
    // (NULL, aliasing): a search that made it is not exhaustive, so no proof comes from it.
    let twin = c_program("msg_twin", &src.replace("m->body[1] == '!'", "m->body[1] == '!' && m->kind == 4"));
    let r = json_report(&twin.path, &["--function", "handle", "--line", "msg_twin.c:4", "--timeout", "30", "--engine", "dse"]);
    assert_eq!(r["verdict"], "unknown", "{r:#}");
}

/// Functions without a definition are stubbed in every native build (they return 0 and write
/// nothing). The DSE executes a call to one as its stub does, so it searches the program that
/// replays: here the target needs `ext` to return 0 on a loop's path, as the stub does.
#[test]
fn directed_search_executes_stubbed_externals_as_the_replay_does() {
    let src = "extern int ext(int);\nextern void ext_keep(int *);\nextern void reach_error(void);\n\
               void f(int a, int b) { int e = 0; int x = 0; int s = 0;\n\
               for (int i = 0; i < (b & 7); i++) { e += ext(i); ext_keep(&x); s += i; }\n\
               if (e == 0 && x == 0 && s == 21 && a == 123457) reach_error(); }";
    let r = analyse("dsestub", src, &["--function", "f", "--call", "reach_error", "--timeout", "30", "--engine", "dse"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["engine"], "dse");
    assert_eq!(r["witness"]["inputs"][0]["value"].as_i64(), Some(123457), "{r:#}");
    assert_eq!(r["witness"]["inputs"][1]["value"].as_i64().map(|b| b & 7), Some(7), "{r:#}");
}

/// When the DSE explored every run of the replayed program (stubs included) without entering
/// the target, no witness can replay: the fuzzer stops instead of running to the deadline, and
/// the verdict stays `unknown` (the real `ext_keep` may write 7), with the reason saying why.
#[test]
fn no_witness_in_the_replayed_program_stops_the_witness_searches() {
    let src = "extern void ext_keep(int *);\nextern void reach_error(void);\n\
               void f(int a) { int x = 0; ext_keep(&x); if (x == 7 && a > 3) reach_error(); }";
    let r = analyse("nowitness", src, &["--function", "f", "--call", "reach_error", "--timeout", "60"]);
    assert_eq!(r["verdict"], "unknown", "never unreachable: ext_keep may write 7: {r:#}");
    let dse = r["engines"]["dse"]["reason"].as_str().unwrap();
    assert!(dse.contains("none enters the target") && dse.contains("ext_keep"), "{r:#}");
    let fuzz = r["engines"]["fuzz"]["reason"].as_str().unwrap();
    assert!(fuzz.contains("stopped") || fuzz.contains("cancelled"), "the fuzzer stopped early: {r:#}");
    assert!(r["reason"].as_str().unwrap().contains("none enters the target"), "{r:#}");
}
