//! External calls (issue 13): the C library's functions the executor models exactly (`abs`,
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
