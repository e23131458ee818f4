//! The pipeline, stage by stage: load → cfg → symex/summary → apc → solve → witness → replay →
//! report. [`run`] drives it; the witness search loop lives in [`search`].

use crate::apc::{self, unfold::unfold_within, Apc};
use crate::cfg::{Flowgraph, Limits, Structure};
use crate::config::Config;
use crate::error::Result;
use crate::expr::{ExprId, ExprPool, Printer};
use crate::ir::{IntPredicate, Program};
use crate::load::{self, Loaded};
use crate::replay::{NativeBuild, Replayer};
use crate::report::{Report, Verdict, WitnessReport};
use crate::solve::{self, ModelView, Outcome};
use crate::witness::{self, ParamInput, Witness};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::info;

/// Most expressions one unfolding APC^K may add (nested quantifiers multiply their instances).
const MAX_UNFOLD_NODES: usize = 400_000;

/// Runs the analysis described by `config`.
pub fn run(config: &Config) -> Result<Report> {
    let t0 = Instant::now();
    let loaded = load::load(&config.input, &config.function, &config.target)?;
    let t_load = t0.elapsed().as_secs_f64();
    // The native build for replay runs while the APC is built and solved.
    let native = Replayer::build_in_background(&loaded, config.keep_temps);

    let t1 = Instant::now();
    let f = &loaded.program.function;
    let graph = Flowgraph::of_function(f);
    let structure = Structure::compute(graph, Limits { max_backbones: config.max_backbones, deadline: Some(t0 + config.timeout) });
    info!(backbones = structure.backbones.len(), loops = structure.loops.len(), "loop structure computed");
    let t_cfg = t1.elapsed().as_secs_f64();

    let mut report = Report::new(f, config.target.describe(), &structure);
    report.timings.insert("load".into(), t_load);
    report.timings.insert("cfg".into(), t_cfg);
    if structure.truncated && t0.elapsed() >= config.timeout {
        report.verdict = Verdict::Unknown;
        report.reason = "the time budget ran out while enumerating the paths to the target".into();
        return Ok(report);
    }
    if !structure.graph.target_reachable() {
        report.verdict = Verdict::Unreachable;
        report.reason = "no path of the control-flow graph leads from the entry to the target".into();
        return Ok(report);
    }

    let t2 = Instant::now();
    let (apc, pool) = apc::ApcBuilder::new(&loaded.program, &structure).with_deadline(t0 + config.timeout).build();
    if apc.timed_out {
        report.verdict = Verdict::Unknown;
        report.reason = "the time budget ran out while building the abstract path condition".into();
        report.timings.insert("build_apc".into(), t2.elapsed().as_secs_f64());
        return Ok(report);
    }
    report.apc = Some(Printer::new(&pool).print(apc.formula));
    for (loop_id, summary) in &apc.summaries {
        let (theta, phi) = summary.describe(&pool);
        let l = &mut report.loops[loop_id.0 as usize];
        l.iterated_state = theta.into_iter().collect();
        l.looping_condition = Some(phi);
        l.counters = summary
            .backbone_counters
            .iter()
            .map(|c| c.map_or_else(|| "infeasible".to_string(), |c| Printer::new(&pool).print(c)))
            .collect();
    }
    report.smtlib = Some(solve::smtlib(&pool, apc.formula));
    report.timings.insert("build_apc".into(), t2.elapsed().as_secs_f64());
    info!(nodes = pool.len(), "APC built");

    search(config, &loaded, &native, apc, pool, t0, &mut report)?;
    report.timings.insert("total".into(), t0.elapsed().as_secs_f64());
    Ok(report)
}

/// What one model yields: the witness and the values of the path counters.
type ModelData = (Witness, BTreeMap<String, u64>);

/// The witness search (DESIGN.md section 6): race the quantified APC against APC^K; replay a
/// model natively; when it misses the target, block it, raise K, and ask again, until the
/// budget runs out.
fn search(config: &Config, loaded: &Loaded, native: &NativeBuild, apc: Apc, pool: ExprPool, t0: Instant, report: &mut Report) -> Result<()> {
    let apc = Arc::new(apc);
    let program = Arc::new(loaded.program.clone());
    let counters: Vec<ExprId> = apc.summaries.iter().flat_map(|(_, s)| s.counters.clone()).collect();
    let extract: solve::ModelExtractor<ModelData> = {
        let (apc, program, counters) = (apc.clone(), program.clone(), counters.clone());
        Arc::new(move |pool: &ExprPool, solved: ExprId, m: &mut ModelView| {
            let w = witness::from_model(&program, &apc, pool, solved, m);
            let c = counters.iter().filter_map(|&c| m.eval(c).map(|v| (Printer::new(pool).print(c), v))).collect();
            (w, c)
        })
    };
    let has_quantifiers = report.apc.as_deref().is_some_and(|s| s.contains('∀') || s.contains('∃'));
    let mut pool = Arc::new(pool);
    let mut k = config.unfold_k;
    let mut blocking: Vec<ExprId> = vec![];
    let mut models = 0u32;
    let timing = |report: &mut Report, key: &str, secs: f64| {
        *report.timings.entry(key.to_string()).or_insert(0.0) += secs;
    };
    loop {
        let left = config.timeout.saturating_sub(t0.elapsed());
        if left < Duration::from_millis(50) {
            report.reason = format!("the time budget ran out after {models} model(s)");
            return Ok(());
        }
        // The queries: the APC itself and, when it has quantifiers, its unfolding APC^K.
        let p = Arc::make_mut(&mut pool);
        let base = p.and(std::iter::once(apc.formula).chain(blocking.iter().copied()));
        let mut queries = vec![("solve_apc".to_string(), base)];
        let mut bounded = None;
        if has_quantifiers {
            let tu = Instant::now();
            if let Some(unfolded) = unfold_within(p, apc.formula, k, false, MAX_UNFOLD_NODES) {
                let unfolded = p.and(std::iter::once(unfolded).chain(blocking.iter().copied()));
                // For witnesses only, never for verdicts: with every κ < K all instances of each
                // ∀τ are present, and the interleaving constraints make the iterations fit
                // together, so models of this query are far more likely to be real runs.
                if let Some(consistent) = unfold_within(p, apc.formula, k, true, MAX_UNFOLD_NODES) {
                    let kk = p.bv(64, k as u64);
                    let bounds: Vec<ExprId> = counters.iter().map(|&c| p.cmp(IntPredicate::Ult, c, kk)).collect();
                    bounded = Some(p.and([consistent].into_iter().chain(blocking.iter().copied()).chain(bounds)));
                }
                queries.push(("solve_apc_k".to_string(), unfolded));
            }
            timing(report, "unfold", tu.elapsed().as_secs_f64());
        }
        // Leave the solvers a little less than what is left now (unfolding took some), for model
        // extraction and the report.
        let left = config.timeout.saturating_sub(t0.elapsed());
        let solver_budget = left.saturating_sub(Duration::from_millis(150)).max(Duration::from_millis(50));
        let results = solve::race(pool.clone(), queries, solver_budget, extract.clone());
        for r in &results {
            timing(report, &r.name, r.answer.seconds);
        }
        let Some(last) = results.into_iter().last().filter(|r| r.answer.outcome.is_definite()) else {
            report.reason = "the solver gave no answer within the time budget".into();
            return Ok(());
        };
        info!(query = %last.name, k, "definite answer");
        match last.answer.outcome {
            Outcome::Unsat if blocking.is_empty() && apc.complete => {
                report.verdict = Verdict::Unreachable;
                report.reason = format!(
                    "the abstract path condition is unsatisfiable ({})",
                    if last.name == "solve_apc" { "quantified APC".to_string() } else { format!("APC^K, K = {k}") }
                );
                return Ok(());
            }
            Outcome::Unsat if blocking.is_empty() => {
                report.reason = "the APC of the enumerated backbones is unsatisfiable, but the backbone bound was hit".into();
                return Ok(());
            }
            Outcome::Unsat => {
                report.reason = format!("no further model: {models} model(s) tried, none reached the target natively");
                return Ok(());
            }
            Outcome::Unknown(_) => unreachable!("filtered above"),
            Outcome::Sat(first) => {
                // The model of the race first; when it misses the target, a model of the bounded,
                // consistent query (found only now, as it costs a query of its own).
                let mut tried = vec![];
                let mut candidate = Some(first);
                let mut refined = false;
                while let Some((w, counter_values)) = candidate.take() {
                    models += 1;
                    let tb = Instant::now();
                    let rp = native.get()?;
                    timing(report, "native_build_wait", tb.elapsed().as_secs_f64());
                    if config.keep_temps && models == 1 {
                        eprintln!("apc-llvm: replay files kept in {}", rp.dir().display());
                    }
                    match replay_model(config, loaded, &rp, t0, models, &w, counter_values, report)? {
                        Replayed::Reached => return Ok(()),
                        Replayed::OutOfTime => return Ok(()),
                        Replayed::Missed => {}
                    }
                    tried.push(w);
                    if models >= config.max_models {
                        report.reason.push_str(&format!("; gave up after {models} model(s)"));
                        return Ok(());
                    }
                    if let (false, Some(b)) = (refined, bounded) {
                        refined = true;
                        let left = (config.timeout.saturating_sub(t0.elapsed()) / 2).min(Duration::from_secs(10));
                        let answer = solve::check(&pool, b, left, |m| extract(&pool, b, m));
                        timing(report, "solve_apc_k_bounded", answer.seconds);
                        if let Outcome::Sat(data) = answer.outcome {
                            if !tried.contains(&data.0) {
                                candidate = Some(data);
                            }
                        }
                    }
                }
                // Block this model (on the inputs it fixes) and widen the unfolding, only with
                // time left. (`race` joined its workers, so `make_mut` does not copy the pool.)
                if config.timeout.saturating_sub(t0.elapsed()) < Duration::from_millis(500) {
                    report.reason.push_str(&format!("; the time budget ran out after {models} model(s)"));
                    return Ok(());
                }
                let p = Arc::make_mut(&mut pool);
                let blocks: Vec<ExprId> = tried.iter().filter_map(|w| block(p, &program, &apc, w)).collect();
                if blocks.is_empty() {
                    return Ok(());
                }
                blocking.extend(blocks);
                k = (k * 2).min(config.max_unfold_k);
            }
        }
    }
}

/// How the replay of one model ended.
enum Replayed {
    Reached,
    Missed,
    OutOfTime,
}

/// Replays model number `models` and records it in the report.
#[allow(clippy::too_many_arguments)]
fn replay_model(
    config: &Config,
    loaded: &Loaded,
    rp: &Replayer,
    t0: Instant,
    models: u32,
    w: &Witness,
    counters: BTreeMap<String, u64>,
    report: &mut Report,
) -> Result<Replayed> {
    let tr = Instant::now();
    let left = config.timeout.saturating_sub(t0.elapsed()).saturating_sub(Duration::from_millis(100));
    if left < Duration::from_millis(50) {
        report.reason = format!("the time budget ran out before model {models} could be replayed");
        return Ok(Replayed::OutOfTime);
    }
    let wall = Duration::from_secs(5).min(left);
    let limits = crate::replay::Limits { wall, cpu_seconds: wall.as_secs() + 1, ..Default::default() };
    let run = rp.run_with(w, limits)?;
    *report.timings.entry("replay".to_string()).or_insert(0.0) += tr.elapsed().as_secs_f64();
    let reached = run.reached.is_some();
    report.witness = Some(WitnessReport {
        inputs: w.params.clone(),
        nondet: w.nondet.clone(),
        replayed: true,
        reached,
        run: run.status.clone(),
        models_tried: models,
        counters,
    });
    if reached {
        report.verdict = Verdict::Reachable;
        report.reason = "a native run on the model's inputs entered the target".into();
        if let Some(dir) = &config.emit_tests {
            report.tests = emit_test(config, loaded, rp, w, &run, dir)?;
        }
        return Ok(Replayed::Reached);
    }
    report.reason = format!("the model's inputs did not reach the target natively ({})", run.status);
    Ok(Replayed::Missed)
}

/// Writes the regression test of a witness that reached the target.
fn emit_test(config: &Config, loaded: &Loaded, rp: &Replayer, w: &Witness, run: &crate::replay::RunOutcome, dir: &std::path::Path) -> Result<Vec<String>> {
    let target_id = run.reached.unwrap_or(0) as usize;
    let target = loaded.target_blocks.get(target_id).map(|t| t.rsplit(':').next().unwrap_or(t).to_string()).unwrap_or_default();
    let nondet = run.nondet_types.iter().enumerate().map(|(k, t)| (t.clone(), w.nondet.get(k).copied().unwrap_or(0))).collect();
    let specification = match &config.target {
        load::TargetSpec::Call(f) => format!("COVER( init({}()), FQL(COVER EDGES(@CALL({f}))) )", config.function),
        other => format!("COVER( init({}()), {} )", config.function, other.describe()),
    };
    let tc = crate::report::emit::TestCase {
        function: &config.function,
        target: &target,
        driver_source: rp.driver_source(w),
        bitcode: &loaded.instrumented_bitcode,
        nondet,
        specification,
        program_file: &config.input,
    };
    let files = crate::report::emit::emit(dir, &tc)?;
    Ok(files.iter().map(|p| p.display().to_string()).collect())
}

/// A formula excluding the inputs of `w`: some parameter, buffer byte or nondet value differs.
fn block(pool: &mut ExprPool, program: &Program, apc: &Apc, w: &Witness) -> Option<ExprId> {
    let mut differs = vec![];
    for (p, input) in program.function.params.iter().zip(&w.params) {
        match input {
            ParamInput::Int { value, width, .. } => {
                if let Some(sym) = apc.inputs.param_input(&p.name) {
                    let v = if *width == 1 { pool.bool(*value & 1 == 1) } else { pool.bv(*width, *value) };
                    differs.push(pool.cmp(IntPredicate::Ne, sym, v));
                }
            }
            ParamInput::Buffer { bytes, .. } => {
                if let Some(obj) = apc.inputs.param_buffer_object(&p.name) {
                    let meaningful = bytes.len().saturating_sub(witness::BUFFER_SLACK);
                    for (k, b) in bytes.iter().take(meaningful).enumerate() {
                        let off = pool.bv(64, k as u64);
                        let cell = pool.load(obj.initial, off, 8);
                        let v = pool.bv(8, *b as u64);
                        differs.push(pool.cmp(IntPredicate::Ne, cell, v));
                    }
                }
            }
            ParamInput::Zero { .. } => {}
        }
    }
    if let Some(stream) = apc.inputs.nondet_stream {
        for (k, v) in w.nondet.iter().enumerate() {
            let idx = pool.bv(64, k as u64);
            let cell = pool.select(stream, idx);
            let val = pool.bv(64, *v);
            differs.push(pool.cmp(IntPredicate::Ne, cell, val));
        }
    }
    (!differs.is_empty()).then(|| pool.or(differs))
}
