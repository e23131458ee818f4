//! Recursion unrolled to a bound (`--recursion-depth`, `load::recursion`): targets inside
//! recursive functions are found, proofs hold for every depth (cut calls that may lead to the
//! target count as targets), and a target deeper than the bound is never called unreachable.

mod common;
use common::*;
use serde_json::Value;

/// The recursive-descent parser of nested brackets of tests/data/config_lib.c
/// (`value := '[' value* ']' | digit`), with its target at nesting `deep`.
fn brackets(name: &str, deep: u32) -> (CProgram, String) {
    let lib = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/config_lib.c")).unwrap();
    let src = lib.replace("depth == 2 &&", &format!("depth == {deep} &&"));
    let line = src.lines().position(|l| l.contains("/* target: two levels deep")).unwrap() + 1;
    (c_program(name, &src), format!("{name}.c:{line}"))
}

#[test]
fn a_target_two_levels_down_a_recursive_descent_parser_is_reached() {
    let (p, line) = brackets("brackets", 2);
    let r = json_report(&p.path, &["--function", "parse_brackets", "--line", &line, "--timeout", "60"]);
    assert_reachable(&r);
    // Two levels of brackets before the "[9".
    let s = &r["witness"]["inputs"][0]["bytes"];
    let bytes: Vec<u8> = s.as_array().expect("a buffer").iter().filter_map(Value::as_u64).map(|b| b as u8).collect();
    let at = bytes.windows(2).position(|w| w == b"[9").expect("a '[9'");
    assert!(bytes[..at].iter().filter(|b| **b == b'[').count() >= 2, "{r:#}");
}

#[test]
fn a_target_deeper_than_the_bound_is_never_unreachable() {
    // Reachable at depth 5 only ("[[[[[[7"); the analysis copies the recursion twice.
    let (p, line) = brackets("brackets_deep", 5);
    let r = json_report(&p.path, &["--function", "parse_brackets", "--line", &line, "--timeout", "10", "--recursion-depth", "2", "--engine", "apc"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    // With copies enough, the whole space is seen.
    let r = json_report(&p.path, &["--function", "parse_brackets", "--line", &line, "--timeout", "30", "--recursion-depth", "6"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
}

#[test]
fn a_depth_the_input_cannot_reach_is_proved_unreachable() {
    // len <= 16 bounds nothing here, but depth 20 needs 21 opening brackets: with the
    // recursion cut after 3 levels, the proof must show the cut site itself unreachable, and
    // it is not (deeper inputs exist). So no proof; and a truly bounded recursion is proved.
    let src = "static int down(int n) { if (n <= 0) return 0; return 1 + down(n - 1); }
int f(int n) {
  int r = down(n & 3);
  if (r > 5)
    return 1;
  return 0;
}
";
    let p = c_program("bounded_rec", src);
    let r = json_report(&p.path, &["--function", "f", "--line", "bounded_rec.c:5", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    // Its reachable twin: r > 2 needs n & 3 == 3.
    let p = c_program("bounded_rec_twin", &src.replace("r > 5", "r > 2"));
    let r = json_report(&p.path, &["--function", "f", "--line", "bounded_rec_twin.c:5", "--timeout", "20"]);
    assert_reachable(&r);
}

#[test]
fn without_unrolling_a_target_inside_recursion_is_an_error_naming_it() {
    let (p, line) = brackets("brackets_off", 2);
    let out = run_on(&p.path, &["--function", "parse_brackets", "--line", &line, "--recursion-depth", "0"]);
    assert_bad_input(&out, "recursive");
}

#[test]
fn a_recursion_depth_out_of_range_is_bad_input() {
    let (p, _) = brackets("brackets_bad", 2);
    let out = run_on(&p.path, &["--function", "parse_brackets", "--block", "entry", "--recursion-depth", "99"]);
    assert_bad_input(&out, "--recursion-depth");
}

/// A JSON-like recursive-descent parser: `value` calls `list` and `map` from several sites and
/// each calls `value` from several, with bulky bodies between. Unrolled three deep and inlined,
/// it would be millions of instructions; the load unrolls less deep, says so, and answers.
#[test]
fn a_recursion_too_big_to_unroll_deeply_is_unrolled_less_deep_and_answered() {
    let mut src = String::from("static int pos;\nstatic int scalar(const char *s) {\n  int v = 0;\n  switch (s[pos]) {\n");
    for k in 0..40 {
        src.push_str(&format!("  case {}: v = v * 3 + {k}; pos++; break;\n", 48 + k));
    }
    src.push_str("  default: return -1;\n  }\n  return v;\n}\nstatic int list(const char *s, int d);\nstatic int map(const char *s, int d);\n");
    src.push_str("static int value(const char *s, int d) {\n  if (s[pos] == '[') return list(s, d + 1);\n  if (s[pos] == '{') return map(s, d + 1);\n");
    src.push_str("  if (s[pos] == '(') { pos++; int a = list(s, d + 1); int b = map(s, d + 1); return a + b; }\n  return scalar(s) + scalar(s) + scalar(s);\n}\n");
    for (name, open, close) in [("list", '[', ']'), ("map", '{', '}')] {
        src.push_str(&format!("static int {name}(const char *s, int d) {{\n  int n = 0;\n  if (s[pos] != '{open}') return -1;\n  pos++;\n"));
        src.push_str(&format!("  n += value(s, d);\n  if (s[pos] == ',') {{ pos++; n += value(s, d); }}\n  if (s[pos] == ';') {{ pos++; n += value(s, d); }}\n  if (s[pos] == '{close}') pos++;\n"));
        src.push_str("  n += scalar(s) + scalar(s);\n  return n;\n}\n");
    }
    src.push_str("int parse(const char *s) {\n  pos = 0;\n  int r = value(s, 0);\n  if (r == 7 && pos == 3) {\n    return 1; /* target */\n  }\n  return 0;\n}\n");
    let p = c_program("json_like", &src);
    let line = src.lines().position(|l| l.contains("/* target */")).unwrap() + 1;
    let out = apc_llvm_with_env(&[p.path.to_str().unwrap(), "--function", "parse", "--line", &format!("json_like.c:{line}"), "--json", "--timeout", "60"], &[("RUST_LOG", "info")]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("recursion unrolled less deep"), "{log}");
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    assert!(r["verdict"] == "reachable" || r["reason"].as_str().unwrap().contains("would not fit once inlined"), "{r:#}");
}
