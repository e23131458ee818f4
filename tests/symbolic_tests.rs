//! Bit-precise symbolic execution of loop-free code: verdicts, APC shapes, and every satisfiable
//! case checked against a real native run (a `reachable` verdict means the run entered the target).

mod common;
use common::*;
use serde_json::Value;

/// (10 s: proofs and these witnesses take well under a second; a run nobody decides lasts
/// the whole budget.)
fn reach(name: &str, src: &str, function: &str) -> Value {
    common::reach(name, src, function, &["--timeout", "10"])
}

fn int_input(r: &Value, name: &str) -> u64 {
    r["witness"]["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no input {name}: {r:#}"))["value"]
        .as_u64()
        .unwrap()
}

const HEADER: &str = "extern void reach_error(void);\n";

#[test]
fn contradictory_branches_are_unreachable() {
    let r = reach("contra", &format!("{HEADER}void f(int x) {{ if (x > 5) {{ if (x < 3) reach_error(); }} }}"), "f");
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    assert!(r["apc"].as_str().unwrap().contains('∧'));
    assert!(r["smtlib"].as_str().unwrap().contains("(check-sat)"));
    assert!(r["witness"].is_null());
}

#[test]
fn multiplication_gives_x_equals_7() {
    let r = reach("mul", &format!("{HEADER}void f(int x) {{ if (x * 3 == 21) reach_error(); }}"), "f");
    assert_reachable(&r);
    assert_eq!(int_input(&r, "x"), 7, "3 is invertible modulo 2^32: x = 7 is the only model");
    assert_eq!(r["apc"], "(x\u{332} · 3) = 21");
}

#[test]
fn unsigned_wrap_around_is_reachable() {
    let r = reach("wrap", &format!("{HEADER}void f(unsigned x) {{ if (x + 1 == 0) reach_error(); }}"), "f");
    assert_reachable(&r);
    assert_eq!(int_input(&r, "x"), u32::MAX as u64);
}

#[test]
fn unsigned_char_above_255_is_unreachable() {
    let r = reach("uchar", &format!("{HEADER}void f(unsigned char c) {{ if (c > 255) reach_error(); }}"), "f");
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

#[test]
fn signed_overflow_wraps_as_compiled() {
    // At -O0 clang emits a wrapping add: INT_MAX + 1 is negative natively.
    let r = reach("sov", &format!("{HEADER}void f(int x) {{ if (x > 0 && x + 1 < 0) reach_error(); }}"), "f");
    assert_reachable(&r);
    assert_eq!(int_input(&r, "x"), i32::MAX as u64);
}

#[test]
fn array_contents_through_a_pointer_parameter() {
    let src = format!("{HEADER}void f(int *a) {{ if (a[0] + a[2] == 10 && a[1] == -4) reach_error(); }}");
    let r = reach("arr", &src, "f");
    assert_reachable(&r);
    let apc = r["apc"].as_str().unwrap();
    assert!(apc.contains("a\u{332}[4]:i32 = -4"), "{apc}");
}

#[test]
fn store_then_load_through_two_pointers_into_one_buffer() {
    let body = "int *q = (int *)p; q[1] = 0x01020304;";
    let yes = reach("alias", &format!("{HEADER}void f(char *p) {{ {body} if (p[5] == 3) reach_error(); }}"), "f");
    assert_reachable(&yes);
    let no = reach("alias", &format!("{HEADER}void f(char *p) {{ {body} if (p[5] == 4) reach_error(); }}"), "f");
    assert_eq!(no["verdict"], "unreachable", "byte 5 of little-endian 0x01020304 is 0x03: {no:#}");
}

#[test]
fn switch_cases() {
    let src = format!(
        "{HEADER}void f(int x) {{ switch (x & 3) {{ case 1: break; case 2: if (x > 40) reach_error(); break; case 7: reach_error(); default: break; }} }}"
    );
    let r = reach("sw", &src, "f");
    assert_reachable(&r);
    assert_eq!(int_input(&r, "x") & 3, 2);
    let r = analyse("sw", &src, &["--function", "f", "--line", "sw.c:2"]);
    assert!(r["verdict"].is_string());
    // case 7 of x & 3 can never match.
    let src7 = format!("{HEADER}void f(int x) {{ switch (x & 3) {{ case 7: reach_error(); default: break; }} }}");
    assert_eq!(reach("sw7", &src7, "f")["verdict"], "unreachable");
}

#[test]
fn nondet_calls_in_main_with_assume() {
    let src = format!(
        "{HEADER}extern int __VERIFIER_nondet_int(void);\nextern unsigned char __VERIFIER_nondet_uchar(void);\nextern void __VERIFIER_assume(int);\n\
         int main(void) {{ int a = __VERIFIER_nondet_int(); unsigned char c = __VERIFIER_nondet_uchar();\n\
         __VERIFIER_assume(a > 100); if (a < 200 && c == 'z') reach_error(); return 0; }}"
    );
    let r = reach("nd", &src, "main");
    assert_reachable(&r);
    let nd: Vec<u64> = r["witness"]["nondet"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(nd.len(), 2);
    let a = nd[0] as u32 as i32;
    assert!(a > 100 && a < 200, "{a}");
    assert_eq!(nd[1] as u8, b'z');
    // The assumption contradicts the branch: unreachable.
    let src2 = src.replace("a > 100", "a > 300");
    assert_eq!(reach("nd2", &src2, "main")["verdict"], "unreachable");
}

#[test]
fn globals_start_from_their_initializers() {
    let src = format!(
        "{HEADER}int table[4] = {{3, 1, 4, 1}}; int counter = 5;\n\
         void f(int i) {{ if (i >= 0 && i < 4 && table[i] == 4 && counter == 5) reach_error(); }}\n\
         void g(int i) {{ if (i >= 0 && i < 4 && table[i] == 9) reach_error(); }}"
    );
    let r = reach("glob", &src, "f");
    assert_reachable(&r);
    assert_eq!(int_input(&r, "i"), 2);
    assert_eq!(reach("glob", &src, "g")["verdict"], "unreachable");
}

#[test]
fn unknown_external_results_are_never_guessed() {
    // `ext` may return anything: the branch must not be judged unreachable.
    let src = format!("{HEADER}extern int ext(int);\nvoid f(int x) {{ int y = ext(x); if (y == 12345 && x == 1) reach_error(); }}");
    let r = reach("ext", &src, "f");
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    // The test on y is dropped (⋆), the one on x is kept.
    assert_eq!(r["apc"], "x\u{332} = 1");
}

#[test]
fn writes_through_escaped_pointers_are_forgotten() {
    // `fill` may write the buffer: its later contents are unknown, not the old value.
    let src = format!(
        "{HEADER}extern void fill(char *);\nvoid f(void) {{ char b[4] = {{0, 0, 0, 0}}; fill(b); if (b[1] == 7) reach_error(); }}"
    );
    let r = reach("esc", &src, "f");
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
}

#[test]
fn helper_functions_are_inlined_with_their_arguments() {
    let src = format!(
        "{HEADER}static int sq(int v) {{ return v * v; }}\nstatic void check(int v) {{ if (v == 49) reach_error(); }}\nvoid f(int x) {{ check(sq(x) + 0); }}"
    );
    let r = reach("inl", &src, "f");
    assert_reachable(&r);
    let x = int_input(&r, "x") as u32;
    assert_eq!(x.wrapping_mul(x), 49);
}

#[test]
fn calls_through_function_pointers_are_inlined() {
    let src = format!("{HEADER}static int sq(int v) {{ return v * v; }}\nstatic int apply(int (*f)(int), int v) {{ return f(v); }}\nvoid f(int v) {{ if (apply(sq, v) == 49) reach_error(); }}");
    let r = reach("fptr", &src, "f");
    assert_reachable(&r);
    assert_eq!(r["apc"], "(v\u{332} · v\u{332}) = 49");
}

#[test]
fn function_names_that_clash_with_libc_declarations() {
    // `brk` is declared by <unistd.h>; the replay driver must not care.
    let src = format!("{HEADER}void brk(int x) {{ if (x == 4) reach_error(); }}");
    assert_reachable(&reach("clash", &src, "brk"));
}

#[test]
fn pointer_differences_within_one_object() {
    let src = format!(
        "{HEADER}void f(const char *s) {{ const char *p = s; int n = 0; while (*p) {{ if (*p == 'x') n++; p++; }} if (n == 3 && p - s == 5) reach_error(); }}"
    );
    let r = reach("ptrdiff", &src, "f");
    assert_reachable(&r);
    // Different objects never compare equal, and an address difference is never guessed.
    let src2 = format!("{HEADER}int g;\nvoid f(int *q) {{ if ((long)q - (long)&g == 8) reach_error(); }}");
    assert_ne!(reach("ptrdiff2", &src2, "f")["verdict"], "unreachable");
}

/// An `unknown` verdict names what the APC could not model: the instruction kind, or the
/// function without a definition whose result it needed.
#[test]
fn unknown_reasons_name_what_became_star() {
    let src = "int f(int x) {\n  double d = x * 0.5;\n  int y = (int)(d * 3.0);\n  if (y == 7)\n    return 1;\n  return 0;\n}\n";
    let p = c_program("fl", src);
    let line = format!("{}:5", p.path.display());
    let r = json_report(&p.path, &["--function", "f", "--line", &line, "--engine", "apc", "--timeout", "5", "--max-models", "2"]);
    if r["verdict"] == "unknown" {
        assert!(r["reason"].as_str().unwrap().contains("the result of `fptosi` instructions"), "{r}");
    } else {
        assert_eq!(r["verdict"], "reachable", "{r}");
    }
    let src = "unsigned hash(unsigned x);\nint g(unsigned x) {\n  if (x < 1000 && hash(x) == 77)\n    return 1;\n  return 0;\n}\n";
    let p = c_program("h", src);
    let line = format!("{}:4", p.path.display());
    let r = json_report(&p.path, &["--function", "g", "--line", &line, "--engine", "apc", "--timeout", "5", "--max-models", "2"]);
    assert_eq!(r["verdict"], "unknown", "{r}");
    assert!(r["reason"].as_str().unwrap().contains("the result of `hash` (no definition in the bitcode)"), "{r}");
}
