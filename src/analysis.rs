//! The pipeline, stage by stage: load → cfg → (symex/summary → apc → solve → witness → replay) → report.

use crate::apc;
use crate::cfg::{Flowgraph, Limits, Structure};
use crate::expr::{ExprPool, Printer};
use crate::replay::Replayer;
use crate::report::WitnessReport;
use crate::solve::{self, Outcome};
use crate::witness;
use std::time::Duration;
use crate::config::Config;
use crate::error::Result;
use crate::load;
use crate::report::{Report, Verdict};
use std::time::Instant;
use tracing::info;

/// Runs the analysis described by `config`.
pub fn run(config: &Config) -> Result<Report> {
    let t0 = Instant::now();
    let loaded = load::load(&config.input, &config.function, &config.target)?;
    let t_load = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let f = &loaded.program.function;
    let graph = Flowgraph::of_function(f);
    let structure = Structure::compute(graph, Limits { max_backbones: config.max_backbones });
    info!(backbones = structure.backbones.len(), loops = structure.loops.len(), "loop structure computed");
    let t_cfg = t1.elapsed().as_secs_f64();

    let mut report = Report::new(f, config.target.describe(), &structure);
    report.timings.insert("load".into(), t_load);
    report.timings.insert("cfg".into(), t_cfg);
    if !structure.graph.target_reachable() {
        report.verdict = Verdict::Unreachable;
        report.reason = "no path of the control-flow graph leads from the entry to the target".into();
        return Ok(report);
    }

    let t2 = Instant::now();
    let mut pool = ExprPool::new();
    let apc = apc::build(&loaded.program, &structure, &mut pool);
    report.apc = Some(Printer::new(&pool).print(apc.formula));
    report.timings.insert("build_apc".into(), t2.elapsed().as_secs_f64());
    info!(nodes = pool.len(), "APC built");

    let remaining = config.timeout.saturating_sub(t0.elapsed()).max(Duration::from_millis(100));
    let answer = solve::check(&pool, apc.formula, remaining, |m| witness::from_model(&loaded.program, &apc, &pool, m));
    report.smtlib = Some(answer.smtlib);
    report.timings.insert("solve_apc".into(), answer.seconds);
    match answer.outcome {
        Outcome::Unsat if apc.complete => {
            report.verdict = Verdict::Unreachable;
            report.reason = "the abstract path condition is unsatisfiable".into();
        }
        Outcome::Unsat => {
            report.reason = "the APC of the enumerated backbones is unsatisfiable, but the backbone bound was hit".into();
        }
        Outcome::Unknown(why) => {
            report.reason = format!("the solver gave no answer ({why})");
        }
        Outcome::Sat(w) => {
            let t3 = Instant::now();
            let mut replayer = Replayer::new(&loaded, config.keep_temps)?;
            let left = config.timeout.saturating_sub(t0.elapsed());
            replayer.limits.wall = replayer.limits.wall.min(left).max(Duration::from_millis(200));
            replayer.limits.cpu_seconds = replayer.limits.wall.as_secs() + 1;
            let run = replayer.run(&w)?;
            report.timings.insert("replay".into(), t3.elapsed().as_secs_f64());
            let reached = run.reached.is_some();
            if reached {
                report.verdict = Verdict::Reachable;
                report.reason = "a native run on the model's inputs entered the target".into();
            } else {
                report.reason = format!("the model's inputs did not reach the target natively ({})", run.status);
            }
            report.witness = Some(WitnessReport {
                inputs: w.params.clone(),
                nondet: w.nondet.clone(),
                replayed: true,
                reached,
                run: run.status,
                models_tried: 1,
            });
        }
    }
    report.timings.insert("total".into(), t0.elapsed().as_secs_f64());
    Ok(report)
}
