//! Whole projects: several inputs linked into one program, and a compile_commands.json whose
//! per-file flags (-I, -D) the analysis must use.

mod common;
use common::*;

fn write(dir: &std::path::Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const A: &str = "#include \"cfg.h\"\nint scale(int x);\nint top(int x) {\n  int y = scale(x);\n  if (y > LIMIT && y < LIMIT + 3)\n    return 1;\n  return 0;\n}\n";

#[test]
fn a_compilation_database_gives_each_file_its_flags() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "inc/cfg.h", "#define LIMIT 40\n");
    write(d.path(), "src/a.c", A);
    write(d.path(), "src/b.c", "int scale(int x) { return x * FACTOR; }\n");
    let db = format!(
        r#"[{{"directory": "{0}", "command": "cc -O2 -Iinc -c src/a.c -o a.o", "file": "src/a.c"}},
            {{"directory": "{0}", "arguments": ["cc", "-DFACTOR=7", "-c", "src/b.c"], "file": "src/b.c"}}]"#,
        d.path().display()
    );
    write(d.path(), "compile_commands.json", &db);
    let out = apc_llvm(&["-p", d.path().to_str().unwrap(), "--function", "top", "--line", "src/a.c:6", "--timeout", "30", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    // x * 7 in (40, 43) with wrap-around: the witness really multiplies by FACTOR = 7.
    let x = r["witness"]["inputs"][0]["value"].as_u64().unwrap() as u32;
    let y = x.wrapping_mul(7) as i32;
    assert!(y > 40 && y < 43, "x = {x}: {r:#}");
    // Without the database, a.c does not even compile (cfg.h is under inc/).
    let out = run_on(&d.path().join("src/a.c"), &["--function", "top", "--line", "a.c:6"]);
    assert_bad_input(&out, "cfg.h");
}

#[test]
fn several_inputs_are_linked_and_clashes_are_named() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "a.c", &A.replace("#include \"cfg.h\"", "#define LIMIT 40"));
    write(d.path(), "b.c", "int scale(int x) { return x * 3; }\n");
    let (a, b) = (d.path().join("a.c"), d.path().join("b.c"));
    let out = apc_llvm(&[a.to_str().unwrap(), b.to_str().unwrap(), "--function", "top", "--line", "a.c:6", "--timeout", "30", "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    // Two definitions of scale: the second input cannot be linked.
    write(d.path(), "c.c", "int scale(int x) { return x; }\n");
    let c = d.path().join("c.c");
    let out = apc_llvm(&[a.to_str().unwrap(), b.to_str().unwrap(), c.to_str().unwrap(), "--function", "top", "--line", "a.c:6"]);
    assert_bad_input(&out, "cannot be linked");
}
