//! Polynomial loop invariants: equalities up to degree 3 fitted to sampled loop states and kept
//! when Z3 proves them inductive on the bit-vectors (`x = n³`, `2s = k² + k`, `y·z = x²`).
//! Each unreachable target is proven by the `apc` engine alone with the invariant listed under
//! its loop, and its twin (one constant changed) is reachable with a native replay. Arrays
//! initialised by a loop and checked after it close the file.

mod common;
use common::*;
use serde_json::Value;

const HEADER: &str = VERIFIER_HEADER;

fn reach(name: &str, src: &str, function: &str, extra: &[&str]) -> Value {
    common::reach(name, &format!("{HEADER}{src}"), function, extra)
}

#[test]
fn the_cube_by_differences_is_n_cubed() {
    let src = |z0: u32| {
        format!(
            "void f(int a) {{ int n = 0, x = 0, y = 1, z = {z0};\n\
               while (n < a) {{ n = n + 1; x = x + y; y = y + z; z = z + 6; }}\n\
               if (x != n * n * n) reach_error(); }}"
        )
    };
    proven_and_twin("cube", &src(6), &src(7), "x.0 = (n.0 · (n.0 · n.0))");
}

#[test]
fn a_triangular_number_with_an_unbounded_count() {
    // The count moves on one of two iteration backbones: the rules leave s ⋆.
    let src = |step: &str| {
        format!(
            "void f(void) {{ int k = 0, s = 0;\n\
               while (__VERIFIER_nondet_int()) {{ if (__VERIFIER_nondet_int()) {{ k = k + 1; s = s + {step}; }} }}\n\
               if (2 * s != k * (k + 1)) reach_error(); }}"
        )
    };
    proven_and_twin("triangular", &src("k"), &src("k + 1"), "(s.0 · 2) = ((k.0 · k.0) + k.0)");
}

#[test]
fn twice_a_sum_is_a_square_plus_its_root() {
    let src = |x0: u32| {
        format!(
            "void f(void) {{ int x = {x0}, y = 0;\n\
               while (__VERIFIER_nondet_int()) {{ y = y + 1; x = x + y; }}\n\
               if (2 * x != y * y + y) reach_error(); }}"
        )
    };
    proven_and_twin("square_plus_root", &src(0), &src(1), "(x.0 · 2) = ((y.0 · y.0) + y.0)");
}

#[test]
fn a_product_equal_to_a_square_survives_wrap_around() {
    // y·z = x² holds modulo 2^32 too, although the values overflow after a few iterations.
    let src = |factor: u32| {
        format!(
            "void f(void) {{ int x = 1, y = 1, z = 1;\n\
               while (__VERIFIER_nondet_int()) {{ x = 2 * x; y = 2 * y; z = 2 * z;\n\
                 if (__VERIFIER_nondet_int()) {{ x = 3 * x; y = {factor} * y; }} }}\n\
               if (y * z != x * x) reach_error(); }}"
        )
    };
    proven_and_twin("product_square", &src(9), &src(8), "(x.0 · x.0) = ");
}

#[test]
fn an_array_initialised_by_a_loop_is_checked_after_it() {
    let src = |value: u32| {
        format!(
            "void f(int n) {{ int a[1000]; if (n < 0 || n > 1000) return;\n\
               for (int i = 0; i < n; i++) a[i] = {value};\n\
               for (int j = 0; j < n; j++) if (a[j] != 7) reach_error(); }}"
        )
    };
    let r = reach("array_init", &src(7), "f", &["--engine", "apc", "--timeout", "30"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("array_init_twin", &src(8), "f", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["replayed"], true, "{r:#}");
}

#[test]
fn an_array_copied_by_a_loop_equals_its_source() {
    let src = |offset: &str| {
        format!(
            "void f(int n, int k) {{ int a[1000], b[1000]; if (n < 0 || n > 1000) return;\n\
               for (int i = 0; i < n; i++) a[i] = 2 * i;\n\
               for (int i = 0; i < n; i++) b[i] = a[i]{offset};\n\
               if (k >= 0 && k < n && a[k] != b[k]) reach_error(); }}"
        )
    };
    let r = reach("array_copy", &src(""), "f", &["--engine", "apc", "--timeout", "30"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("array_copy_twin", &src(" + (i == 3)"), "f", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["replayed"], true, "{r:#}");
}

#[test]
fn a_relation_broken_beyond_the_sampled_iterations_is_not_used() {
    // The samples (a few dozen iterations) all satisfy x = n³; the 46th iteration breaks it, so
    // it is not inductive and the target is reachable (a ≥ 46).
    let src = "void f(int a) { int n = 0, x = 0, y = 1, z = 6;\n\
               while (n < a) { if (n == 45) x = x + 1; n = n + 1; x = x + y; y = y + z; z = z + 6; }\n\
               if (x != n * n * n) reach_error(); }";
    let r = reach("cube_broken_late", src, "f", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["replayed"], true, "{r:#}");
    assert!(!invariants_of(&r).iter().any(|i| i.contains("n.0 · (n.0 · n.0)")), "{r:#}");
}
