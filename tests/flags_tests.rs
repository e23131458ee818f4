//! What a new user tries first: a `.c` file with the project's compiler flags, C89-era code,
//! a line holding two statements, a C label the compiler renamed, `--check-ub` on an SV-COMP
//! style program. Each runs real clang.

mod common;
use common::*;

fn write(dir: &std::path::Path, rel: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

const PARSER: &str = "#include \"limits_cfg.h\"\n\
int parse(int x) {\n\
#ifdef STRICT\n\
  if (x > LIMIT && x < LIMIT + 2)\n\
    return 1;\n\
#endif\n\
  return 0;\n\
}\n";

#[test]
fn include_dirs_and_macros_are_passed_to_clang() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "include/limits_cfg.h", "#ifndef LIMIT\n#define LIMIT 40\n#endif\n");
    let src = write(d.path(), "src/parser.c", PARSER);
    let s = src.to_str().unwrap();
    // Without -I the header is not found, and the error says how to pass flags.
    let out = apc_llvm(&[s, "--function", "parse", "--line", "parser.c:5"]);
    assert_bad_input(&out, "limits_cfg.h");
    assert_bad_input(&out, "-I DIR");
    // -I relative to the current directory, -D with and without a value, as clang spells them.
    let inc = d.path().join("include");
    let r = json(&apc_llvm(&[s, "-I", inc.to_str().unwrap(), "-DSTRICT", "-D", "LIMIT=100", "--function", "parse", "--line", "parser.c:5", "--timeout", "30", "--json"]));
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["inputs"][0]["value"].as_u64(), Some(101), "LIMIT=100 was used: {r:#}");
    // -U after -D removes the macro again: the line has no code.
    let out = apc_llvm(&[s, &format!("-I{}", inc.display()), "-DSTRICT", "-USTRICT", "--function", "parse", "--line", "parser.c:5"]);
    assert_bad_input(&out, "no code");
    // -include and --cflags, clang's spelling of -std too.
    let pre = write(d.path(), "pre.h", "#define STRICT 1\n");
    let r = json(&apc_llvm(&[
        s, "--cflags", &format!("-I{} -DLIMIT=7", inc.display()), "-include", pre.to_str().unwrap(), "-std=gnu99",
        "--function", "parse", "--line", "parser.c:5", "--timeout", "30", "--json",
    ]));
    assert_eq!(r["witness"]["inputs"][0]["value"].as_u64(), Some(8), "{r:#}");
    let out = apc_llvm(&[s, "-I", inc.to_str().unwrap(), "--std", "no-such-std", "--function", "parse", "--line", "parser.c:7"]);
    assert_bad_input(&out, "clang failed to compile it");
}

#[test]
fn c89_code_with_implicit_declarations_is_analysed() {
    let p = c_program(
        "old",
        "void reach_error(void) {}\n\
         foo(x) { return x + 1; }\n\
         int main(void) {\n\
           int a = __VERIFIER_nondet_int();\n\
           if (foo(a) == 5 && later(a)) reach_error();\n\
           return 0;\n\
         }\n\
         int later(int v) { return v > 0; }\n\
         int g(void) { return; }\n",
    );
    let r = json_report(&p.path, &["--function", "main", "--call", "reach_error", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["nondet"][0].as_u64().map(|v| v as u32), Some(4), "{r:#}");
}

const DEPTH: &str = "int walk(int depth, int x) {\n\
  if (depth >= 8) return -1;\n\
  return x + depth;\n\
}\n";

#[test]
fn a_column_names_the_return_of_a_one_line_if() {
    let p = c_program("depth", DEPTH);
    let src = std::fs::read_to_string(&p.path).unwrap();
    let col = src.lines().nth(1).unwrap().find("return").unwrap() + 1;
    let r = json_report(&p.path, &["--function", "walk", "--line", &format!("depth.c:2:{col}"), "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let depth = r["witness"]["inputs"][0]["value"].as_u64().unwrap() as i32;
    assert!(depth >= 8, "the witness takes the return: depth = {depth}: {r:#}");
    // Without a column, the condition's block, and the report lists the other with its column.
    let out = run_on(&p.path, &["--function", "walk", "--line", "depth.c:2", "--timeout", "30"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("line depth.c:2 has code in 2 blocks"), "{text}");
    assert!(text.contains(&format!("--line depth.c:2:{col}")), "{text}");
    assert!(text.contains("chosen"), "{text}");
    // A column before any code of the line.
    assert_bad_input(&run_on(&p.path, &["--function", "walk", "--line", "depth.c:2:1"]), "column 1");
}

#[test]
fn a_c_label_the_compiler_renamed_is_not_silently_another_block() {
    let p = c_program("lbl", "int f(int x) {\n  if (x == 3) goto entry;\n  return 0;\nentry:\n  return 1;\n}\n");
    let out = run_on(&p.path, &["--function", "f", "--block", "entry"]);
    assert_bad_input(&out, "entry1");
    let r = json_report(&p.path, &["--function", "f", "--block", "entry1", "--timeout", "30"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["inputs"][0]["value"].as_u64(), Some(3), "{r:#}");
    // An unknown label lists the close names first.
    assert_bad_input(&run_on(&p.path, &["--function", "f", "--block", "entry2"]), "close names: entry, entry1");
}

#[test]
fn check_ub_works_when_the_program_defines_reach_error() {
    let p = c_program(
        "svc",
        "extern void abort(void);\n\
         void reach_error(void) { abort(); }\n\
         extern int __VERIFIER_nondet_int(void);\n\
         int main(void) {\n\
           int x = __VERIFIER_nondet_int();\n\
           int y = x + 1000;\n\
           if (x > 0 && y < 0) reach_error();\n\
           return 0;\n\
         }\n",
    );
    let r = json_report(&p.path, &["--function", "main", "--call", "reach_error", "--check-ub", "--timeout", "60"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["ub"]["operation"], "signed integer overflow", "{r:#}");
    assert!(r["ub"]["location"].as_str().unwrap().contains("svc.c:6"), "{r:#}");
}

const KV: &str = "#include <stddef.h>\n\
int parse(const char *text, size_t len) {\n\
  if (len >= 4 && text[0] == '4' && text[1] == '7' && text[2] == '1' && text[3] == '\\002')\n\
    return 1;\n\
  return 0;\n\
}\n";

#[test]
fn witnesses_read_as_c_and_two_runs_write_the_same_files() {
    let p = c_program("kv", KV);
    let out = run_on(&p.path, &["--function", "parse", "--line", "kv.c:4", "--timeout", "30"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("text = \"471\\x02\""), "a char buffer is a C string literal: {text}");
    let mut witnesses = vec![];
    let mut dirs = vec![];
    for _ in 0..2 {
        let d = tempfile::tempdir().unwrap();
        let r = json_report(&p.path, &["--function", "parse", "--line", "kv.c:4", "--timeout", "30", "--seed", "7", "--emit-tests", d.path().to_str().unwrap()]);
        assert_eq!(r["verdict"], "reachable", "{r:#}");
        witnesses.push((r["witness"]["inputs"].clone(), r["witness"]["nondet"].clone()));
        dirs.push(d);
    }
    assert_eq!(witnesses[0], witnesses[1], "two runs, one witness");
    let files = |d: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
            .collect();
        v.sort();
        v
    };
    let (a, b) = (files(dirs[0].path()), files(dirs[1].path()));
    assert!(a.iter().any(|(n, _)| n == "metadata.xml"), "{:?}", a.iter().map(|f| &f.0).collect::<Vec<_>>());
    assert_eq!(a.iter().map(|f| &f.0).collect::<Vec<_>>(), b.iter().map(|f| &f.0).collect::<Vec<_>>());
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{name} differs between two runs");
    }
}
