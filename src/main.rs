//! The command line: parse arguments, run the library, print the report.

use apc_llvm::load::TargetSpec;
use apc_llvm::{analysis, Config, Error};
use clap::{ArgGroup, Parser};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Examples, after the options of `--help`.
const EXAMPLES: &str = "Examples:
  apc-llvm count.c --function count_a --line count.c:9
  apc-llvm parser.c -I include -DNDEBUG --function parse --line parser.c:98:21 --json

-h prints a summary, --help every option in full.";

/// Decide whether a basic block of a C program (as clang-produced LLVM bitcode) is reachable.
///
/// apc-llvm summarises every loop on the way to the target with path counters and builds the
/// abstract path condition (APC), a necessary condition on the inputs. An unsatisfiable APC proves
/// the target unreachable; a satisfiable one gives inputs that are replayed natively, and the target
/// is reported reachable only when the run really entered it.
///
/// Exit status: 0 when the analysis finished (whatever the verdict, unless --expect or --fail-on
/// say otherwise: then 3), 2 for bad usage or input, 1 for an internal error.
#[derive(Parser, Debug)]
#[command(name = "apc-llvm", version, verbatim_doc_comment, after_help = EXAMPLES, max_term_width = 100)]
#[command(group(ArgGroup::new("target").required(true).args(["block", "line", "call", "cover", "all_calls", "all_lines", "targets"])))]
struct Cli {
    /// Program to analyse
    ///
    /// LLVM bitcode (.bc), textual IR (.ll), or C (.c, compiled with clang-19 -g -O0); several are
    /// linked into one program
    #[arg(help_heading = "Program", required_unless_present = "compile_commands")]
    inputs: Vec<PathBuf>,
    /// A compilation database (compile_commands.json, or the directory holding it)
    ///
    /// Its C files are inputs too, each compiled with its own -I/-D/-std flags
    #[arg(help_heading = "Program", short = 'p', long = "compile-commands", value_name = "DIR|FILE")]
    compile_commands: Option<PathBuf>,
    /// Include directory for the .c inputs (repeatable), as clang's -I
    #[arg(help_heading = "Program", short = 'I', value_name = "DIR")]
    include_dir: Vec<String>,
    /// Define a macro for the .c inputs (repeatable), as clang's -D
    #[arg(help_heading = "Program", short = 'D', value_name = "NAME[=VAL]")]
    define: Vec<String>,
    /// Undefine a macro for the .c inputs (repeatable), as clang's -U
    #[arg(help_heading = "Program", short = 'U', value_name = "NAME")]
    undefine: Vec<String>,
    /// Include FILE before each .c input (repeatable); -include FILE works too
    #[arg(help_heading = "Program", long = "include", value_name = "FILE")]
    include_file: Vec<String>,
    /// The C standard of the .c inputs (c89, gnu99, c11, ...); -std=STD works too
    #[arg(help_heading = "Program", long = "std", value_name = "STD")]
    std: Option<String>,
    /// Any other clang flags for the .c inputs, as one shell-quoted string (repeatable)
    ///
    /// --cflags '-fno-strict-aliasing -DDEBUG=1'. The analysis adds its own flags after them
    #[arg(help_heading = "Program", long, value_name = "ARGS", allow_hyphen_values = true)]
    cflags: Vec<String>,
    /// Function whose parameters are the inputs (e.g. main)
    #[arg(help_heading = "Program", long, value_name = "NAME")]
    function: String,
    /// Target: the basic block with this IR label
    ///
    /// Target: the basic block with this IR label (needs clang -fno-discard-value-names); FUNC:LABEL
    /// names a block of a called function (needed when several callees use the label)
    #[arg(help_heading = "Targets", long, value_name = "LABEL")]
    block: Option<String>,
    /// Target: the block of the code on this source line (and column)
    ///
    /// Target: the first block with code on this source line (needs clang -g); FILE:LINE:COL picks
    /// the block of the statement at that column (the code nearest it from the left)
    #[arg(help_heading = "Targets", long, value_name = "FILE:LINE[:COL]")]
    line: Option<String>,
    /// Target: every block that calls this function (e.g. reach_error)
    #[arg(help_heading = "Targets", long, value_name = "FUNC")]
    call: Option<String>,
    /// Many targets: every block of --function
    ///
    /// Many targets: every block of --function, each analysed on its own (with the whole
    /// --timeout): a replayed test or a proof of deadness per block, a summary at the end
    /// (with --emit-tests, a regression test per reached block)
    #[arg(help_heading = "Targets", long)]
    cover: bool,
    /// Many targets: every block that calls FUNC, each call site analysed on its own
    #[arg(help_heading = "Targets", long, value_name = "FUNC")]
    all_calls: Option<String>,
    /// Many targets: every line of FILE with code of --function
    ///
    /// Many targets: every line of source FILE with code of --function or the functions it
    /// calls (as --line accepts them), each analysed on its own
    #[arg(help_heading = "Targets", long, value_name = "FILE")]
    all_lines: Option<String>,
    /// Many targets: those listed in FILE
    ///
    /// Many targets: those listed in FILE, one per line as `block:LABEL`, `line:FILE:N` or
    /// `call:FUNC` (`#` starts a comment), each analysed on its own
    #[arg(help_heading = "Targets", long, value_name = "FILE")]
    targets: Option<PathBuf>,
    /// Print one JSON object on stdout instead of the human report
    #[arg(help_heading = "Output", long)]
    json: bool,
    /// Also write the result as SARIF 2.1.0 to FILE (one result per target)
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// Batch modes: also write an HTML report of the source lines to DIR/index.html
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    html: Option<PathBuf>,
    /// One target: also write an SV-COMP witness (format 2.0, YAML) to FILE
    ///
    /// One target: also write an SV-COMP verification witness (format 2.0, YAML) to FILE: a
    /// violation witness for a reachable target of main, a correctness witness for an
    /// unreachable one (nothing for unknown)
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    witness: Option<PathBuf>,
    /// Batch modes: analyse only the K-th of N shares of the targets
    ///
    /// Batch modes: analyse only the K-th of N shares of the targets (1 <= K <= N): the target
    /// at index i of the whole batch (0-based, in the batch's order) belongs to share i mod N + 1.
    /// `apc-llvm merge` joins the shares' --json reports
    #[arg(help_heading = "Targets", long, value_name = "K/N")]
    shard: Option<String>,
    /// Wall-clock budget for the whole run, in seconds
    #[arg(help_heading = "Budget", long, value_name = "SECS", default_value_t = 60.0, allow_negative_numbers = true)]
    timeout: f64,
    /// Bound on the backbones enumerated per program or loop (hitting it forbids `unreachable`)
    #[arg(help_heading = "Budget", long, value_name = "N", default_value_t = 4096)]
    max_backbones: usize,
    /// Write a regression test for a witness that reaches the target
    ///
    /// Write a regression test (C driver + bitcode, Makefile, Test-Comp XML) for a witness that reaches the target
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    emit_tests: Option<PathBuf>,
    /// Unfolding bound K of APC^K, raised when a model does not replay
    #[arg(help_heading = "Engines", long, value_name = "K", default_value_t = 25)]
    unfold: u32,
    /// Models to replay before answering unknown
    #[arg(help_heading = "Engines", long, value_name = "N", default_value_t = 8)]
    max_models: u32,
    /// Seconds for making a reaching witness smaller
    ///
    /// Seconds for making a witness that reached the target smaller (shorter buffers, smaller
    /// numbers; every candidate kept is replayed natively), within --timeout; 0 turns it off
    /// [default: half the time the analysis took, between 0.25 and 1]
    #[arg(help_heading = "Budget", long, value_name = "SECS")]
    reduce: Option<f64>,
    /// Engines raced for the answer, comma-separated
    ///
    /// Engines raced for the answer, comma-separated: apc (abstract path condition: proofs and
    /// models), dse (directed symbolic execution pruned by the APC), fuzz (libFuzzer seeded by
    /// APC models; never proves), chc (the function as Horn clauses for Z3's Spacer: proves with
    /// invariants; a counterexample's inputs are replayed), k-induction (the same clauses
    /// unrolled as steps: proves k-inductive targets; a failing base case is replayed), nav
    /// (loop navigation: symbolic execution steered through loops by constraint systems over
    /// chain counters; proves when its exploration is exhaustive; not in the default).
    /// Default: apc,dse,fuzz, with chc and k-induction joining at half the --timeout (or once
    /// the apc engine has ended without a proof)
    #[arg(help_heading = "Engines", long, value_name = "LIST")]
    engine: Option<String>,
    /// First seed of the engines' random choices (libFuzzer's -seed)
    ///
    /// Fixed by default, so that runs repeat; another N searches differently
    #[arg(help_heading = "Engines", long, value_name = "N", default_value_t = apc_llvm::fuzz::DEFAULT_SEED)]
    seed: u64,
    /// Bound on the analysis's resident memory, in MiB
    ///
    /// Bound on the analysis's resident memory, in MiB (default: half of the machine's memory);
    /// passing it ends the run with `unknown`
    #[arg(help_heading = "Budget", long, value_name = "MIB")]
    max_memory: Option<u64>,
    /// Copies of each recursive function analysed before deeper calls are cut
    ///
    /// Copies of each recursive function analysed before deeper calls are cut (unknown
    /// results; when the target may lie past a cut, no proof ignores it). 0: recursive calls
    /// stay unknown calls
    #[arg(help_heading = "Engines", long, value_name = "N", default_value_t = 3)]
    recursion_depth: u32,
    /// A function to treat as pure (repeatable)
    ///
    /// The same integer arguments always give the same integer result, and it writes no memory of the
    /// program. Its calls stay unknowns in the APC; the function is run natively on each model's
    /// arguments and the results are added to the APC (mixed concrete-symbolic solving). For hash
    /// functions and other code the solver cannot invert, defined in the bitcode or in the C library
    #[arg(help_heading = "Inputs and advanced", long, value_name = "NAME")]
    pure: Vec<String>,
    /// A condition on the function's parameters that inputs must satisfy (repeatable), in C
    ///
    /// `--assume 'len <= 64'`, `--assume 'n > 0 && n < 1000'`, `--assume 'p != 0'`. The verdict is then
    /// about those inputs only (it is compiled into the program as a __VERIFIER_assume at the
    /// function's start)
    #[arg(help_heading = "Inputs and advanced", long, value_name = "EXPR")]
    assume: Vec<String>,
    /// The size in bytes of the buffer a pointer parameter points to (repeatable)
    ///
    /// `--arg-size s=64`. Witnesses get exactly that many bytes, and a length parameter tied to the
    /// buffer (`char *s, size_t len`) is assumed to fit in it
    #[arg(help_heading = "Inputs and advanced", long, value_name = "NAME=BYTES")]
    arg_size: Vec<String>,
    /// Draw the analysed function's flowgraph to FILE (DOT, or SVG)
    ///
    /// Draw the analysed function's flowgraph to FILE (Graphviz DOT; SVG when FILE ends in .svg
    /// and Graphviz's `dot` is installed): loops as clusters, loop entries double-outlined,
    /// targets red, the program's backbones bold blue, back edges dashed
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    dot: Option<PathBuf>,
    /// Run a reaching witness again under UBSan and ASan and name the undefined behaviour
    ///
    /// Run a reaching witness once more on the program rebuilt from its C source under
    /// UndefinedBehaviorSanitizer and AddressSanitizer (each witness buffer exactly its length),
    /// and report the undefined operation (signed overflow, shift past the width, division by
    /// zero, out-of-bounds index, a read past a heap block or a local array, ...) it relies on,
    /// with its source line (`ub` in JSON). The analysis itself is bit-precise for the program
    /// as compiled (wrapping arithmetic). Needs INPUT to be one .c file; costs a second native
    /// build
    #[arg(help_heading = "Output", long)]
    check_ub: bool,
    /// A witness that relies on undefined behaviour does not count as reaching
    ///
    /// The verdict is then `unknown` (as SV-COMP judges tasks whose safety rests on signed overflow
    /// being undefined). Implies --check-ub
    #[arg(help_heading = "Output", long)]
    ub_is_error: bool,
    /// Targets analysed at once in the batch modes
    ///
    /// Targets analysed at once in the batch modes (--cover, --all-calls, --all-lines, --targets), each with
    /// the whole --timeout [default: half the cores, at least 1]
    #[arg(help_heading = "Budget", long, value_name = "N")]
    jobs: Option<usize>,
    /// Exit with status 3 unless the verdict is one of these
    ///
    /// Exit with status 3 unless the verdict is one of these (comma-separated: reachable,
    /// unreachable, unknown): recorded verdicts as regression oracles (scripts/apc.mk's apc-check)
    #[arg(help_heading = "Output", long, value_name = "VERDICTS")]
    expect: Option<String>,
    /// Exit with status 3 when the verdict is one of these (comma-separated)
    #[arg(help_heading = "Output", long, value_name = "VERDICTS")]
    fail_on: Option<String>,
    /// Only write the instrumented bitcode an emitted test links to FILE
    ///
    /// Only load INPUT, mark the target and write the instrumented bitcode that emitted tests
    /// link (`--emit-tests`) to FILE; no analysis. Refreshes a kept test's program from the
    /// current source (scripts/apc.mk's apc-tests)
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    emit_instrumented: Option<PathBuf>,
    /// Keep the replay's temporary files (driver source, executable) and print where they are
    #[arg(help_heading = "Output", long)]
    keep_temps: bool,
    /// Log progress on stderr and print the whole human report
    ///
    /// Log the pipeline's progress on stderr (-v info, -vv debug; RUST_LOG overrides), and print
    /// the whole human report (every loop with θ^κ and φ^κ, every backbone, the APC)
    #[arg(help_heading = "Output", short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Where each -D and -U stood on the command line (their order matters).
    #[arg(skip)]
    indices: std::collections::HashMap<&'static str, Vec<usize>>,
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "apc_llvm=info",
        _ => "apc_llvm=debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(|| LogWriter).with_target(false).with_thread_names(true).init();
}

/// Writes the report to standard output. A reader that has gone (`apc-llvm … | head -1`) is no
/// internal error: the exit status still says the verdict (`println!` panicked, exit 101).
fn print_out(text: &str) {
    use std::io::Write;
    // Not once a signal is ending the process (it ends with 128 + the signal, no report).
    apc_llvm::cleanup::deliver(|| {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    });
}

/// Standard error for the log, whose write errors are dropped: when stderr is a pipe its reader
/// closed (`apc-llvm -v … 2>&1 | head`), `tracing-subscriber` reported a failed write with
/// `eprintln!`, which panicked, the panic hook's message panicked again, and the process
/// aborted without removing its temporary files.
struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

/// Largest `--arg-size` (16 MiB: a replay's whole memory holds every buffer).
const MAX_ARG_SIZE: u64 = 16 << 20;

/// Largest `--timeout` (30 days): deadlines are instants, which must not overflow.
const MAX_TIMEOUT_SECS: f64 = 2_592_000.0;

fn config_from(cli: &Cli) -> Result<Config, Error> {
    let target = match (&cli.block, &cli.line, &cli.call) {
        (Some(b), _, _) => TargetSpec::Block(b.clone()),
        (_, Some(l), _) => TargetSpec::parse_line(l)?,
        (_, _, Some(c)) => TargetSpec::Call(c.clone()),
        // Many targets (`--cover`, `--all-calls`, `--all-lines`, `--targets`): each run gets its own (see `batch_set`).
        _ => TargetSpec::Block(String::new()),
    };
    if !(cli.timeout.is_finite() && cli.timeout > 0.0) {
        return Err(Error::bad_input(format!("--timeout must be a positive number of seconds, got {}", cli.timeout)));
    }
    if cli.timeout > MAX_TIMEOUT_SECS {
        return Err(Error::bad_input(format!("--timeout must be at most {MAX_TIMEOUT_SECS} seconds, got {}", cli.timeout)));
    }
    if cli.max_backbones == 0 {
        return Err(Error::bad_input("--max-backbones must be at least 1"));
    }
    let first = match (cli.inputs.first(), &cli.compile_commands) {
        (Some(i), _) => i.clone(),
        (None, Some(db)) => apc_llvm::load::project::read_compile_commands(db)?[0].file.clone(),
        (None, None) => unreachable!("clap requires an input or -p"),
    };
    let mut config = Config::new(&first, &cli.function, target);
    config.cflags = cflags_of(cli)?;
    config.seed = cli.seed;
    config.extra_inputs = cli.inputs.iter().skip(1).cloned().collect();
    config.compile_commands = cli.compile_commands.clone();
    config.timeout = Duration::from_secs_f64(cli.timeout);
    config.max_backbones = cli.max_backbones;
    config.keep_temps = cli.keep_temps;
    config.smtlib = cli.json;
    if cli.unfold == 0 || cli.max_models == 0 {
        return Err(Error::bad_input("--unfold and --max-models must be at least 1"));
    }
    config.unfold_k = cli.unfold;
    if cli.recursion_depth > 16 {
        return Err(Error::bad_input(format!("--recursion-depth must be at most 16, got {}", cli.recursion_depth)));
    }
    config.recursion_depth = cli.recursion_depth;
    config.pure_functions = cli.pure.clone();
    for a in &cli.assume {
        apc_llvm::load::assume::parse(a).map_err(|m| Error::bad_input(format!("--assume '{a}': {m}")))?;
    }
    config.assumptions = cli.assume.clone();
    if let Some(d) = &cli.dot {
        let dir = d.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            return Err(Error::bad_input(format!("--dot {}: no directory {}", d.display(), dir.display())));
        }
        if d.extension().is_some_and(|e| e == "svg") && std::process::Command::new("dot").arg("-V").output().is_err() {
            return Err(Error::bad_input(format!("--dot {}: SVG needs Graphviz's dot, which is not installed (write a .dot file instead)", d.display())));
        }
        config.dot = Some(d.clone());
    }
    for a in &cli.arg_size {
        let parsed = a.split_once('=').and_then(|(n, b)| Some((n.trim().to_string(), b.trim().parse::<u64>().ok()?)));
        match parsed {
            Some((n, b)) if !n.is_empty() && (1..=MAX_ARG_SIZE).contains(&b) => config.arg_sizes.push((n, b)),
            _ => return Err(Error::bad_input(format!("--arg-size '{a}': expected NAME=BYTES with 1 <= BYTES <= {MAX_ARG_SIZE}"))),
        }
    }
    for (flag, file) in [("--sarif", &cli.sarif), ("--witness", &cli.witness)] {
        if let Some(f) = file {
            // Before the analysis: a verdict must never be lost to an unwritable path.
            let dir = f.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
            if !dir.is_dir() || f.is_dir() {
                return Err(Error::bad_input(format!("{flag} {}: no directory {} to write it in", f.display(), dir.display())));
            }
        }
    }
    if let Some(d) = &cli.html {
        if d.exists() && !d.is_dir() {
            return Err(Error::bad_input(format!("--html {}: exists and is not a directory", d.display())));
        }
    }
    if let Some(s) = &cli.shard {
        config.shard = Some(parse_shard(s)?);
    }
    if let Some(j) = cli.jobs {
        if !(1..=256).contains(&j) {
            return Err(Error::bad_input(format!("--jobs must be between 1 and 256, got {j}")));
        }
        config.jobs = j;
    }
    config.check_ub = cli.check_ub || cli.ub_is_error;
    config.ub_is_error = cli.ub_is_error;
    config.max_unfold_k = config.max_unfold_k.max(cli.unfold);
    config.max_models = cli.max_models;
    if let Some(r) = cli.reduce {
        if !(r.is_finite() && (0.0..=MAX_TIMEOUT_SECS).contains(&r)) {
            return Err(Error::bad_input(format!("--reduce must be a number of seconds between 0 and {MAX_TIMEOUT_SECS}, got {r}")));
        }
        config.reduce_budget = Some(Duration::from_secs_f64(r));
    }
    if let Some(dir) = &cli.emit_tests {
        // Before the analysis: a verdict must never be lost to an unwritable directory.
        apc_llvm::report::emit::check_dir(dir)?;
    }
    config.emit_tests = cli.emit_tests.clone();
    if let Some(mib) = cli.max_memory {
        if !(64..=(1 << 30)).contains(&mib) {
            return Err(Error::bad_input(format!("--max-memory must be between 64 and {} MiB, got {mib}", 1u64 << 30)));
        }
        config.max_memory = mib << 20;
    }
    if let Some(list) = &cli.engine {
        config.engines = apc_llvm::engine::EngineKind::parse_list(list).map_err(Error::bad_input)?;
        config.late_engines = vec![];
    }
    Ok(config)
}

/// `--shard K/N`.
fn parse_shard(s: &str) -> Result<(usize, usize), Error> {
    let parsed = s.split_once('/').and_then(|(k, n)| Some((k.trim().parse::<usize>().ok()?, n.trim().parse::<usize>().ok()?)));
    match parsed {
        Some((k, n)) if n >= 1 && (1..=n).contains(&k) => Ok((k, n)),
        _ => Err(Error::bad_input(format!("--shard '{s}': expected K/N with 1 <= K <= N (e.g. 2/4)"))),
    }
}

/// Writes `text` to `file` for option `flag`; failing is bad input (the path).
fn write_output(flag: &str, file: &std::path::Path, text: &str) -> Result<(), Error> {
    std::fs::write(file, text).map_err(|e| Error::bad_input(format!("{flag} {}: {e}", file.display())))
}

/// The files a batch's `--sarif` and `--html` ask for, from its JSON report.
fn write_batch_outputs(cli: &Cli, json: &serde_json::Value) -> Result<(), Error> {
    if let Some(f) = &cli.sarif {
        let reports = json["targets"].as_array().cloned().unwrap_or_default();
        let cwd = std::env::current_dir().unwrap_or_default();
        write_output("--sarif", f, &format!("{:#}\n", apc_llvm::report::sarif::sarif(&reports, &cwd)))?;
    }
    if let Some(d) = &cli.html {
        apc_llvm::report::html::write(d, json).map_err(|e| Error::bad_input(format!("--html {}: {e}", d.display())))?;
    }
    Ok(())
}

/// Clang flags of the compiler options, as the project's build would pass them: `-D` and `-U`
/// in the order given (a later one wins), relative include paths made absolute (a compilation
/// database's files compile in their own directories), `--cflags` last.
fn cflags_of(cli: &Cli) -> Result<Vec<String>, Error> {
    let abs = |p: &str| -> String {
        let path = std::path::Path::new(p);
        match std::env::current_dir() {
            Ok(d) if !path.is_absolute() => d.join(path).to_string_lossy().into_owned(),
            _ => p.to_string(),
        }
    };
    let mut out: Vec<String> = cli.include_dir.iter().map(|d| format!("-I{}", abs(d))).collect();
    let mut macros: Vec<(usize, String)> = vec![];
    for (flag, values, id) in [("-D", &cli.define, "define"), ("-U", &cli.undefine, "undefine")] {
        let at: Vec<usize> = cli.indices.get(id).cloned().unwrap_or_default();
        for (k, v) in values.iter().enumerate() {
            if v.is_empty() || v.starts_with('=') {
                return Err(Error::bad_input(format!("{flag} '{v}': expected a macro name")));
            }
            macros.push((at.get(k).copied().unwrap_or(usize::MAX), format!("{flag}{v}")));
        }
    }
    macros.sort_by_key(|(i, _)| *i);
    out.extend(macros.into_iter().map(|(_, m)| m));
    for f in &cli.include_file {
        out.push("-include".into());
        out.push(abs(f));
    }
    if let Some(std) = &cli.std {
        out.push(format!("-std={}", std.trim_start_matches("-std=")));
    }
    for c in &cli.cflags {
        out.extend(apc_llvm::load::project::shell_words(c));
    }
    Ok(out)
}

/// Rewrites clang's single-dash spellings that clap cannot parse (`-include FILE`,
/// `-std=c99`) into this tool's long options.
fn clang_spellings(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.map(|a| match a.to_str() {
        Some("-include") => "--include".into(),
        Some(s) if s.starts_with("-std=") => format!("-{s}").into(),
        _ => a,
    })
    .collect()
}

/// The target set of `--cover` / `--all-calls` / `--all-lines` / `--targets`, if one was asked for.
fn batch_set(cli: &Cli) -> Result<Option<apc_llvm::load::TargetSet>, Error> {
    if let Some(file) = &cli.targets {
        return read_targets(file).map(|t| Some(apc_llvm::load::TargetSet::Listed(t)));
    }
    if let Some(file) = &cli.all_lines {
        return Ok(Some(apc_llvm::load::TargetSet::EveryLineOf(file.clone())));
    }
    Ok(match (&cli.all_calls, cli.cover) {
        (Some(f), _) => Some(apc_llvm::load::TargetSet::EveryCallTo(f.clone())),
        (None, true) => Some(apc_llvm::load::TargetSet::EveryBlock),
        _ => None,
    })
}

/// The targets of a `--targets` file: one per line, `#` comments and blank lines skipped.
fn read_targets(file: &std::path::Path) -> Result<Vec<TargetSpec>, Error> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::bad_input(format!("--targets {}: {e}", file.display())))?;
    let mut out = vec![];
    for (k, line) in text.lines().enumerate() {
        let item = line.split('#').next().unwrap_or("").trim();
        if item.is_empty() {
            continue;
        }
        out.push(TargetSpec::parse_item(item).map_err(|e| Error::bad_input(format!("--targets {}:{}: {e}", file.display(), k + 1)))?);
    }
    if out.is_empty() {
        return Err(Error::bad_input(format!("--targets {}: no target in the file", file.display())));
    }
    Ok(out)
}

/// Many targets, one by one, with a progress line per target on stderr (a terminal only) and
/// the batch report at the end. `--expect`: every verdict must be one of these; `--fail-on`: no
/// verdict may be.
fn run_batch(cli: &Cli, set: &apc_llvm::load::TargetSet, expect: Option<&[String]>, fail_on: Option<&[String]>) -> ExitCode {
    use std::io::IsTerminal;
    let config = match config_from(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("apc-llvm: error: {e}");
            return ExitCode::from(e.exit_status() as u8);
        }
    };
    let tty = std::io::stderr().is_terminal();
    // On a terminal: a progress bar (targets done, elapsed, estimated time left) with a line
    // above it per finished target.
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut progress = |done: usize, n: usize, r: Option<&apc_llvm::report::Report>| {
        if !tty {
            return;
        }
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::with_draw_target(Some(n as u64), indicatif::ProgressDrawTarget::stderr());
            if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} targets, {elapsed} (about {eta} left)") {
                b.set_style(style);
            }
            b.enable_steady_tick(std::time::Duration::from_millis(250));
            b
        });
        if let Some(r) = r {
            b.println(format!("{}: {}", r.target_spec, r.verdict));
            b.set_position(done as u64);
        }
        if done == n {
            b.finish_and_clear();
        }
    };
    // An abandoned analysis thread needs no special ending: `end` never runs static destructors.
    let (result, _abandoned) = analysis::run_batch(&config, set, &mut progress);
    let code = match result {
        Ok(batch) => {
            let json = batch.to_json();
            if cli.json {
                print_out(&format!("{json}\n"));
            } else {
                print_out(&batch.to_text());
            }
            let parsed: serde_json::Value = serde_json::from_str(&json).expect("a batch report is JSON");
            if let Err(e) = write_batch_outputs(cli, &parsed) {
                eprintln!("apc-llvm: error: {e}");
                return end(e.exit_status());
            }
            // A target the batch could not analyse counts as unknown for --expect/--fail-on,
            // and alone makes the status 3.
            let verdicts: Vec<String> =
                batch.entries.iter().map(|e| e.report.verdict.to_string()).chain(batch.skipped.iter().map(|_| "unknown".to_string())).collect();
            if let Some(e) = expect.filter(|e| verdicts.iter().any(|v| !e.contains(v))) {
                eprintln!("apc-llvm: a verdict is not {}", e.join(" or "));
                3
            } else if let Some(f) = fail_on.filter(|f| verdicts.iter().any(|v| f.contains(v))) {
                eprintln!("apc-llvm: a verdict is {} (--fail-on)", f.join(" or "));
                3
            } else if !batch.skipped.is_empty() {
                eprintln!("apc-llvm: {} target(s) were not analysed", batch.skipped.len());
                3
            } else {
                0
            }
        }
        Err(e) => {
            eprintln!("apc-llvm: error: {e}");
            e.exit_status()
        }
    };
    end(code)
}

/// The files a single target's `--sarif` and `--witness` ask for, from its JSON report.
fn write_single_outputs(cli: &Cli, json: &str) -> Result<(), Error> {
    let v: serde_json::Value = serde_json::from_str(json).expect("a report is JSON");
    if let Some(f) = &cli.sarif {
        let cwd = std::env::current_dir().unwrap_or_default();
        write_output("--sarif", f, &format!("{:#}\n", apc_llvm::report::sarif::sarif(&[v.clone()], &cwd)))?;
    }
    if let Some(f) = &cli.witness {
        let inputs: Vec<&std::path::Path> = cli.inputs.iter().map(|p| p.as_path()).collect();
        match apc_llvm::report::svwitness::witness(&v, &inputs) {
            Ok(yaml) => write_output("--witness", f, &yaml)?,
            // No witness is no error: the verdict stands.
            Err(why) => eprintln!("apc-llvm: no witness written to {}: {why}", f.display()),
        }
    }
    Ok(())
}

/// `apc-llvm merge A.json B.json ... [--json] [--sarif FILE] [--html DIR]`.
#[derive(Parser, Debug)]
#[command(name = "apc-llvm merge", max_term_width = 100)]
struct MergeCli {
    /// Batch reports (--json) of the shards of one batch (--shard K/N)
    #[arg(required = true, value_name = "REPORT.json")]
    reports: Vec<PathBuf>,
    /// Print the merged report as JSON instead of the human summary
    #[arg(long)]
    json: bool,
    /// Also write the merged result as SARIF 2.1.0 to FILE
    #[arg(long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// Also write the HTML report of the merged batch to DIR/index.html
    #[arg(long, value_name = "DIR")]
    html: Option<PathBuf>,
}

/// Joins the shards' batch reports: exit 0, 2 for bad input, 3 when targets are missing (a shard
/// not given) or a target was not analysed.
fn run_merge(args: Vec<std::ffi::OsString>) -> ExitCode {
    let cli = match MergeCli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let rendered = e.render().to_string();
            let first = rendered.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("bad usage").trim_start_matches("error: ").to_string();
            eprintln!("apc-llvm: error: merge: {first} (see merge --help)");
            return ExitCode::from(2);
        }
    };
    let result = (|| -> Result<i32, Error> {
        let mut batches = vec![];
        for r in &cli.reports {
            let text = std::fs::read_to_string(r).map_err(|e| Error::bad_input(format!("merge: {}: {e}", r.display())))?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::bad_input(format!("merge: {}: not JSON ({e})", r.display())))?;
            batches.push((r.display().to_string(), v));
        }
        let (merged, missing) = apc_llvm::report::merge::merge(&batches).map_err(|e| Error::bad_input(format!("merge: {e}")))?;
        if let Some(f) = &cli.sarif {
            let dir = f.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
            if !dir.is_dir() {
                return Err(Error::bad_input(format!("--sarif {}: no directory {}", f.display(), dir.display())));
            }
            let reports = merged["targets"].as_array().cloned().unwrap_or_default();
            let cwd = std::env::current_dir().unwrap_or_default();
            write_output("--sarif", f, &format!("{:#}\n", apc_llvm::report::sarif::sarif(&reports, &cwd)))?;
        }
        if let Some(d) = &cli.html {
            apc_llvm::report::html::write(d, &merged).map_err(|e| Error::bad_input(format!("--html {}: {e}", d.display())))?;
        }
        if cli.json {
            print_out(&format!("{merged}\n"));
        } else {
            print_out(&apc_llvm::report::merge::text(&merged));
        }
        let skipped = merged["skipped"].as_array().map_or(0, |s| s.len());
        if missing > 0 {
            eprintln!("apc-llvm: merge: {missing} of {} targets are in no report (a shard missing?)", merged["total_targets"]);
            return Ok(3);
        }
        Ok(if skipped > 0 { 3 } else { 0 })
    })();
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("apc-llvm: error: {e}");
            ExitCode::from(e.exit_status() as u8)
        }
    }
}

/// The verdicts of `--expect` / `--fail-on`.
fn verdict_list(flag: &str, list: &str) -> Result<Vec<String>, Error> {
    let out: Vec<String> = list.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
    match out.iter().find(|v| !["reachable", "unreachable", "unknown"].contains(&v.as_str())) {
        Some(bad) => Err(Error::bad_input(format!("{flag}: '{bad}' is not a verdict (reachable, unreachable, unknown)"))),
        None if out.is_empty() => Err(Error::bad_input(format!("{flag}: no verdict given"))),
        None => Ok(out),
    }
}

/// `--emit-instrumented`: load, mark, write; written to a temporary name first, so that a
/// failure leaves no half-written file.
fn emit_instrumented(config: &Config, out: &std::path::Path) -> Result<(), Error> {
    let options = config.load_options();
    let loaded = apc_llvm::load::load_with(&config.input, &config.function, &config.target, &options)?;
    let tmp = out.with_extension("bc.partial");
    std::fs::write(&tmp, &loaded.instrumented_bitcode)
        .and_then(|_| std::fs::rename(&tmp, out))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::bad_input(format!("--emit-instrumented {}: {e}", out.display()))
        })
}

fn main() -> ExitCode {
    apc_llvm::cleanup::install();
    // `merge` works on reports only; it has its own options (an input named `merge` is
    // `./merge`).
    if std::env::args_os().nth(1).is_some_and(|a| a == "merge") {
        return run_merge(std::env::args_os().skip(1).collect());
    }
    use clap::{CommandFactory, FromArgMatches};
    let parsed = Cli::command().try_get_matches_from(clang_spellings(std::env::args_os())).and_then(|m| {
        let mut cli = Cli::from_arg_matches(&m)?;
        for id in ["define", "undefine"] {
            cli.indices.insert(id, m.indices_of(id).map(|i| i.collect()).unwrap_or_default());
        }
        Ok(cli)
    });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line, as the contract asks: clap's first line, without its own "error: " prefix.
            let rendered = e.render().to_string();
            let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
            let mut first = lines.next().unwrap_or("bad usage").trim_start_matches("error: ").to_string();
            // "the following required arguments were not provided:" names them on the next line.
            if first.ends_with(':') {
                if let Some(next) = lines.next() {
                    first = format!("{first} {next}");
                }
            }
            eprintln!("apc-llvm: error: {first} (see --help)");
            return ExitCode::from(2);
        }
    };
    init_logging(cli.verbose);
    std::panic::set_hook(Box::new(|info| {
        // Not `eprintln!`: a closed stderr would panic inside the hook (an abort).
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "apc-llvm: internal error: {info}");
    }));
    let lists = (|| -> Result<_, Error> {
        Ok((
            cli.expect.as_deref().map(|l| verdict_list("--expect", l)).transpose()?,
            cli.fail_on.as_deref().map(|l| verdict_list("--fail-on", l)).transpose()?,
        ))
    })();
    let (expect, fail_on) = match lists {
        Ok(l) => l,
        Err(e) => {
            eprintln!("apc-llvm: error: {e}");
            return ExitCode::from(e.exit_status() as u8);
        }
    };
    if let Some(out) = &cli.emit_instrumented {
        let r = config_from(&cli).and_then(|c| emit_instrumented(&c, out));
        apc_llvm::cleanup::conclude();
        apc_llvm::cleanup::finish();
        return match r {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("apc-llvm: error: {e}");
                ExitCode::from(e.exit_status() as u8)
            }
        };
    }
    let misplaced = match batch_set(&cli) {
        Ok(Some(_)) if cli.witness.is_some() => Some("--witness needs one target (--block, --line or --call); a batch writes --sarif or --html"),
        Ok(Some(set)) => return run_batch(&cli, &set, expect.as_deref(), fail_on.as_deref()),
        Ok(None) if cli.html.is_some() => Some("--html needs a batch (--cover, --all-calls, --all-lines or --targets)"),
        Ok(None) if cli.shard.is_some() => Some("--shard needs a batch (--cover, --all-calls, --all-lines or --targets)"),
        Ok(None) => None,
        Err(e) => {
            eprintln!("apc-llvm: error: {e}");
            return ExitCode::from(e.exit_status() as u8);
        }
    };
    if let Some(m) = misplaced {
        eprintln!("apc-llvm: error: {m}");
        return ExitCode::from(2);
    }
    let result = config_from(&cli).and_then(|c| analysis::run_bounded(&c).result);
    let code = match result {
        Ok(report) => {
            let json = report.to_json();
            if cli.json {
                print_out(&format!("{json}\n"));
            } else {
                print_out(&report.to_text_detailed(cli.verbose > 0));
            }
            if let Err(e) = write_single_outputs(&cli, &json) {
                eprintln!("apc-llvm: error: {e}");
                return end(e.exit_status());
            }
            let verdict = report.verdict.to_string();
            match (&expect, &fail_on) {
                (Some(e), _) if !e.contains(&verdict) => {
                    eprintln!("apc-llvm: verdict {verdict}, expected {}", e.join(" or "));
                    3
                }
                (_, Some(f)) if f.contains(&verdict) => {
                    eprintln!("apc-llvm: verdict {verdict} (--fail-on {})", f.join(","));
                    3
                }
                _ => 0,
            }
        }
        Err(e) => {
            eprintln!("apc-llvm: error: {e}");
            e.exit_status()
        }
    };
    end(code)
}

/// Ends the process with `code`: background builds the verdict did not wait for are stopped
/// and their files removed, and the process ends without C++ static destructors. A verdict
/// often comes while the replay or fuzzing build still generates code in this process (LLVM,
/// since the builds moved in-process), or a solver thread is still inside Z3; `exit` would
/// destroy LLVM's and libz3's global state under them: one run in fifteen of a quick proof
/// beside two others crashed (a segmentation fault in `TargetPassConfig::addPass`, or a pure
/// virtual call) after printing its verdict, and the test harness saw a signal. Nothing the
/// tool needs runs in a static destructor (temporary files are `cleanup`'s).
fn end(code: i32) -> ExitCode {
    apc_llvm::cleanup::conclude();
    apc_llvm::cleanup::finish();
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    apc_llvm::solve::exit_now(code)
}
