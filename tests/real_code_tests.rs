//! Real C at the speed of small programs: linked structures on the stack load at once, a big
//! module loads only what the function can run, no stage blocks the fuzzer, and a batch goes on
//! past a target that overran. Speed itself is measured by `scripts/bench --real`, never here.

mod common;
use common::*;

#[test]
fn walks_over_lists_rings_and_self_linked_nodes_on_the_stack_are_answered() {
    let list = "struct node { int val; struct node *next; };\n\
int walk(int a, int b, int c) {\n\
  struct node n3 = { c, 0 };\n\
  struct node n2 = { b, &n3 };\n\
  struct node n1 = { a, &n2 };\n\
  int s = 0;\n\
  for (struct node *p = &n1; p; p = p->next) s += p->val;\n\
  if (s == 42) {\n\
    return 1;\n\
  }\n\
  return 0;\n\
}\n";
    let ring = "struct node { int val; struct node *next; };\n\
int ring(int a, int b, int k) {\n\
  struct node x, y;\n\
  x.val = a; x.next = &y; y.val = b; y.next = &x;\n\
  struct node *p = &x;\n\
  int s = 0;\n\
  for (int i = 0; i < k && i < 10; i++) { s += p->val; p = p->next; }\n\
  if (s == 17) {\n\
    return 1;\n\
  }\n\
  return 0;\n\
}\n";
    let selfl = "struct node { int val; struct node *next; };\n\
int selfl(int a, int k) {\n\
  struct node x;\n\
  x.val = a; x.next = &x;\n\
  struct node *p = &x;\n\
  int s = 0;\n\
  for (int i = 0; i < k && i < 10; i++) { s += p->val; p = p->next; }\n\
  if (s == 30) {\n\
    return 1;\n\
  }\n\
  return 0;\n\
}\n";
    for (name, src, function, line) in [("stacklist", list, "walk", 9), ("stackring", ring, "ring", 9), ("selflinked", selfl, "selfl", 9)] {
        let p = c_program(name, src);
        let r = json_report(&p.path, &["--function", function, "--line", &format!("{name}.c:{line}"), "--timeout", "30"]);
        assert_eq!(r["verdict"], "reachable", "{name}: {r:#}");
        // Loading is a small part of the budget: the bounds pass's fixpoint settles.
        let load = r["timings"]["load"].as_f64().unwrap();
        assert!(load < 10.0, "{name}: load took {load} s: {r:#}");
    }
}

#[test]
fn a_module_of_unrelated_functions_normalises_only_what_the_function_can_run() {
    let mut src = String::from("static int table[64];\n");
    for k in 0..300 {
        src.push_str(&format!("int unrelated_{k}(const char *s, int n);\n"));
    }
    for k in 0..300 {
        src.push_str(&format!(
            "int unrelated_{k}(const char *s, int n) {{ int h = {k}; for (int i = 0; i < n && s[i]; i++) h = h * 31 + s[i]; if (h == {k}) return unrelated_{}(s + 1, n - 1); table[h & 63] = h; return h; }}\n",
            (k + 1) % 300
        ));
    }
    // A callback table: its functions may run only through a pointer the function never uses.
    src.push_str("static int cb_a(int x) { return x + 1; }\nstatic int cb_b(int x) { return x - 1; }\nint (*const callbacks[2])(int) = { cb_a, cb_b };\n");
    src.push_str("static int twice(int x) { return 2 * x; }\nint small_helper(int a, int b) {\n  int r = twice(a) - b;\n  if (r == 5) {\n    return 1;\n  }\n  return 0;\n}\n");
    let line = src.lines().position(|l| l.trim() == "return 1;").unwrap() + 1;
    let p = c_program("bigmodule", &src);
    let r = json_report(&p.path, &["--function", "small_helper", "--line", &format!("bigmodule.c:{line}"), "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let loaded = r["functions_loaded"].as_u64().unwrap();
    assert!(loaded <= 3, "only small_helper and what it calls are normalised, not {loaded}: {r:#}");
    // A function that calls through a pointer brings the functions whose address is taken.
    let mut src2 = src.clone();
    src2.push_str("int dispatch(int k, int x) {\n  int r = callbacks[k & 1](x);\n  if (r == 9) {\n    return 1;\n  }\n  return 0;\n}\n");
    let line2 = src2.lines().collect::<Vec<_>>().iter().rposition(|l| l.trim() == "return 1;").unwrap() + 1;
    let p2 = c_program("bigmodule2", &src2);
    let r = json_report(&p2.path, &["--function", "dispatch", "--line", &format!("bigmodule2.c:{line2}"), "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(r["functions_loaded"].as_u64().unwrap() <= 6, "{r:#}");
}

const DECODER: &str = "static int cls(unsigned char c) {\n\
  if (c >= 'a' && c <= 'z') return 1;\n\
  if (c >= 'A' && c <= 'Z') return 2;\n\
  if (c >= '0' && c <= '9') return 3;\n\
  if (c == '+') return 4;\n\
  if (c == '/') return 5;\n\
  return 0;\n\
}\n\
int decode(const unsigned char *in, int n) {\n\
  int groups = 0;\n\
  for (int i = 0; i + 8 <= n && i < 64; i += 8) {\n\
    int s = 0;\n\
    s += cls(in[i]) != 0; s += cls(in[i + 1]) != 0; s += cls(in[i + 2]) != 0; s += cls(in[i + 3]) != 0;\n\
    s += cls(in[i + 4]) != 0; s += cls(in[i + 5]) != 0; s += cls(in[i + 6]) != 0; s += cls(in[i + 7]) != 0;\n\
    if (s == 8) groups++;\n\
  }\n\
  if (groups >= 2) {\n\
    return 1;\n\
  }\n\
  return 0;\n\
}\n";

#[test]
fn the_fuzzer_reaches_past_a_loop_of_many_way_helpers_without_waiting_for_paths() {
    let p = c_program("decoder", DECODER);
    let r = json_report(&p.path, &["--function", "decode", "--line", "decoder.c:18", "--engine", "fuzz", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let r = json_report(&p.path, &["--function", "decode", "--line", "decoder.c:18", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn a_batch_goes_on_past_a_target_that_overran_and_counts_it() {
    let src = "int f(int x, int y) {\n  int r = 0;\n  if (x > 10) {\n    r = 1;\n  }\n  if (y == 7) {\n    r += 2;\n  }\n  return r;\n}\n";
    let p = c_program("overrun", src);
    // The analysis of the block `if.then` stalls past its deadline (a hook for this test).
    let out = apc_llvm_with_env(
        &[p.path.to_str().unwrap(), "--function", "f", "--cover", "--json", "--timeout", "3"],
        &[("APC_LLVM_TEST_STALL_TARGET", "block if.then")],
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let targets = r["targets"].as_array().unwrap();
    let labels: Vec<&str> = targets.iter().map(|t| t["target_spec"].as_str().unwrap()).collect();
    assert!(labels.len() >= 5, "every block has its verdict: {r:#}");
    assert!(r["skipped"].as_array().unwrap().is_empty(), "{r:#}");
    let stalled = targets.iter().find(|t| t["target_spec"] == "block if.then").unwrap();
    assert_eq!(stalled["verdict"], "unknown", "{r:#}");
    let others_decided = targets.iter().filter(|t| t["target_spec"] != "block if.then").all(|t| t["verdict"] == "reachable");
    assert!(others_decided, "{r:#}");
    // Every line of the batch says where the target is.
    assert!(targets.iter().filter(|t| t["verdict"] == "reachable").all(|t| t["location"].as_str().is_some_and(|l| l.contains("overrun.c:"))), "{r:#}");
}

#[test]
fn a_batch_compiles_its_source_once_for_all_its_targets() {
    let src = "int f(int x, int y) {\n  int r = 0;\n  if (x > 10) {\n    r = 1;\n  }\n  if (y == 7) {\n    r += 2;\n  }\n  return r;\n}\n";
    let p = c_program("once", src);
    let out = apc_llvm_with_env(&[p.path.to_str().unwrap(), "--function", "f", "--cover", "--json", "--timeout", "20"], &[("RUST_LOG", "info")]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let targets = r["targets"].as_array().unwrap();
    assert!(targets.len() >= 5 && targets.iter().all(|t| t["verdict"] == "reachable"), "{r:#}");
    let log = String::from_utf8_lossy(&out.stderr);
    let compiles = log.lines().filter(|l| l.contains("once.c with clang")).count();
    assert_eq!(compiles, 1, "one compilation for {} targets:\n{log}", targets.len());
}
