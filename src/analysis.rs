//! The pipeline, stage by stage: load → cfg → symex/summary → apc → solve → witness → replay →
//! report. [`run`] drives it; the witness search and proof engines race in [`engine::race`].

use crate::apc;
use crate::backstop::{self, Bounded, Progress};
use crate::cfg::{Flowgraph, Limits, Structure};
use crate::config::Config;
use crate::engine::apc::{ApcBuild, ApcEngine, ApcSearchConfig, BuiltApc};
use crate::engine::pending::Pending;
use crate::engine::dse::DseEngine;
use crate::engine::fuzz::FuzzEngine;
use crate::engine::{self, Context, Engine, EngineKind, Finding};
use crate::error::Result;
use crate::expr::Printer;
use crate::load::{self, Loaded};
use crate::replay::{Replayer, RunOutcome};
use crate::report::{Report, Verdict};
use crate::solve;
use crate::witness::Witness;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;
use tracing::info;

/// How long before the deadline the engines aim to have stopped.
const ENGINE_MARGIN: std::time::Duration = std::time::Duration::from_millis(250);

/// Runs the analysis described by `config` on this thread (cooperative deadline only; see
/// [`run_bounded`]).
pub fn run(config: &Config) -> Result<Report> {
    run_observed(config, &Progress::default())
}

/// Runs the analysis on a worker thread, with the deadline and the memory bound enforced by a
/// watcher even where a stage ignores them ([`backstop`]). When [`Bounded::abandoned`] is
/// set, the process must end with [`solve::exit_now`] after the report is printed.
pub fn run_bounded(config: &Config) -> Bounded {
    backstop::run(config, run_observed)
}

/// Loads the program on a thread of its own, waiting for it until `deadline`; `None` when the
/// deadline came first. The load is LLVM's work and clang's (a 5 MB function: 11 s of clang,
/// 8 more of passes and lowering) and cannot be interrupted inside a step: past the deadline
/// its clang is killed and the thread is left to end on its own (its result dropped), so
/// the analysis answers at the deadline instead of the last-resort watcher after it.
fn load_until(config: &Config, deadline: Instant) -> Result<Option<Loaded>> {
    let token = Arc::new(crate::cleanup::Abandon::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let (input, function, target, options, t) = (config.input.clone(), config.function.clone(), config.target.clone(), config.load_options(), token.clone());
    // The analysis thread's stack (lowering recurses over large functions).
    let spawned = std::thread::Builder::new().name("load".into()).stack_size(1 << 30).spawn(move || {
        let r = crate::cleanup::Abandon::run(&t, || load::load_with(&input, &function, &target, &options));
        let _ = tx.send(r);
    });
    if let Err(e) = spawned {
        return Err(crate::error::Error::internal(format!("cannot start the loading thread: {e}")));
    }
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(r) => r.map(Some),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            token.abandon();
            info!("the deadline came while loading the program");
            Ok(None)
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(crate::error::Error::internal("the loading thread panicked")),
    }
}

/// [`run`], telling `progress` which stage it is in: load, start the native builds, lay out
/// the report, start the APC's build, race the engines, and conclude from their finding.
pub fn run_observed(config: &Config, progress: &Progress) -> Result<Report> {
    let t0 = Instant::now();
    let deadline = t0 + config.timeout;
    let Some(loaded) = load_stage(config, progress, deadline)? else {
        let mut report = Report::bare(&config.function, config.target.describe());
        report.reason = "the time budget ran out while loading the program".into();
        report.timings.insert("load".into(), t0.elapsed().as_secs_f64());
        return Ok(report);
    };
    let t_load = t0.elapsed().as_secs_f64();
    let mut background = Background::start(config, &loaded);
    let t1 = Instant::now();
    let f = &loaded.program.function;
    let graph = Flowgraph::of_function(f);
    let limits = Limits { max_backbones: config.max_backbones, deadline: Some(deadline) };
    let eager_structure = eager_structure(config, f, &graph, limits, progress);
    let mut report = skeleton_report(config, &loaded, eager_structure.as_ref());
    report.timings.insert("load".into(), t_load);
    report.timings.insert("cfg".into(), t1.elapsed().as_secs_f64());
    progress.set_partial(&report);
    if !graph.target_reachable() {
        report.verdict = Verdict::Unreachable;
        report.reason = "no path of the control-flow graph leads from the entry to the target".into();
        return Ok(report);
    }

    // One copy of the program for every engine.
    let program = Arc::new(loaded.program.clone());
    let guide_for_dse: Arc<Pending<Option<crate::dse::Guide>>> = Arc::default();
    let needs_apc = config.engines.iter().any(|e| matches!(e, EngineKind::Apc | EngineKind::Dse));
    let (mut build, apc_source) = if needs_apc {
        progress.enter("building the abstract path condition");
        let job = ApcBuildJob {
            program: program.clone(),
            graph: graph.clone(),
            limits,
            structure: eager_structure.clone(),
            deadline,
            stop: Arc::default(),
            smtlib: config.smtlib,
            guide: config.engines.contains(&EngineKind::Dse).then(|| guide_for_dse.clone()),
        };
        let (control, source) = BuildControl::start(job, config.engines.contains(&EngineKind::Apc));
        (Some(control), source)
    } else {
        (None, None)
    };
    let engines = make_engines(config, &loaded, &program, apc_source, &mut background, &guide_for_dse, t0 + config.timeout / 2);
    // The engines aim a little before the deadline: stopping a fuzzer, killing a replay and
    // joining Z3 threads take a moment, and the backstop answers for them at the deadline +
    // `backstop::GRACE`.
    let engines_deadline = deadline.checked_sub(ENGINE_MARGIN).unwrap_or(deadline).max(Instant::now());
    let native = background.native.clone();
    let cx = Arc::new(Context::new(native.clone(), engines_deadline, Arc::default(), Arc::default()));
    progress.enter("racing the engines for a witness or a proof");
    let result = engine::race(engines, &cx);
    // A build the race no longer needs stops at its next step; what it finished goes into the
    // report. A witness is reduced first (the build, lowered, may finish meanwhile): waiting
    // for it before the reduction delayed every verdict found before the APC was built.
    let reached = matches!(result.finding, Finding::Reached { .. });
    if let Some(b) = &build {
        b.race_ended(reached);
    }
    let mut star_causes: Vec<String> = vec![];
    if !reached {
        if let Some(b) = build.take() {
            star_causes = b.finish(&mut report);
        }
    }
    if let Some(m) = cx.median_run_seconds() {
        report.timings.insert("replay_run_median".into(), m);
    }
    for (k, v) in result.timings {
        *report.timings.entry(k).or_insert(0.0) += v;
    }
    report.engines = result.engines;
    report.invariants = result.invariants;
    report.engine = result.winner.map(|k| k.name().to_string());
    match result.finding {
        Finding::Reached { witness, run, report: wr } => {
            let found = Found { witness, run, report: wr, winner: result.winner };
            conclude_reached(config, &loaded, &native, found, &mut report, t0, progress);
            if let Some(b) = build.take() {
                star_causes = b.finish(&mut report);
            }
        }
        Finding::Unreachable(why) => {
            report.verdict = Verdict::Unreachable;
            report.reason = why;
            report.assumptions.extend(input_model_assumptions(&loaded.program, config.function == "main"));
        }
        Finding::Unknown(why) | Finding::NoWitness(why) => {
            report.reason = why;
            report.witness = result.attempt.map(|mut a| {
                crate::witness::fit_buffers(&mut a.inputs, &f.params);
                a
            });
        }
    }
    add_stubs_and_causes(config, &loaded, &native, &star_causes, &mut report);
    if report.backbone_count == 0 && report.loops.is_empty() && eager_structure.is_none() {
        paths_for_the_report(config, &graph, f, deadline, &mut report);
    }
    report.timings.insert("total".into(), t0.elapsed().as_secs_f64());
    Ok(report)
}

/// Loads the program (after the stall a test may ask for), `None` when the deadline came first.
fn load_stage(config: &Config, progress: &Progress, deadline: Instant) -> Result<Option<Loaded>> {
    // A stage that ignores the deadline, on demand of the tests of what a batch does then
    // (`tests/real_code_tests.rs`): the analysis of the named target stalls past it.
    if std::env::var("APC_LLVM_TEST_STALL_TARGET").is_ok_and(|t| t == config.target.describe()) {
        progress.enter("a stall asked for by APC_LLVM_TEST_STALL_TARGET");
        std::thread::sleep(config.timeout + std::time::Duration::from_secs(2));
    }
    crate::priority::init();
    progress.enter("loading the program");
    load_until(config, deadline)
}

/// What runs in the background from the load on: the native replay build, the fuzzing build
/// (when fuzzing races), and the native evaluator of `--pure` functions (for the apc engine's
/// mixed solving).
struct Background {
    native: Arc<crate::replay::NativeBuild>,
    fuzz: Option<FuzzEngine>,
    pure: Option<std::thread::JoinHandle<Result<crate::replay::pure::PureEvaluator>>>,
}

impl Background {
    fn start(config: &Config, loaded: &Loaded) -> Background {
        let native = Arc::new(Replayer::build_in_background(loaded, config.keep_temps));
        let fuzz = config.engines.contains(&EngineKind::Fuzz).then(|| {
            let mut f = FuzzEngine::start(loaded, config.keep_temps, config.engines.len() == 1);
            f.seed = config.seed;
            f
        });
        let pure = (!loaded.program.pure_functions.is_empty() && config.engines.contains(&EngineKind::Apc)).then(|| {
            let (loaded, keep) = (loaded.clone(), config.keep_temps);
            std::thread::spawn(move || crate::replay::pure::PureEvaluator::build(&loaded, keep))
        });
        Background { native, fuzz, pure }
    }
}

/// The paths to the target before the race, only for a picture (`--dot`): the engines that
/// read the APC enumerate them on their own thread inside the race (it can take long: a loop
/// calling a many-way helper has millions of paths per iteration), so that fuzzing and the
/// provers start at once.
fn eager_structure(config: &Config, f: &crate::ir::Function, graph: &Flowgraph, limits: Limits, progress: &Progress) -> Option<Structure> {
    let path = config.dot.as_ref()?;
    progress.enter("enumerating the paths to the target");
    let s = Structure::compute(graph.clone(), limits);
    info!(backbones = s.backbones.len(), loops = s.loops.len(), "loop structure computed");
    // A picture is a by-product: a failure to draw it is a warning, never the verdict.
    if let Err(e) = write_dot(path, &crate::cfg::dot::to_dot(f, &s)) {
        eprintln!("apc-llvm: warning: --dot {}: {e}", path.display());
    }
    Some(s)
}

/// The report before the race: the function, its target and location, its loops and paths
/// when they are known already (`--dot`), what the load assumed.
fn skeleton_report(config: &Config, loaded: &Loaded, structure: Option<&Structure>) -> Report {
    let f = &loaded.program.function;
    let mut report = match structure {
        Some(s) => Report::new(f, config.target.describe(), s),
        None => {
            let mut r = Report::bare(&f.name, config.target.describe());
            r.target = f.target_blocks().into_iter().map(|b| f.label(b).to_string()).collect();
            r.param_c_types = f.params.iter().filter_map(|p| p.c_type.clone().map(|c| (p.name.clone(), c))).collect();
            r.param_elem_bytes = f.params.iter().filter_map(|p| p.pointee_bytes.map(|b| (p.name.clone(), b))).collect();
            r
        }
    };
    report.assumptions = loaded.assumptions.clone();
    report.target_note = loaded.target_note.clone();
    report.functions_loaded = Some(loaded.functions_normalised);
    report.location = loaded.target_location.as_ref().map(|(f, l)| format!("{f}:{l}"));
    report.column = match (&loaded.target_location, loaded.target_positions.first()) {
        (Some((f, l)), Some((pf, pl, c))) if f == pf && l == pl => Some(*c),
        _ => None,
    };
    report.target_function = loaded.target_blocks.first().and_then(|b| b.split_once(':')).map(|(f, _)| f.to_string());
    report
}

/// The engines of `config`, the late provers among them wrapped to start at `late_from` (see
/// `engine::Late`) or when the evidence calls for them.
fn make_engines(
    config: &Config,
    loaded: &Loaded,
    program: &Arc<crate::ir::Program>,
    apc_source: Option<ApcBuild>,
    background: &mut Background,
    guide_for_dse: &Arc<Pending<Option<crate::dse::Guide>>>,
    late_from: Instant,
) -> Vec<Box<dyn Engine>> {
    let mut apc_source = apc_source;
    let mut make = |kind: &EngineKind| -> Option<Box<dyn Engine>> {
        match kind {
            EngineKind::Apc => Some(Box::new(ApcEngine {
                config: ApcSearchConfig { unfold_k: config.unfold_k, max_unfold_k: config.max_unfold_k, max_models: config.max_models },
                program: program.clone(),
                build: apc_source.take()?,
                pure: background.pure.take(),
            })),
            EngineKind::Dse => Some(Box::new(DseEngine {
                program: program.clone(),
                guide: guide_for_dse.clone(),
                stubbed: crate::replay::stubs::predicted(&loaded.declared_functions),
            })),
            EngineKind::Fuzz => Some(Box::new(background.fuzz.take()?)),
            EngineKind::Chc => Some(Box::new(crate::engine::chc::ChcEngine { program: program.clone() })),
            EngineKind::KInduction => Some(Box::new(crate::engine::chc::KInductionEngine { program: program.clone() })),
            EngineKind::Nav => Some(Box::new(crate::engine::nav::NavEngine { program: program.clone(), stubbed: crate::replay::stubs::predicted(&loaded.declared_functions) })),
        }
    };
    let mut engines: Vec<Box<dyn Engine>> = config.engines.iter().filter_map(&mut make).collect();
    let late: Vec<Box<dyn Engine>> = config
        .late_engines
        .iter()
        .filter(|k| !config.engines.contains(k))
        .filter_map(&mut make)
        .map(|inner| Box::new(crate::engine::Late { inner, start_at: late_from }) as Box<dyn Engine>)
        .collect();
    engines.extend(late);
    engines
}

/// A witness an engine found, with its native run.
struct Found {
    witness: Witness,
    run: RunOutcome,
    report: crate::report::WitnessReport,
    winner: Option<EngineKind>,
}

/// The `reachable` verdict: the witness reduced and fitted to its buffers, checked for
/// undefined behaviour when asked, and kept as regression tests when asked.
fn conclude_reached(config: &Config, loaded: &Loaded, native: &crate::replay::NativeBuild, found: Found, report: &mut Report, t0: Instant, progress: &Progress) {
    let Found { mut witness, mut run, report: mut wr, winner } = found;
    let f = &loaded.program.function;
    let budget = config.reduce_budget_after(t0.elapsed()).min((t0 + config.timeout).saturating_duration_since(Instant::now()).saturating_sub(ENGINE_MARGIN));
    if !budget.is_zero() {
        progress.enter("reducing the witness");
        let tr = Instant::now();
        if let Some((w, r, reduction)) = reduce_witness(&loaded.program, native, &witness, Instant::now() + budget, false) {
            (witness, run) = (w, r);
            wr = crate::report::WitnessReport { reduced: Some(reduction), ..crate::report::WitnessReport::replayed(&witness, &run, wr.models_tried, std::mem::take(&mut wr.counters)) };
        }
        report.timings.insert("reduce".into(), tr.elapsed().as_secs_f64());
    }
    // A length past its buffer is no input a caller can pass: fitted whatever the
    // reduction's budget, within the run's.
    let fit_deadline = (t0 + config.timeout).checked_sub(ENGINE_MARGIN).unwrap_or(t0);
    if let Some((w, r, fit)) = reduce_witness(&loaded.program, native, &witness, fit_deadline, true) {
        (witness, run) = (w, r);
        let reduced = match wr.reduced.take() {
            Some(before) => crate::report::Reduction { size_after: fit.size_after, replays: before.replays + fit.replays, ..before },
            None => fit,
        };
        wr = crate::report::WitnessReport { reduced: Some(reduced), ..crate::report::WitnessReport::replayed(&witness, &run, wr.models_tried, std::mem::take(&mut wr.counters)) };
    }
    // As replayed (the user's buffer sizes, `--arg-size`).
    witness.fit_buffers(&f.params);
    crate::witness::fit_buffers(&mut wr.inputs, &f.params);
    report.verdict = Verdict::Reachable;
    report.reason = match winner {
        Some(k) if k != EngineKind::Apc => format!("a native run on inputs found by the {} engine entered the target", k.name()),
        _ => "a native run on the model's inputs entered the target".into(),
    };
    report.witness = Some(wr);
    if config.check_ub || config.ub_is_error {
        progress.enter("checking the witness for undefined behaviour");
        let tu = Instant::now();
        check_ub(config, &witness, t0 + config.timeout, report);
        report.timings.insert("ub_check".into(), tu.elapsed().as_secs_f64());
    }
    if let (Some(dir), Verdict::Reachable) = (&config.emit_tests, report.verdict) {
        progress.enter_critical("writing regression tests");
        // The verdict stands whatever happens to the test files (checked writable
        // before the analysis; a failure now is reported, not fatal).
        match native.get().and_then(|rp| emit_test(config, loaded, &rp, &witness, &run, dir)) {
            Ok(files) => report.tests = files,
            Err(e) => {
                eprintln!("apc-llvm: warning: no regression test written: {e}");
                report.test_error = Some(e.to_string());
            }
        }
    }
}

/// `--check-ub`: the witness replayed under the sanitizers; `--ub-is-error` turns a witness
/// that relies on undefined behaviour into `unknown`.
fn check_ub(config: &Config, witness: &Witness, deadline: Instant, report: &mut Report) {
    match crate::replay::ub::check(&config.input, &config.function, &config.target, &config.load_options(), witness, deadline) {
        crate::replay::ub::UbCheck::Clean => report.ub_check = Some("none before the target (UBSan, ASan)".into()),
        crate::replay::ub::UbCheck::Ub(u) => {
            report.ub_check = Some(format!("undefined behaviour before the target ({})", u.sanitizer));
            if config.ub_is_error {
                report.verdict = Verdict::Unknown;
                report.reason = format!("the witness found relies on undefined behaviour ({} at {}), which --ub-is-error does not count", u.operation, u.location);
            }
            report.ub = Some(u);
        }
        crate::replay::ub::UbCheck::NotChecked(why) => report.ub_check = Some(format!("not checked: {why}")),
    }
}

/// The stubs replays ran with, and for an `unknown` verdict what may have caused it.
fn add_stubs_and_causes(config: &Config, loaded: &Loaded, native: &crate::replay::NativeBuild, star_causes: &[String], report: &mut Report) {
    // Stubs stand in for functions the bitcode lacks in every replay: the report says which
    // (a `--call` target's own stub is expected and not listed).
    if native.is_done() && (report.witness.is_some() || report.verdict == Verdict::Reachable) {
        if let Ok(rp) = native.get() {
            let call_target = match &config.target {
                crate::load::TargetSpec::Call(f) => Some(f.as_str()),
                _ => None,
            };
            report.stubs = rp.stubbed().iter().filter(|s| Some(s.as_str()) != call_target).cloned().collect();
        }
    }
    if report.verdict == Verdict::Unknown {
        report.reason.push_str(&unknown_causes(&report.stubs, loaded.recursion_cut.as_ref(), star_causes));
    }
    if config.keep_temps {
        if let Ok(rp) = native.get() {
            eprintln!("apc-llvm: replay files kept in {}", rp.dir().display());
        }
    }
}

/// The loops and paths for the report when the race ended before the APC's build had
/// enumerated them (the fuzzer found the witness first): within a short budget.
fn paths_for_the_report(config: &Config, graph: &Flowgraph, f: &crate::ir::Function, deadline: Instant, report: &mut Report) {
    let until = deadline.checked_sub(ENGINE_MARGIN).unwrap_or(deadline).min(Instant::now() + std::time::Duration::from_millis(200));
    if Instant::now() >= until {
        return;
    }
    if let Some(s) = enumerate_paths(graph.clone(), Limits { max_backbones: config.max_backbones, deadline: Some(until) }) {
        let skeleton = Report::new(f, String::new(), &s);
        report.loops = skeleton.loops;
        report.backbones = skeleton.backbones;
        report.backbone_count = skeleton.backbone_count;
        report.truncated = skeleton.truncated;
    }
}

/// The APC's build once started: where it runs, and how the end of the race stops it.
struct BuildControl {
    run: BuildRun,
    /// Set when the race has ended: the build stops at its next step.
    stop: Arc<AtomicBool>,
    /// Interrupts the build's current solver check.
    interrupter: solve::Interrupter,
    /// The building thread, for its priority.
    tid: Arc<std::sync::atomic::AtomicI32>,
    /// When the race ended.
    race_end: std::sync::Mutex<Option<Instant>>,
}

impl BuildControl {
    /// Starts `job`: as the apc engine's first step when it races (the returned source),
    /// else on a thread of its own for the DSE's guide.
    fn start(mut job: ApcBuildJob, in_apc_engine: bool) -> (BuildControl, Option<ApcBuild>) {
        let stop = Arc::new(AtomicBool::new(false));
        job.stop = stop.clone();
        let control = |run| BuildControl { run, stop: stop.clone(), interrupter: solve::Interrupter::default(), tid: Arc::default(), race_end: Default::default() };
        if in_apc_engine {
            let outcome = Arc::new(InEngineBuild::default());
            let c = control(BuildRun::InEngine(outcome.clone()));
            let (tid, interrupter) = (c.tid.clone(), c.interrupter.clone());
            let source: ApcBuild = Box::new(move || {
                *outcome.state.lock().unwrap_or_else(|e| e.into_inner()) = InEngineState::Running;
                tid.store(unsafe { libc::gettid() }, std::sync::atomic::Ordering::SeqCst);
                let (description, built) = {
                    let _interruptible = interrupter.enter();
                    job.run()
                };
                *outcome.state.lock().unwrap_or_else(|e| e.into_inner()) = InEngineState::Done(description);
                built
            });
            (c, Some(source))
        } else {
            let (tid, interrupter) = (Arc::<std::sync::atomic::AtomicI32>::default(), solve::Interrupter::default());
            let (t, i) = (tid.clone(), interrupter.clone());
            let handle = std::thread::Builder::new()
                .name("apc-build".into())
                .spawn(move || {
                    t.store(unsafe { libc::gettid() }, std::sync::atomic::Ordering::SeqCst);
                    let _interruptible = i.enter();
                    job.run().0
                })
                .expect("a thread for building the APC");
            (BuildControl { tid, interrupter, ..control(BuildRun::Thread(handle)) }, None)
        }
    }

    /// The race is over: the build stops at its next step (out of its current check at
    /// once), and after a witness it yields the cores to the reduction.
    fn race_ended(&self, reached: bool) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        *self.race_end.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        if !self.run.is_finished() {
            self.interrupter.interrupt();
            if reached {
                self.lower();
            }
        }
    }

    fn lower(&self) {
        let tid = self.tid.load(std::sync::atomic::Ordering::SeqCst);
        if tid > 0 {
            // SAFETY: a plain system call; at worst the thread has just ended.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, crate::priority::lowered(19)) };
        }
    }

    /// Joins the build (waiting until `BUILD_STOP_WAIT` after the race at most) into the
    /// report; what the APC has as ⋆ and why.
    fn finish(self, report: &mut Report) -> Vec<String> {
        let race_end = self.race_end.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or_else(Instant::now);
        while !self.run.is_finished() && race_end.elapsed() < BUILD_STOP_WAIT {
            // Again: a check it started after the first interrupt.
            self.interrupter.interrupt();
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if self.run.is_finished() {
            return match self.run.join() {
                Some(d) => {
                    d.fill(report);
                    d.star_causes
                }
                None => vec![],
            };
        }
        // In a solver check that does not look at the stop flag: left to end on its own
        // (within its check budget), at the lowest priority, and the report goes without
        // the APC's description. It may still be inside Z3 when the report is out, so the
        // process must not end through libz3's static destructors.
        solve::note_thread_left_running();
        self.lower();
        info!("the APC's build was still running when the race ended; not waited for");
        vec![]
    }
}

/// What the input model takes for granted about the callers of `program`'s function, beyond
/// what the type of each parameter allows: the proof of an `unreachable` verdict rests on it.
/// NULL pointers are no assumption (every engine lets a pointer input be NULL).
pub fn input_model_assumptions(program: &crate::ir::Program, is_main: bool) -> Vec<String> {
    use crate::ir::{Callee, InstKind, Ty};
    let f = &program.function;
    let mut out = vec![];
    let pointers: Vec<&str> = f.params.iter().filter(|p| p.ty == Ty::Ptr).map(|p| p.name.as_str()).collect();
    if pointers.len() > 1 {
        out.push(format!("the pointer parameters ({}) point to separate objects or are NULL", pointers.join(", ")));
    }
    if !pointers.is_empty() && !is_main {
        out.push("a pointer stored in an input buffer points to an object of its own or is NULL".to_string());
    }
    let unmatched = f.blocks.iter().flat_map(|b| &b.insts).any(|i| matches!(&i.kind, InstKind::Call { callee: Callee::Unmatched(_), .. }));
    if unmatched {
        out.push("a function pointer a caller passes is NULL or a function of the program of its type".to_string());
    }
    let writable_globals = program.globals.iter().any(|g| !g.is_constant);
    if writable_globals && !is_main {
        out.push(format!("the program's globals hold their initial values when '{}' is called", f.name));
    }
    out
}

/// Analyses every target of `set`, each with the whole `--timeout` and with its own deadline and
/// memory bound ([`run_bounded`]), `config.jobs` at a time; `each` sees every report as it
/// comes (progress: the number of reports so far, the total, the report; first once with no
/// report, when the number of targets is known). The batch report
/// lists the targets in their order. A target whose analysis overran its deadline or memory
/// bound is `unknown` with the stage named, and the batch goes on (its thread is left to end
/// on its own); the process must then end with [`solve::exit_now`], as `abandoned` says. Only
/// an error that is not about one target (the input, the machine) stops the batch.
pub fn run_batch(config: &Config, set: &load::TargetSet, each: &mut (dyn FnMut(usize, usize, Option<&Report>) + Send)) -> (Result<crate::report::batch::BatchReport>, bool) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;
    // One compilation of the inputs for every target (listing them makes it).
    let mut config = config.clone();
    config.module_cache = Some(Arc::default());
    let config = &config;
    let targets = match load::list_targets(&config.input, &config.function, set, &config.load_options()) {
        Ok(t) => t,
        Err(e) => return (Err(e), false),
    };
    let what = match set {
        load::TargetSet::EveryBlock => "every block".to_string(),
        load::TargetSet::EveryCallTo(f) => format!("every call to {f}"),
        load::TargetSet::EveryLineOf(f) => format!("every line of {f}"),
        load::TargetSet::Listed(_) => "the listed targets".to_string(),
    };
    let total = targets.len();
    // The batch's index of each target this shard analyses: by position, so that the split
    // is the same on every machine that lists the same targets.
    let indices: Vec<usize> = match config.shard {
        Some((k, of)) => (0..total).filter(|i| i % of == k - 1).collect(),
        None => (0..total).collect(),
    };
    let targets: Vec<load::TargetSpec> = indices.iter().map(|&i| targets[i].clone()).collect();
    let n = targets.len();
    each(0, n, None);
    let next = AtomicUsize::new(0);
    let abandoned = AtomicBool::new(false);
    let stopped = AtomicBool::new(false);
    // Per target: its report, or the error that ends the batch.
    let results: Mutex<Vec<Option<Result<Report>>>> = Mutex::new((0..n).map(|_| None).collect());
    let done = AtomicUsize::new(0);
    let each = Mutex::new(each);
    let work = || loop {
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        let k = next.fetch_add(1, Ordering::SeqCst);
        let Some(t) = targets.get(k) else { return };
        let mut c = config.clone();
        c.target = t.clone();
        let b = run_bounded(&c);
        if b.abandoned {
            abandoned.store(true, Ordering::SeqCst);
        }
        let result = match b.result {
            // A target the analysis cannot take (a block dropped as dead code is `unreachable`,
            // not an error): the batch goes on, the target counts as unknown.
            Err(e) if e.exit_status() == 2 => {
                let mut report = Report::bare(&config.function, t.describe());
                report.reason = format!("not analysed: {e}");
                Ok(report)
            }
            r => r,
        };
        if let Ok(report) = &result {
            let d = done.fetch_add(1, Ordering::SeqCst);
            (each.lock().unwrap_or_else(|e| e.into_inner()))(d + 1, n, Some(report));
        }
        let failed = result.is_err();
        results.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(result);
        if failed {
            // An error that is not about this target (the input, the machine): stop.
            stopped.store(true, Ordering::SeqCst);
        }
    };
    let jobs = config.jobs.clamp(1, n.max(1));
    std::thread::scope(|scope| {
        for _ in 1..jobs {
            scope.spawn(work);
        }
        work();
    });
    let mut batch = crate::report::batch::BatchReport { function: config.function.clone(), what, entries: vec![], skipped: vec![], total, shard: config.shard };
    let was_abandoned = abandoned.load(Ordering::SeqCst);
    for ((t, r), &index) in targets.iter().zip(results.into_inner().unwrap_or_else(|e| e.into_inner())).zip(&indices) {
        match r {
            Some(Ok(report)) => batch.entries.push(crate::report::batch::BatchEntry { target: t.describe(), index, report }),
            Some(Err(e)) => return (Err(e), was_abandoned),
            None => batch.skipped.push((index, t.describe())),
        }
    }
    (Ok(batch), was_abandoned)
}

/// Makes `witness` (which reached the target) smaller before `deadline`, each candidate judged
/// by a native run ([`crate::witness::reduce`]): the smaller witness, its run and what it took,
/// or `None` when nothing smaller reached the target.
/// With `lengths_only`, only tied lengths past their buffers are fitted
/// ([`crate::witness::reduce::fit_lengths`]).
fn reduce_witness(program: &crate::ir::Program, native: &crate::replay::NativeBuild, witness: &Witness, deadline: Instant, lengths_only: bool) -> Option<(Witness, RunOutcome, crate::report::Reduction)> {
    use crate::witness::reduce::{self, Budget, Judgement};
    /// Most candidates replayed.
    const MAX_RUNS: u32 = 200;
    /// A candidate's run may take this long: a cut can turn a loop endless, and that must not
    /// eat the budget.
    const CANDIDATE_WALL: std::time::Duration = std::time::Duration::from_secs(1);
    let rp = native.get().ok()?;
    // Every run that reached, with its witness: two candidates run at once, and the one kept
    // is not always the last to have reached.
    let reaching: std::sync::Mutex<Vec<(Witness, RunOutcome)>> = Default::default();
    let judge = |w: &Witness| {
        let left = deadline.saturating_duration_since(Instant::now());
        if left < std::time::Duration::from_millis(20) {
            return Judgement::Stop;
        }
        let wall = left.min(CANDIDATE_WALL);
        let limits = crate::replay::Limits { wall, cpu_seconds: wall.as_secs() + 1, ..Default::default() };
        match rp.run_with(w, limits) {
            Ok(run) if run.reached.is_some() => {
                reaching.lock().unwrap_or_else(|e| e.into_inner()).push((w.clone(), run));
                Judgement::Reaches
            }
            Ok(_) => Judgement::Misses,
            Err(_) => Judgement::Stop,
        }
    };
    let shapes = crate::witness::buffer_shapes(program);
    // Two candidates at once: the race is over, and both cores are the reduction's.
    let reduced = if lengths_only {
        reduce::fit_lengths(witness, &shapes, Budget { deadline, max_runs: 2 * shapes.len() as u32, at_once: 1 }, &judge)
    } else {
        reduce::reduce(witness, &shapes, Budget { deadline, max_runs: MAX_RUNS, at_once: 2 }, &judge)
    };
    info!(runs = reduced.runs, kept = reduced.kept, "witness reduced");
    if reduced.kept == 0 {
        return None;
    }
    let run = reaching.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().rev().find(|(w, _)| *w == reduced.witness)?.1;
    let reduction = crate::report::Reduction {
        size_before: reduce::size(witness),
        size_after: reduce::size(&reduced.witness),
        replays: reduced.runs,
    };
    Some((reduced.witness, run, reduction))
}

/// Writes `dot` to `path` (through Graphviz's `dot -Tsvg` for a `.svg` path), via a temporary
/// file renamed into place: nothing half-written.
fn write_dot(path: &Path, dot: &str) -> std::result::Result<(), String> {
    let tmp = path.with_extension("partial");
    let written = if path.extension().is_some_and(|e| e == "svg") {
        use std::io::Write;
        let mut child = std::process::Command::new("dot")
            .args(["-Tsvg", "-o"])
            .arg(&tmp)
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run Graphviz's dot: {e}"))?;
        child.stdin.take().expect("piped").write_all(dot.as_bytes()).map_err(|e| e.to_string())?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if out.status.success() { Ok(()) } else { Err(format!("dot failed: {}", String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or(""))) }
    } else {
        std::fs::write(&tmp, dot).map_err(|e| e.to_string())
    };
    written.and_then(|_| std::fs::rename(&tmp, path).map_err(|e| e.to_string())).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// What an `unknown` may be owed to, beyond the engines' own reasons: functions the replays
/// stubbed (a witness that needs their real results cannot replay) and recursion cut at its
/// bound where the target may lie deeper (what lies past the cut is unknown to the analysis).
fn unknown_causes(stubs: &[String], cut: Option<&crate::load::recursion::Unrolling>, stars: &[String]) -> String {
    let mut out = String::new();
    if !stars.is_empty() {
        const SHOWN: usize = 4;
        let mut list = stars.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("; ");
        if stars.len() > SHOWN {
            list.push_str(&format!("; {} more", stars.len() - SHOWN));
        }
        out.push_str(&format!("; the APC has these as unknown (⋆): {list}"));
    }
    if !stubs.is_empty() {
        out.push_str(&format!("; replays ran with stubs returning 0 for {} (no definition in the bitcode)", stubs.join(", ")));
    }
    if let Some(u) = cut.filter(|u| u.marked_cuts > 0) {
        let why = if u.depth < u.asked {
            format!("of {} asked: deeper copies would not fit once inlined", u.asked)
        } else {
            "--recursion-depth".to_string()
        };
        out.push_str(&format!("; recursion of {} was cut after {} copies ({why}; deeper calls are unknown)", u.functions.join(", "), u.depth));
    }
    out
}

/// Batch targets analysed at once write into one test directory: one writer at a time (its
/// numbering, `targets.tsv` and `Makefile` are shared).
static EMIT_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes the regression test of a witness that reached the target.
fn emit_test(config: &Config, loaded: &Loaded, rp: &Replayer, w: &Witness, run: &RunOutcome, dir: &Path) -> Result<Vec<String>> {
    let _one_writer = EMIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let target_id = run.reached.unwrap_or(0) as usize;
    let target = loaded.target_blocks.get(target_id).map(|t| t.rsplit(':').next().unwrap_or(t).to_string()).unwrap_or_default();
    let nondet: Vec<(String, u64)> = run.nondet_types.iter().enumerate().map(|(k, t)| (t.clone(), w.nondet.get(k).copied().unwrap_or(0))).collect();
    let specification = match &config.target {
        load::TargetSpec::Call(f) => format!("COVER( init({}()), FQL(COVER EDGES(@CALL({f}))) )", config.function),
        other => format!("COVER( init({}()), {} )", config.function, other.describe()),
    };
    let target_spec = config.target.describe();
    if let Some(w) = crate::report::emit::drift(dir, &config.function, &target_spec, &target) {
        eprintln!("apc-llvm: warning: {w}");
    }
    let source = source_form(config, loaded, rp, w);
    let tc = crate::report::emit::TestCase {
        source,
        function: &config.function,
        target: &target,
        target_spec: &target_spec,
        driver_source: rp.driver_source(w),
        bitcode: &loaded.instrumented_bitcode,
        nondet,
        specification,
        program_file: &config.input,
    };
    let files = crate::report::emit::emit(dir, &tc)?;
    Ok(files.iter().map(|p| p.display().to_string()).collect())
}


/// The test of a program given as C files ([`crate::report::ctest`]): `None` for bitcode
/// inputs and compilation databases, whose tests link the marked bitcode instead.
fn source_form(config: &Config, loaded: &Loaded, rp: &Replayer, w: &Witness) -> Option<crate::report::emit::SourceForm> {
    let inputs: Vec<PathBuf> = std::iter::once(config.input.clone()).chain(config.extra_inputs.iter().cloned()).collect();
    if config.compile_commands.is_some() || !inputs.iter().all(|p| p.extension().is_some_and(|e| e == "c")) || loaded.target_positions.is_empty() {
        return None;
    }
    // The file defining the function is included (its static functions stay callable); the
    // others are linked.
    let defines = |p: &PathBuf| {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        let name = &config.function;
        text.match_indices(name.as_str()).any(|(at, _)| {
            let before_ok = !text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
            let rest = text[at + name.len()..].trim_start();
            before_ok && rest.starts_with('(') && rest.find('{').is_some_and(|b| rest.find(';').is_none_or(|s| b < s))
        })
    };
    let include = inputs.iter().find(|p| defines(p)).unwrap_or(&inputs[0]).clone();
    let link = inputs.iter().filter(|p| **p != include).cloned().collect();
    let (f, name) = (loaded.program.function.clone(), config.function.clone());
    let (w2, target) = (w.clone(), config.target.describe());
    let stubs: Vec<String> = rp.stubbed().iter().filter(|s| s.as_str() != crate::load::TARGET_MARKER).cloned().collect();
    Some(crate::report::emit::SourceForm {
        include,
        link,
        cflags: config.cflags.clone(),
        test_c: Box::new(move |inc| crate::report::ctest::test_c(&f, &name, &w2, inc, &target)),
        env_c: crate::report::ctest::env_c(&loaded.declared_functions, &stubs, &w.nondet),
        positions: loaded.target_positions.iter().map(|(f, l, c)| (PathBuf::from(f), *l, *c)).collect(),
    })
}

/// How long the end of the race waits for the APC's build to notice that it should stop.
const BUILD_STOP_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// Where the APC's build runs (see [`ApcBuild`]).
enum BuildRun {
    /// A thread of its own (the DSE's guide, when the apc engine does not race).
    Thread(std::thread::JoinHandle<ApcDescription>),
    /// The apc engine's thread, as its first step.
    InEngine(Arc<InEngineBuild>),
}

/// How far the apc engine's build has come.
#[derive(Default)]
struct InEngineBuild {
    state: std::sync::Mutex<InEngineState>,
}

#[derive(Default)]
enum InEngineState {
    /// The engine has not started it (and, the race over, never will).
    #[default]
    NotStarted,
    Running,
    Done(ApcDescription),
    Taken,
}

impl BuildRun {
    /// Whether the build is no longer running (done, or never started).
    fn is_finished(&self) -> bool {
        match self {
            BuildRun::Thread(h) => h.is_finished(),
            BuildRun::InEngine(b) => !matches!(*b.state.lock().unwrap_or_else(|e| e.into_inner()), InEngineState::Running),
        }
    }

    /// What the finished build says of the APC (`None`: it never ran, or panicked).
    fn join(self) -> Option<ApcDescription> {
        match self {
            BuildRun::Thread(h) => h.join().ok(),
            BuildRun::InEngine(b) => match std::mem::replace(&mut *b.state.lock().unwrap_or_else(|e| e.into_inner()), InEngineState::Taken) {
                InEngineState::Done(d) => Some(d),
                _ => None,
            },
        }
    }
}

/// The APC's build: hands the guide to the DSE as soon as it is ready, and returns what the
/// report says of the APC, and the APC for the apc engine.
/// The loop structure of `graph` on a thread with the analysis thread's stack: the enumeration
/// recurses as deep as the function is long (a 500 KB straight line), beyond an engine
/// thread's. `None` when that thread could not run.
fn enumerate_paths(graph: Flowgraph, limits: Limits) -> Option<Structure> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("enumerate-paths".into())
            .stack_size(1 << 30)
            .spawn_scoped(scope, move || Structure::compute(graph, limits))
            .ok()
            .and_then(|h| h.join().ok())
    })
}

struct ApcBuildJob {
    program: Arc<crate::ir::Program>,
    /// The flowgraph, whose loop structure the job computes (unless `structure` has it).
    graph: Flowgraph,
    limits: Limits,
    structure: Option<Structure>,
    deadline: Instant,
    /// Set when the race has ended: building stops (the APC is then incomplete, and unused).
    stop: Arc<AtomicBool>,
    smtlib: bool,
    guide: Option<Arc<Pending<Option<crate::dse::Guide>>>>,
}

/// What the report says of the APC (see [`ApcBuildJob`]).
#[derive(Default)]
struct ApcDescription {
    /// The loops and backbones, as `Report::new` describes them.
    skeleton: Option<Report>,
    apc: Option<String>,
    loops: Option<Vec<crate::report::LoopReport>>,
    smtlib: Option<String>,
    timings: Vec<(&'static str, f64)>,
    star_causes: Vec<String>,
}

impl ApcDescription {
    fn fill(&self, report: &mut Report) {
        if let Some(s) = &self.skeleton {
            report.loops = s.loops.clone();
            report.backbones = s.backbones.clone();
            report.backbone_count = s.backbone_count;
            report.truncated = s.truncated;
        }
        report.apc = self.apc.clone();
        if let Some(loops) = &self.loops {
            report.loops = loops.clone();
        }
        report.smtlib = self.smtlib.clone();
        for (k, v) in &self.timings {
            report.timings.insert(k.to_string(), *v);
        }
    }
}

impl ApcBuildJob {
    fn run(self) -> (ApcDescription, BuiltApc) {
        let mut d = ApcDescription::default();
        let tc = Instant::now();
        let structure = match self.structure {
            Some(s) => s,
            None => {
                // On a thread with the analysis thread's stack: the enumeration recurses as deep
                // as the function is long (a 500 KB straight line), beyond an engine thread's.
                let s = match enumerate_paths(self.graph, self.limits) {
                    Some(s) => s,
                    None => {
                        if let Some(g) = &self.guide {
                            g.set(None);
                        }
                        return (d, Err("the paths to the target could not be enumerated".into()));
                    }
                };
                info!(backbones = s.backbones.len(), loops = s.loops.len(), "loop structure computed");
                d.timings.push(("enumerate_paths", tc.elapsed().as_secs_f64()));
                s
            }
        };
        let f = &self.program.function;
        d.skeleton = Some(Report::new(f, String::new(), &structure));
        if structure.truncated && self.limits.deadline.is_some_and(|t| Instant::now() >= t) {
            if let Some(g) = &self.guide {
                g.set(None);
            }
            return (d, Err("the time budget ran out while enumerating the paths to the target".into()));
        }
        if self.stop.load(std::sync::atomic::Ordering::SeqCst) {
            if let Some(g) = &self.guide {
                g.set(None);
            }
            return (d, Err("the race ended while the paths to the target were enumerated".into()));
        }
        let t2 = Instant::now();
        let (apc, pool) = apc::ApcBuilder::new(&self.program, &structure).with_deadline(self.deadline).with_stop(self.stop.clone()).build();
        d.timings.push(("build_apc", t2.elapsed().as_secs_f64()));
        d.star_causes = pool.star_causes().iter().cloned().collect();
        if apc.timed_out {
            let why = if self.stop.load(std::sync::atomic::Ordering::SeqCst) {
                "the race ended while the abstract path condition was being built"
            } else {
                "the time budget ran out while building the abstract path condition"
            };
            if let Some(g) = &self.guide {
                g.set(None);
            }
            return (d, Err(why.into()));
        }
        let text = Printer::new(&pool).print(apc.formula);
        let has_quantifiers = text.contains('∀') || text.contains('∃');
        if let Some(g) = &self.guide {
            let tg = Instant::now();
            g.set(crate::dse::Guide::new(&self.program, &structure, &apc, &pool));
            d.timings.push(("dse_guide", tg.elapsed().as_secs_f64()));
        }
        let mut loops = d.skeleton.as_ref().map(|s| s.loops.clone()).unwrap_or_default();
        for (loop_id, summary) in &apc.summaries {
            let (theta, phi) = summary.describe(&pool);
            let l = &mut loops[loop_id.0 as usize];
            l.iterated_state = theta.into_iter().collect();
            l.looping_condition = Some(phi);
            l.invariants = summary.invariants.describe();
            l.counters = summary
                .backbone_counters
                .iter()
                .map(|c| c.map_or_else(|| "infeasible".to_string(), |c| Printer::new(&pool).print(c)))
                .collect();
        }
        d.loops = Some(loops);
        if self.smtlib {
            d.smtlib = Some(solve::smtlib(&pool, apc.formula));
        }
        info!(nodes = pool.len(), "APC built");
        d.apc = Some(text);
        (d, Ok((apc, pool, has_quantifiers)))
    }
}
