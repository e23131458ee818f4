//! Bad input: exit status 2, one clear line, no panic, nothing on stdout.

mod common;
use common::*;

const FOO: &str = include_str!("../c-benchmarks/running_example.c");

#[test]
fn missing_file() {
    let out = apc_llvm(&["/nonexistent/prog.bc", "--function", "foo", "--block", "x"]);
    assert_bad_input(&out, "no such file");
}

#[test]
fn text_file_instead_of_bitcode() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["notes.txt", "fake.bc"] {
        let p = dir.path().join(name);
        std::fs::write(&p, "this is not a program\n").unwrap();
        let out = run_on(&p, &["--function", "foo", "--block", "x"]);
        assert_bad_input(&out, name);
    }
}

#[test]
fn truncated_bitcode() {
    let p = c_program("foo", FOO);
    let bc = p.dir.path().join("foo.bc");
    let status = std::process::Command::new(clang())
        .args(apc_llvm::load::CLANG_ANALYSIS_FLAGS)
        .arg(&p.path)
        .arg("-o")
        .arg(&bc)
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = std::fs::read(&bc).unwrap();
    std::fs::write(&bc, &bytes[..bytes.len() / 2]).unwrap();
    let out = run_on(&bc, &["--function", "foo", "--call", "reach_error"]);
    assert_bad_input(&out, "not valid LLVM bitcode");
}

#[test]
fn c_that_does_not_compile() {
    let p = c_program("broken", "int f( { return }\n");
    let out = run_on(&p.path, &["--function", "f", "--block", "entry"]);
    assert_bad_input(&out, "clang failed");
}

#[test]
fn unknown_function_lists_the_defined_ones() {
    let p = c_program("foo", FOO);
    let out = run_on(&p.path, &["--function", "bar", "--call", "reach_error"]);
    assert_bad_input(&out, "no function 'bar'");
    assert!(String::from_utf8_lossy(&out.stderr).contains("foo"));
}

#[test]
fn unknown_block_lists_the_labels() {
    let p = c_program("foo", FOO);
    let out = run_on(&p.path, &["--function", "foo", "--block", "no.such.block"]);
    assert_bad_input(&out, "no.such.block");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("for.cond") && stderr.contains("for.body"), "{stderr}");
}

/// A label that several called functions use is ambiguous (the soundness campaign met csmith's
/// `safe_*` helpers and `func_3` all with `lor.lhs.false`): an error that names them, and
/// `FUNC:LABEL` picks one.
#[test]
fn a_label_of_several_callees_must_be_qualified() {
    let src = "extern void reach_error(void);\n\
               static int g(int a) { if (a > 3) return 1; return 0; }\n\
               static int h(int a) { if (a < -3) return 1; return 0; }\n\
               int top(int a) { return g(a) + h(a); }\n";
    let p = c_program("two", src);
    let out = run_on(&p.path, &["--function", "top", "--block", "if.then"]);
    assert_bad_input(&out, "name one as FUNC:if.then");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains('g') && stderr.contains('h'), "{stderr}");
    let r = json_report(&p.path, &["--function", "top", "--block", "h:if.then", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!((r["witness"]["inputs"][0]["value"].as_u64().unwrap() as u32 as i32) < -3, "{r:#}");
    let out = run_on(&p.path, &["--function", "g", "--block", "h:if.then"]);
    assert_bad_input(&out, "never calls 'h'");
}

#[test]
fn line_without_code() {
    let p = c_program("foo", FOO);
    // Line 1 is a comment.
    let out = run_on(&p.path, &["--function", "foo", "--line", "foo.c:1"]);
    assert_bad_input(&out, "foo.c:1");
    let out = run_on(&p.path, &["--function", "foo", "--line", "foo.c"]);
    assert_bad_input(&out, "FILE:LINE");
}

#[test]
fn unknown_callee() {
    let p = c_program("foo", FOO);
    let out = run_on(&p.path, &["--function", "foo", "--call", "no_such_function"]);
    assert_bad_input(&out, "no_such_function");
}

#[test]
fn bad_timeout() {
    let p = c_program("foo", FOO);
    let out = run_on(&p.path, &["--function", "foo", "--call", "reach_error", "--timeout", "-3"]);
    assert_bad_input(&out, "--timeout");
}

#[test]
fn usage_errors_are_one_line_with_status_2() {
    let p = c_program("foo", FOO);
    let out = run_on(&p.path, &["--function", "foo"]);
    assert_bad_input(&out, "--help");
    // The missing arguments are named on that one line.
    assert_bad_input(&out, "not provided: <--block <LABEL>|--line <FILE:LINE[:COL]>|--call <FUNC>|");
    let out = run_on(&p.path, &["--function", "foo", "--block", "a", "--call", "b"]);
    assert_bad_input(&out, "cannot be used with");
}

#[test]
fn help_explains_targets_and_exit_status() {
    let out = apc_llvm(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["--block", "--line", "--call", "--json", "--timeout", "Exit status"] {
        assert!(text.contains(needle), "--help lacks {needle}");
    }
}

#[test]
fn unknown_engine_is_named() {
    let p = c_program("eng", "void f(int x) { if (x) return; }");
    let out = run_on(&p.path, &["--function", "f", "--block", "entry", "--engine", "apc,klee"]);
    assert_bad_input(&out, "unknown engine `klee`");
    let out = run_on(&p.path, &["--function", "f", "--block", "entry", "--engine", ","]);
    assert_bad_input(&out, "--engine");
}

#[test]
fn huge_timeouts_and_special_files_are_refused() {
    let p = c_program("big", "void f(int x) { if (x) return; }");
    let out = run_on(&p.path, &["--function", "f", "--block", "entry", "--timeout", "1e19"]);
    assert_bad_input(&out, "--timeout must be at most");
    // A FIFO named like bitcode: refused at once, never opened (opening it would block).
    let fifo = p.dir.path().join("x.bc");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let start = std::time::Instant::now();
    let out = run_on(&fifo, &["--function", "f", "--block", "entry"]);
    assert_bad_input(&out, "not a regular file");
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn line_files_may_be_dot_relative_absolute_or_a_suffix_and_others_are_named() {
    let p = c_program("lines", "int f(int x) {\n  if (x == 3)\n    return 1;\n  return 0;\n}\n");
    let abs = format!("{}:3", p.path.display());
    for spec in ["lines.c:3", "./lines.c:3", abs.as_str()] {
        let r = json_report(&p.path, &["--function", "f", "--line", spec, "--timeout", "20"]);
        assert_eq!(r["verdict"], "reachable", "{spec}: {r:#}");
    }
    let out = run_on(&p.path, &["--function", "f", "--line", "other.c:3"]);
    assert_bad_input(&out, "comes from 'other.c' (their files: ");
}
