//! Loop summaries (sections 3, 4 and 6 of the APC paper) on C compiled at test time.

mod common;
use common::*;
use serde_json::Value;

const HEADER: &str = "extern void reach_error(void);\n";

fn reach(name: &str, src: &str, function: &str, extra: &[&str]) -> Value {
    common::reach(name, &format!("{HEADER}{src}"), function, extra)
}

fn the_loop<'a>(r: &'a Value, entry: &str) -> &'a Value {
    let ls = loops_entered_at(r, entry);
    assert_eq!(ls.len(), 1, "one loop entered at {entry}: {r:#}");
    ls[0]
}

/// θ^κ of a loop variable whose name starts with `prefix` (mem2reg names phis `i.0`, ...).
fn theta<'a>(l: &'a Value, prefix: &str) -> &'a str {
    let m = l["iterated_state"].as_object().unwrap();
    let (_, v) = m.iter().find(|(k, _)| k.starts_with(prefix)).unwrap_or_else(|| panic!("no θ^κ({prefix}): {l:#}"));
    v.as_str().unwrap()
}

#[test]
fn running_example_iterated_state_looping_condition_and_model() {
    // The APC engine alone: its model's counters are what this test reads.
    let r = analyse("foo", include_str!("../c-benchmarks/running_example.c"), &["--function", "foo", "--call", "reach_error", "--engine", "apc"]);
    let l = the_loop(&r, "for.cond");
    let counters = strings(&l["counters"]);
    assert_eq!(counters.len(), 2);
    // The backbone through if.then (++k) is the one whose counter k grows with.
    let with_k = if strings(&l["backbones"][0]).contains(&"if.then".to_string()) { 0 } else { 1 };
    let (ka, kb) = (&counters[with_k], &counters[1 - with_k]);
    let i = theta(l, "i");
    assert!(i.starts_with("(i\u{332}") && i.contains(&format!("trunc32({ka})")) && i.contains(&format!("trunc32({kb})")), "θ^κ(i) = i̲ + κ1 + κ2, got {i}");
    let k = theta(l, "k");
    assert!(k.starts_with("k\u{332}") && k.contains(&format!("trunc32({ka})")) && !k.contains(kb.as_str()), "θ^κ(k) = k̲ + κ1, got {k}");
    assert_eq!(theta(l, "A"), "A\u{332}", "the array is read only");
    // φ^κ: one ∀τ part per iteration backbone, each with the other counter's ∃τ, plus the
    // total-iteration part over Σκ (i changes by 1 on both backbones).
    let phi = l["looping_condition"].as_str().unwrap();
    assert_eq!(phi.matches('∀').count(), 3, "{phi}");
    assert!(phi.contains("∀τΣ"), "{phi}");
    assert_eq!(phi.matches('∃').count(), 2, "{phi}");
    assert!(phi.contains("= 1") && phi.contains("≠ 1"), "{phi}");
    // A model with κ1 ≥ 10 (k = 3 + κ1 > 12), replayed natively.
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let kappa = r["witness"]["counters"][ka].as_u64().unwrap();
    assert!(kappa >= 10, "κ for ++k must be at least 10, got {kappa}");
}

#[test]
fn one_loop_is_unreachable() {
    let r = reach("oneloop", "void f(int n) { int i = 0; while (i < n) i += 4; if (i == 15) reach_error(); }", "f", &[]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let l = the_loop(&r, "while.cond");
    assert!(theta(l, "i").contains("· 4"), "{l:#}");
}

#[test]
fn two_loops_are_unreachable() {
    let r = reach(
        "twoloops",
        "void f(int n) { int i = 0, j = 0; while (i < n) i += 4; while (i != j + 7) j += 2; reach_error(); }",
        "f",
        &[],
    );
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert_eq!(r["loops"].as_array().unwrap().len(), 2);
}

#[test]
fn unsigned_loop_counter_wraps_and_stays_reachable() {
    let r = reach("wrap", "void f(unsigned x) { while (x > 10u) x += 7u; if (x == 3u) reach_error(); }", "f", &[]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    assert_eq!(r["verdict"], "reachable", "x wraps past 2^32 and lands on 3: {r:#}");
}

#[test]
fn a_million_iterations_are_summarised_not_unrolled() {
    let r = reach(
        "million",
        "void f(void) { int s = 0; for (int i = 0; i < 1000000; i++) s += 2; if (s == 2000000) reach_error(); }",
        "f",
        // The APC engine's report: the portfolio's may end before the APC's build described
        // the loop (a search's witness first).
        &["--engine", "apc"],
    );
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let l = the_loop(&r, "for.cond");
    assert!(theta(l, "s").contains("· 2"), "{l:#}");
    // The APC mentions the counter, not a million copies of the body.
    assert!(r["apc"].as_str().unwrap().len() < 2000);
    // And the contradicting check is unreachable.
    let r = reach(
        "million2",
        "void f(void) { int s = 0; for (int i = 0; i < 1000000; i++) s += 2; if (s == 2000001) reach_error(); }",
        "f",
        &[],
    );
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

#[test]
fn figure3_inner_iteration_count_is_inferred() {
    // The heavyweight step: the inner loop runs max(0, n − j) times (proved by the recurrence
    // check), so the outer θ^κ(j) is ite(κ ≠ 0, max(n̲, i̲ + κ − 1), j̲) in bit-vector form.
    let src = "void f(int m, int n) { int i, j = 0; for (i = 0; i < m; ++i) { j = i; while (j < n) ++j; } if (j == 100) reach_error(); }";
    // The APC engine's report (see `a_million_iterations_are_summarised_not_unrolled`).
    let r = reach("fig3", src, "f", &["--timeout", "20", "--engine", "apc"]);
    let outer = the_loop(&r, "for.cond");
    let k = &strings(&outer["counters"])[0];
    assert!(theta(outer, "i").contains(&format!("trunc32({k})")), "{outer:#}");
    let j = theta(outer, "j");
    assert!(j.starts_with(&format!("ite({k} ≠ 0, ")), "θ^κ(j) = ite(κ > 0, …, j̲), got {j}");
    assert!(j.contains("n\u{332}") && j.ends_with("j\u{332}.\u{332}0\u{332})"), "depends on n̲, else j̲: {j}");
    assert!(j.contains(&format!("trunc32({k}) + -1")), "the value of the last outer iteration: {j}");
    let inner = the_loop(&r, "while.cond");
    assert!(theta(inner, "j").contains("trunc32(κ"), "{inner:#}");
    assert_eq!(r["verdict"], "reachable", "m = 1, n = 100 reaches it: {r:#}");
    // With m > 0 the last outer iteration leaves j = max(n, m − 1) ≥ m − 1 (no increment can
    // overflow: each runs only while below a bound), so this target is unreachable, and the
    // inferred dependency is precise enough to prove it. (The apc engine alone: its proof takes
    // 1.4 s of solving alone, and 9-12 s in the portfolio, where its solvers get a tenth of an
    // engine while the DSE and the fuzzer search; under `make test`'s two test threads that
    // once passed the 20 s budget.)
    let impossible = src.replace("if (j == 100)", "if (m > 0 && j < m - 1)");
    let r2 = reach("fig3b", &impossible, "f", &["--timeout", "20", "--engine", "apc"]);
    assert_eq!(r2["verdict"], "unreachable", "{r2:#}");
}

#[test]
fn array_written_then_read_by_later_loops_has_a_satisfiable_apc() {
    let r = analyse(
        "windriver",
        include_str!("../c-benchmarks/windriver.c"),
        &["--function", "windriver", "--call", "reach_error", "--timeout", "8", "--max-models", "1"],
    );
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    assert!(r["witness"]["replayed"] == true, "the APC is satisfiable and a model was replayed: {r:#}");
}

#[test]
fn nondet_inside_a_loop_reads_the_input_stream_in_order() {
    let src = "extern int __VERIFIER_nondet_int(void);\n\
               int main(void) { int s = 0; for (int i = 0; i < 3; i++) { int v = __VERIFIER_nondet_int(); if (v < 0 || v > 10) return 0; s += v; } if (s == 27) reach_error(); return 0; }";
    // The apc engine alone: in the portfolio a witness found first ends the race, and the
    // report then has only what the APC's build had finished (under load, not this loop's
    // summary).
    let r = reach("ndloop", src, "main", &["--engine", "apc"]);
    let l = the_loop(&r, "for.cond");
    assert!(theta(l, "ν").contains("trunc") || theta(l, "ν").contains("κ"), "the stream position advances with κ: {l:#}");
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    let impossible = src.replace("s == 27", "s == 31");
    let r2 = reach("ndloop2", &impossible, "main", &["--timeout", "10"]);
    assert_ne!(r2["verdict"], "reachable");
}

#[test]
fn read_only_loop_over_a_constant_string() {
    // Hello-shaped: count the matching prefix against a constant.
    let src = "static const char H[] = \"Hey\";\n\
               void f(const char *a) { int k = 0; while (H[k] != 0 && a[k] == H[k]) k++; if (H[k] == 0) reach_error(); }";
    let r = reach("hey", src, "f", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn loop_navigation_figure1_variant_is_unreachable() {
    // a > 17 needs more 1s than the 15 elements scanned: the total-iteration condition bounds
    // κ1 + κ2 by 15 even under wrap-around arithmetic.
    let r = analyse("fig1", include_str!("../c-benchmarks/nav_fig1_a17.c"), &["--function", "fig1", "--call", "reach_error"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

#[test]
fn array_written_on_one_backbone_keeps_its_last_write() {
    // Section 4's second rule (made sound): the loop's last store is known after the loop.
    let f = "void f(int *a, int n) { for (int i = 0; i < n; i++) a[i] = 2 * i; if (n > 3 && a[n - 1] == 2 * n - 2) reach_error(); }";
    // The APC engine's report (see `a_million_iterations_are_summarised_not_unrolled`).
    let r = reach("aw", f, "f", &["--timeout", "20", "--engine", "apc"]);
    let l = the_loop(&r, "for.cond");
    let a = theta(l, "a");
    // ite(no wrap, λρ. (the fill), ite(κ = 0, a̲, … ite(κ = 64, chain, prev{o ↦ v}))).
    assert!(a.starts_with("ite(") && a.contains("λρ") && a.contains("↦"), "θ^κ(a) = ite(guard, λρ. …, ite(κ = 0, …, prev{{o ↦ v}})): {a}");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    // 2·(n − 1) is even even when it wraps: 7 is never the last element.
    let g = f.replace("a[n - 1] == 2 * n - 2", "a[n - 1] == 7");
    assert_eq!(reach("aw2", &g, "f", &["--timeout", "20"])["verdict"], "unreachable");
    // Cells before the last one are unknown, not their old contents: never unreachable.
    let h = f.replace("a[n - 1] == 2 * n - 2", "a[0] == 0");
    assert_ne!(reach("aw3", &h, "f", &["--timeout", "20"])["verdict"], "unreachable");
}

#[test]
fn figure3_with_branching_inner_loop_uses_the_sum_of_inner_counters() {
    // Two inner iteration backbones (the `if`): the count of Σκ′ = max(0, n − j) is still found,
    // because the shared test j < n decides continuation and j moves by 1 on both.
    let src = "void f(int m, int n, int *a) { int i, j = 0, c = 0; for (i = 0; i < m; ++i) { j = i; while (j < n) { if (a[j] > 0) c++; ++j; } } if (j == 100) reach_error(); }";
    // The loops' description comes from the APC's build, which the portfolio stops when
    // another engine finds the witness first (under ASan it once did): asked of the apc engine,
    // which waits for it; the witness of the portfolio.
    let described = reach("fig3c", src, "f", &["--timeout", "3", "--engine", "apc"]);
    let inner = the_loop(&described, "while.cond");
    assert_eq!(strings(&inner["counters"]).len(), 2, "{inner:#}");
    let outer = the_loop(&described, "for.cond");
    let j = theta(outer, "j");
    assert!(j.starts_with("ite(κ") && j.contains("n\u{332}"), "{j}");
    let r = reach("fig3c", src, "f", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    // The proof is the APC's (3 s alone); beside the DSE and the fuzzer under a loaded test
    // run it came close to the budget, so the twin asks the apc engine alone.
    let impossible = src.replace("if (j == 100)", "if (m > 0 && j < m - 1)");
    assert_eq!(reach("fig3d", &impossible, "f", &["--timeout", "20", "--engine", "apc"])["verdict"], "unreachable");
}

// Array-writing loops: the writes of up to `EXACT_WRITES` (64) iterations are kept exactly, so
// a fill loop ties every element to what was stored; beyond, the memory is
// unknown but for the last write.

const NONDET: &str = "extern int __VERIFIER_nondet_int(void);\n";

#[test]
fn a_fill_loop_from_nondet_ties_each_element_to_its_input() {
    let src = format!(
        "{NONDET}int main(void) {{ int A[8];\n\
           for (int i = 0; i < 8; i++) A[i] = __VERIFIER_nondet_int();\n\
           if (A[3] == 5 && A[6] == -2) reach_error();\n  return 0; }}"
    );
    let r = reach("fill_nondet", &src, "main", &["--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let nd: Vec<i64> = r["witness"]["nondet"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32 as i32 as i64).collect();
    assert_eq!((nd[3], nd[6]), (5, -2), "the 4th and 7th inputs are A[3] and A[6]: {nd:?}");
    let l = the_loop(&r, "for.cond");
    assert!(theta(l, "A").contains("n\u{332}o\u{332}n\u{332}d\u{332}e\u{332}t\u{332}(\u{3bd}\u{332} + 3)"), "the chain names each input: {}", theta(l, "A"));
}

#[test]
fn a_fill_loop_with_a_symbolic_count_proves_what_it_stored() {
    // A[4] is 8 for every n in 6..=10: the exact writes prove the target unreachable (a fresh
    // array, as before, left it open).
    let src = |v: i32| {
        format!(
            "void f(int n) {{ int A[16];\n\
               if (n < 0 || n > 10) return;\n\
               for (int i = 0; i < n; i++) A[i] = 2 * i;\n\
               if (n > 5 && A[4] == {v}) reach_error(); }}"
        )
    };
    let r = reach("fill_sym_unreach", &src(9), "f", &["--engine", "apc"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("fill_sym_reach", &src(8), "f", &["--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn writes_beyond_the_exact_bound_are_not_guessed() {
    // n up to 200: A[100] is written (as 200) only when the loop ran more than 100 times, beyond
    // the exact chain. The target must not be `unreachable`.
    let src = "void f(int n) { int A[256];\n\
               if (n < 0 || n > 200) return;\n\
               for (int i = 0; i < n; i++) A[i] = 2 * i;\n\
               if (n > 150 && A[100] == 200) reach_error(); }";
    let r = reach("fill_long", src, "f", &["--engine", "apc", "--timeout", "10"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
}

// Looping conditions monotone in τ lose their quantifier: exact on
// bit-vectors, so proofs and models stay what they were, and Z3 answers at once.

#[test]
fn an_accumulator_tied_to_its_counter_is_proven_with_a_quantifier_free_looping_condition() {
    let src = |cond: &str| {
        format!(
            "extern unsigned __VERIFIER_nondet_uint(void);\n\
             int main(void) {{ unsigned n = __VERIFIER_nondet_uint(); if (n > 1000) return 0;\n\
               unsigned sn = 0; for (unsigned i = 1; i <= n; i++) sn += 2;\n\
               if ({cond}) reach_error(); return 0; }}"
        )
    };
    let r = reach("sn_unreach", &src("!(sn == 2 * n || sn == 0)"), "main", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let l = the_loop(&r, "for.cond");
    let phi = l["looping_condition"].as_str().unwrap();
    assert!(!phi.contains('∀'), "the looping condition is quantifier-free: {phi}");
    let r = reach("sn_reach", &src("!(sn == 2 * n + 2 || sn == 0)"), "main", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn a_counter_that_wraps_around_ends_its_loop() {
    // i counts up from a >= 10 and leaves the loop only by wrapping past 255 to 0: k = 256 - a.
    // Over the integers the loop would never end; with wrap-around k == 246 is reached (a = 10)
    // and k == 247 is not.
    let src = |k: u32| {
        format!(
            "void f(unsigned char a) {{ unsigned char i = a; int k = 0;\n\
               while (i >= 10) {{ i++; k++; }}\n\
               if (k == {k}) reach_error(); }}"
        )
    };
    let r = reach("wrap_reach", &src(246), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let r = reach("wrap_unreach", &src(247), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

// Polynomial closed forms: `s += i` with i moving by one is a Gauss sum,
// exact modulo 2^w.

#[test]
fn a_gauss_sum_has_a_closed_form() {
    let src = |cond: &str| {
        format!(
            "void f(unsigned n) {{ if (n > 1000) return;\n\
               unsigned s = 0; for (unsigned i = 0; i < n; i++) s += i;\n\
               if ({cond}) reach_error(); }}"
        )
    };
    let r = reach("gauss_unreach", &src("2 * s != n * (n - 1)"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let s = theta(the_loop(&r, "for.cond"), "s");
    assert!(s.contains(">>ᵤ 1"), "θ^κ(s) is the halved product κ(κ−1)/2: {s}");
    let r = reach("gauss_reach", &src("s == 4950"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn a_gauss_sum_wraps_around_like_the_program() {
    // s = n(n−1)/2 modulo 2^32 passes 2^32 between n = 92682 and 92683 (to 55607): a small sum
    // for a large n exists only with wrap-around (a summary over the integers would call it
    // unreachable), and no n in range gives a sum between 1000 and 55607.
    let src = |cond: &str| {
        format!(
            "void f(unsigned n) {{ if (n > 100000) return;\n\
               unsigned s = 0; for (unsigned i = 0; i < n; i++) s += i;\n\
               if ({cond}) reach_error(); }}"
        )
    };
    let r = reach("gauss_wrap_reach", &src("n > 50000 && s < 60000"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let r = reach("gauss_wrap_unreach", &src("n > 50000 && s > 1000 && s < 55607"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

#[test]
fn a_64_bit_gauss_sum_has_a_closed_form_exact_modulo_2_to_the_64() {
    // At 64 bits the even factor of κ(κ−1) is halved first. For n = 2^33 + 1 the sum
    // n(n−1)/2 = 2^65 + 2^32 is 2^32 modulo 2^64: the target needs any other value.
    let src = |cond: &str| {
        format!(
            "void f(unsigned long n) {{ if (n > 10000000000ul) return;\n\
               unsigned long s = 0; for (unsigned long i = 0; i < n; i++) s += i;\n\
               if ({cond}) reach_error(); }}"
        )
    };
    let r = reach("gauss64_unreach", &src("n < 1000 && 2 * s != n * (n - 1)"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("gauss64_wrap", &src("n == 8589934593ul && s != 4294967296ul"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("gauss64_reach", &src("s == 4950"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

// An accumulator of a symbolic amount (`sn += a`): its closed form a·κ is nonlinear, and Z3's
// bit-blasted multipliers cannot refute `a·κ ≠ n·a` even with κ = n known. The APC with its
// nonlinear terms uninterpreted (a sound abstraction for proofs) is refuted in milliseconds.

#[test]
fn an_accumulator_of_a_symbolic_amount_is_proven_with_multiplication_uninterpreted() {
    let src = |start: u32| {
        format!(
            "void f(int n, int a) {{ if (n < 0 || n > 1000 || a < 0 || a > 1000) return;\n\
               int sn = 0; for (int i = {start}; i <= n; i++) sn += a;\n\
               if (!(sn == n * a || sn == 0)) reach_error(); }}"
        )
    };
    let r = reach("acc_sym_unreach", &src(1), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("uninterpreted functions"), "{r:#}");
    assert!(r["timings"]["solve_apc_nonlinear_uf"].as_f64().unwrap() < 5.0, "{r:#}");
    // Proved by the abstraction checked alone, before any race of the APC's queries.
    assert!(r["timings"].get("solve_apc").is_none(), "{r:#}");
    // One iteration more: sn = (n + 1)·a.
    let r = reach("acc_sym_reach", &src(0), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

// A model whose loop runs a billion times replays for seconds: the apc engine trades it for
// one of the bounded unfolding first (Listing 3 of the AI + DSE paper: Z3's first model had
// m = 1,091,363,841).

#[test]
fn a_model_with_a_billion_iterations_is_traded_for_a_small_one() {
    let src = "void nested(int n, int m) { int i = 0, k = 0; int j;\n\
               while (i < n) { j = 0; while (j < m) { k = k + 5; j = j + 1; }\n\
                 if (k >= 1000) reach_error(); i = i + 1; } }";
    let r = reach("small_model", src, "nested", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let counters = r["witness"]["counters"].as_object().expect("counters");
    assert!(counters.values().all(|c| c.as_u64().unwrap() <= 1 << 16), "{r:#}");
}

// Every element a fill loop wrote (facts about all elements): after the loop the array is
// λp. (v at p's iteration, or the old byte), exact for any count while the index does not wrap,
// so a read needs neither a quantifier nor an invariant.

#[test]
fn every_element_of_a_fill_loop_has_its_iterations_value() {
    let src = |test: &str| {
        format!(
            "void f(int n, int k) {{ int a[100]; if (n > 100) return;\n\
               for (int i = 0; i < n; i++) a[i] = i * 2;\n\
               if (k >= 0 && k < n && {test}) reach_error(); }}"
        )
    };
    let r = reach("all_elements", &src("a[k] < 0"), "f", &["--engine", "apc", "--timeout", "5"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("all_elements_odd", &src("a[k] == 7"), "f", &["--engine", "apc", "--timeout", "5"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("all_elements_twin", &src("a[k] == 6"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let k = r["witness"]["inputs"].as_array().unwrap().iter().find(|i| i["name"] == "k").expect("k");
    assert_eq!(k["c_value"].as_i64(), Some(3), "{r:#}");
}

#[test]
fn a_later_loop_reads_what_a_fill_loop_stored() {
    let src = |test: &str| {
        format!(
            "extern int __VERIFIER_nondet_int(void);\n\
             int main(void) {{ int a[1000]; int n = __VERIFIER_nondet_int(); if (n < 0 || n > 1000) return 0;\n\
               for (int i = 0; i < n; i++) a[i] = __VERIFIER_nondet_int() & 0x7fff;\n\
               for (int j = 0; j < n; j++) if ({test}) reach_error();\n  return 0; }}"
        )
    };
    let r = reach("fill_check", &src("a[j] < 0"), "main", &["--engine", "apc", "--timeout", "5"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("fill_check_twin", &src("a[j] == 0x7fff"), "main", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn a_fill_value_wraps_around_like_the_program() {
    // (unsigned char)(3i + 1) is 0 at i = 85 (256 = 3·85 + 1): over the integers it never is.
    let src = |range: &str| {
        format!(
            "void f(unsigned n, unsigned k) {{ unsigned char a[5000]; if (n > 5000) return;\n\
               for (unsigned i = 0; i < n; i++) a[i] = (unsigned char)(i * 3 + 1);\n\
               if (k < n && {range} && a[k] == 0) reach_error(); }}"
        )
    };
    let r = reach("fill_wraps", &src("k > 4000"), "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let k = r["witness"]["inputs"].as_array().unwrap().iter().find(|i| i["name"] == "k").expect("k")["value"].as_u64().unwrap();
    assert_eq!((3 * k + 1) % 256, 0, "{r:#}");
    let r = reach("fill_wraps_not_yet", &src("k < 85"), "f", &["--engine", "apc", "--timeout", "5"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

// Relations every iteration keeps: each unreachable target is proven from the closed
// forms θ^κ and the quantifier-free looping condition, and its twin (one constant changed) is
// reachable with a replay.

fn verdict_pair(name: &str, unreachable: &str, twin: &str, function: &str) {
    let r = reach(name, unreachable, function, &["--engine", "apc", "--timeout", "5"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach(&format!("{name}_twin"), twin, function, &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["replayed"], true, "{r:#}");
}

#[test]
fn lockstep_variables_stay_equal() {
    let src = |j0: u32| format!("void f(int n) {{ int i = 0, j = {j0}; while (i < n) {{ i++; j++; }} if (i != j) reach_error(); }}");
    verdict_pair("lockstep", &src(0), &src(1), "f");
}

#[test]
fn one_variable_stays_double_the_other() {
    let src = |d: u32| {
        format!(
            "void f(unsigned n) {{ unsigned i = 0, j = 0; if (n > 1000) return;\n\
               while (j < n) {{ i += {d}; j++; }} if (i != 2 * j) reach_error(); }}"
        )
    };
    verdict_pair("half_double", &src(2), &src(3), "f");
}

#[test]
fn an_index_bounded_by_the_array_stays_in_bounds() {
    let src = |bound: u32| {
        format!(
            "int f(int n, int *x) {{ int a[10]; int i = 0;\n\
               while (i < n && i < 10) {{ a[i] = x[i]; i++; }}\n\
               if (i > {bound}) reach_error(); return i > 0 ? a[0] : 0; }}"
        )
    };
    verdict_pair("bounded_index", &src(10), &src(9), "f");
}

#[test]
fn a_matrix_filled_row_by_row_holds_every_value() {
    // The inner loop's fill is a row; the outer loop lays rows 80 bytes apart (`fill::Block::Region`).
    let src = |test: &str| {
        format!(
            "void f(int n, int m, int x, int y, int v) {{ int a[20][20]; if (n > 20 || m > 20) return;\n\
               for (int i = 0; i < n; i++) for (int j = 0; j < m; j++) a[i][j] = i * 100 + j + v;\n\
               if (x >= 0 && x < n && y >= 0 && y < m && {test}) reach_error(); }}"
        )
    };
    let r = reach("matrix", &src("a[x][y] != x * 100 + y + v"), "f", &["--engine", "apc", "--timeout", "5"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(theta(the_loop(&r, "for.cond"), "a").contains("λρ"), "the outer loop's memory is a fill of rows: {r:#}");
    let r = reach("matrix_twin", &src("a[x][y] == 1517 && v == 0"), "f", &["--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn a_fill_models_writes_stay_inside_the_array() {
    // Nothing bounds n but the array: a model with n in the millions writes past A and crashes
    // its replay. The fill's region inside A is asked for first (a preference, not a fact).
    let src = "void f(int a, int b) { unsigned char A[300] = {0}; unsigned n = (unsigned)(a + 30) * 5;\n\
               for (unsigned i = 0; i < n; i++) A[i] = i * 3 + 1;\n\
               if ((unsigned)(b + 60) < n && A[b + 60] == 0) reach_error(); }";
    let r = reach("fill_in_bounds", src, "f", &["--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let a = r["witness"]["inputs"].as_array().unwrap().iter().find(|i| i["name"] == "a").expect("a")["c_value"].as_i64().unwrap();
    let n = (a as u32).wrapping_add(30).wrapping_mul(5);
    assert!(n <= 300, "n = {n} stays within A[300]: {r:#}");
}

/// The first unfolding bound adapts to the unfolding's size: three nested loops
/// multiply the instances of their quantifiers, so K starts below `--unfold`; one loop keeps it.
#[test]
fn the_unfolding_bound_starts_small_for_nested_loops() {
    let nested = "extern void reach_error(void);\n\
                  void f(const unsigned char *s, unsigned n) {\n\
                  \x20 unsigned cnt = 0;\n\
                  \x20 for (unsigned i = 0; i < n && s[i]; i++)\n\
                  \x20   for (unsigned j = 0; j < i; j++)\n\
                  \x20     for (unsigned k = 0; k < j; k++)\n\
                  \x20       if (s[k] == 'a') cnt++;\n\
                  \x20 if (cnt == 7) reach_error();\n\
                  }\n";
    let p = c_program("nested3", nested);
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "3", "--max-models", "1"]);
    let k = r["engines"]["apc"]["stats"]["unfold_start_k"].as_u64().expect("the start K is reported");
    assert!((2..25).contains(&k), "{r:#}");
    let one = "extern void reach_error(void);\nvoid f(unsigned n) { unsigned s = 0; for (unsigned i = 0; i < n; i++) s += 2; if (s == 14) reach_error(); }\n";
    let p = c_program("oneloop_k", one);
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    if let Some(k) = r["engines"]["apc"]["stats"]["unfold_start_k"].as_u64() {
        assert_eq!(k, 25, "{r:#}");
    }
}

/// Nested counting loops: the outer loop's test mentions only its own τ, so it loses
/// its quantifier even though the body holds an inner loop, and the inner summary (τ-free) needs
/// none: `c == n * m` after the loops is proved; the twin with `c == n * m` reachable replays.
#[test]
fn nested_counting_loops_are_proved_without_quantifiers() {
    let src = |cond: &str| {
        format!(
            "extern void reach_error(void);\n\
             void f(unsigned n, unsigned m) {{\n\
             \x20 unsigned c = 0;\n\
             \x20 if (n > 100 || m > 100) return;\n\
             \x20 for (unsigned i = 0; i < n; i++)\n\
             \x20   for (unsigned j = 0; j < m; j++)\n\
             \x20     c++;\n\
             \x20 if ({cond}) reach_error();\n\
             }}\n"
        )
    };
    let p = c_program("nestcount", &src("c > n * m"));
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(!r["apc"].as_str().unwrap().contains('∀'), "{}", r["apc"]);
    let p = c_program("nestcount_yes", &src("c == n * m && c == 12"));
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

/// The quick round: an APC that does not alternate quantifiers is asked once, exactly, in the
/// quick check's context, and that answer is the first round's. A proof that needs the looping
/// condition (`i > n` after `while (i < n) i++`) and a counting loop's smallest model (κ = 10
/// for `i == 30`) come from it: the race, which would have raced the unfolding APC^K beside
/// it (`solve_apc_k`), never runs.
#[test]
fn the_quick_round_answers_the_first_query_without_the_race() {
    let r = reach("quick_round_proof", "void f(int n) { int i = 0; while (i < n) i++; if (n > 0 && i > n) reach_error(); }", "f", &["--engine", "apc"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("quantified APC"), "{r:#}");
    assert!(r["timings"]["solve_apc"].as_f64().is_some(), "{r:#}");
    assert!(r["timings"].get("solve_apc_k").is_none(), "the race ran: {r:#}");
    let r = reach("quick_round_model", "void f(unsigned n) { unsigned i = 0; while (i < n) i += 3; if (i == 30) reach_error(); }", "f", &["--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let counters: u64 = r["witness"]["counters"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(counters, 10, "{r:#}");
    assert!(r["timings"].get("solve_apc_k").is_none(), "the race ran: {r:#}");
}

#[test]
fn a_proof_without_the_looping_conditions_comes_from_the_quantifier_free_weakening() {
    // `i` grows by 4 from 0: after the loop i = 4·κ, never odd. The APC without its ∀τ looping
    // condition already says so, and that quantifier-free query answers first; a target the
    // looping condition is needed for (`i > n + 3` after `while (i < n)`) is proved by the
    // quantified APC or its unfolding instead.
    let src = |test: &str| format!("void f(int n) {{ int i = 0; while (i < n) i += 4; if ({test}) reach_error(); }}");
    let r = reach("qf_weakening", &src("i == 15"), "f", &["--engine", "apc"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("without its quantified looping conditions"), "{r:#}");
    assert!(r["timings"]["solve_apc_qf"].as_f64().is_some(), "{r:#}");
    let r = reach("qf_weakening_needs_the_loop", "void f(void) { int i = 0; while (i < 10) i++; if (i == 11) reach_error(); }", "f", &["--engine", "apc"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(!r["reason"].as_str().unwrap().contains("without its quantified"), "{r:#}");
    // The twin: i == 16 is reached (n = 13).
    let r = reach("qf_weakening_twin", &src("i == 16"), "f", &[]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}
