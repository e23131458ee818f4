//! The `nav` engine (loop navigation) alone, through the real binary: the loop-navigation
//! paper's benchmarks are reached with witnesses a native run confirmed; a loop over a fixed
//! number of input cells is proved unreachable by an exhaustive exploration, and its reachable
//! twin is not; a count that can never meet its test is pruned.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn bench(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c-benchmarks").join(name)
}

/// `--engine nav` on a benchmark: reachable, decided by nav, with a replayed witness.
fn reached_by_nav(file: &str, function: &str) {
    let r = json_report(&bench(file), &["--function", function, "--call", "reach_error", "--engine", "nav", "--timeout", "90"]);
    assert_reachable(&r);
    assert_eq!(r["engine"], "nav", "{r:#}");
}

#[test]
fn nav_reaches_hello() {
    reached_by_nav("hello.c", "hello");
}

#[test]
fn nav_reaches_hw() {
    reached_by_nav("hw.c", "hw");
}

#[test]
fn nav_reaches_hwm() {
    reached_by_nav("hwm.c", "hwm");
}

#[test]
fn nav_reaches_doif() {
    reached_by_nav("doif.c", "doif");
}

#[test]
fn nav_reaches_doifex() {
    reached_by_nav("doifex.c", "doifex");
}

#[test]
fn nav_reaches_eqcnt() {
    reached_by_nav("eqcnt.c", "eqcnt");
}

const COUNT: &str = r#"
extern void reach_error(void);
void f(const int *A) {
  int c = 0;
  for (int i = 0; i < 4; ++i)
    if (A[i] == 1)
      ++c;
  if (c > LIMIT)
    reach_error();
}
"#;

#[test]
fn nav_proves_a_count_bound_and_reaches_its_twin() {
    // Four cells can count at most four: every path explored, none reaches.
    let r = analyse("navcount4", &COUNT.replace("LIMIT", "4"), &["--function", "f", "--call", "reach_error", "--engine", "nav", "--timeout", "60"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert_eq!(r["engine"], "nav", "{r:#}");
    // Three is reachable: all four cells equal 1.
    let r = analyse("navcount3", &COUNT.replace("LIMIT", "3"), &["--function", "f", "--call", "reach_error", "--engine", "nav", "--timeout", "60"]);
    assert_reachable(&r);
}

#[test]
fn nav_prunes_by_parity_and_reaches_the_odd_twin() {
    // `k` moves by two per iteration and starts even: `k + 2·κ = 7` has no solution even with
    // wrap-around, so the loop's constraint system prunes the state (a proof, or unknown).
    let src = r#"
extern void reach_error(void);
void f(unsigned n) {
  unsigned i = 0, k = 0;
  while (i < n) { ++i; k += 2; }
  if (k == 7)
    reach_error();
}
"#;
    let r = analyse("navunbounded", src, &["--function", "f", "--call", "reach_error", "--engine", "nav", "--timeout", "4"]);
    assert_ne!(r["verdict"], "reachable", "{r:#}");
    // Starting odd, 7 is three iterations away.
    let r = analyse("navodd", &src.replace("k = 0", "k = 1"), &["--function", "f", "--call", "reach_error", "--engine", "nav", "--timeout", "60"]);
    assert_reachable(&r);
}
