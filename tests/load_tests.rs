//! Verdicts under load: the solver budgets that decide what the APC contains and whether the
//! quick check proves are CPU time of the checking thread (`solve::cpu_limit`), so a machine
//! busy with other work (a `make -j` running several analyses) gives the same verdicts, later.
//! A file of its own: the busy processes would slow the timing tests of other files.

mod common;
use common::*;
use std::path::Path;

/// Busy processes, one per core and one more, until dropped.
struct Load(Vec<std::process::Child>);

impl Load {
    fn start() -> Load {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Load((0..=cores).map(|_| std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("start a busy process")).collect())
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The apc engine's quick check and the summaries' checks have CPU-time budgets, not wall-clock
/// ones: on a machine busy with other work (a `make -j` running several analyses) the same
/// proof comes, later. With a 40 ms wall-clock limit, sum_symbolic's proof (30 ms of solving
/// with the nonlinear terms uninterpreted) was `unknown` at `--timeout 2` beside three busy
/// processes on two cores, and is proved in 0.1 s on an idle machine.
#[test]
fn a_proof_does_not_depend_on_the_machine_s_load() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("c-benchmarks/sum_symbolic.c");
    let _load = Load::start();
    let r = json_report(&src, &["--function", "sum", "--call", "reach_error", "--timeout", "2"]);
    assert_eq!(r["verdict"], "unreachable", "{r:#}");
}
