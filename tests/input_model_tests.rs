//! The input model as real callers use it: a pointer may be NULL, a function pointer is NULL or
//! a function of the program, assumptions on pointers are honoured (and refused when no input
//! satisfies them), and targets behind function pointers are targets. Every `reachable` here
//! is a native replay; each reachable shape has an unreachable twin.

mod common;
use common::*;

const SIZE_QUERY: &str = "#include <stddef.h>\n\
int decode(const char *in, char *out, size_t len) {\n\
  size_t n = len / 4 * 3;\n\
  if (out == NULL) {\n\
    return (int)n;\n\
  }\n\
  for (size_t i = 0; i < n && i < len; i++) out[i] = in[i];\n\
  return 0;\n\
}\n";

#[test]
fn a_size_query_with_a_null_output_is_reached_by_every_engine() {
    let p = c_program("sizeq", SIZE_QUERY);
    for engine in ["", "apc", "dse", "fuzz", "chc"] {
        let mut args = vec!["--function", "decode", "--line", "sizeq.c:5", "--timeout", "20"];
        if !engine.is_empty() {
            args.extend(["--engine", engine]);
        }
        let r = json_report(&p.path, &args);
        assert_eq!(r["verdict"], "reachable", "{engine}: {r:#}");
        assert_eq!(r["witness"]["replayed"], true, "{engine}: {r:#}");
        assert_eq!(input(&r, "out")["kind"], "null", "{engine}: the witness passes NULL: {r:#}");
    }
    let out = run_on(&p.path, &["--function", "decode", "--line", "sizeq.c:5", "--timeout", "20"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("out = NULL"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_null_check_that_cannot_fail_stays_unreachable() {
    // The twin: `out` is compared with NULL only after it was written through, so a run that
    // gets there had it non-NULL.
    let src = "#include <stddef.h>\n\
int fill(char *out, int n) {\n\
  out[0] = 1;\n\
  if (n > 3 && out == NULL) {\n\
    return -1;\n\
  }\n\
  return 0;\n\
}\n";
    let p = c_program("nullafter", src);
    let r = json_report(&p.path, &["--function", "fill", "--line", "nullafter.c:5", "--timeout", "20"]);
    assert_ne!(r["verdict"], "reachable", "{r:#}");
    // The same check before the write is reachable with NULL.
    let src2 = src.replace("out[0] = 1;\n", "");
    assert_ne!(src2, src);
    let p2 = c_program("nullbefore", &src2);
    let r = json_report(&p2.path, &["--function", "fill", "--line", "nullbefore.c:4", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(input(&r, "out")["kind"], "null", "{r:#}");
}

const HOOKS: &str = "#include <stdlib.h>\n\
struct hooks { void *(*alloc)(size_t); void (*release)(void *); };\n\
static int count;\n\
void *counting_alloc(size_t n) { count++; return malloc(n); }\n\
int load(struct hooks *h, size_t n) {\n\
  void *(*a)(size_t) = h->alloc ? h->alloc : malloc;\n\
  char *buf = a(16 + (n & 1));\n\
  if (!buf) return -1;\n\
  if (count == 1) {\n\
    buf[0] = 'c';\n\
  }\n\
  if (count > 1) {\n\
    buf[0] = 'x';\n\
  }\n\
  if (h->release) h->release(buf); else free(buf);\n\
  return 0;\n\
}\n";

#[test]
fn a_null_defaulting_hook_field_is_null_or_a_function_by_name() {
    let p = c_program("hooks", HOOKS);
    // The program's own allocator: the field holds counting_alloc, by name.
    let r = json_report(&p.path, &["--function", "load", "--line", "hooks.c:10", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let fields = input(&r, "h")["pointees"].as_array().cloned().unwrap_or_default();
    assert!(fields.iter().any(|f| f["offset"] == 0 && f["holds"]["function"] == "counting_alloc"), "{r:#}");
    // One call of the hook counts once: never twice.
    let r = json_report(&p.path, &["--function", "load", "--line", "hooks.c:13", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let assumptions = strings(&r["assumptions"]);
    assert!(assumptions.iter().any(|a| a.contains("globals hold their initial values")), "{r:#}");
}

#[test]
fn no_replay_crashes_on_a_made_up_function_address() {
    // The release hook is called whatever the path: every replay runs it, through a real
    // function or NULL-checked, never through bytes taken as an address.
    let src = "#include <stdlib.h>\n\
struct cb { void (*on_item)(int *); int limit; };\n\
void bump(int *x) { *x += 1; }\n\
void twice(int *x) { *x += 2; }\n\
int walk(struct cb *c, int n) {\n\
  int total = 0;\n\
  if (!c->on_item) return -1;\n\
  for (int i = 0; i < n && i < 8; i++) c->on_item(&total);\n\
  if (total == 6 && n == 3) {\n\
    return 1;\n\
  }\n\
  return 0;\n\
}\n";
    let p = c_program("cbfield", src);
    let r = json_report(&p.path, &["--function", "walk", "--line", "cbfield.c:10", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let fields = input(&r, "c")["pointees"].as_array().cloned().unwrap_or_default();
    assert!(fields.iter().any(|f| f["offset"] == 0 && f["holds"]["function"] == "twice"), "{r:#}");
    for engine in ["apc", "fuzz"] {
        let r = json_report(&p.path, &["--function", "walk", "--line", "cbfield.c:10", "--engine", engine, "--timeout", "20"]);
        let reason = r["reason"].as_str().unwrap_or("");
        assert!(!reason.contains("signal 11"), "{engine}: {r:#}");
        for (_, e) in r["engines"].as_object().cloned().unwrap_or_default() {
            assert!(!e["reason"].as_str().unwrap_or("").contains("signal 11"), "{engine}: a replay crashed: {r:#}");
        }
    }
}

const APPLY: &str = "int square(int x) { return x * x; }\n\
int twice(int x) { return 2 * x; }\n\
int negate(int x) { return -x; }\n\
int apply(int (*f)(int), int v) {\n\
  int r = f(v);\n\
  if (r == WANT && v == 21) {\n\
    return 1;\n\
  }\n\
  return 0;\n\
}\n";

#[test]
fn a_function_pointer_parameter_gets_the_one_function_that_reaches() {
    let p = c_program("apply", &format!("#define WANT 42\n{APPLY}"));
    let r = json_report(&p.path, &["--function", "apply", "--line", "apply.c:8", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(input(&r, "f")["kind"], "function", "{r:#}");
    assert_eq!(input(&r, "f")["function"], "twice", "{r:#}");
    let out = run_on(&p.path, &["--function", "apply", "--line", "apply.c:8", "--timeout", "20"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("f = &twice"), "{}", String::from_utf8_lossy(&out.stdout));
    // No function of the program makes 43 of 21: unreachable for every pointer a caller passes.
    let p = c_program("apply43", &format!("#define WANT 43\n{APPLY}"));
    let r = json_report(&p.path, &["--function", "apply", "--line", "apply43.c:8", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let assumptions = strings(&r["assumptions"]);
    assert!(assumptions.iter().any(|a| a.contains("function pointer")), "the proof names what it assumes: {r:#}");
}

#[test]
fn an_assumption_on_a_pointer_constrains_the_input_model() {
    let p = c_program("sizeq2", SIZE_QUERY);
    let r = json_report(&p.path, &["--function", "decode", "--line", "sizeq2.c:5", "--assume", "out == 0", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(input(&r, "out")["kind"], "null", "{r:#}");
    let r = json_report(&p.path, &["--function", "decode", "--line", "sizeq2.c:5", "--assume", "out != 0", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = json_report(&p.path, &["--function", "decode", "--line", "sizeq2.c:7", "--assume", "out == in", "--timeout", "20"]);
    assert_ne!(r["verdict"], "unreachable", "{r:#}");
}

#[test]
fn assumptions_no_input_satisfies_are_bad_input() {
    let p = c_program("sizeq3", SIZE_QUERY);
    for contradiction in [&["out == 0", "out != 0"][..], &["len > 5 && len < 3"], &["out == 7"]] {
        let mut args = vec!["--function", "decode", "--line", "sizeq3.c:5"];
        for c in contradiction {
            args.extend(["--assume", c]);
        }
        let out = run_on(&p.path, &args);
        assert_bad_input(&out, "hold for no input");
    }
}

const OPS: &str = "extern int __VERIFIER_nondet_int(void);\n\
void report_failure(void) { }\n\
void ok(void) { }\n\
struct ops { void (*on_error)(void); void (*on_ok)(void); };\n\
static const struct ops O = { report_failure, ok };\n\
int main(void) {\n\
  int x = __VERIFIER_nondet_int();\n\
  if (x == WANT) O.on_error(); else O.on_ok();\n\
  return 0;\n\
}\n";

#[test]
fn a_call_through_a_constant_table_is_a_call_target() {
    let p = c_program("ops", &format!("#define WANT 5\n{OPS}"));
    let r = json_report(&p.path, &["--function", "main", "--call", "report_failure", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["nondet"][0], 5, "{r:#}");
    // A line inside a function run only through the table is a target too.
    let r = json_report(&p.path, &["--function", "main", "--line", "ops.c:3", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    // The twin: the table's entry is never called with the failing handler.
    let src = OPS.replace("if (x == WANT) O.on_error(); else O.on_ok();", "if (x == WANT) O.on_ok(); else O.on_ok();");
    let p = c_program("ops_un", &format!("#define WANT 5\n{src}"));
    let r = json_report(&p.path, &["--function", "main", "--call", "report_failure", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}
