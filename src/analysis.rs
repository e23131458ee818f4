//! The pipeline, stage by stage: load → cfg → (symex/summary → apc → solve → witness → replay) → report.

use crate::cfg::{Flowgraph, Limits, Structure};
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
    if !structure.graph.target_reachable() {
        report.verdict = Verdict::Unreachable;
        report.reason = "no path of the control-flow graph leads from the entry to the target".into();
    } else {
        report.reason = "the abstract path condition is not built yet".into();
    }
    report.timings.insert("load".into(), t_load);
    report.timings.insert("cfg".into(), t_cfg);
    Ok(report)
}
