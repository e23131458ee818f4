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
    let r = analyse("alloc", src, &["--function", "f", "--call", "reach_error", "--timeout", "20"]);
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(r["witness"]["inputs"][0]["value"].as_u64().unwrap() > 1_000_000, "{r:#}");
    assert_eq!(r["witness"]["replayed"], true);
    assert_eq!(r["witness"]["reached"], false, "{r:#}");
    assert_ne!(r["verdict"], "reachable");
    let run = r["witness"]["run"].as_str().unwrap();
    assert!(run.starts_with("signal") || run == "cpu time limit" || run == "timeout", "stopped by a limit: {run}");
}

