//! Recursion unrolled to a bound (`--recursion-depth`, `load::recursion`): targets inside
//! recursive functions are found, proofs hold for every depth (cut calls that may lead to the
//! target count as targets), and a target deeper than the bound is never called unreachable.

mod common;
use common::*;
use serde_json::Value;

fn assert_reachable(r: &Value) {
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["replayed"], true, "{r:#}");
    assert_eq!(r["witness"]["reached"], true, "{r:#}");
}

/// A recursive-descent parser of nested brackets: `value := '[' value* ']' | digit`.
const BRACKETS: &str = "#include <stddef.h>
static int parse_value(const char *s, size_t *at, size_t len, int depth);
static int parse_list(const char *s, size_t *at, size_t len, int depth) {
  (*at)++;
  while (*at < len && s[*at] != ']') {
    if (parse_value(s, at, len, depth + 1) < 0)
      return -1;
  }
  if (*at >= len)
    return -1;
  (*at)++;
  return 0;
}
static int parse_value(const char *s, size_t *at, size_t len, int depth) {
  if (*at >= len)
    return -1;
  if (s[*at] == '[') {
    if (depth == DEEP && *at + 1 < len && s[*at + 1] == '7')
      return 42;
    return parse_list(s, at, len, depth);
  }
  if (s[*at] >= '0' && s[*at] <= '9') {
    (*at)++;
    return 0;
  }
  return -1;
}
int parse(const char *s, size_t len) {
  size_t at = 0;
  if (len > 16)
    return -1;
  return parse_value(s, &at, len, 0);
}
";

/// Line of `return 42;` in [`BRACKETS`].
const TARGET_LINE: &str = "19";

fn brackets(name: &str, deep: u32) -> CProgram {
    c_program(name, &BRACKETS.replace("DEEP", &deep.to_string()))
}

#[test]
fn a_target_two_levels_down_a_recursive_descent_parser_is_reached() {
    let p = brackets("brackets", 2);
    let line = format!("brackets.c:{TARGET_LINE}");
    let r = json_report(&p.path, &["--function", "parse", "--line", &line, "--timeout", "60"]);
    assert_reachable(&r);
    // Three opening brackets, then the 7.
    let s = &r["witness"]["inputs"][0]["bytes"];
    let bytes: Vec<u64> = s.as_array().expect("a buffer").iter().filter_map(Value::as_u64).collect();
    assert_eq!(&bytes[..4], &[b'[' as u64, b'[' as u64, b'[' as u64, b'7' as u64], "{r:#}");
}

#[test]
fn a_target_deeper_than_the_bound_is_never_unreachable() {
    // Reachable at depth 5 only ("[[[[[[7"); the analysis copies the recursion twice.
    let p = brackets("brackets_deep", 5);
    let line = format!("brackets_deep.c:{TARGET_LINE}");
    let r = json_report(&p.path, &["--function", "parse", "--line", &line, "--timeout", "10", "--recursion-depth", "2", "--engine", "apc"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    // With copies enough, the whole space is seen.
    let r = json_report(&p.path, &["--function", "parse", "--line", &line, "--timeout", "30", "--recursion-depth", "6"]);
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
    let p = brackets("brackets_off", 2);
    let line = format!("brackets_off.c:{TARGET_LINE}");
    let out = run_on(&p.path, &["--function", "parse", "--line", &line, "--recursion-depth", "0"]);
    assert_bad_input(&out, "recursive");
}

#[test]
fn a_recursion_depth_out_of_range_is_bad_input() {
    let p = brackets("brackets_bad", 2);
    let out = run_on(&p.path, &["--function", "parse", "--block", "entry", "--recursion-depth", "99"]);
    assert_bad_input(&out, "--recursion-depth");
}
