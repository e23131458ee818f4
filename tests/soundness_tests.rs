//! Soundness regressions: each class of wrong `unreachable` (or wrong `reachable`) found so far,
//! as a reachable program that must never be called unreachable (and, where the witness search
//! can find it, must be reachable with a replay) and an unreachable twin that must stay provable,
//! so that a fix which merely gives up everywhere does not pass.

mod common;
use common::*;
use serde_json::Value;

const HEADER: &str = "#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\nextern void reach_error(void);\n";

fn reach(name: &str, src: &str, function: &str) -> Value {
    common::reach(name, &format!("{HEADER}{src}"), function, &["--timeout", "10"])
}

fn assert_not_unreachable(r: &Value) {
    assert_ne!(r["verdict"], "unreachable", "a natively reachable target was called unreachable: {r:#}");
    if r["verdict"] == "reachable" {
        assert_eq!(r["witness"]["reached"], true, "{r:#}");
    }
}

fn assert_unreachable(r: &Value) {
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

/// The scan loop of a JSON parser: `end` walks a pointer loaded from a struct field.
const SCAN: &str = "
typedef struct { const unsigned char *content; size_t length; } pbuf;
void h(const char *s, size_t len) {
    pbuf b; b.content = (const unsigned char *)s; b.length = len;
    const unsigned char *end = b.content;
    while ((size_t)(end - b.content) < b.length && *end != '\"') end++;
    if ((size_t)(end - b.content) >= b.length) return;
    if (end != b.content) reach_error();
}";

#[test]
fn pointer_walk_from_a_struct_field() {
    let r = reach("scan", SCAN, "h");
    assert_reachable(&r);
    // Moving at all needs a first iteration, which needs a length. (Twins are provable from
    // the first iterations, so that APC^K proves them as well: a race won by an APC^K model
    // that does not replay ends `unknown`.)
    let twin = SCAN
        .replace("if ((size_t)(end - b.content) >= b.length) return;\n", "")
        .replace("if (end != b.content)", "if (end != b.content && b.length == 0)");
    assert_unreachable(&reach("scan_twin", &twin, "h"));
}

#[test]
fn pointer_walks_from_a_global_with_strides() {
    for (name, stride) in [("g1", "1"), ("g4", "4"), ("gv", "step")] {
        let src = format!(
            "const unsigned char *gp;
void h(const char *s, int len, int step) {{
    if (step < 1 || step > 4 || len < 0 || len > 64) return;
    gp = (const unsigned char *)s + 1;
    const unsigned char *p = gp;
    while (p < (const unsigned char *)s + len && *p != 'x') p += {stride};
    if (p < (const unsigned char *)s + len && p - (const unsigned char *)s > 5) reach_error();
}}"
        );
        assert_reachable(&reach(name, &src, "h"));
    }
    // Starting at s + 1, p moves only when 1 < len.
    let twin = "const unsigned char *gp;
void h(const char *s, int len) {
    gp = (const unsigned char *)s + 1;
    const unsigned char *p = gp;
    while (p - (const unsigned char *)s < len && *p != 'x') p += 1;
    if (p != (const unsigned char *)s + 1 && len <= 1) reach_error();
}";
    assert_unreachable(&reach("g_twin", twin, "h"));
}

#[test]
fn printf_stores_through_its_pointer_arguments_only() {
    // `%n` writes n; the analysis must not keep n = 0.
    let r = reach("pf", "void f(int a) { int n = 0; printf(\"%d%n\\n\", a, &n); if (n == 3) reach_error(); }", "f");
    assert_not_unreachable(&r);
    // m is not an argument of printf: it keeps its value.
    let twin = "void f(int a) { int n = 0, m = 0; int *pm = &m; printf(\"%d%n\\n\", a, &n); if (*pm == 3) reach_error(); }";
    assert_unreachable(&reach("pf_twin", twin, "f"));
}

#[test]
fn library_calls_writing_through_pointers_forget_what_they_write() {
    for (name, src) in [
        ("sscanf", "void f(const char *s) { int x = 0; sscanf(s, \"%d\", &x); if (x == 42) reach_error(); }"),
        ("sprintf", "void f(int a) { char buf[16]; buf[0] = 0; sprintf(buf, \"%d\", a); if (buf[0] == '7') reach_error(); }"),
        ("snprintf", "void f(int a) { char buf[16]; buf[1] = 0; snprintf(buf, sizeof buf, \"%d\", a); if (buf[1] == '3') reach_error(); }"),
    ] {
        assert_not_unreachable(&reach(name, src, "f"));
    }
    let twin = "void f(int a) { char buf[16]; char other[4]; other[0] = 1; sprintf(buf, \"%d\", a); if (other[0] == 7) reach_error(); }";
    assert_unreachable(&reach("sprintf_twin", twin, "f"));
}

#[test]
fn pointers_into_different_objects_may_be_equal_past_the_end() {
    // One past the end of one array can be the start of the next: not provably different.
    let r = reach("peq", "void f(int k) { int a[4]; int b[4]; a[0] = 1; b[0] = 2; int *p = b + k; int *q = a + k; if (p == a || q == b) reach_error(); }", "f");
    assert_not_unreachable(&r);
    // Strictly inside both objects they differ.
    let twin = "void f(int k) { int a[4]; int b[4]; a[0] = 1; b[0] = 2; int *p = b + (k & 3); if (p == a) reach_error(); }";
    assert_unreachable(&reach("peq_twin", twin, "f"));
}

#[test]
fn shift_counts_are_masked_like_x86() {
    assert_reachable(&reach("shl", "void f(unsigned n) { unsigned x = 1u << n; if (n == 33 && x == 2) reach_error(); }", "f"));
    assert_unreachable(&reach("shl_twin", "void f(unsigned n) { unsigned x = 1u << n; if (n == 33 && x == 0) reach_error(); }", "f"));
    // 64-bit operands mask to 6 bits.
    assert_reachable(&reach("shl64", "void f(unsigned long n) { unsigned long x = 1ul >> n; if (n == 64 && x == 1) reach_error(); }", "f"));
}

#[test]
fn unknown_tests_in_a_loop_condition_allow_early_exits() {
    // getchar() is unknown to the analysis (EOF in the sandbox): the loop may stop before n.
    let src = "void f(int n) { int i = 0; while (i < n && getchar() != -1) i++; if (i < n) reach_error(); }";
    assert_reachable(&reach("early", src, "f"));
    // Entering the loop needs 0 < n, whatever the unknown test says.
    let twin = "void f(int n) { int i = 0; while (i < n && getchar() != -1) i++; if (n <= 0 && i != 0) reach_error(); }";
    assert_unreachable(&reach("early_twin", twin, "f"));
}

#[test]
fn unknown_values_are_never_equal_to_each_other() {
    // After an unknown call the escaped struct is ⋆: `s.v > s.w` must not fold to false.
    let src = "struct S { int v, w; }; struct S *gs;
void f(int a, int b) { struct S s; s.v = a; s.w = b; gs = &s; srand(1); if (s.v > s.w) reach_error(); }";
    assert_not_unreachable(&reach("stars", src, "f"));
    let twin = "struct S { int v, w; }; struct S *gs;
void f(int a, int b) { struct S s; s.v = a; s.w = b; gs = &s; if (s.v > s.w && a <= b) reach_error(); }";
    assert_unreachable(&reach("stars_twin", twin, "f"));
}

/// `bump` is recursive, so it stays an unknown call that runs for real; it increments `*gp`.
const BUMP: &str = "int *gp;
void bump(int d) { if (d > 0) { bump(d - 1); return; } if (gp) *gp += 1; }\n";

#[test]
fn an_unknown_call_in_a_loop_reaches_objects_that_escape_later_in_the_body() {
    let src = format!("{BUMP}void f(int n) {{ int x = 0; for (int i = 0; i < n; i++) {{ bump(0); gp = &x; }} if (x >= 1) reach_error(); }}");
    assert_reachable(&reach("esc", &src, "f"));
    // The call before the loop, when x has not escaped yet, cannot change it.
    let twin = format!("{BUMP}void f(int n) {{ int x = 0; bump(0); for (int i = 0; i < n; i++) {{ gp = &x; }} if (x >= 1) reach_error(); }}");
    assert_unreachable(&reach("esc_twin", &twin, "f"));
}

#[test]
fn a_call_target_after_a_call_that_never_returns_is_not_reached() {
    // The marker sits right before the call: a run that exits in die() never reports a hit.
    let src = "void die(void) { exit(1); } void f(int a) { if (a > 5) { die(); reach_error(); } }";
    let r = reach("die", src, "f");
    assert_ne!(r["verdict"], "reachable", "{r:#}");
    assert_reachable(&reach("die_twin", "void die(void) { exit(1); } void f(int a) { if (a > 5) { reach_error(); die(); } }", "f"));
}

#[test]
fn a_line_target_after_an_unknown_call_in_the_same_block_replays_only_when_the_call_returns() {
    // srand() is external and returns: the block is split at the marker and still reachable.
    let p = c_program("line", &format!("{HEADER}int g; int f(int a) {{\n  int r = 0;\n  if (a > 5) {{\n    srand(a);\n    g = 17;\n  }}\n  return r;\n}}\n"));
    let r = json_report(&p.path, &["--function", "f", "--line", "line.c:9", "--timeout", "30"]);
    assert_reachable(&r);
}

#[test]
fn pointer_walks_from_a_parameters_pointee() {
    // The pointer field of a struct parameter points to a buffer the witness builds.
    let src = "typedef struct { const unsigned char *content; size_t length; size_t offset; } parse_buffer;
void h(parse_buffer *b) {
    const unsigned char *end = b->content + b->offset;
    if (b->length > 64) return;
    while ((size_t)(end - b->content) < b->length && *end != '\"') end++;
    if ((size_t)(end - b->content) >= b->length) return;
    if (end != b->content + b->offset) reach_error();
}";
    let r = reach("pb", src, "h");
    assert_reachable(&r);
    let b = &r["witness"]["inputs"][0];
    assert_eq!(b["pointees"][0]["offset"], 0, "the content field gets a buffer: {b:#}");
    // `char **` parameters, advanced by 4.
    let src = "void h(const char **sp, int len) {
    const char *s = *sp; const char *p = s;
    while (p - s < len && *p != ';') p += 4;
    if (p - s < len && p != s) reach_error();
}";
    assert_reachable(&reach("pp4", src, "h"));
    // Twin: the walk moves only when 0 < len.
    let twin = "void h(const char **sp, int len) {
    const char *s = *sp; const char *p = s;
    while (p - s < len && *p != ';') p += 4;
    if (p != s && len <= 0) reach_error();
}";
    assert_unreachable(&reach("pp4_twin", twin, "h"));
}

#[test]
fn an_unknown_call_on_a_struct_reaches_the_buffers_its_pointer_fields_point_to() {
    // `touch` (recursive, so a real unknown call) writes through the content pointer of b.
    let src = "typedef struct { char *content; long length; } buf;
void touch(buf *b, int d) { if (d > 0) { touch(b, d - 1); return; } b->content[0] = 'x'; }
void h(buf *b) { char *c = b->content; c[0] = 'a'; touch(b, 0); if (c[0] == 'x') reach_error(); }";
    assert_not_unreachable(&reach("touch", src, "h"));
    let twin = "typedef struct { char *content; long length; } buf;
void h(buf *b) { char *c = b->content; c[0] = 'a'; if (c[0] == 'x') reach_error(); }";
    assert_unreachable(&reach("touch_twin", twin, "h"));
}

#[test]
fn division_by_a_constant_zero_is_unknown_not_the_smt_quotient() {
    // The compiler may fold `x / 0` to any value instead of trapping: never a proof from it.
    let r = reach("div0", "void f(int x) { int y = x / 0; if (y == 5) reach_error(); }", "f");
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    let twin = "void f(int x, int d) { if (d == 0) return; int y = x / d; if (d == 1 && y != x) reach_error(); }";
    assert_unreachable(&reach("div_twin", twin, "f"));
}

#[test]
fn accesses_past_an_objects_end_reach_its_neighbours() {
    // Reading one past the end of g_b natively reads whatever the linker put there.
    let r = reach("oob", "int g_a[4] = {5, 5, 5, 5}; int g_b[4]; void f(int k) { int *p = g_b + 4; if (k == 1 && *p == 5) reach_error(); }", "f");
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
    let twin = "int g_a[4] = {5, 5, 5, 5}; int g_b[4]; void f(int k) { int *p = g_b + 3; if (k == 1 && *p == 5) reach_error(); }";
    assert_unreachable(&reach("oob_twin", twin, "f"));
}

#[test]
fn a_target_dropped_as_dead_code_by_inlining_is_unreachable() {
    // g's loop body always returns: `for.inc` has no predecessor, and inlining g into f keeps
    // no copy of it (a csmith program was once rejected with a misleading "recursive" error).
    let p = c_program("dead", "static int g(int n) { for (int i = 0; i < n; i++) { return i; } return -1; }\nint f(int n) { return g(n); }\n");
    let r = json_report(&p.path, &["--function", "f", "--block", "for.inc"]);
    assert_unreachable(&r);
}

#[test]
fn globals_start_as_the_constructors_leave_them() {
    // The C runtime runs constructors before any call: `g` is 7 at entry, not its initializer's
    // 0. Once called unreachable (the DSE started from the initializer) and, for the twin,
    // reachable (the replay's object kept the constructor in `.ctors`, which nothing ran).
    let ctor = "int g; __attribute__((constructor)) static void init(void) { g = 7; }\n";
    let r = reach("ctor", &format!("{ctor}void f(int x) {{ if (g == 7 && x == 3) reach_error(); }}"), "f");
    assert_reachable(&r);
    let r = reach("ctor_twin", &format!("{ctor}void f(int x) {{ if (g == 0 && x == 3) reach_error(); }}"), "f");
    assert_ne!(r["verdict"], "reachable", "the replay ran without the constructor: {r:#}");
    // Without a constructor the initializer is the value at entry, and proofs use it.
    let plain = "int g = 7;\nvoid f(int x) { if (g == 0 && x == 3) reach_error(); }";
    assert_unreachable(&reach("no_ctor", plain, "f"));
}

#[test]
fn an_uninitialised_local_is_whatever_its_stack_slot_held() {
    // At -O0 the second call's `s` is read from the slot the first call left 5 in. mem2reg
    // reads it as `undef` and LLVM folded `phi [0, ...], [undef, ...]` to 0: called unreachable
    // by every engine.
    let step = "static __attribute__((noinline)) int step(int v, int first) { int s; if (first) s = 0; s = s + v; return s; }\n";
    let r = reach("uninit", &format!("{step}int f(int v) {{ int r = step(v, 1); r = step(v, 0); if (v == 5 && r == 10) reach_error(); return 0; }}"), "f");
    assert_not_unreachable(&r);
    // Written on every path before it is read: exact, and provable.
    let twin = "static int step(int v, int first) { int s; if (first) s = 0; else s = 1; s = s + v; return s; }\n\
                int f(int v) { int r = step(v, 1); r = step(v, 0); if (v == 5 && r == 10) reach_error(); return 0; }";
    assert_unreachable(&reach("uninit_twin", twin, "f"));
}

#[test]
fn a_dead_callees_local_read_through_a_dangling_pointer_is_unknown() {
    // `x` lives in set()'s frame; other() reuses the slot, so `*gp` is 77 natively. The
    // inliner's lifetime markers end `x`, and the engines used to read its old 5 instead.
    let src = "int *gp;\n\
               static __attribute__((noinline)) void set(void) { int x = 5; gp = &x; }\n\
               static __attribute__((noinline)) void other(int v) { volatile int y = v; (void)y; }\n\
               int f(int v) { set(); other(v); if (*gp == 77) reach_error(); return 0; }";
    assert_not_unreachable(&reach("dangling", src, "f"));
    // The same through a live object: exact, and provable.
    let twin = "int *gp; int keep;\n\
                static void set(void) { keep = 5; gp = &keep; }\n\
                static void other(int v) { volatile int y = v; (void)y; }\n\
                int f(int v) { set(); other(v); if (*gp == 77) reach_error(); return 0; }";
    assert_unreachable(&reach("dangling_twin", twin, "f"));
}

#[test]
fn a_store_past_its_object_may_set_a_neighbour() {
    // Natively `admin` sits next to `buf`, and a 9-character string overflows into it. The
    // analysis gives each object its own array and keeps `admin` in a register, so every engine
    // called the target unreachable. Such stores are now targets of their own (`load::bounds`).
    let overflow = "int f(const char *s) { int admin = 0; char buf[8]; int i = 0; for (; s[i]; i++) buf[i] = s[i]; buf[i] = 0; if (admin) reach_error(); return buf[0]; }";
    assert_not_unreachable(&reach("overflow", overflow, "f"));
    // A constant index past the end, and a global array written past its end.
    let constant = "int f(int v) { int guard = 0; int a[4]; a[6] = v; if (guard == 99) reach_error(); return a[0]; }";
    assert_not_unreachable(&reach("past_end", constant, "f"));
    let global = "int ga[4]; int gb; int f(int i, int v) { ga[i] = v; if (gb == 99) reach_error(); return 0; }";
    assert_not_unreachable(&reach("global_past_end", global, "f"));
    // A heap block into the next one, and a pointer to a local written one past it.
    let heap = "int f(int i, int v) { int *p = malloc(16); int *q = malloc(16); if (!p || !q) return 0; q[0] = 0; if (i >= 0 && i < 16) p[i] = v; if (q[0] == 99) reach_error(); return 0; }";
    assert_not_unreachable(&reach("heap_past_end", heap, "f"));
    let scalar = "int f(int v) { int y = 0; int x = 0; int *p = &x; p[1] = v; if (y == 99) reach_error(); return x; }";
    assert_not_unreachable(&reach("scalar_past_end", scalar, "f"));
    // Twins: the same stores kept in bounds stay provable.
    let heap_twin = "int f(int i, int v) { int *p = malloc(16); int *q = malloc(16); if (!p || !q) return 0; q[0] = 0; if (i >= 0 && i < 4) p[i] = v; if (q[0] == 99) reach_error(); return 0; }";
    assert_unreachable(&reach("heap_twin", heap_twin, "f"));
    let bounded = "int f(const char *s) { int admin = 0; char buf[8]; int i = 0; for (; i < 7 && s[i]; i++) buf[i] = s[i]; buf[i] = 0; if (admin) reach_error(); return buf[0]; }";
    assert_unreachable(&reach("overflow_twin", bounded, "f"));
    let checked = "int ga[4]; int gb; int f(int i, int v) { if (i >= 0 && i < 4) ga[i] = v; if (gb == 99) reach_error(); return 0; }";
    assert_unreachable(&reach("global_twin", checked, "f"));
}

#[test]
fn a_pointer_walked_a_library_write_or_a_variable_length_array_past_its_object_may_set_a_neighbour() {
    // The copy loop of a `strcpy` into a stack buffer, by a pointer the loop walks: the offset
    // the bounds pass tracks beside the pointer (a phi of offsets) is what the check tests.
    let walk = "int f(const char *s) { int admin = 0; char buf[8]; char *p = buf; while (*s) *p++ = *s++; *p = 0; if (admin) reach_error(); return buf[0]; }";
    assert_not_unreachable(&reach("walk_past_end", walk, "f"));
    // Two variable indices into a matrix, and `memset` longer than its array.
    let matrix = "int f(int i, int j, int v) { int guard = 0; int m[2][3]; m[i][j] = v; if (guard == 7) reach_error(); return m[0][0]; }";
    assert_not_unreachable(&reach("matrix_past_end", matrix, "f"));
    let fill = "#include <string.h>\nint f(int n) { int guard = 0; char a[8]; memset(a, 1, n); if (guard) reach_error(); return a[0]; }";
    assert_not_unreachable(&reach("memset_past_end", fill, "f"));
    // Twins: the walk stops inside, the indices and the length are checked first.
    let walk_twin = "int f(const char *s) { int admin = 0; char buf[8]; char *p = buf; while (*s && p < buf + 7) *p++ = *s++; *p = 0; if (admin) reach_error(); return buf[0]; }";
    assert_unreachable(&reach("walk_twin", walk_twin, "f"));
    let matrix_twin = "int f(int i, int j, int v) { int guard = 0; int m[2][3]; if (i < 0 || i > 1 || j < 0 || j > 2) return 0; m[i][j] = v; if (guard == 7) reach_error(); return m[0][0]; }";
    assert_unreachable(&reach("matrix_twin", matrix_twin, "f"));
    let fill_twin = "#include <string.h>\nint f(int n) { int guard = 0; char a[8]; if (n < 0 || n > 8) return 0; memset(a, 1, n); if (guard) reach_error(); return a[0]; }";
    assert_unreachable(&reach("memset_twin", fill_twin, "f"));
    // A variable-length array: its size is the program's own value.
    let vla = "int f(int n, int i, int v) { int guard = 0; if (n <= 0 || n > 100) return 0; int a[n]; a[i] = v; if (guard == 5) reach_error(); return a[0]; }";
    assert_not_unreachable(&reach("vla_past_end", vla, "f"));
    let vla_twin = "int f(int n, int i, int v) { int guard = 0; if (n <= 0 || n > 100) return 0; int a[n]; if (i < 0 || i >= n) return 0; a[i] = v; if (guard == 5) reach_error(); return a[0]; }";
    assert_unreachable(&reach("vla_twin", vla_twin, "f"));
}

#[test]
fn heap_blocks_of_computed_sizes_atomics_and_forged_pointers_may_write_past_an_object() {
    // `malloc(n)` and `calloc(n, 1)` written past their end into the next block.
    let heap = "int f(int n, int v) { if (n < 1 || n > 16) return 0; char *p = malloc(n); char *q = malloc(8); if (!p || !q) return 0; q[0] = 0; if (v >= 0 && v < 64) p[v] = 1; if (q[0]) reach_error(); return 0; }";
    assert_not_unreachable(&reach("malloc_n_past_end", heap, "f"));
    assert_not_unreachable(&reach("calloc_n_past_end", &heap.replace("malloc(n)", "calloc(n, 1)"), "f"));
    // An atomic read-modify-write past its array, and a pointer made from an integer.
    let atomic = "int f(int i, int v) { int flag = 0; int a[4] = {0}; if (i >= 0 && i < 16) __sync_fetch_and_add(&a[i], v); if (flag) reach_error(); return 0; }";
    assert_not_unreachable(&reach("atomic_past_end", atomic, "f"));
    let forged = "#include <stdint.h>\nint f(int a, int b) { int flag = 0; int x = 0; uintptr_t u = (uintptr_t)&x; if (b >= -64 && b < 64) u += b; *(int*)u = a; if (flag) reach_error(); return x; }";
    assert_not_unreachable(&reach("inttoptr_write", forged, "f"));
    // Twins: the index checked against the block's size, the atomic one against the array's,
    // and the forged write on no path.
    let heap_twin = heap.replace("v < 64", "v < n");
    assert_unreachable(&reach("malloc_n_twin", &heap_twin, "f"));
    assert_unreachable(&reach("atomic_twin", &atomic.replace("i < 16", "i < 4"), "f"));
    let forged_twin = forged.replace("u += b;", "u += b; else return 0;").replace("*(int*)u = a;", "if (b > 100) *(int*)u = a;");
    assert_unreachable(&reach("inttoptr_twin", &forged_twin, "f"));
}

#[test]
fn a_freed_block_may_be_handed_out_again() {
    // `malloc` hands p's block to q: the write through p sets q[0].
    let reuse = "int f(int a) { int *p = malloc(16); if (!p) return 0; free(p); int *q = malloc(16); if (!q) return 0; q[0] = 0; p[0] = a; if (q[0] == 7) reach_error(); return 0; }";
    assert_not_unreachable(&reach("use_after_free", reuse, "f"));
    // Twin: every access before the free.
    let twin = "int f(int a) { int *p = malloc(16); int *q = malloc(16); if (!p || !q) return 0; q[0] = 0; p[0] = a; free(p); if (q[0] == 7) reach_error(); free(q); return 0; }";
    assert_unreachable(&reach("use_before_free", twin, "f"));
}

#[test]
fn c_library_writes_past_an_object_may_set_a_neighbour() {
    // `strcpy` of an input and `sscanf`'s `%s` write as much as the input holds.
    let copy = "#include <string.h>\nint f(const char *s) { int admin = 0; char buf[8]; strcpy(buf, s); if (admin) reach_error(); return buf[0]; }";
    assert_not_unreachable(&reach("strcpy_past_end", copy, "f"));
    let scan = "int f(const char *s) { int admin = 0; char buf[8]; int x; if (sscanf(s, \"%d %s\", &x, buf) != 2) return 0; if (admin) reach_error(); return buf[0] + x; }";
    assert_not_unreachable(&reach("sscanf_past_end", scan, "f"));
    // Twins: a constant string that fits, a width that fits, a format that prints at most 14 bytes.
    let copy_twin = "#include <string.h>\nint f(const char *s) { int admin = 0; char buf[8]; strcpy(buf, \"hello\"); if (admin) reach_error(); return buf[0] + s[0]; }";
    assert_unreachable(&reach("strcpy_twin", copy_twin, "f"));
    let scan_twin = "int f(const char *s) { int admin = 0; char buf[8]; int x; if (sscanf(s, \"%d %7s\", &x, buf) != 2) return 0; if (admin) reach_error(); return buf[0] + x; }";
    assert_unreachable(&reach("sscanf_twin", scan_twin, "f"));
    let print_twin = "int f(int a) { int admin = 0; char buf[16]; sprintf(buf, \"%d\", a); if (admin) reach_error(); return buf[0]; }";
    assert_unreachable(&reach("sprintf_twin", print_twin, "f"));
}

#[test]
fn pointers_kept_in_locals_or_moved_through_their_bytes_may_write_past_an_object() {
    // A pointer kept in a local whose address is taken (`q = &p`), moved through `*q`: b = 2
    // writes past `x`. Also kept in a local struct's field (in memory, not in a register).
    let kept = "int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; int *p = x; int **q = &p; if (b >= 0 && b < 8) *q = *q + b; *p = a; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("pointer_kept_in_a_local", kept, "f"));
    let field = "struct S { int n; int *p; }; int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; struct S s; s.n = a; s.p = x; if (b >= 0 && b < 8) s.p = s.p + b; *s.p = a; if (flag) reach_error(); return x[0] + s.n; }";
    assert_not_unreachable(&reach("pointer_kept_in_a_struct_field", field, "f"));
    // A pointer kept in a global the function alone uses, set by it or by its initialiser.
    let global = "static int *gp; int f(int a, int i) { int flag = 0; int x[2] = {0, 0}; gp = x; if (i >= 0 && i < 8) gp[i] = a; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("pointer_kept_in_a_global", global, "f"));
    let initialised = "static int flag; static int buf[2]; static int *gp = buf; int f(int a, int i) { if (i >= 0 && i < 8) gp[i] = a; if (flag) reach_error(); return buf[0]; }";
    assert_not_unreachable(&reach("pointer_initialised_in_a_global", initialised, "f"));
    // Its integer view in a union, or its bytes copied to an integer and back, moved.
    let union = "#include <stdint.h>\nunion PU { int *p; uintptr_t u; }; int f(int a, int b) { int flag = 0; int x = 0; union PU pu; pu.p = &x; if (b >= -64 && b < 64) pu.u += b; *pu.p = a; if (flag) reach_error(); return x; }";
    assert_not_unreachable(&reach("pointer_moved_in_a_union", union, "f"));
    let copied = "#include <stdint.h>\n#include <string.h>\nint f(int a, int b) { int flag = 0; int x = 0; int *p = &x; uintptr_t u; memcpy(&u, &p, sizeof u); if (b >= -64 && b < 64) u += b; memcpy(&p, &u, sizeof u); *p = a; if (flag) reach_error(); return x; }";
    assert_not_unreachable(&reach("pointer_moved_by_memcpy", copied, "f"));
    // A global struct whose initialiser sets an int beside the pointer field.
    let initialised_struct = "static struct { int n; int *p; } gs = {1, 0}; int f(int a, int b) { int flag = 0; int x[2]; gs.p = x; gs.p[b] = a; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("pointer_in_an_initialised_global_struct", initialised_struct, "f"));
    // A pointer loaded through a pointer to one of two locals.
    let through = "int f(int a, int b) { int flag = 0; int x[2]; int *p1 = x; int *p2 = x; int **pp = (a > 0) ? &p1 : &p2; (*pp)[b] = 7; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("pointer_through_one_of_two_locals", through, "f"));
    // Twins: moved within the array; a struct whose int field sits beside a pointer field.
    let kept_twin = "int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; int *p = x; int **q = &p; if (b >= 0 && b < 2) *q = *q + b; *p = a; if (flag) reach_error(); return x[0]; }";
    assert_unreachable(&reach("pointer_kept_in_a_local_twin", kept_twin, "f"));
    let global_twin = "static int *gp; int f(int a, int i) { int flag = 0; int x[2] = {0, 0}; gp = x; if (i >= 0 && i < 2) gp[i] = a; if (flag) reach_error(); return x[0]; }";
    assert_unreachable(&reach("pointer_kept_in_a_global_twin", global_twin, "f"));
    let field_moved_twin = "struct S { int n; int *p; }; int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; struct S s; s.n = a; s.p = x; if (b >= 0 && b < 2) s.p = s.p + b; *s.p = a; if (flag) reach_error(); return x[0] + s.n; }";
    assert_unreachable(&reach("pointer_kept_in_a_struct_field_twin", field_moved_twin, "f"));
    let field_twin = "struct S { int n; int *p; }; int f(int a) { int flag = 0; int x = 0; struct S s; struct S *ps = &s; ps->n = a; ps->p = &x; *ps->p = a; if (flag) reach_error(); return x + s.n; }";
    assert_unreachable(&reach("pointer_field_beside_an_int_twin", field_twin, "f"));
}

#[test]
fn setjmp_builtin_unreachable_and_builtin_assume_mean_what_the_run_does() {
    // A longjmp back into `setjmp` finds `k` as the run left it in memory (1), not as it was
    // when `setjmp` first returned.
    let jump = "#include <setjmp.h>\nstatic jmp_buf jb; static void g(int a) { if (a > 10) longjmp(jb, 1); } int f(int a) { int k = 0; if (setjmp(jb)) { if (k == 1) reach_error(); return 0; } k = 1; g(a); return 0; }";
    assert_not_unreachable(&reach("setjmp_nonvolatile_local", jump, "f"));
    // At -O0 `__builtin_unreachable()` is no instruction: the run falls through it.
    let fall = "int f(int x) { if (x == 5) { __builtin_unreachable(); } if (x == 5) reach_error(); return 0; }";
    assert_not_unreachable(&reach("builtin_unreachable_falls_through", fall, "f"));
    // `__builtin_assume` has no effect on the run.
    let assume = "int f(int x) { __builtin_assume(x != 5); if (x == 5) reach_error(); return 0; }";
    assert_not_unreachable(&reach("builtin_assume_has_no_effect", assume, "f"));
    // Twins: a test before `setjmp` (after it, every local in memory is forgotten), a call
    // that does not return, `__VERIFIER_assume`.
    let jump_twin = "#include <setjmp.h>\nstatic jmp_buf jb; static void g(int a) { if (a > 10) longjmp(jb, 1); } int f(int a) { int k = a; if (k > 20 && k < 15) reach_error(); if (setjmp(jb)) return 0; g(a); return 0; }";
    assert_unreachable(&reach("setjmp_twin", jump_twin, "f"));
    let fall_twin = "int f(int x) { if (x == 5) { exit(0); } if (x == 5) reach_error(); return 0; }";
    assert_unreachable(&reach("exit_twin", fall_twin, "f"));
    let assume_twin = "extern void __VERIFIER_assume(int);\nint f(int x) { __VERIFIER_assume(x != 5); if (x == 5) reach_error(); return 0; }";
    assert_unreachable(&reach("verifier_assume_twin", assume_twin, "f"));
}

#[test]
fn a_pointer_into_one_of_several_objects_may_write_past_the_one_it_points_into() {
    // `p` is x or y; p[2..5] is past both, and lands on a neighbour such as `flag`.
    let chosen = "int f(int a, int i, int c) { int flag = 0; int x[2] = {0, 0}; int y[2] = {0, 0}; int *p = c ? x : y; if (i >= 0 && i < 6) p[i] = a; if (flag) reach_error(); return x[0] + y[0]; }";
    assert_not_unreachable(&reach("pointer_into_one_of_two_arrays", chosen, "f"));
    // Walked by a loop from one of two buffers of different sizes: 8 bytes fit in `big` only.
    let walked = "int f(int c, const char *s) { int flag = 0; char small[4]; char big[8]; char *p = c ? small : big; for (int k = 0; k < 8 && s[k]; k++) *p++ = s[k]; if (flag) reach_error(); return small[0] + big[0]; }";
    assert_not_unreachable(&reach("pointer_walked_from_one_of_two_buffers", walked, "f"));
    // Twins: every index fits both arrays; the walk fits the smaller buffer.
    let chosen_twin = "int f(int a, int i, int c) { int flag = 0; int x[2] = {0, 0}; int y[2] = {0, 0}; int *p = c ? x : y; if (i >= 0 && i < 2) p[i] = a; if (flag) reach_error(); return x[0] + y[0]; }";
    assert_unreachable(&reach("pointer_into_one_of_two_arrays_twin", chosen_twin, "f"));
    let walked_twin = "int f(int c, const char *s) { int flag = 0; char small[4]; char big[8]; char *p = c ? small : big; for (int k = 0; k < 4 && s[k]; k++) *p++ = s[k]; if (flag) reach_error(); return small[0] + big[0]; }";
    assert_unreachable(&reach("pointer_walked_from_one_of_two_buffers_twin", walked_twin, "f"));
}

#[test]
fn a_loop_that_writes_past_its_array_leaves_before_its_counted_end() {
    // Three iterations over `int x[2]`: the third write is past it. The loop's closed-form
    // count (3) is no count of a run that leaves at the bounds test.
    let counted = "int f(int a) { int flag = 0; int x[2]; for (int i = 0; i < 3; i++) x[i] = a; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("counted_loop_past_its_array", counted, "f"));
    let walked = "int f(int a) { int flag = 0; int x[2]; int *p = x; for (int i = 0; i < 3; i++) *p++ = a; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("walked_loop_past_its_array", walked, "f"));
    let down = "int f(int a) { int x[2]; int flag = 0; for (int i = 1; i >= -1; i--) x[i] = a; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("loop_below_its_array", down, "f"));
    // Twins: two iterations.
    let counted_twin = "int f(int a) { int flag = 0; int x[2]; for (int i = 0; i < 2; i++) x[i] = a; if (flag) reach_error(); return x[0]; }";
    assert_unreachable(&reach("counted_loop_within_its_array", counted_twin, "f"));
    let walked_twin = "int f(int a) { int flag = 0; int x[2]; int *p = x; for (int i = 0; i < 2; i++) *p++ = a; if (flag) reach_error(); return x[0]; }";
    assert_unreachable(&reach("walked_loop_within_its_array", walked_twin, "f"));
}

#[test]
fn pointers_into_objects_of_computed_sizes_unknown_memory_or_heap_slots_may_write_past_an_object() {
    // One arm of the select is a variable-length array, or a block of a computed size, or memory
    // the pass does not follow; p = x and p[2] is past it.
    let vla = "int f(int a, int b) { int n = (a & 3) + 1; int flag = 0; int x[2]; int vla[n]; int *p = (a > 100) ? vla : x; p[b] = 5; if (flag) reach_error(); return vla[0]; }";
    assert_not_unreachable(&reach("select_with_a_vla", vla, "f"));
    let param = "int f(int a, int b, int *q) { int flag = 0; int x[2]; int *p = (a > 100) ? q : x; p[b] = 5; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("select_with_a_parameter", param, "f"));
    // A pointer kept in a heap block the function allocates.
    let heap = "int f(int a, int b) { int flag = 0; int x[2]; int **h = malloc(8); if (!h) return 0; *h = x; (*h)[b] = a; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("pointer_kept_in_a_heap_block", heap, "f"));
    // A block freed through a select, or written through one after its free.
    let freed = "int f(int a) { int *p = malloc(8); int *o = malloc(8); if (!p || !o) return 0; free((a > 0) ? p : o); int *q = malloc(8); if (!q) return 0; *q = 0; p[0] = 5; if (*q) reach_error(); return 0; }";
    assert_not_unreachable(&reach("free_through_a_select", freed, "f"));
    // Twins: every index fits both arms.
    let vla_twin = "int f(int a, int b) { int n = (a & 3) + 2; int flag = 0; int x[2]; int vla[n]; int *p = (a > 100) ? vla : x; if (b >= 0 && b < 2) p[b] = 5; if (flag) reach_error(); return vla[0]; }";
    assert_unreachable(&reach("select_with_a_vla_twin", vla_twin, "f"));
}

#[test]
fn percent_n_wide_conversions_and_more_library_writers_may_write_past_an_object() {
    // `%n` writes an int through its argument; &x[2] is past `x`.
    let count = "int f(int b) { int flag = 0; int x[2]; printf(\"ab%n\\n\", &x[b]); if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("printf_percent_n", count, "f"));
    // `%4ls` stores five wide characters (20 bytes) into `char buf[5]`.
    let wide = "int f(int a) { int flag = 0; char buf[5]; sscanf(\"abcd\", \"%4ls\", buf); if (flag) reach_error(); return buf[0] + a; }";
    assert_not_unreachable(&reach("sscanf_wide_string", wide, "f"));
    // `clock_gettime` writes a 16-byte timespec.
    let clock = "#include <time.h>\nint f(int a) { int flag = 0; int x[2]; if (a == 1) clock_gettime(CLOCK_REALTIME, (struct timespec *)x); if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("clock_gettime_past_end", clock, "f"));
    // Twins: `%n` into `x[0]` or `x[1]`; a timespec that fits.
    let count_twin = "int f(int b) { int flag = 0; int x[2]; if (b >= 0 && b < 2) printf(\"ab%n\\n\", &x[b]); if (flag) reach_error(); return x[0]; }";
    assert_unreachable(&reach("printf_percent_n_twin", count_twin, "f"));
    let clock_twin = "#include <time.h>\nint f(int a) { int flag = 0; struct timespec t; if (a == 1) clock_gettime(CLOCK_REALTIME, &t); if (flag) reach_error(); return (int)t.tv_sec; }";
    assert_unreachable(&reach("clock_gettime_twin", clock_twin, "f"));
}

#[test]
fn writes_where_the_pass_does_not_look_rule_a_proof_out() {
    // A recursive helper (past the recursion cut) writes past the array it is given.
    let recursive = "void put(int *p, int i, int v, int n) { if (n > 0) put(p, i, v, n - 1); else p[i] = v; } int f(int a, int b) { int flag = 0; int x[2]; put(x, b, a, 5); if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("recursive_writer", recursive, "f"));
    // A pointer returned by a function called through a pointer.
    let returned = "int *id(int *p) { return p; } int *(*fp)(int *) = id; int f(int a, int b) { int flag = 0; int x[2]; int *p = fp(x); p[b] = a; if (flag) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("pointer_returned_through_a_function_pointer", returned, "f"));
    // A comparator that writes, run by `qsort`.
    let callback = "int cmp(const void *p, const void *q) { ((int *)p)[2] = 1; return 0; } int f(int a, int b) { int flag = 0; int y[2] = {a, b}; qsort(y, 2, sizeof(int), cmp); if (flag) reach_error(); return y[0]; }";
    assert_not_unreachable(&reach("qsort_comparator_writes", callback, "f"));
    // A pointer `strchr` returns into the array, written past it.
    let found = "#include <string.h>\nint f(int a, int b) { int flag = 0; char s[4] = \"abc\"; char *p = strchr(s, 'c'); if (!p) return 0; p[b] = (char)a; if (flag) reach_error(); return s[0]; }";
    assert_not_unreachable(&reach("strchr_result_past_its_string", found, "f"));
    // Twins: a comparator that only reads; a recursive helper that only reads.
    let callback_twin = "int cmp(const void *p, const void *q) { return *(const int *)p - *(const int *)q; } int f(int a, int b) { int flag = 0; int y[2] = {a, b}; qsort(y, 2, sizeof(int), cmp); if (flag) reach_error(); return y[0]; }";
    assert_unreachable(&reach("qsort_comparator_reads", callback_twin, "f"));
    let recursive_twin = "int sum(int *p, int n) { return n > 0 ? p[n - 1] + sum(p, n - 1) : 0; } int f(int a, int b) { int flag = 0; int x[2] = {a, b}; int s = sum(x, 2); if (flag) reach_error(); return s; }";
    assert_unreachable(&reach("recursive_reader", recursive_twin, "f"));
}

#[test]
fn recursion_past_the_cut_and_frees_through_loaded_pointers_rule_a_proof_out() {
    // A recursive helper overflows its own local array only past the recursion cut (depth 5 >
    // --recursion-depth 3): natively the deepest frame's `buf[b]` is a local of `f`.
    let deep = "int g(int i, int v, int n) { int buf[2]; buf[0] = 0; if (n > 0) return g(i, v, n - 1); buf[i] = v; return buf[0]; } int f(int a, int b) { int flag = 0; g(b, a, 4); if (flag == 0x1234) reach_error(); return 0; }";
    assert_not_unreachable(&reach("recursion_overflows_its_frame_past_the_cut", deep, "f"));
    let deep_static = deep.replacen("int g(", "static int g(", 1);
    assert_not_unreachable(&reach("static_recursion_overflows_its_frame_past_the_cut", &deep_static, "f"));
    // `free(*h)`: the block freed is `p`'s, which `q` then gets back; `p[0] = 5` sets `*q`.
    let loaded = "#include <stdlib.h>\nint f(int a, int b) { int *p = malloc(8); int **h = malloc(8); *h = p; free(*h); int *q = malloc(8); *q = 0; p[0] = 5; if (*q) reach_error(); return 0; }";
    assert_not_unreachable(&reach("free_of_a_pointer_loaded_from_the_heap", loaded, "f"));
    let several = "#include <stdlib.h>\nint f(int a, int b) { int *p = a ? malloc(8) : malloc(16); int **h = malloc(8); *h = p; free(*h); int *q = malloc(8); *q = 0; p[0] = 5; if (*q) reach_error(); return 0; }";
    assert_not_unreachable(&reach("free_of_a_loaded_pointer_into_one_of_two_blocks", several, "f"));
    // Twins: recursion without memory writes past the cut; the same free with no access after it.
    let counting = "int g(int n) { return n > 0 ? 1 + g(n - 1) : 0; } int f(int a, int b) { int flag = 0; int d = g(a); if (flag) reach_error(); return d; }";
    assert_unreachable(&reach("recursion_without_writes_past_the_cut", counting, "f"));
    let twin = "#include <stdlib.h>\nint f(int a, int b) { int *p = a ? malloc(8) : malloc(16); int **h = malloc(8); *h = p; free(*h); int *q = malloc(8); *q = 0; if (*q) reach_error(); return 0; }";
    assert_unreachable(&reach("free_of_a_loaded_pointer_then_no_access", twin, "f"));
}

#[test]
fn callbacks_reached_through_memory_may_write_past_an_object() {
    // A signal handler registered through `sigaction`'s struct (not an argument) writes past
    // `f`'s array through a global pointer when `raise` runs it.
    let handler = "#include <signal.h>\n#include <string.h>\nint *gp; static void h(int s) { gp[2] = 7; } int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; gp = x; struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = h; sigaction(SIGUSR1, &sa, 0); if (a == 5) raise(SIGUSR1); if (flag == 7) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("handler_registered_through_a_struct", handler, "f"));
    // A writer called through a table another function also writes.
    let table = "int *gp; void h(void) { gp[2] = 7; } void k(void) { } void (*tab[2])(void) = { h, k }; void other(void) { tab[1] = h; } int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; gp = x; tab[a & 1](); if (flag == 7) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("writer_called_through_a_table", table, "f"));
    // Twin: the same writer in a table, never called on `f`'s paths.
    let twin = "int *gp; void h(void) { gp[2] = 7; } void (*tab[1])(void) = { h }; void other(void) { tab[0](); } int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; gp = x; if (a == 3) x[1] = 4; if (flag == 7) reach_error(); return x[0]; }";
    assert_unreachable(&reach("writer_in_a_table_not_called", twin, "f"));
}

#[test]
fn a_target_in_a_callback_is_reached_through_the_call_that_runs_it() {
    // A `qsort` comparator calls the target; `f`'s own call is dead. The comparator is not
    // analysed, so `qsort` rules a proof out, and a run through it is a witness.
    let comparator = "int cmp(const void *p, const void *q) { int a = *(const int *)p, b = *(const int *)q; if (a == 42) reach_error(); return a - b; } int f(int a, int b) { int y[2] = {a, 1}; if (y[1] == 2) reach_error(); qsort(y, 2, sizeof(int), cmp); return y[0]; }";
    assert_not_unreachable(&reach("target_in_a_comparator", comparator, "f"));
    // Only a signal handler calls it (this was refused as bad input): the fuzzer finds `a == 3`.
    let handler = "#include <signal.h>\nstatic int g; static void h(int s) { if (g == 3) reach_error(); } int f(int a, int b) { g = a; signal(SIGUSR1, h); raise(SIGUSR1); return 0; }";
    assert_reachable(&reach("target_only_in_a_signal_handler", handler, "f"));
    // Twin: the comparator does not call the target.
    let twin = "int cmp(const void *p, const void *q) { return *(const int *)p - *(const int *)q; } int f(int a, int b) { int y[2] = {a, 1}; if (y[1] == 2) reach_error(); qsort(y, 2, sizeof(int), cmp); return y[0]; }";
    assert_unreachable(&reach("target_not_in_the_comparator", twin, "f"));
}

#[test]
fn pointers_loaded_back_where_no_offset_can_be_computed_may_write_past_an_object() {
    // A pointer into one of two arrays kept in a local array of pointers.
    let several = "int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; int y[2] = {0, 0}; int *p = a ? x : y; int *s[1]; s[0] = p; s[0][b] = 7; if (flag == 7) reach_error(); return x[0] + y[0]; }";
    assert_not_unreachable(&reach("pointer_into_one_of_two_arrays_kept_in_a_local", several, "f"));
    // A pointer to a local array kept in a struct whose address an external call gets.
    let escaping = "struct S { int *p; int n; }; void ext(struct S *s); int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; struct S s; s.p = x; s.n = 2; ext(&s); s.p[b] = a; if (flag == 7) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("pointer_kept_in_a_struct_an_external_call_gets", escaping, "f"));
    // A pointer `strchr` returns into one of two strings.
    let returned = "#include <string.h>\nint f(int a, int b) { int flag = 0; char s[4] = \"abc\"; char t[4] = \"xyc\"; char *p = strchr(a ? s : t, 'c'); if (!p) return 0; p[b] = 7; if (flag == 7) reach_error(); return s[0] + t[0]; }";
    assert_not_unreachable(&reach("strchr_into_one_of_two_strings", returned, "f"));
    // Twins: the same struct and external call, written in bounds through the array itself.
    let twin = "struct S { int *p; int n; }; void ext(struct S *s); int f(int a, int b) { int flag = 0; int x[2] = {0, 0}; struct S s; s.p = x; s.n = 2; ext(&s); x[b & 1] = a; if (flag == 7) reach_error(); return x[0]; }";
    assert_unreachable(&reach("struct_given_to_an_external_call_array_written_in_bounds", twin, "f"));
}

#[test]
fn c_library_functions_outside_the_table_may_write_past_an_object() {
    // `pthread_attr_init` writes 56 bytes into an 8-byte buffer; it is in no table.
    let unlisted = "#include <pthread.h>\nint f(int a, int b) { int flag = 0x7f7f7f7f; long buf[1]; pthread_attr_init((pthread_attr_t *)buf); if (flag != 0x7f7f7f7f) reach_error(); return 0; }";
    assert_not_unreachable(&reach("an_unlisted_library_writer", unlisted, "f"));
    // `asprintf`'s `%n`, and `sscanf`'s `%0s` (no width to glibc).
    let count = "int asprintf(char **, const char *, ...); int f(int a, int b) { int flag = 0; int x[2]; char *s; asprintf(&s, \"ab%n\", &x[b]); if (flag) reach_error(); return 0; }";
    assert_not_unreachable(&reach("asprintf_percent_n", count, "f"));
    let zero = "int f(int a, int b) { int flag = 0; char s[2]; sscanf(\"abcdefgh\", \"%0s\", s); if (flag) reach_error(); return s[0]; }";
    assert_not_unreachable(&reach("sscanf_zero_width", zero, "f"));
    // `bsearch` returns into its array; the pass cannot say where.
    let returned = "static int cmp(const void *p, const void *q) { return *(const int *)p - *(const int *)q; } int f(int a, int b) { int flag = 0; int x[2] = {1, 2}; int k = 2; int *p = bsearch(&k, x, 2, sizeof(int), cmp); if (p) p[b] = a; if (flag == 7) reach_error(); return x[0]; }";
    assert_not_unreachable(&reach("bsearch_result_written_past_its_array", returned, "f"));
    // `%n` through a `va_list`: a variadic wrapper of `vprintf` given a pointer into an object.
    let wrapper = "#include <stdarg.h>\nstatic void vp(const char *f, ...) { va_list ap; va_start(ap, f); vprintf(f, ap); va_end(ap); } int f(int a, int b) { int flag = 0; int x[2]; vp(\"ab%n\\n\", &x[b]); if (flag) reach_error(); return 0; }";
    assert_not_unreachable(&reach("percent_n_through_a_va_list", wrapper, "f"));
    // Twin: the same kind of wrapper given no pointer into an object but its format.
    let logging = "#include <stdarg.h>\nstatic void logm(const char *f, ...) { va_list ap; va_start(ap, f); vfprintf(stderr, f, ap); va_end(ap); } int f(int a, int b) { int flag = 0; logm(\"a=%d\\n\", a); if (flag) reach_error(); return 0; }";
    assert_unreachable(&reach("logging_wrapper_given_no_pointer", logging, "f"));
    // Twin: read-only library calls on the same buffers.
    let twin = "#include <string.h>\nint f(int a, int b) { int flag = 0; char s[8] = \"abc\"; int n = (int)strlen(s) + strcmp(s, \"abd\") + (strchr(s, 'b') != 0); if (flag) reach_error(); return n + a; }";
    assert_unreachable(&reach("read_only_library_calls", twin, "f"));
}

#[test]
fn pointers_into_locals_stored_where_loads_are_not_followed_may_come_back() {
    // Two heap levels deep, across `realloc`, and out of a struct returned by value.
    let deep = "int f(int a, int b) { int flag = 0; int x[2]; int ***h = malloc(8); *h = malloc(8); **h = x; (**h)[b] = a; if (flag) reach_error(); return 0; }";
    assert_not_unreachable(&reach("pointer_two_heap_levels_deep", deep, "f"));
    let realloc = "int f(int a, int b) { int flag = 0; int x[2]; int **h = malloc(8); *h = x; h = realloc(h, 8); (*h)[b] = a; if (flag) reach_error(); return 0; }";
    assert_not_unreachable(&reach("pointer_kept_across_realloc", realloc, "f"));
    let aggregate = "struct S { int n; int *p; }; static inline __attribute__((always_inline)) struct S mk(int *x) { struct S s = { 2, x }; return s; } int f(int a, int b) { int flag = 0; int x[2]; struct S s = mk(x); s.p[b] = a; if (flag) reach_error(); return 0; }";
    assert_not_unreachable(&reach("pointer_in_a_struct_returned_by_value", aggregate, "f"));
    // `memset` through a pointer into one of two arrays kept in a local (forged).
    let library = "#include <string.h>\nint f(int a, int b) { int flag = 0; int x[2] = {0, 0}; int y[2] = {0, 0}; int *p = a ? x : y; int *s[1]; s[0] = p; memset(s[0], 1, 8 + 4 * (b & 3)); if (flag) reach_error(); return x[0] + y[0]; }";
    assert_not_unreachable(&reach("memset_through_a_forged_pointer", library, "f"));
    // Twin: the pointer two levels deep only read.
    let twin = "int f(int a, int b) { int flag = 0; int x[2] = {a, b}; int ***h = malloc(8); *h = malloc(8); **h = x; int v = (**h)[0]; if (flag) reach_error(); return v; }";
    assert_unreachable(&reach("pointer_two_heap_levels_deep_only_read", twin, "f"));
}

#[test]
fn targets_run_at_exit_or_called_through_a_pointer_rule_a_proof_out() {
    // A destructor calls the target after `f` returns; `f`'s own call is dead.
    let destructor = "int g; __attribute__((destructor)) static void fini(void) { if (g == 1) reach_error(); } int f(int a, int b) { g = a; if (a == 2 && a == 3) reach_error(); return 0; }";
    assert_not_unreachable(&reach("target_in_a_destructor", destructor, "f"));
    // Through a pointer to it, made a direct call by the normalisation.
    let pointer = "int f(int a, int b) { void (*fp)(void) = reach_error; if (a == 1) fp(); if (a == 2 && a == 3) reach_error(); return 0; }";
    assert_not_unreachable(&reach("target_called_through_a_pointer", pointer, "f"));
    // Twin: a destructor that does not call it.
    let twin = "int g; __attribute__((destructor)) static void fini(void) { g = 0; } int f(int a, int b) { g = a; if (a == 2 && a == 3) reach_error(); return 0; }";
    assert_unreachable(&reach("destructor_without_the_target", twin, "f"));
}

#[test]
fn second_pointers_of_library_calls_and_library_functions_that_write_in_place() {
    // `gettimeofday`'s timezone, `mktime`'s `struct tm` normalised in place, `wait`'s status.
    let timezone = "#include <sys/time.h>\nint f(int a, int b) { int flag = 7; int x[1]; struct timeval tv; gettimeofday(&tv, (void *)&x[b]); if (flag != 7) reach_error(); return 0; }";
    assert_not_unreachable(&reach("gettimeofday_timezone", timezone, "f"));
    let mktime = "#include <string.h>\n#include <time.h>\nint f(int a, int b) { long flag = 0x7f7f7f7f; int x[10]; memset(x, 0, sizeof x); x[5] = 100; x[3] = 1; x[8] = -1; if (a) mktime((struct tm *)x); if (flag != 0x7f7f7f7f) reach_error(); return 0; }";
    assert_not_unreachable(&reach("mktime_normalises_in_place", mktime, "f"));
    // libatomic's `__atomic_store` of an odd-sized object.
    let atomic = "struct T { int v[5]; }; int f(int a, int b) { int flag = 0; struct T x[1]; struct T v = {{1, 1, 1, 1, 1}}; __atomic_store(&x[b], &v, 5); if (flag) reach_error(); return 0; }";
    assert_not_unreachable(&reach("libatomic_store", atomic, "f"));
    // A store through the frame's DWARF CFA.
    let cfa = "int f(int a, int b) { int flag = 0; char *cfa = __builtin_dwarf_cfa(); *(int *)(cfa + b) = 1; if (flag) reach_error(); return 0; }";
    assert_not_unreachable(&reach("store_through_the_dwarf_cfa", cfa, "f"));
    // Twin: `gettimeofday` with no timezone.
    let twin = "#include <sys/time.h>\nint f(int a, int b) { int flag = 7; struct timeval tv; gettimeofday(&tv, 0); if (flag != 7) reach_error(); return (int)tv.tv_sec + a; }";
    assert_unreachable(&reach("gettimeofday_without_timezone", twin, "f"));
}

#[test]
fn code_the_c_library_or_the_start_runs_may_reach_the_target() {
    // A constructor calls the target before `f` runs.
    let ctor = "int armed = 1; __attribute__((constructor)) static void init(void) { if (armed == 1) reach_error(); } int f(int a, int b) { if (a == 2 && a == 3) reach_error(); return 0; }";
    assert_not_unreachable(&reach("target_in_a_constructor", ctor, "f"));
    // Inline assembly calls the target by name.
    let asm = "int f(int a, int b) { if (a == 2 && a == 3) reach_error(); if (a == 5) __asm__ volatile(\"call reach_error\" ::: \"memory\", \"rax\", \"rcx\", \"rdx\", \"rsi\", \"rdi\", \"r8\", \"r9\", \"r10\", \"r11\"); return 0; }";
    assert_not_unreachable(&reach("inline_assembly_calls_the_target", asm, "f"));
    // A `vfork` child writes a local of the parent's frame.
    let vfork = "#include <unistd.h>\nint f(int a, int b) { int flag = 0; pid_t p = vfork(); if (p == 0) { flag = a; _exit(0); } if (flag == 1) reach_error(); return 0; }";
    assert_not_unreachable(&reach("vfork_child_writes_a_local", vfork, "f"));
    // Twin: a constructor that does not call it.
    let twin = "int armed = 1; __attribute__((constructor)) static void init(void) { armed = 2; } int f(int a, int b) { if (a == 2 && a == 3) reach_error(); return 0; }";
    assert_unreachable(&reach("constructor_without_the_target", twin, "f"));
}

#[test]
fn reads_past_an_array_of_function_pointers_and_formats_by_the_byte() {
    // A read past `fp` gets its neighbour `g`, a pointer to the target, which is then called.
    let table = "static void n1(void) {} static void n2(void) {} int f(int a, int b) { void (*g)(void) = reach_error; void (*fp[2])(void) = {n1, n2}; if (a >= 0 && a < 3) fp[a](); if (b > 100 && b < 50) reach_error(); return 0; }";
    assert_not_unreachable(&reach("call_through_a_read_past_a_table", table, "f"));
    // `%lc` prints up to 6 bytes in a UTF-8 locale.
    let wide = "#include <locale.h>\n#include <wchar.h>\nint f(int a, int b) { setlocale(LC_ALL, \"C.UTF-8\"); int flag = 0; char s[5]; sprintf(s, \"%lc\", (wint_t)a); if (flag) reach_error(); return s[0]; }";
    assert_not_unreachable(&reach("wide_character_printed_in_six_bytes", wide, "f"));
    // Twin: a table of functions that are not the target, called in bounds.
    let twin = "static int n1(void) { return 1; } static int n2(void) { return 2; } int f(int a, int b) { int (*fp[2])(void) = {n1, n2}; int r = fp[a & 1](); if (a == 2 && a == 3) reach_error(); return r; }";
    assert_unreachable(&reach("table_of_other_functions", twin, "f"));
}

#[test]
fn heap_blocks_kept_in_heap_blocks_may_overflow_onto_the_next() {
    // `gs->buf` (a block kept in a block reached from a global) written past, onto `q`.
    let kept = "struct B { int *buf; int n; }; struct B *gs; int f(int a, int b) { gs = malloc(sizeof *gs); gs->buf = malloc(8); int *q = malloc(8); q[0] = q[1] = 0; gs->buf[b] = a; if (q[0] || q[1]) reach_error(); return 0; }";
    assert_not_unreachable(&reach("heap_block_kept_in_a_heap_block", kept, "f"));
    // Twin: a list built and walked, its nodes written at their fields.
    let list = "struct N { int v; struct N *next; }; int f(int a, int b) { struct N *h = 0; for (int i = 0; i < a && i < 10; i++) { struct N *x = malloc(sizeof *x); x->v = 1; x->next = h; h = x; } for (struct N *p = h; p; p = p->next) p->v = 2; int flag = 0; if (flag) reach_error(); return 0; }";
    assert_unreachable(&reach("list_built_and_walked", list, "f"));
}

/// String literals are `unnamed_addr` constants: the linker may fold one into the tail of a
/// longer one (GNU ld does: `"llo" == "hello" + 2` natively), so pointers into two of them are
/// not known to differ. A literal and a local array never overlap.
#[test]
fn string_literals_may_share_addresses() {
    let src = "int f(int x) {\n    const char *a = \"hello\";\n    const char *b = \"llo\";\n    if (a + 2 == b) reach_error();\n    return x;\n}";
    let args = ["--function", "f", "--call", "reach_error", "--timeout", "3"];
    assert_not_unreachable(&analyse("literal_tail", &format!("{HEADER}{src}"), &args));
    let twin = src.replace("const char *b = \"llo\";", "char b[4] = \"llo\";");
    assert_unreachable(&reach("literal_tail_twin", &twin, "f"));
}
