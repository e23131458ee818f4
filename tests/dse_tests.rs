//! The directed symbolic execution engine on whole programs with `__VERIFIER_nondet_*`
//! inputs: each reachable shape must end `Reached` with a witness that a native run confirms
//! (the replay closure is the real sandboxed replay); unreachable twins must not; a loop-free
//! unreachable program is `Exhausted`; an unbounded loop never is.

use apc_llvm::apc::ApcBuilder;
use apc_llvm::cfg::{Flowgraph, Limits, Structure};
use apc_llvm::dse::{self, DseEnd, DseConfig, DseStats, Guide};
use apc_llvm::load::{self, TargetSpec};
use apc_llvm::replay::Replayer;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn bench(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c-benchmarks").join(name)
}

/// Loads `path` (target: calls of `reach_error` in `main`), builds the APC guide when asked, and
/// runs the search with the real native replay.
fn search(path: &Path, guided: bool, secs: u64) -> (DseEnd, DseStats, Duration) {
    let start = Instant::now();
    let loaded = load::load(path, "main", &TargetSpec::Call("reach_error".into())).expect("load");
    let program = &loaded.program;
    let guide = guided.then(|| {
        let structure = Structure::compute(Flowgraph::of_function(&program.function), Limits { max_backbones: 4096, deadline: Some(start + Duration::from_secs(secs)) });
        let (apc, pool) = ApcBuilder::new(program, &structure).with_deadline(start + Duration::from_secs(secs)).build();
        Guide::new(program, &structure, &apc, &pool)
    });
    let guide = guide.flatten();
    let rp = Mutex::new(Replayer::new(&loaded, false).expect("replayer"));
    let replay = |w: &apc_llvm::witness::Witness| rp.lock().unwrap().run(w).map(|o| o.reached.is_some()).unwrap_or(false);
    let limits = DseConfig::new(start + Duration::from_secs(secs));
    let cancel = AtomicBool::new(false);
    let (end, stats) = dse::search(program, guide.as_ref(), &limits, &cancel, &replay);
    let took = start.elapsed();
    eprintln!("{}: {:?} in {:.2}s, {stats:?}", path.display(), end_name(&end), took.as_secs_f64());
    (end, stats, took)
}

fn end_name(e: &DseEnd) -> String {
    match e {
        DseEnd::Reached(w) => format!("reached ({} nondet values)", w.nondet.len()),
        DseEnd::Exhausted => "exhausted".into(),
        DseEnd::GaveUp(why) => format!("gave up: {why}"),
        DseEnd::NoReplayableWitness(why) => format!("no replayable witness: {why}"),
    }
}

/// The witness replays natively: `search` returns `Reached` only when the replay closure (a real
/// sandboxed run of the program) entered the target; check it once more on a fresh replayer.
fn assert_reached(path: &Path, end: &DseEnd) {
    let DseEnd::Reached(w) = end else { panic!("{}: expected Reached, got {}", path.display(), end_name(end)) };
    let loaded = load::load(path, "main", &TargetSpec::Call("reach_error".into())).expect("load");
    let rp = Replayer::new(&loaded, false).expect("replayer");
    assert!(rp.run(w).expect("replay").reached.is_some(), "{}: the witness does not replay", path.display());
}

fn reachable(name: &str) {
    let path = bench(name);
    let (end, _, _) = search(&path, true, 30);
    assert_reached(&path, &end);
}

fn c_file(dir: &tempfile::TempDir, name: &str, src: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, src).unwrap();
    p
}

#[test]
fn hello_from_nondet_chars() {
    reachable("wp_hello.c");
}

#[test]
fn hw_from_nondet_chars() {
    reachable("wp_hw.c");
}

#[test]
fn hwm_from_nondet_chars() {
    reachable("wp_hwm.c");
}

#[test]
fn running_example_counts_ones() {
    reachable("wp_running_example.c");
}

#[test]
fn more_than_twelve_sevens() {
    reachable("wp_sevens.c");
}

#[test]
fn matrir_from_nondet() {
    reachable("wp_matrir.c");
}

#[test]
fn windriver_from_nondet() {
    reachable("wp_windriver.c");
}

#[test]
fn triangular_step_count() {
    reachable("wp_triangular.c");
}

/// Twins whose targets no run reaches: the engine must not claim a witness.
#[test]
fn unreachable_twins_are_not_reached() {
    let dir = tempfile::tempdir().unwrap();
    let twins = [
        // At most 100 sevens fit.
        ("sevens_twin.c", std::fs::read_to_string(bench("wp_sevens.c")).unwrap().replace("count > 12", "count > 100")),
        // 105 steps need n = 15, 106 is no triangular number.
        ("tri_twin.c", std::fs::read_to_string(bench("wp_triangular.c")).unwrap().replace("steps == 105", "steps == 106")),
        // "Hello" is six bytes with its terminator; a string of length 4 cannot hold it.
        ("hello_twin.c", std::fs::read_to_string(bench("wp_hello.c")).unwrap().replace("#define N 32", "#define N 5")),
    ];
    for (name, src) in twins {
        let p = c_file(&dir, name, &src);
        let (end, _, _) = search(&p, true, 4);
        assert!(!matches!(end, DseEnd::Reached(_)), "{name}: an unreachable target was reached");
    }
}

#[test]
fn loop_free_unreachable_is_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let p = c_file(
        &dir,
        "loopfree.c",
        "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\n\
         int main(void) { int x = __VERIFIER_nondet_int(); int y = __VERIFIER_nondet_int();\n\
         if (x > 5 && x < 100 && y == x * 2) { if (y < 10) reach_error(); }\n return 0; }\n",
    );
    let (end, _, _) = search(&p, false, 10);
    assert!(matches!(end, DseEnd::Exhausted), "expected Exhausted, got {}", end_name(&end));
}

#[test]
fn loop_free_reachable_replays() {
    let dir = tempfile::tempdir().unwrap();
    let p = c_file(
        &dir,
        "loopfree_r.c",
        "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\n\
         int main(void) { int x = __VERIFIER_nondet_int(); int y = __VERIFIER_nondet_int();\n\
         if (x > 5 && y == x * 2) { if (y < 14) reach_error(); }\n return 0; }\n",
    );
    let (end, _, _) = search(&p, false, 10);
    assert_reached(&p, &end);
}

#[test]
fn unbounded_loop_is_never_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    // Reaching the target needs 2^31 iterations: no answer within the budget, and no proof.
    let p = c_file(
        &dir,
        "unbounded.c",
        "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\n\
         int main(void) { int n = 0; while (__VERIFIER_nondet_int()) n++;\n\
         if (n < 0) reach_error();\n return 0; }\n",
    );
    let (end, _, _) = search(&p, false, 3);
    assert!(matches!(end, DseEnd::GaveUp(_)), "expected GaveUp, got {}", end_name(&end));
}

/// A state whose own constants rule the target out is dropped at once, and exactly: the flag
/// below is 0 on every path, so the unbounded loop is never explored and the search is a proof.
#[test]
fn constants_of_a_state_rule_the_target_out_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let p = c_file(
        &dir,
        "flag.c",
        "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\n\
         int main(void) { int h = 0; int n = 0; while (__VERIFIER_nondet_int()) n++;\n\
         if (h == 1 && n > 3) reach_error();\n return 0; }\n",
    );
    let (end, stats, _) = search(&p, false, 5);
    assert!(matches!(end, DseEnd::Exhausted), "expected Exhausted, got {}", end_name(&end));
    assert!(stats.states_pruned_by_values > 0, "{stats:?}");
    // The twin with a flag set inside the loop keeps its states (and finds the witness).
    let p = c_file(
        &dir,
        "flag_r.c",
        "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\n\
         int main(void) { int h = 0; int n = 0; while (__VERIFIER_nondet_int()) { n++; h = 1; }\n\
         if (h == 1 && n > 3) reach_error();\n return 0; }\n",
    );
    let (end, _, _) = search(&p, false, 10);
    assert_reached(&p, &end);
}

/// An external function may write a local whose address escaped into a global before the call:
/// the constant propagation must not read the local's old value past the call (it did, and the
/// search claimed a proof).
#[test]
fn a_call_may_write_an_escaped_local() {
    let dir = tempfile::tempdir().unwrap();
    let p = c_file(
        &dir,
        "escape.c",
        "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\nextern void ext(void);\n\
         int *gp;\n\
         int main(void) { int x = 0; int y = 0; gp = &x;\n\
         if (__VERIFIER_nondet_int()) y = 1;\n\
         ext();\n\
         if (x == 5 && y >= 0) reach_error();\n return 0; }\n",
    );
    let (end, _, _) = search(&p, false, 5);
    assert!(!matches!(end, DseEnd::Exhausted), "ext() may set x: no proof, got {}", end_name(&end));
}

