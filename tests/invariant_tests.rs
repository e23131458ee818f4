//! Inductive invariants of loops: relations every iteration keeps, proved by
//! Z3 bit-precisely along every iteration backbone and conjoined after the loop, for variables
//! the summary rules leave ⋆ (values read from the input stream or memory). Each unreachable
//! target is proven by the `apc` engine alone, and its twin (one constant changed) is reachable
//! with a replay.

mod common;
use common::*;
use serde_json::Value;

const HEADER: &str = VERIFIER_HEADER;

fn reach(name: &str, src: &str, function: &str, extra: &[&str]) -> Value {
    common::reach(name, &format!("{HEADER}{src}"), function, extra)
}

#[test]
fn variables_moved_by_the_same_input_stay_apart_by_their_entry_difference() {
    let src = |test: &str| {
        format!(
            "void f(int n) {{ int x = 0, y = 3;\n\
               for (int i = 0; i < n; i++) {{ int t = __VERIFIER_nondet_int(); x += t; y += t; }}\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("lockstep_input", &src("y - x != 3"), &src("x > 100 && y - x == 3"), "−");
}

#[test]
fn what_one_variable_gains_the_other_loses() {
    let src = |test: &str| {
        format!(
            "void f(int n) {{ int x = 5, y = 7;\n\
               for (int i = 0; i < n; i++) {{ int t = __VERIFIER_nondet_int(); x += t; y -= t; }}\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("sum_kept", &src("x + y != 12"), &src("x == 40 && y == -28"), "+");
}

#[test]
fn a_running_maximum_never_falls_below_its_start() {
    let src = |test: &str| {
        format!(
            "void f(int a0) {{ int m = a0;\n\
               while (__VERIFIER_nondet_int()) {{ int v = __VERIFIER_nondet_int(); if (v > m) m = v; }}\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("running_max", &src("m < a0"), &src("m > a0 + 5"), "≥");
}

#[test]
fn steps_of_an_even_amount_keep_the_parity() {
    let src = |test: &str| {
        format!(
            "void f(unsigned x) {{ if (x % 2) return;\n\
               while (__VERIFIER_nondet_int()) x += 2 * __VERIFIER_nondet_uint();\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("parity", &src("x % 2 == 1"), &src("x % 4 == 2"), "& 1");
}

#[test]
fn a_bound_kept_by_a_guarded_update_holds_after_the_loop() {
    let src = |test: &str| {
        format!(
            "void f(int n) {{ int x = 0; if (n < 0) return;\n\
               while (__VERIFIER_nondet_int()) {{ if (x < n) x = x + (__VERIFIER_nondet_int() & 1); }}\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("below_n", &src("x > n"), &src("x == n && n > 3"), "≤ n (if it holds at the entry)");
}

#[test]
fn a_sign_kept_by_a_nonlinear_update_holds_after_the_loop() {
    let src = |test: &str| {
        format!(
            "void f(void) {{ int x = 0;\n\
               while (__VERIFIER_nondet_int()) {{ if (x < 50) x = 2 * x + 1; }}\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("stays_positive", &src("x < 0"), &src("x == 63"), "≥ 0");
}

#[test]
fn a_relation_that_only_holds_without_wrap_around_is_not_used() {
    // Over the integers s only grows; in 32 bits a large v wraps it below zero. `s ≥ s̲` is no
    // invariant of the compiled loop, and the target is reachable.
    let src = "void f(void) { int s = 0;\n\
               while (__VERIFIER_nondet_int()) { int v = __VERIFIER_nondet_int(); if (v > 0) s += v; }\n\
               if (s < 0) reach_error(); }";
    let r = reach("wraps", src, "f", &["--engine", "apc", "--timeout", "10"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    let invariants = invariants_of(&r);
    assert!(!invariants.iter().any(|i| i.starts_with("s") && i.contains('≥')), "{invariants:?}");
    let r = reach("wraps_portfolio", src, "f", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn invariants_of_an_inner_loop_reach_the_outer_one() {
    // The inner loop's x and y move by the same inputs; the outer loop sees their difference kept.
    let src = |test: &str| {
        format!(
            "void f(int n, int m) {{ int x = 0, y = 0;\n\
               for (int i = 0; i < n; i++) for (int j = 0; j < m; j++) {{ int t = __VERIFIER_nondet_int(); x += t; y += t; }}\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("nested_lockstep", &src("x != y"), &src("x == y && n == 2 && m == 3"), "−");
}

#[test]
fn a_loop_that_never_ends_is_proved_never_to_be_left() {
    // The APC paper's example of incompleteness: i flips between 1 and 2 and never reaches 3.
    // `i ≤ 2` holds at the entry and every iteration keeps it; the exit needs i ≥ 3.
    let src = |to: u32| format!("void f(void) {{ int i = 1; while (i < 3) {{ if (i == 2) i = {to}; else i = 2; }} reach_error(); }}");
    proven_and_twin("never_left", &src(1), &src(3), "≤ 2 (if it holds at the entry)");
}

#[test]
fn a_multiple_of_a_step_keeps_its_ratio() {
    // x moves three times as far as y: x − 3y keeps its entry value (the factor is read from
    // the step).
    let src = |test: &str| {
        format!(
            "void f(int n) {{ int x = 0, y = 0;\n\
               for (int i = 0; i < n; i++) {{ int t = __VERIFIER_nondet_int(); x += 3 * t; y += t; }}\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("ratio3", &src("x != 3 * y"), &src("x == 3 * y && y == 5"), "· 3");
}

#[test]
fn every_element_read_so_far_is_at_most_the_running_maximum() {
    // A quantified fact over the elements the first loop has read (`∀j < i: a[j] ≤ m`), proved
    // with j free; the second loop's target needs it for every index.
    let src = |test: &str| {
        format!(
            "void f(int *a, int n) {{ if (n <= 0 || n > 100) return; int m = a[0];\n\
               for (int i = 1; i < n; i++) if (a[i] > m) m = a[i];\n\
               for (int i = 0; i < n; i++) if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("max_of_array", &src("a[i] > m"), &src("a[i] >= m && i == 2"), "∀");
}

#[test]
fn every_byte_read_so_far_is_at_most_the_running_maximum() {
    // Bytes are compared as ints (`zext(a[i]) > zext(m)`): the fact is over the element's value.
    let src = |test: &str| {
        format!(
            "void f(unsigned char *a, int n) {{ if (n <= 0 || n > 64) return; unsigned char m = 0;\n\
               for (int i = 0; i < n; i++) if (a[i] > m) m = a[i];\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("max_of_bytes", &src("a[n - 1] > m"), &src("a[n - 1] == m && m == 200"), "zext32");
}

#[test]
fn an_invariant_holds_in_every_iteration_of_the_looping_condition() {
    // x is ⋆ (moved by an input of 1 or 3); `x ≥ i` holds at every iteration's start, where also
    // x < 10, so at most 10 iterations run. Only the invariant inside φ^κ (at every τ, with x at
    // iteration τ an existential x_τ) says so: after the loop x ≥ i and x ≥ 10 allow any i.
    let src = |test: &str| {
        format!(
            "void f(void) {{ unsigned i = 0, x = 0;\n\
               while (x < 10) {{ unsigned v = (__VERIFIER_nondet_uint() & 2u) | 1u; x += v; i++; }}\n\
               if ({test}) reach_error(); }}"
        )
    };
    proven_and_twin("invariant_per_iteration", &src("i > 10"), &src("i > 9"), "≥ i");
    let r = reach("invariant_per_iteration_shape", &src("i > 10"), "f", &["--engine", "apc", "--timeout", "30"]);
    let looping = r["loops"][0]["looping_condition"].as_str().expect("looping condition");
    assert!(looping.contains("∀τ") && looping.contains("∃x") && looping.contains("@τ"), "{looping}");
}
