//! Fail-safe loop summaries: every loop of the benchmark programs, the differential cases and
//! pointer-heavy programs is summarised and applied with the coverage check on. A value the loop
//! changes that neither a rule nor ⋆ covers would keep its pre-loop value after the loop (a
//! guess, and so a possible wrong `unreachable`).

mod common;
use apc_llvm::apc::ApcBuilder;
use apc_llvm::cfg::{Flowgraph, Limits, Structure};
use apc_llvm::load::{self, TargetSpec};
use std::path::Path;

/// Builds the APC of `function` in `path` with the check on; returns how many loops it met.
fn check(path: &Path, function: &str) -> usize {
    let loaded = load::load(path, function, &TargetSpec::Call("reach_error".into()))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let graph = Flowgraph::of_function(&loaded.program.function);
    let structure = Structure::compute(graph, Limits { max_backbones: 256, deadline: None });
    let (_, _, gaps) = ApcBuilder::new(&loaded.program, &structure).build_checked();
    assert!(gaps.is_empty(), "{}: {gaps:?}", path.display());
    structure.loops.len()
}

#[test]
fn every_benchmark_loop_is_covered() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("c-benchmarks");
    let mut loops = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("c") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let header = text.lines().find(|l| l.starts_with("// apc:")).expect("benchmark header");
        let function = header.split_whitespace().skip_while(|w| *w != "--function").nth(1).expect("--function");
        loops += check(&path, function);
    }
    assert!(loops >= 15, "the benchmarks have loops: {loops}");
}

#[test]
fn every_differential_case_loop_is_covered() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/differential-cases/loops.txt");
    let mut loops = 0;
    for (k, body) in std::fs::read_to_string(cases).unwrap().lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).enumerate() {
        let src = format!("extern void reach_error(void);\nvoid f(int a, int b) {{ {} }}\n", body.replace("T;", "reach_error();"));
        let p = common::c_program(&format!("case{k}"), &src);
        loops += check(&p.path, "f");
    }
    assert!(loops >= 9, "{loops}");
}

#[test]
fn pointer_heavy_loops_are_covered() {
    let programs = [
        // Pointer phis into known objects, from struct fields, globals, and of unknown objects.
        "typedef struct { const unsigned char *p; unsigned long n; } buf;
         void f(const char *s, unsigned long n) { buf b; b.p = (const unsigned char *)s; b.n = n;
           const unsigned char *e = b.p; while ((unsigned long)(e - b.p) < b.n && *e != 34) e++;
           if (e != b.p) reach_error(); }",
        "const char *g; void f(const char **pp, int n) { const char *p = *pp; const char *q = 0;
           for (int i = 0; i < n; i++) { if (p[i] == 'x') q = p + i; } g = q; if (q) reach_error(); }",
        // Nested loops over a matrix, an unknown call and an escaping store in the body.
        "int *gp; extern int ext(int); void f(int n) { int x = 0; int m[4][4];
           for (int i = 0; i < n; i++) { for (int j = 0; j < i && j < 4; j++) m[i & 3][j] = ext(j); gp = &x; }
           if (x == 3 && m[1][0] == 2) reach_error(); }",
        // Floating point and a select between objects inside the loop.
        "void f(int n, double d) { int a[2], b[2]; int *p = a; double s = 0;
           for (int i = 0; i < n; i++) { s += d; p = (i & 1) ? a : b; *p = i; }
           if (s > 10.0 && a[0] == 3) reach_error(); }",
    ];
    let mut loops = 0;
    for (k, body) in programs.iter().enumerate() {
        let p = common::c_program(&format!("ptr{k}"), &format!("extern void reach_error(void);\n{body}\n"));
        loops += check(&p.path, "f");
    }
    assert!(loops >= 5, "{loops}");
}
