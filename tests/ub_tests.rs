//! Undefined behaviour on witnesses (`--check-ub`, `--ub-is-error`): the reaching
//! witness runs again on the program rebuilt under UBSan and ASan, natively.

mod common;
use common::*;

/// Reaching line 4 needs `x > 0` and `x + 2000000000 < 0`: only a signed overflow does it.
const OVERFLOW: &str = "int f(int x) {\n\
                        \x20 int y = x + 2000000000;\n\
                        \x20 if (x > 0 && y < 0)\n\
                        \x20   return 1;\n\
                        \x20 return 0;\n\
                        }\n";

/// The twin without undefined behaviour.
const CLEAN: &str = "int f(int x) {\n\
                     \x20 unsigned y = (unsigned)x + 2000000000u;\n\
                     \x20 if (x > 0 && (int)y < 0)\n\
                     \x20   return 1;\n\
                     \x20 return 0;\n\
                     }\n";

/// `1 << s` with `s > 40` equal to 2: x86-64 masks the count (so `s = 65` does it), C does not
/// define it.
const SHIFT: &str = "int f(unsigned s) {\n\
                     \x20 int v = 1 << s;\n\
                     \x20 if (s > 40 && s < 100 && v == 2)\n\
                     \x20   return 1;\n\
                     \x20 return 0;\n\
                     }\n";

#[test]
fn a_signed_overflow_witness_carries_the_ub_flag() {
    let p = c_program("ovf", OVERFLOW);
    let line = format!("{}:4", p.path.display());
    let r = json_report(&p.path, &["--function", "f", "--line", &line, "--check-ub"]);
    assert_eq!(r["verdict"], "reachable", "{r}");
    assert_eq!(r["ub"]["operation"], "signed integer overflow", "{r}");
    assert!(r["ub"]["location"].as_str().unwrap().ends_with("ovf.c:2:13"), "{r}");
    // Without --check-ub the report says nothing about it.
    let plain = json_report(&p.path, &["--function", "f", "--line", &line]);
    assert_eq!(plain["verdict"], "reachable");
    assert!(plain.get("ub").is_none() && plain.get("ub_check").is_none(), "{plain}");
}

#[test]
fn with_ub_is_error_a_witness_that_needs_ub_does_not_count() {
    let p = c_program("ovf", OVERFLOW);
    let line = format!("{}:4", p.path.display());
    let r = json_report(&p.path, &["--function", "f", "--line", &line, "--ub-is-error"]);
    assert_eq!(r["verdict"], "unknown", "{r}");
    assert!(r["reason"].as_str().unwrap().contains("undefined behaviour"), "{r}");
    assert_eq!(r["ub"]["operation"], "signed integer overflow");
}

#[test]
fn a_witness_without_ub_stays_reachable_under_ub_is_error() {
    let p = c_program("clean", CLEAN);
    let line = format!("{}:4", p.path.display());
    let r = json_report(&p.path, &["--function", "f", "--line", &line, "--ub-is-error"]);
    assert_eq!(r["verdict"], "reachable", "{r}");
    assert!(r.get("ub").is_none(), "{r}");
    assert!(r["ub_check"].as_str().unwrap().starts_with("none"), "{r}");
}

#[test]
fn a_shift_past_the_width_is_named() {
    let p = c_program("shift", SHIFT);
    let line = format!("{}:4", p.path.display());
    let r = json_report(&p.path, &["--function", "f", "--line", &line, "--check-ub"]);
    assert_eq!(r["verdict"], "reachable", "{r}");
    let op = r["ub"]["operation"].as_str().unwrap();
    assert!(op.starts_with("shift exponent"), "{r}");
    assert!(r["ub"]["location"].as_str().unwrap().ends_with("shift.c:2:13"), "{r}");
}

#[test]
fn bitcode_input_is_not_checked_and_says_why() {
    let p = c_program("ovf", OVERFLOW);
    let bc = compile_bitcode(&p);
    let line = format!("{}:4", p.path.display());
    let r = json_report(&bc, &["--function", "f", "--line", &line, "--check-ub"]);
    assert_eq!(r["verdict"], "reachable", "{r}");
    assert!(r["ub_check"].as_str().unwrap().starts_with("not checked"), "{r}");
}

/// Reaching line 7 reads the byte after an 8-byte allocation: the plain program reads whatever
/// the heap holds there (the analysis leaves it unknown), AddressSanitizer reports it.
const HEAP_OVERFLOW: &str = "#include <stdlib.h>\n\
                             int f(int i) {\n\
                             \x20 char *p = malloc(8);\n\
                             \x20 if (!p) return 0;\n\
                             \x20 for (int k = 0; k < 8; k++) p[k] = 1;\n\
                             \x20 if (i >= 8 && i < 12 && p[i] != 1)\n\
                             \x20   return 1;\n\
                             \x20 return 0;\n\
                             }\n";

/// Reads past a local array through a pointer (UBSan's bounds check does not see it).
const STACK_OVERFLOW: &str = "int f(int i) {\n\
                              \x20 int a[4] = {1, 2, 3, 4};\n\
                              \x20 int *p = a;\n\
                              \x20 if (i >= 4 && i < 7 && p[i] != 77)\n\
                              \x20   return 1;\n\
                              \x20 return 0;\n\
                              }\n";

/// Bytes in front of a buffer and past the index the function reads are the witness's own:
/// the sanitized run allocates the buffer with them, so nothing is reported.
const FRONT_AND_BACK: &str = "int f(const char *s, int n) {\n\
                              \x20 if (n > 0 && n < 6 && s[-1] == 'h' && s[n] == 'z')\n\
                              \x20   return 1;\n\
                              \x20 return 0;\n\
                              }\n";

#[test]
fn reading_past_an_allocation_is_named_by_asan() {
    let p = c_program("heap", HEAP_OVERFLOW);
    let line = format!("{}:7", p.path.display());
    let r = json_report(&p.path, &["--function", "f", "--line", &line, "--check-ub"]);
    assert_eq!(r["verdict"], "reachable", "{r}");
    assert_eq!(r["ub"]["operation"], "heap-buffer-overflow", "{r}");
    assert_eq!(r["ub"]["sanitizer"], "ASan", "{r}");
    assert!(r["ub"]["location"].as_str().unwrap().ends_with("heap.c:6:27"), "{r}");
    assert!(r["ub"]["message"].as_str().unwrap().contains("READ of size 1"), "{r}");
}

#[test]
fn with_ub_is_error_a_witness_past_a_local_array_does_not_count() {
    let p = c_program("stack", STACK_OVERFLOW);
    let line = format!("{}:5", p.path.display());
    let r = json_report(&p.path, &["--function", "f", "--line", &line, "--ub-is-error"]);
    assert_eq!(r["verdict"], "unknown", "{r}");
    assert_eq!(r["ub"]["operation"], "stack-buffer-overflow", "{r}");
    assert!(r["ub"]["location"].as_str().unwrap().ends_with("stack.c:4:26"), "{r}");
}

#[test]
fn a_witness_buffer_is_one_allocation_with_its_front_bytes() {
    let p = c_program("front", FRONT_AND_BACK);
    let line = format!("{}:3", p.path.display());
    let r = json_report(&p.path, &["--function", "f", "--line", &line, "--ub-is-error"]);
    assert_eq!(r["verdict"], "reachable", "{r}");
    assert!(r.get("ub").is_none(), "{r}");
    assert_eq!(r["ub_check"], "none before the target (UBSan, ASan)", "{r}");
}
