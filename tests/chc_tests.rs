//! The Horn-clause prover (`--engine chc`): the function as constrained Horn clauses over
//! bit-vectors, solved by Z3's Spacer. It proves with inductive invariants it prints, never
//! says `reachable`, and is bit-precise (a target reached only through wrap-around is never
//! proved unreachable).

mod common;
use common::*;

const LOOPS: &str = r#"
extern void reach_error(void);
extern int __VERIFIER_nondet_int(void);
void lockstep(unsigned n) {
  unsigned x = 0, y = 0;
  while (x < n) { x++; y++; }
  if (x != y) reach_error();
}
void even(unsigned n) {
  unsigned i = 0;
  while (i < n) i += 2;
  if (i % 2 == 1) reach_error();
}
void even_twin(unsigned n) {
  unsigned i = 0;
  while (i < n) i += 2;
  if (i == 6) reach_error();
}
void branches(unsigned n) {
  unsigned x = 0, y = 0, i = 0;
  while (i < n) { if (__VERIFIER_nondet_int()) x++; else y++; i++; }
  if (x + y != i) reach_error();
}
void wrap(int k) {
  unsigned char x = 250;
  for (int i = 0; i < k; i++) x += 3;
  if (x == 1) reach_error();
}
"#;

fn chc(function: &str, timeout: &str) -> serde_json::Value {
    analyse("chc", LOOPS, &["--function", function, "--call", "reach_error", "--engine", "chc", "--timeout", timeout])
}

#[test]
fn loop_invariants_prove_targets_unreachable_and_are_printed() {
    for f in ["lockstep", "even", "branches"] {
        let r = chc(f, "20");
        assert_eq!(r["verdict"], "unreachable", "{f}: {r:#}");
        assert_eq!(r["engine"], "chc", "{f}");
        let why = r["reason"].as_str().unwrap();
        assert!(why.contains("have a solution (Z3 Spacer)"), "{f}: {why}");
    }
    // The invariants are in the report, per block, over the registers' names: the loop head's
    // says something of the counter `i`.
    let r = chc("even", "20");
    let invariants = r["invariants"].as_array().expect("the proof's invariants");
    let head = invariants.iter().find(|i| i["block"] == "while.cond").expect("one for the loop head");
    assert!(head["formula"].as_str().unwrap().contains("i."), "{head}");
    let text = String::from_utf8_lossy(&run_on(&c_program("chc", LOOPS).path, &["--function", "even", "--call", "reach_error", "--engine", "chc"]).stdout).to_string();
    assert!(text.contains("invariants:\n") && text.contains("  while.cond: "), "{text}");
}

#[test]
fn a_counterexample_of_the_clauses_is_replayed_and_only_a_replay_says_reachable() {
    // Reachable (n = 5): the clauses have no solution; the shortest path of their steps into
    // the target gives inputs, and a native run of them enters it.
    let r = chc("even_twin", "10");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["engine"], "chc", "{r:#}");
    assert!(r["witness"]["replay"].is_object() || r["witness"]["inputs"].is_array(), "{r:#}");
    // Unreachable, but only through memory, which the clauses leave unknown: they reach the
    // target, their path's inputs do not (no run can), so the Horn engine has no answer.
    let src = "extern void reach_error(void);\nvoid mem(int *p) { *p = 1; if (*p != 1) reach_error(); }\n";
    let r = analyse("chcmem", src, &["--function", "mem", "--call", "reach_error", "--engine", "chc", "--timeout", "10"]);
    assert_eq!(r["verdict"], "unknown", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("no path of their steps replayed"), "{r:#}");
    let r = analyse("chcmem", src, &["--function", "mem", "--call", "reach_error", "--engine", "k-induction", "--timeout", "10"]);
    assert_eq!(r["verdict"], "unknown", "{r:#}");
}

/// x = 250 + 3k never equals 1 over the integers, but does at k = 173 in 8 bits: a prover that
/// ignored wrap-around would call the target unreachable.
#[test]
fn wrap_around_is_not_proved_away() {
    let r = chc("wrap", "4");
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    let r = analyse("chc", LOOPS, &["--function", "wrap", "--call", "reach_error", "--engine", "apc,dse,chc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

/// A function too large for Horn clauses (every clause names the whole state) is declined at
/// once instead of being written out as gigabytes of text.
#[test]
fn a_function_too_large_to_encode_is_declined() {
    let mut src = String::from("extern void reach_error(void);\nvoid big(int x) {\n  int y = 0;\n");
    for k in 0..1500 {
        src.push_str(&format!("  if (x == {k}) y += {k};\n"));
    }
    src.push_str("  if (y == -1) reach_error();\n}\n");
    let r = analyse("big", &src, &["--function", "big", "--call", "reach_error", "--engine", "chc", "--timeout", "60"]);
    assert_eq!(r["verdict"], "unknown", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("not encoded as Horn clauses"), "{}", r["reason"]);
}

const STEPS: &str = r#"
extern void reach_error(void);
extern int __VERIFIER_nondet_int(void);
void stride(unsigned n) {
  unsigned x = 0;
  while (x < n) { x += 2; if (x == 7) reach_error(); }
}
void stride_twin(unsigned n) {
  unsigned x = 0;
  while (x < n) { x += 2; if (x == 8) reach_error(); }
}
void cycle(void) {
  int s = 0;
  while (__VERIFIER_nondet_int()) { s = (s + 1) % 3; if (s == 5) reach_error(); }
}
void cycle_twin(void) {
  int s = 0;
  while (__VERIFIER_nondet_int()) { s = (s + 1) % 3; if (s == 2) reach_error(); }
}
void wraps(void) {
  unsigned char x = 250;
  while (__VERIFIER_nondet_int()) { x += 3; if (x == 1) reach_error(); }
}
"#;

fn steps(function: &str, engine: &str) -> serde_json::Value {
    analyse("kind", STEPS, &["--function", function, "--call", "reach_error", "--engine", engine, "--timeout", "20"])
}

/// `--engine k-induction`: a target whose unreachability is k-inductive over the function's
/// steps is proved without an invariant (an odd value never met by a bounded even stride; a
/// remainder by 3 never 5); each twin, one constant changed, is not proved: its base case
/// reaches the target, and the path's inputs replay into it.
#[test]
fn k_induction_proves_k_inductive_targets_and_never_their_twins() {
    for f in ["stride", "cycle"] {
        let r = steps(f, "k-induction");
        assert_eq!(r["verdict"], "unreachable", "{f}: {r:#}");
        assert_eq!(r["engine"], "k-induction", "{f}");
        assert!(r["reason"].as_str().unwrap().starts_with("k-induction over the function's steps"), "{f}: {r:#}");
    }
    for f in ["stride_twin", "cycle_twin"] {
        let r = steps(f, "k-induction");
        assert_eq!((&r["verdict"], &r["engine"]), (&"reachable".into(), &"k-induction".into()), "{f}: {r:#}");
        assert!(r["reason"].as_str().unwrap().contains("a native run"), "{f}: {r:#}");
    }
}

/// Bit-precise: `x` starts at 250 and only grows over the integers, but wraps past 255 to 1 on
/// the machine: never proved unreachable.
#[test]
fn k_induction_never_proves_a_target_reached_through_wrap_around() {
    let r = analyse("kind", STEPS, &["--function", "wraps", "--call", "reach_error", "--engine", "k-induction", "--timeout", "10"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    let r = analyse("kind", STEPS, &["--function", "wraps", "--call", "reach_error", "--engine", "chc,k-induction", "--timeout", "10"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
}

const LATE: &str = r#"
extern void reach_error(void);
void modcycle(unsigned n) {
  unsigned s = 1, i = 0;
  while (i < n) { s = (s * 3) % 7; i++; }
  if (s == 0) reach_error();
}
"#;

/// The default portfolio adds the Horn-clause provers late (`engine::Late`): `s = 3s mod 7`
/// never reaches 0, which the APC cannot say (no closed form, its models do not replay) and the
/// searches cannot either; once the apc engine has given up, Spacer proves it. A quick proof
/// ends before they start, and they are then not in the report; `--engine` names the race.
#[test]
fn the_default_portfolio_adds_the_horn_provers_late() {
    let r = analyse("late", LATE, &["--function", "modcycle", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(["chc", "k-induction"].contains(&r["engine"].as_str().unwrap()), "{r:#}");
    let r = analyse("late", LATE, &["--function", "modcycle", "--call", "reach_error", "--timeout", "6", "--engine", "apc,dse,fuzz"]);
    assert_eq!(r["verdict"], "unknown", "{r:#}");
    assert!(r["engines"].get("chc").is_none(), "{r:#}");
    let r = analyse("late", LOOPS, &["--function", "lockstep", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!((&r["verdict"], &r["engine"]), (&"unreachable".into(), &"apc".into()), "{r:#}");
    assert!(r["engines"].get("chc").is_none() && r["engines"].get("k-induction").is_none(), "not started, not reported: {r:#}");
}

/// A loop with twelve independent flags, each set under `p_i` and checked under `p_i`: 2^12
/// backbones per iteration, too many for the APC; the Horn-clause prover, started as soon as
/// the APC is known incomplete, proves it within the default portfolio's budget. The twin
/// that checks one flag the wrong way stays reachable.
fn flags(n: usize, wrong: Option<usize>) -> String {
    let mut s = String::from("extern int __VERIFIER_nondet_int(void);\nvoid reach_error(void);\nint main(void) {\n");
    for i in 0..n {
        s.push_str(&format!("  int p{i} = __VERIFIER_nondet_int(); int lk{i};\n"));
    }
    s.push_str("  while (1) {\n    if (__VERIFIER_nondet_int() == 0) break;\n");
    for i in 0..n {
        s.push_str(&format!("    lk{i} = 0;\n"));
    }
    for i in 0..n {
        s.push_str(&format!("    if (p{i} != 0) lk{i} = 1;\n"));
    }
    for i in 0..n {
        let expected = if wrong == Some(i) { 0 } else { 1 };
        s.push_str(&format!("    if (p{i} != 0) {{ if (lk{i} != {expected}) {{ reach_error(); return 1; }} lk{i} = 0; }}\n"));
    }
    s.push_str("  }\n  return 0;\n}\n");
    s
}

#[test]
fn a_loop_of_twelve_flags_is_proved_by_the_default_portfolio_and_its_twin_reached() {
    let p = c_program("flags12", &flags(12, None));
    let r = json_report(&p.path, &["--function", "main", "--call", "reach_error", "--timeout", "60"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let p = c_program("flags12_twin", &flags(12, Some(7)));
    let r = json_report(&p.path, &["--function", "main", "--call", "reach_error", "--timeout", "60"]);
    assert_reachable(&r);
}
