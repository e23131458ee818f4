//! Loops and backbones (section 2.1 of the APC paper) on C compiled at test time.

mod common;
use common::*;

/// The loop structure does not need the full witness search: a short budget keeps tests fast.
fn analyse(name: &str, src: &str, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--timeout", "5", "--max-models", "2"]);
    common::analyse(name, src, &all)
}

#[test]
fn running_example_has_one_loop_with_two_iterations_and_one_backbone() {
    let r = analyse("foo", include_str!("../c-benchmarks/running_example.c"), &["--function", "foo", "--call", "reach_error"]);
    assert_eq!(r["function"], "foo");
    let loops = r["loops"].as_array().unwrap();
    assert_eq!(loops.len(), 1, "{r:#}");
    let l = &loops[0];
    assert_eq!(l["entry"], "for.cond", "the loop is entered at its header");
    assert_eq!(l["backbones"].as_array().unwrap().len(), 2, "two backbones through the loop");
    for b in l["backbones"].as_array().unwrap() {
        let b = strings(b);
        assert_eq!(b.first().unwrap(), "for.cond");
        assert_eq!(b.last().unwrap(), "for.cond'");
    }
    assert!(strings(&l["nested"]).is_empty());
    let backbones = r["backbones"].as_array().unwrap();
    assert_eq!(backbones.len(), 1, "one backbone of the function to the target");
    let bb = strings(&backbones[0]);
    assert_eq!(bb.first().unwrap(), "entry");
    assert!(bb.contains(&"for.cond".to_string()));
    assert_eq!(bb.last().unwrap(), &strings(&r["target"])[0]);
    assert_ne!(r["verdict"], "unreachable", "the target is reachable: {r:#}");
}

/// The shape of the paper's Figure 2: the outer loop is entered at a different node on each
/// backbone, and on one of them the inner loop is entered as well.
#[test]
fn figure2_nested_loops_have_entry_nodes_per_backbone() {
    let src = r#"
        extern int nd(void);
        extern void reach_error(void);
        void fig2(int x) {
            if (nd()) goto B;
        A:  x++;
        B:  while (nd()) { x--; }
            if (nd()) goto A;
            reach_error();
        }
    "#;
    let r = analyse("fig2", src, &["--function", "fig2", "--call", "reach_error"]);
    let backbones = r["backbones"].as_array().unwrap();
    assert_eq!(backbones.len(), 2, "{r:#}");
    // The outer loop {A, B, while.cond, while.body, while.end} is entered at A on one backbone and
    // at B on the other: two loop records with the same blocks and different entries.
    let outer_at_a = loops_entered_at(&r, "A");
    let outer_at_b = loops_entered_at(&r, "B");
    assert_eq!(outer_at_a.len(), 1, "{r:#}");
    assert_eq!(outer_at_b.len(), 1, "{r:#}");
    assert_eq!(outer_at_a[0]["blocks"], outer_at_b[0]["blocks"]);
    assert!(strings(&outer_at_a[0]["blocks"]).len() >= 4);
    // The inner while loop is entered at its header, and is nested in the outer loop.
    let inner = loops_entered_at(&r, "while.cond");
    assert!(!inner.is_empty(), "{r:#}");
    let inner_ids: Vec<u64> = inner.iter().map(|l| l["id"].as_u64().unwrap()).collect();
    for l in inner {
        assert_eq!(strings(&l["blocks"]), vec!["while.cond", "while.body"]);
    }
    let nested: Vec<u64> = outer_at_a[0]["nested"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect();
    assert!(nested.iter().any(|n| inner_ids.contains(n)), "inner loop nested in outer: {r:#}");
}

/// Figure 3: `for (i = 0; i < m; ++i) { j = i; while (j < n) ++j; }`.
#[test]
fn figure3_for_loop_with_inner_while() {
    let src = r#"
        extern void reach_error(void);
        void fig3(int m, int n) {
            int i, j = 0;
            for (i = 0; i < m; ++i) {
                j = i;
                while (j < n) ++j;
            }
            if (j == 100) reach_error();
        }
    "#;
    let r = analyse("fig3", src, &["--function", "fig3", "--call", "reach_error"]);
    let outer = loops_entered_at(&r, "for.cond");
    assert_eq!(outer.len(), 1, "{r:#}");
    let outer = outer[0];
    let its = outer["backbones"].as_array().unwrap();
    assert_eq!(its.len(), 1, "one iteration shape of the outer loop: {r:#}");
    let it = strings(&its[0]);
    assert!(it.contains(&"while.cond".to_string()) && it.contains(&"for.inc".to_string()), "{it:?}");
    let inner = loops_entered_at(&r, "while.cond");
    assert_eq!(inner.len(), 1);
    assert_eq!(strings(&inner[0]["blocks"]), vec!["while.cond", "while.body"]);
    assert_eq!(outer["nested"].as_array().unwrap(), &vec![inner[0]["id"].clone()]);
    assert!(strings(&outer["blocks"]).len() >= 5);
}

#[test]
fn switch_inside_a_loop_gives_one_iteration_per_case() {
    let src = r#"
        extern void reach_error(void);
        void sw(int n, int *a) {
            int s = 0;
            for (int i = 0; i < n; i++) {
                switch (a[i]) {
                case 1: s += 1; break;
                case 2: s += 5; break;
                default: s -= 1;
                }
            }
            if (s == 42) reach_error();
        }
    "#;
    let r = analyse("sw", src, &["--function", "sw", "--call", "reach_error"]);
    let l = loops_entered_at(&r, "for.cond");
    assert_eq!(l.len(), 1, "{r:#}");
    assert_eq!(l[0]["backbones"].as_array().unwrap().len(), 3, "{r:#}");
    let all: Vec<String> = l[0]["backbones"].as_array().unwrap().iter().flat_map(strings).collect();
    for label in ["sw.bb", "sw.bb1", "sw.default"] {
        assert!(all.contains(&label.to_string()), "{label} missing: {all:?}");
    }
}

/// A `goto` into the middle of a loop: the loop has two entry nodes, and each backbone enters it
/// at a different one. Natural-loop analysis would miss this.
#[test]
fn irreducible_loop_made_with_goto() {
    let src = r#"
        extern void reach_error(void);
        void irr(int x) {
            if (x > 5) goto inside;
            while (x < 100) {
                x += 2;
            inside:
                x += 1;
            }
            if (x == 200) reach_error();
        }
    "#;
    let r = analyse("irr", src, &["--function", "irr", "--call", "reach_error"]);
    let backbones = r["backbones"].as_array().unwrap();
    assert_eq!(backbones.len(), 2, "{r:#}");
    let at_cond = loops_entered_at(&r, "while.cond");
    let at_inside = loops_entered_at(&r, "inside");
    assert_eq!(at_cond.len(), 1, "{r:#}");
    assert_eq!(at_inside.len(), 1, "{r:#}");
    assert_eq!(at_cond[0]["blocks"], at_inside[0]["blocks"], "same loop, two entries");
    for l in [at_cond[0], at_inside[0]] {
        assert_eq!(l["backbones"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn target_inside_a_loop_body() {
    let src = r#"
        extern void reach_error(void);
        void body(int *a, int n) {
            for (int i = 0; i < n; i++) {
                if (a[i] == 7) reach_error();
            }
        }
    "#;
    let r = analyse("body", src, &["--function", "body", "--call", "reach_error"]);
    assert_eq!(strings(&r["target"]), vec!["if.then"]);
    let backbones = r["backbones"].as_array().unwrap();
    assert_eq!(backbones.len(), 1, "{r:#}");
    assert_eq!(strings(&backbones[0]), vec!["entry", "for.cond", "for.body", "if.then"]);
    let l = loops_entered_at(&r, "for.cond");
    assert_eq!(l.len(), 1);
    // The target ends paths: it is not part of the loop, whose one iteration skips it.
    assert!(!strings(&l[0]["blocks"]).contains(&"if.then".to_string()));
    assert_eq!(l[0]["backbones"].as_array().unwrap().len(), 1);
}

#[test]
fn target_inside_a_called_function_is_found_through_inlining() {
    let src = r#"
        extern void reach_error(void);
        static int twice(int v) { return 2 * v; }
        static void check(int v) {
            if (v == 3) reach_error();
        }
        void caller(int x) { check(twice(x) + 1); }
    "#;
    let by_call = analyse("callee", src, &["--function", "caller", "--call", "reach_error"]);
    assert_eq!(strings(&by_call["target"]).len(), 1, "{by_call:#}");
    assert_eq!(by_call["backbones"].as_array().unwrap().len(), 1);
    // --block with a label that only exists in the callee.
    let by_block = analyse("callee", src, &["--function", "caller", "--block", "if.then"]);
    assert_eq!(strings(&by_block["target"]).len(), 1, "{by_block:#}");
    assert_eq!(by_block["backbones"].as_array().unwrap().len(), 1);
}

#[test]
fn verifier_assert_in_main_is_inlined_and_its_reach_error_call_found() {
    let src = r#"
        extern int __VERIFIER_nondet_int(void);
        void reach_error(void) { }
        void __VERIFIER_assert(int c) { if (!c) { ERROR: reach_error(); } }
        int main(void) {
            int x = __VERIFIER_nondet_int();
            __VERIFIER_assert(x != 5);
            __VERIFIER_assert(x != 6);
            return 0;
        }
    "#;
    let r = analyse("sv", src, &["--function", "main", "--call", "reach_error"]);
    assert_eq!(strings(&r["target"]).len(), 2, "both inlined assert sites are targets: {r:#}");
    assert_eq!(r["backbones"].as_array().unwrap().len(), 2);
}

#[test]
fn line_target_uses_debug_info() {
    let src = "extern void reach_error(void);\nvoid f(int x) {\n  if (x > 3)\n    reach_error();\n}\n";
    let p = c_program("lines", src);
    let r = json_report(&p.path, &["--function", "f", "--line", "lines.c:4"]);
    assert_eq!(strings(&r["target"]), vec!["if.then"], "{r:#}");
}

#[test]
fn bitcode_and_textual_ir_inputs_work_like_c() {
    let p = c_program("foo", include_str!("../c-benchmarks/running_example.c"));
    for (ext, extra) in [("bc", vec![]), ("ll", vec!["-S"])] {
        let out = p.dir.path().join(format!("foo.{ext}"));
        let status = std::process::Command::new(clang())
            .args(apc_llvm::load::CLANG_ANALYSIS_FLAGS)
            .args(extra)
            .arg(&p.path)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success());
        let r = json_report(&out, &["--function", "foo", "--call", "reach_error"]);
        assert_eq!(r["loops"].as_array().unwrap().len(), 1, "{ext}");
    }
}

#[test]
fn human_report_lists_loops_backbones_and_verdict() {
    let p = c_program("foo", include_str!("../c-benchmarks/running_example.c"));
    let out = run_on(&p.path, &["--function", "foo", "--call", "reach_error"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("L0 entry for.cond"), "{text}");
    assert!(text.contains("entry → for.cond → for.end →"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("verdict: ")), "{text}");
}

/// `chain(int *a)` with `n` ifs in a row: 2^n backbones.
fn chain_of_ifs(n: u32) -> String {
    let mut body = String::new();
    for k in 0..n {
        body.push_str(&format!("  if (a[{k}] > {k}) s += {k}; else s -= 1;\n"));
    }
    format!("extern void reach_error(void);\nvoid chain(int *a) {{\n  int s = 0;\n{body}  if (s == 7) reach_error();\n}}\n")
}

#[test]
fn backbone_bound_is_reported() {
    // 2^12 paths through a chain of ifs; a bound of 64 must be reported as hit.
    let src = chain_of_ifs(12);
    let r = analyse("chain", &src, &["--function", "chain", "--call", "reach_error", "--max-backbones", "64"]);
    assert_eq!(r["truncated"], true);
    assert_eq!(r["backbones"].as_array().unwrap().len(), 64);
    assert_ne!(r["verdict"], "unreachable");
}

#[test]
fn a_function_with_thousands_of_backbones_gets_a_short_report() {
    // 2^12 = 4,096 backbones through a chain of 12 ifs (about 40 blocks).
    let src = chain_of_ifs(12);
    let p = c_program("chain4096", &src);
    let args = ["--function", "chain", "--call", "reach_error", "--timeout", "20"];
    let out = run_on(&p.path, &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().next().is_some_and(|l| l.starts_with("verdict: ")), "the verdict comes first: {text}");
    assert!(text.lines().count() < 60, "{} lines: {text}", text.lines().count());
    assert!(text.contains("backbones (4096):") && text.contains("… 4091 more"), "{text}");
    let r = json_report(&p.path, &args);
    assert_eq!(r["backbone_count"], 4096);
    assert_eq!(r["backbones"].as_array().unwrap().len(), apc_llvm::report::JSON_BACKBONES);
    // -v prints everything.
    let mut verbose = args.to_vec();
    verbose.push("-v");
    let out = run_on(&p.path, &verbose);
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() > 4096);
}

/// `--dot`: the flowgraph as the analysis sees it, written beside the verdict.
#[test]
fn the_flowgraph_is_drawn_with_its_loops_and_targets() {
    let src = "extern void reach_error(void);\nvoid f(int n) {\n  int s = 0;\n  for (int i = 0; i < n; i++)\n    s += i;\n  if (s == 10)\n    reach_error();\n}\n";
    let p = c_program("drawn", src);
    let dot = p.dir.path().join("f.dot");
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--timeout", "20", "--dot", dot.to_str().unwrap()]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let text = std::fs::read_to_string(&dot).expect("the DOT file");
    assert!(text.starts_with("digraph \"f\""), "{text}");
    assert!(text.contains("subgraph cluster_loop0") && text.contains("peripheries=2"), "the loop and its entry: {text}");
    assert!(text.contains("color=red"), "the target: {text}");
    assert!(text.contains("penwidth"), "backbone edges: {text}");
    let out = run_on(&p.path, &["--function", "f", "--call", "reach_error", "--dot", "/nonexistent/dir/f.dot"]);
    assert_bad_input(&out, "--dot /nonexistent/dir/f.dot: no directory /nonexistent/dir");
}
