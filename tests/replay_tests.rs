//! Native replay and its sandbox: hostile programs are stopped and leave nothing behind.

mod common;
use common::*;
use std::time::{Duration, Instant};

#[test]
fn writes_outside_the_run_directory_do_not_escape() {
    let marker = format!("/tmp/apc-escape-{}-{}", std::process::id(), line!());
    let _ = std::fs::remove_file(&marker);
    let src = format!(
        "#include <stdio.h>\nextern void reach_error(void);\n\
         void f(int x) {{ FILE *o = fopen(\"{marker}\", \"w\"); if (o) {{ fputs(\"escaped\", o); fclose(o); }}\n\
         FILE *u = fopen(\"../../../../escape-up\", \"w\"); if (u) fclose(u);\n\
         if (x == 3) reach_error(); }}"
    );
    let r = analyse("esc", &src, &["--function", "f", "--call", "reach_error"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(!std::path::Path::new(&marker).exists(), "the run wrote {marker} outside its directory");
}

#[test]
fn unbounded_allocation_is_stopped() {
    // Every model has x > 1000000, so the replay allocates 16 MiB x times: the memory limit
    // makes malloc fail (abort) long before the target.
    let src = "#include <stdlib.h>\n#include <string.h>\nextern void reach_error(void);\n\
               void f(int x) { if (x > 1000000) { for (int i = 0; i < x; i++) { char *p = malloc(1 << 24); if (!p) abort(); memset(p, 1, 1 << 24); } }\n\
               if (x > 1000000) reach_error(); }";
    let start = Instant::now();
    // The APC engine alone: its models are what this test is about (the fuzzer would run on).
    let r = analyse("alloc", src, &["--function", "f", "--call", "reach_error", "--timeout", "20", "--engine", "apc"]);
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(r["witness"]["inputs"][0]["value"].as_u64().unwrap() > 1_000_000, "{r:#}");
    assert_eq!(r["witness"]["replayed"], true);
    assert_eq!(r["witness"]["reached"], false, "{r:#}");
    assert_ne!(r["verdict"], "reachable");
    let run = r["witness"]["run"].as_str().unwrap();
    assert!(run.starts_with("signal") || run == "cpu time limit" || run == "timeout", "stopped by a limit: {run}");
}


/// One native build replays any witness of the function: parameters of every passing class,
/// buffers with pointer slots, and the nondet stream, all read from fd 4.
mod one_build {
    use super::*;
    use apc_llvm::load::{self, TargetSpec};
    use apc_llvm::replay::Replayer;
    use apc_llvm::witness::{ParamInput, Pointee, Witness};

    const PROGRAM: &str = "\
extern void reach_error(void);
extern int __VERIFIER_nondet_int(void);
/* The program's own `read` and `write`: the driver must not call them. */
int write(int x) { return x + 1; }
long read(long a) { return a; }
void f(const char *s, signed char c, long n, char **pp) {
  int k = __VERIFIER_nondet_int();
  if (s[0] == 'x' && c == -3 && n == -5 && pp[1][0] == 'q' && k == 77 && write(1) == 2 && read(3) == 3)
    reach_error();
}
";

    fn witness(c: u64, nondet: u64) -> Witness {
        let mut slots = vec![0u8; 16];
        slots.extend([0u8; 8]);
        Witness {
            params: vec![
                ParamInput::Buffer { name: "s".into(), bytes: b"xy\0".to_vec(), pointees: vec![], front: 0 },
                ParamInput::Int { name: "c".into(), width: 8, value: c },
                ParamInput::Int { name: "n".into(), width: 64, value: (-5i64) as u64 },
                ParamInput::Buffer {
                    name: "pp".into(),
                    bytes: slots,
                    pointees: vec![
                        Pointee::buffer(0, b"a\0".to_vec(), vec![]),
                        Pointee::buffer(8, b"q\0".to_vec(), vec![]),
                    ],
                    front: 0,
                },
            ],
            nondet: vec![nondet],
        }
    }

    #[test]
    fn every_input_class_travels_through_the_witness_descriptor() {
        let p = c_program("onebuild", PROGRAM);
        let bc = compile_bitcode(&p);
        let loaded = load::load(&bc, "f", &TargetSpec::Call("reach_error".into())).unwrap();
        let rp = Replayer::new(&loaded, false).unwrap();
        // 0xfd is -3 as a signed char: passed sign-extended.
        let hit = rp.run(&witness(0xfd, 77)).unwrap();
        assert_eq!(hit.reached, Some(0), "{hit:?}");
        assert_eq!(hit.nondet_types, vec!["int".to_string()]);
        // Each input matters: another char, another nondet value, a missing pointee.
        assert_eq!(rp.run(&witness(0xfc, 77)).unwrap().reached, None);
        assert_eq!(rp.run(&witness(0xfd, 78)).unwrap().reached, None);
        let mut w = witness(0xfd, 77);
        if let ParamInput::Buffer { pointees, .. } = &mut w.params[3] {
            pointees.pop();
        }
        let missed = rp.run(&w).unwrap();
        assert_eq!(missed.reached, None);
        assert_ne!(missed.status, "exit 0");
        // The same build, again: replays do not interfere.
        assert_eq!(rp.run(&witness(0xfd, 77)).unwrap().reached, Some(0));
        // Run directories are removed after each run.
        let left: Vec<_> = std::fs::read_dir(rp.dir()).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with("run")).collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// A `static` function is replayed itself, not a stub of it.
#[test]
fn a_static_function_is_replayed() {
    let src = "extern void reach_error(void);\n\
               static int check(int x) { if (x * 3 == 3702) reach_error(); return x; }\n\
               int api(int x) { return check(x); }";
    let r = analyse("static", src, &["--function", "check", "--call", "reach_error", "--timeout", "20", "--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["inputs"][0]["value"], 1234);
}
