//! One struct for every knob of a run.

use crate::engine::EngineKind;
use crate::load::TargetSpec;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Config {
    /// `.c`, `.bc` or `.ll`.
    pub input: PathBuf,
    /// The function whose parameters are the inputs.
    pub function: String,
    pub target: TargetSpec,
    /// Wall-clock budget for the whole run.
    pub timeout: Duration,
    /// Bound on backbones enumerated per program or loop; hitting it is reported and forbids an
    /// `unreachable` verdict.
    pub max_backbones: usize,
    /// Unfolding bound K of APC^K (section 6 of the APC paper; the paper used 25).
    pub unfold_k: u32,
    /// Largest K the witness search raises the bound to.
    pub max_unfold_k: u32,
    /// Models replayed before giving up.
    pub max_models: u32,
    /// Where to write regression tests for witnesses that reached the target.
    pub emit_tests: Option<PathBuf>,
    /// Keep the replay's temporary directory (driver, executable) for inspection.
    pub keep_temps: bool,
    /// The engines raced for the answer (`--engine`).
    pub engines: Vec<EngineKind>,
    /// Provers that join the race late ([`crate::engine::Late`]): the Horn-clause provers
    /// without `--engine`, none with it (the user's list is the race).
    pub late_engines: Vec<EngineKind>,
    /// Bound on the resident memory of the analysis, in bytes (`--max-memory`; see
    /// [`crate::backstop`]).
    pub max_memory: u64,
    /// Copies of each recursive function analysed before its calls are cut (`--recursion-depth`,
    /// see [`crate::load::recursion`]).
    pub recursion_depth: u32,
    /// More inputs linked with `input` (`.c`, `.bc`, `.ll`).
    pub extra_inputs: Vec<PathBuf>,
    /// A compilation database (`-p`): its C files are inputs too, with their own flags.
    pub compile_commands: Option<PathBuf>,
    /// `--assume` conditions on the parameters (see [`crate::load::assume`]).
    pub assumptions: Vec<String>,
    /// `--arg-size NAME=BYTES`: sizes of the buffers behind pointer parameters.
    pub arg_sizes: Vec<(String, u64)>,
    /// `--dot FILE`: where to draw the flowgraph (DOT, or SVG through Graphviz for `.svg`).
    pub dot: Option<PathBuf>,
    /// `--check-ub`: run a reaching witness again on the program built under UBSan and ASan and report
    /// the undefined operation it relies on, if any ([`crate::replay::ub`]).
    pub check_ub: bool,
    /// `--ub-is-error`: a witness that relies on undefined behaviour does not count as reaching
    /// (implies `check_ub`).
    pub ub_is_error: bool,
    /// Targets analysed at once in the batch modes (`--cover`, `--all-calls`, `--all-lines`, `--targets`).
    pub jobs: usize,
    /// `--shard K/N` (K from 1): a batch analyses only the targets whose index in the whole
    /// batch is K - 1 modulo N, so that N machines split one batch.
    pub shard: Option<(usize, usize)>,
    /// `--pure NAME`: functions whose calls stay unknowns in the APC and are run natively on the
    /// model's arguments (mixed concrete-symbolic solving, see [`crate::replay::pure`]).
    pub pure_functions: Vec<String>,
    /// Whether the report carries the APC's SMT-LIB text (the JSON report's `smtlib`); the human
    /// report, which never shows it, turns it off.
    pub smtlib: bool,
    /// `--reduce SECS`: time for making a reaching witness smaller ([`crate::witness::reduce`]),
    /// at most what the deadline leaves; `None` for the default (half the time the analysis
    /// took, between [`REDUCE_MIN`] and [`REDUCE_MAX`]), zero for none.
    pub reduce_budget: Option<Duration>,
    /// Clang flags for the `.c` inputs (`-I`, `-D`, `-U`, `-include`, `--std`, `--cflags`), in
    /// the order given, include paths absolute.
    pub cflags: Vec<String>,
    /// The inputs compiled once for all the targets of a batch (set by [`crate::analysis::run_batch`]).
    pub module_cache: Option<std::sync::Arc<crate::load::ModuleCache>>,
    /// `--seed N`: the first seed of the engines that draw random choices (libFuzzer), fixed
    /// by default so that two runs search alike.
    pub seed: u64,
}

/// Least default time for reducing a witness: a few replays even after a fast analysis.
pub const REDUCE_MIN: Duration = Duration::from_millis(250);
/// Most default time for reducing a witness.
pub const REDUCE_MAX: Duration = Duration::from_secs(1);

impl Config {
    /// The time the witness reduction may take after an analysis that took `elapsed`.
    pub fn reduce_budget_after(&self, elapsed: Duration) -> Duration {
        self.reduce_budget.unwrap_or_else(|| (elapsed / 2).clamp(REDUCE_MIN, REDUCE_MAX))
    }

    pub fn new(input: impl Into<PathBuf>, function: impl Into<String>, target: TargetSpec) -> Self {
        Config {
            input: input.into(),
            function: function.into(),
            target,
            timeout: Duration::from_secs(60),
            max_backbones: 4096,
            keep_temps: false,
            emit_tests: None,
            unfold_k: 25,
            max_unfold_k: 200,
            max_models: 8,
            engines: EngineKind::DEFAULT.to_vec(),
            late_engines: EngineKind::LATE_DEFAULT.to_vec(),
            max_memory: default_max_memory(),
            recursion_depth: crate::load::recursion::DEFAULT_DEPTH,
            extra_inputs: vec![],
            compile_commands: None,
            assumptions: vec![],
            arg_sizes: vec![],
            dot: None,
            check_ub: false,
            ub_is_error: false,
            jobs: default_jobs(),
            shard: None,
            pure_functions: vec![],
            smtlib: true,
            reduce_budget: None,
            cflags: vec![],
            module_cache: None,
            seed: crate::fuzz::DEFAULT_SEED,
        }
    }

    /// What loading needs of this configuration.
    pub fn load_options(&self) -> crate::load::LoadOptions {
        crate::load::LoadOptions {
            recursion_depth: self.recursion_depth,
            extra_inputs: self.extra_inputs.clone(),
            compile_commands: self.compile_commands.clone(),
            assumptions: self.assumptions.clone(),
            arg_sizes: self.arg_sizes.clone(),
            pure_functions: self.pure_functions.clone(),
            cflags: self.cflags.clone(),
            module_cache: self.module_cache.clone(),
        }
    }
}

/// Batch targets analysed at once by default: half the cores (each analysis races engines on
/// two or more threads), at least one.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// The default memory bound: half of the machine's memory (the other half for the replayed
/// program, the compiler and everything else), at least 1 GiB.
pub fn default_max_memory() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map(|kib| kib * 1024);
    total.map_or(8 << 30, |t| (t / 2).max(1 << 30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_bound_is_a_fraction_of_the_machine() {
        let m = default_max_memory();
        assert!(m >= 1 << 30);
    }
}
