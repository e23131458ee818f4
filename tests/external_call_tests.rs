//! External calls: the C library's functions the executor models exactly (`abs`,
//! `strcmp`, `malloc`, `memcpy`), and mixed concrete-symbolic solving (`--pure`): calls of pure
//! functions stay unknowns in the APC, the functions run natively on each model's arguments, and
//! the results go back into the APC. Every `reachable` here is a native replay.

mod common;
use common::*;

const HASH: &str = "unsigned hash(unsigned x) { x ^= x >> 7; x *= 0x9e37u; x ^= x >> 11; return x & 0xffff; }\n";

const CALLER: &str = "extern void reach_error(void);\nunsigned hash(unsigned x);\n\
     void f(unsigned x, unsigned y) { if (x > 1000 && hash(x) == y + 7 && y > 100) reach_error(); }\n";

#[test]
fn a_hash_defined_in_a_second_file_is_run_natively() {
    let caller = c_program("caller", CALLER);
    let lib = caller.dir.path().join("hash.c");
    std::fs::write(&lib, HASH).unwrap();
    let args = ["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "20", "--pure", "hash"];
    let mut all = vec![lib.to_str().unwrap()];
    all.extend(args);
    let r = json_report(&caller.path, &all);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(r["engines"]["apc"]["stats"]["pure_rounds"].as_u64().unwrap() >= 1, "the hash's value came from a native run: {r:#}");
    // The witness satisfies the condition with the real hash.
    let inputs = r["witness"]["inputs"].as_array().unwrap();
    let (x, y) = (inputs[0]["value"].as_u64().unwrap() as u32, inputs[1]["value"].as_u64().unwrap() as u32);
    let h = { let mut v = x ^ (x >> 7); v = v.wrapping_mul(0x9e37); v ^= v >> 11; v & 0xffff };
    assert_eq!(h, y.wrapping_add(7), "{r:#}");
}

#[test]
fn a_libc_function_only_declared_is_run_natively() {
    let src = "extern void reach_error(void);\nunsigned htonl(unsigned x);\n\
               void f(unsigned x, unsigned y) { if (x > 1000 && htonl(x) == y + 7) reach_error(); }\n";
    let p = c_program("htonl", src);
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "20", "--pure", "htonl"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(r["engines"]["apc"]["stats"]["pure_rounds"].as_u64().unwrap() >= 1, "{r:#}");
}

#[test]
fn without_mixed_solving_a_declared_hash_is_not_reached() {
    // The twin of the tests above: the hash only declared, no --pure, so its result is ⋆ and
    // replays run a stub; no model reaches the target.
    let p = c_program("nohash", CALLER);
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "10", "--max-models", "3"]);
    assert_eq!(r["verdict"], "unknown", "{r:#}");
}

#[test]
fn pure_names_a_function_the_program_has() {
    let p = c_program("nopure", CALLER);
    let out = run_on(&p.path, &["--function", "f", "--call", "reach_error", "--pure", "nosuch"]);
    assert_bad_input(&out, "--pure nosuch");
    let src = "extern void reach_error(void);\nint g(int *p);\nvoid f(int x) { if (g(&x) == 3) reach_error(); }\n";
    let p = c_program("ptrpure", src);
    let out = run_on(&p.path, &["--function", "f", "--call", "reach_error", "--pure", "g"]);
    assert_bad_input(&out, "not an integer");
}

#[test]
fn declared_libc_functions_of_integers_get_mixed_solving_by_default() {
    // toupper is pure; without a native run the APC cannot know toupper('q') = 'Q'.
    let src = "extern void reach_error(void);\nint toupper(int c);\n\
               void f(int c, int d) { if (c == 'q' && toupper(c) == d) reach_error(); }\n";
    let p = c_program("toupper", src);
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["inputs"][1]["value"].as_u64(), Some('Q' as u64), "{r:#}");
}

fn reach(name: &str, src: &str) -> serde_json::Value {
    let p = c_program(name, src);
    json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "20"])
}

#[test]
fn library_calls_with_exact_models_are_reached() {
    let cases = [
        ("abs", "#include <stdlib.h>\nextern void reach_error(void);\nvoid f(int x) { if (x < 0 && x > -1000 && abs(x) == 77) reach_error(); }\n"),
        ("strcmp", "#include <string.h>\nextern void reach_error(void);\nvoid f(const char *buf) { if (strcmp(buf, \"magic\") == 0) reach_error(); }\n"),
        (
            "malloc",
            "#include <stdlib.h>\nextern void reach_error(void);\nvoid f(int n, int k) { if (n < 1 || n > 50) return;\n\
             int *a = malloc(n * sizeof(int)); if (!a) return;\n\
             for (int i = 0; i < n; i++) a[i] = i * 3;\n\
             if (k >= 0 && k < n && a[k] == 42) reach_error(); free(a); }\n",
        ),
        (
            "memcpy",
            "#include <string.h>\nextern void reach_error(void);\nvoid f(const char *in) { char local[8]; memcpy(local, in, 8);\n\
             if (local[3] == 'Z' && local[5] == 'q') reach_error(); }\n",
        ),
    ];
    for (name, src) in cases {
        let r = reach(name, src);
        assert_eq!(r["verdict"], "reachable", "{name}: {r:#}");
        assert_eq!(r["witness"]["reached"], true, "{name}: {r:#}");
    }
    // The twins: abs(x) of a negative x above -1000 is never 1000; the malloc'ed elements are
    // multiples of 3.
    let r = reach("abs_no", "#include <stdlib.h>\nextern void reach_error(void);\nvoid f(int x) { if (x < 0 && x > -1000 && abs(x) == 1000) reach_error(); }\n");
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach(
        "malloc_no",
        "#include <stdlib.h>\nextern void reach_error(void);\nvoid f(int n, int k) { if (n < 1 || n > 50) return;\n\
         int *a = malloc(n * sizeof(int)); if (!a) return;\n\
         for (int i = 0; i < n; i++) a[i] = i * 3;\n\
         if (k >= 0 && k < n && a[k] == 43) reach_error(); free(a); }\n",
    );
    assert_ne!(r["verdict"], "reachable", "{r:#}");
}

/// `memcmp`, `strcmp` and `strncmp` promise only the sign of their result; glibc's magnitude
/// depends on the CPU (the byte difference, or ±1 from some vectorised `memcmp`s). A target
/// behind the magnitude is never proven unreachable, whatever this machine's glibc returns;
/// where only the sign is tested, the models stay exact and prove what the sign decides.
#[test]
fn comparisons_promise_only_a_sign() {
    let header = "#include <string.h>\nextern void reach_error(void);\n";
    for (name, body) in [
        ("memcmp_magnitude", "void f(const unsigned char *a, const unsigned char *b) { int r = memcmp(a, b, 2); if (r != 0 && r != a[0] - b[0] && a[0] != b[0]) reach_error(); }\n"),
        ("strcmp_magnitude", "void f(const char *a) { int r = strcmp(a, \"k\"); if (r == 1 || r == -1) reach_error(); }\n"),
        ("strncmp_magnitude", "void f(const char *a) { int r = strncmp(a, \"key\", 3); if (r > 100) reach_error(); }\n"),
    ] {
        let r = reach(name, &format!("{header}{body}"));
        assert_ne!(r["verdict"], "unreachable", "{name}: {r:#}");
    }
    // Only the sign is tested: exact, both ways.
    let r = reach("strcmp_sign_yes", &format!("{header}void f(const char *a) {{ int r = strcmp(a, \"ab\"); if (r < 0 && a[0] == 'a') reach_error(); }}\n"));
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let r = reach("strcmp_sign_no", &format!("{header}void f(const char *a) {{ if (strcmp(a, \"ab\") == 0 && a[1] != 'b') reach_error(); }}\n"));
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = reach("memcmp_sign_no", &format!("{header}void f(const unsigned char *a) {{ if (memcmp(a, \"xy\", 2) > 0 && a[0] < 'x') reach_error(); }}\n"));
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

/// `atoi`, `strtol` and `strchr` are modelled in C (`env_models.c`): their results are no
/// longer unknown, so the engines reach targets behind them and the APC proves the twins.
#[test]
fn number_parsing_and_character_search_are_modelled() {
    let header = "#include <stdlib.h>\n#include <string.h>\nextern void reach_error(void);\n";
    let run = |name: &str, body: &str, engine: &str| {
        let p = c_program(name, &format!("{header}{body}"));
        json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", engine, "--timeout", "30"])
    };
    let r = run("atoi_yes", "void f(const char *buf) { if (atoi(buf) == 1234) reach_error(); }\n", "dse");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let r = run("strchr_yes", "void f(const char *s) { char *c = strchr(s, ':'); if (c && c - s == 3 && s[0] == 'k') reach_error(); }\n", "apc");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    // A string that starts with a letter has no digits for atoi; no colon in an empty string.
    let r = run("atoi_no", "void f(const char *buf) { int v = atoi(buf); if (v > 0 && v < 10 && buf[0] == 'x') reach_error(); }\n", "apc");
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let r = run("strchr_no", "void f(const char *s) { char *c = strchr(s, ':'); if (c && s[0] == 0) reach_error(); }\n", "apc");
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}

/// `realloc`: a block of its own. The DSE copies the old block's bytes exactly; the APC knows
/// nothing of the copied bytes (it does not track sizes) but keeps the new block's own writes;
/// inside a loop (a dynamic array that grows) every instance is unknown to the APC, and the DSE
/// follows the run.
#[test]
fn realloc_gives_a_block_of_its_own() {
    let grow = "#include <stdlib.h>\nextern void reach_error(void);\n\
                void f(int k, int v) {\n\
                \x20 int *a = malloc(4 * sizeof(int)); if (!a) return;\n\
                \x20 for (int i = 0; i < 4; i++) a[i] = i;\n\
                \x20 int *b = realloc(a, 8 * sizeof(int)); if (!b) return;\n\
                \x20 b[6] = v;\n\
                \x20 if (k >= 0 && k < 4 && b[k] == 3 && b[6] == 77) reach_error();\n\
                }\n";
    let p = c_program("realloc_yes", grow);
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "dse", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["inputs"][0]["value"], 3, "the copied element: {r:#}");
    let p = c_program("realloc_no", &grow.replace("b[k] == 3 && b[6] == 77", "b[6] != v"));
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--engine", "apc", "--timeout", "20"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
    let vector = "#include <stdlib.h>\nextern void reach_error(void);\n\
                  void f(int n, int k) {\n\
                  \x20 int *a = 0; int cap = 0;\n\
                  \x20 for (int i = 0; i < n && i < 20; i++) {\n\
                  \x20   if (i >= cap) { cap = cap ? cap * 2 : 2; a = realloc(a, cap * sizeof(int)); if (!a) return; }\n\
                  \x20   a[i] = i * 5;\n\
                  \x20 }\n\
                  \x20 if (k >= 0 && k < n && k < 20 && a[k] == 35) reach_error();\n\
                  }\n";
    let p = c_program("realloc_loop", vector);
    let r = json_report(&p.path, &["--function", "f", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

/// The C library models the analysis links into the program it analyses (`env_models.c`) must
/// return exactly what glibc returns: the replay runs glibc, and a model that differs would make
/// a proof about another program. Compiled natively under other names and compared on every
/// string of up to 4 bytes over an alphabet of white space, signs, digits, prefix letters and
/// high bytes, in every base that matters, results and end pointers. The comparisons promise
/// only a sign (glibc's magnitude depends on the CPU): their models return `__apc_sign_of(d)`,
/// here the identity, and must have glibc's sign.
#[test]
fn library_models_agree_with_glibc() {
    let d = tempfile::tempdir().unwrap();
    let names = ["strcmp", "strncmp", "memcmp", "strlen", "strchr", "strtol", "strtoll", "strtoul", "strtoull", "atoi", "atol", "atoll"];
    let models = d.path().join("models.c");
    std::fs::write(&models, include_str!("../src/load/env_models.c")).unwrap();
    let harness = d.path().join("harness.c");
    std::fs::write(
        &harness,
        r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef unsigned long sz;
int m_strcmp(const char *, const char *); int m_strncmp(const char *, const char *, sz);
int m_memcmp(const void *, const void *, sz); sz m_strlen(const char *); char *m_strchr(const char *, int);
long m_strtol(const char *, char **, int); long long m_strtoll(const char *, char **, int);
unsigned long m_strtoul(const char *, char **, int); unsigned long long m_strtoull(const char *, char **, int);
int m_atoi(const char *); long m_atol(const char *); long long m_atoll(const char *);
int __apc_sign_of(int d) { return d; }
static int sgn(int x) { return (x > 0) - (x < 0); }
static const char A[] = " \t\n+-0178x9aAfFgzZ\x80\xff";
static int bad;
#define CHECK(c) do { if (!(c)) { if (bad++ < 10) printf("differs: %s on \"%s\" / \"%s\" (base index %d)\n", #c, s, t, b); } } while (0)
static const int bases[] = {0, 2, 8, 10, 16, 36, 1, 37, -1};
/* The number parsers on s, in every base, results and end pointers. */
static void numbers(const char *s) {
  const char *t = "";
  for (int b = 0; b < 9; b++) {
    char *e1 = 0, *e2 = 0;
    CHECK(strtol(s, &e1, bases[b]) == m_strtol(s, &e2, bases[b]) && e1 == e2);
    CHECK(strtoll(s, &e1, bases[b]) == m_strtoll(s, &e2, bases[b]) && e1 == e2);
    CHECK(strtoul(s, &e1, bases[b]) == m_strtoul(s, &e2, bases[b]) && e1 == e2);
    CHECK(strtoull(s, &e1, bases[b]) == m_strtoull(s, &e2, bases[b]) && e1 == e2);
  }
  int b = -1;
  CHECK(atoi(s) == m_atoi(s) && atol(s) == m_atol(s) && atoll(s) == m_atoll(s));
}
int main(void) {
  char s[8], t[8];
  int b = -1;
  unsigned n = sizeof A - 1, total = 1;
  for (int k = 0; k < 4; k++) total *= n + 1;
  for (unsigned code = 0; code < total; code++) {
    unsigned c = code, len = 0;
    for (int k = 0; k < 4; k++, c /= n + 1) if (c % (n + 1)) s[len++] = A[c % (n + 1) - 1]; else break;
    s[len] = 0;
    numbers(s);
    CHECK(strlen(s) == m_strlen(s));
    for (int ch = -1; ch < 258; ch += 3) CHECK(strchr(s, ch) == m_strchr(s, ch));
    CHECK(strchr(s, 0) == m_strchr(s, 0));
    snprintf(t, sizeof t, "%s", A + code % n);
    t[code % 5] = 0;
    CHECK(sgn(strcmp(s, t)) == sgn(m_strcmp(s, t)));
    for (sz k = 0; k < 6; k++) CHECK(sgn(strncmp(s, t, k)) == sgn(m_strncmp(s, t, k)));
    for (sz k = 0; k <= len && k <= strlen(t); k++) CHECK(sgn(memcmp(s, t, k)) == sgn(m_memcmp(s, t, k)));
  }
  /* Out of range, both signs, every width. */
  const char *big[] = {"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
                       "18446744073709551615", "18446744073709551616", "-18446744073709551615", "0x7fffffffffffffff",
                       "0x8000000000000000", "-0x8000000000000001", "0xffffffffffffffffff", "2147483648", "-2147483649",
                       "  +077777777777777777777", "0x", "0X1g", "-0", "zzzzzzzzzzzzzz", "1zzzzzzzzzzzzz"};
  for (unsigned i = 0; i < sizeof big / sizeof *big; i++) {
    numbers(big[i]);
  }
  printf("%d differences\n", bad);
  return bad != 0;
}
"#,
    )
    .unwrap();
    let exe = d.path().join("check");
    let mut cmd = std::process::Command::new(clang());
    cmd.args(["-O1", "-fno-builtin", "-w"]);
    for n in names {
        cmd.arg(format!("-D{n}=m_{n}"));
    }
    // The renames apply to the models only: the harness is compiled separately.
    let obj = d.path().join("models.o");
    let out = cmd.arg("-c").arg(&models).arg("-o").arg(&obj).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = std::process::Command::new(clang()).args(["-O1", "-w"]).arg(&harness).arg(&obj).arg("-o").arg(&exe).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = std::process::Command::new(&exe).output().unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && text.contains("0 differences"), "{text}");
}
