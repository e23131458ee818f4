//! The fuzzing engine: clang-19's libFuzzer on the instrumented program, seeded by APC models.
//!
//! [`Fuzzer::build`] compiles the instrumented bitcode once with coverage and compare tracing
//! (`-fsanitize=fuzzer-no-link`) and links it with a generated driver ([`cdriver`]) that
//! decodes libFuzzer's bytes into the inputs replay uses ([`input`]). libFuzzer itself comes as
//! a shared object linked once into the toolchain cache (`shared_runtime`): the executable is
//! then a dynamic link of two small objects, about 10 ms instead of 50 for a static link of
//! libFuzzer, libstdc++ and libc, and each session's jail gets the C library and the loader
//! beside it (copied once per build, hard-linked per session). Without the cache it is linked
//! statically. (Value profiling hashes the program's comparison sites by address, so any change
//! of the layout takes libFuzzer down another path: nav_fig1's fuzzer alone took 1 s with one
//! layout and 6 s with another, both static.)
//! [`Fuzzer::search`] runs it in a sandbox like replay's ([`sandbox`]) on a corpus made of the
//! seed witnesses, with a dictionary of comparison constants ([`dict`]), until the deadline or
//! cancellation. Reaching the target marker is libFuzzer's crash; the crashing input is decoded
//! into a [`Witness`] and is only reported ([`FuzzEnd::Reached`]) once the ordinary native
//! replay entered the target with it. Fuzzing never concludes "unreachable".
//!
//! **Executions are in-process and reset.** libFuzzer runs every input in one process; its
//! `-fork` mode would give each a fresh process but runs its children through `system()`, i.e. a
//! shell, which the sandbox's empty root does not have, and costs a process per input. Instead
//! the driver restores the program's globals (`.data`/`.bss`, copied at start-up) before each
//! input and turns `exit`/`abort`/a failed assumption into a return, so each input starts from
//! the state of a fresh process except for libc's internal state and the heap (leaked blocks
//! stay). Faults and CPU hangs of the program end their input only (the driver handles those
//! signals). What still stops libFuzzer (another deadly signal, a hang outside the CPU past
//! `-timeout`, out of memory) is dropped from the corpus, and the engine starts libFuzzer again
//! on the corpus found so far with the next seed.
//! Every seed is fixed (`FuzzLimits::seed` + restart number), so a search repeats.

pub mod cdriver;
pub mod dict;
pub mod input;
pub mod sandbox;

pub use dict::{constant_entries, render as render_dictionary, CmpConstant};
pub use input::{InputLayout, ParamSlot, Shape};

use crate::error::{Error, Result};
use crate::jailfs::Dir;
use crate::load::{clang_path, llvm_tool, Loaded};
use crate::replay::driver::DriverSpec;
use crate::replay::{first_error, run_tool, write, Limits};
use crate::witness::Witness;
use serde::Serialize;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};
use tracing::{debug, info};

/// The seed used when the caller has no reason to pick another.
pub const DEFAULT_SEED: u64 = 1;
/// libFuzzer's per-input time limit (seconds), behind the driver's own CPU-time limit of about a
/// quarter second: it ends inputs blocked outside the CPU (a `sleep`, a lock left held by a fault); such
/// a hang costs this plus a restart.
const INPUT_TIMEOUT_SECS: u64 = 5;
/// Nondet results in a constant-fill seed (see [`InputLayout::fill_seed`]): a 24×24 matrix
/// and its dimensions; a run that reads more reads zeros past the end.
const FILL_CALLS: usize = 640;
/// Most characters of the byte-fill seeds (see [`InputLayout::byte_fill_seed`]).
const MAX_BYTE_FILLS: usize = 8;
/// Most integer values beside each of them (the first fill values: the program's first
/// comparisons and their neighbours).
const MAX_BYTE_FILL_VALUES: usize = 24;

/// The characters of the byte-fill seeds: the fill values that are one byte (a character
/// compared after C's promotion is a 32-bit constant below 256), in order, at most
/// [`MAX_BYTE_FILLS`].
fn byte_fills(fills: &[u64]) -> Vec<u8> {
    let mut out: Vec<u8> = vec![];
    for &v in fills {
        if let Ok(b) = u8::try_from(v) {
            if b != 0 && !out.contains(&b) && out.len() < MAX_BYTE_FILLS {
                out.push(b);
            }
        }
    }
    out
}

/// Rounds of tracing that settle the call sizes of a seed with mixed nondet types.
const SEED_TRACE_ROUNDS: usize = 6;
/// Inputs that hit the target under the fuzzer but not in replay before the engine gives up:
/// the fuzzing harness and the replay lay memory out differently, so a program that reads
/// outside its inputs can hit under one and miss under the other.
const MAX_REPLAY_MISMATCHES: u32 = 16;

/// A traced run of one input is stopped after this long.
const TRACE_WALL: Duration = Duration::from_secs(3);
/// Debian package shipping libFuzzer's runtime for clang-19.
pub const RUNTIME_PACKAGE: &str = "libclang-rt-19-dev";

/// When a search stops, and the seed that makes it repeat.
#[derive(Clone, Copy, Debug)]
pub struct FuzzLimits {
    pub deadline: Instant,
    /// libFuzzer's `-seed` (fixed: runs repeat); restarts use the following seeds.
    pub seed: u64,
}

impl FuzzLimits {
    /// Fuzzing until `deadline` with the default seed.
    pub fn until(deadline: Instant) -> FuzzLimits {
        FuzzLimits { deadline, seed: DEFAULT_SEED }
    }
}

/// What a search did.
#[derive(Default, Clone, Debug, Serialize)]
pub struct FuzzStats {
    /// Inputs libFuzzer ran (as it last reported, summed over restarts).
    pub executions: u64,
    /// Inputs in the corpus at the end (seeds included).
    pub corpus_size: u64,
    /// Seed witnesses put into the corpus (distinct encodings).
    pub seeds_used: u64,
    /// Extra runs of the fuzzing executable to trace one input (a seed's call sizes, or a
    /// crash that did not bring its trace).
    pub trace_runs: u64,
}

/// How a search ended. Never "unreachable": fuzzing proves nothing about absence.
#[derive(Clone, Debug)]
pub enum FuzzEnd {
    /// An input reached the target and its native replay entered it.
    Reached(Witness),
    /// No replayed witness before the deadline or cancellation; the reason says which.
    GaveUp(String),
    /// Stopped for seeds the running libFuzzer could not take (see [`Live::seeds_since`]): a
    /// new search starts from them, on the corpus reached so far.
    Reseed,
}

/// What a search is told while libFuzzer runs (see [`Fuzzer::search`]): no restart, so
/// that the path it is on goes on (a restart runs the corpus again and takes libFuzzer down
/// another path from its new seed: eqcnt's portfolio, restarted after its first 1.5 s, took
/// 14-20 s in most runs where one uninterrupted run takes 2.3 s).
#[derive(Default, Clone, Copy)]
pub struct Live<'a> {
    /// The seeds found since the search started: called with how many it has had (the first
    /// ones are those it started from), it returns those after. Each goes into the running
    /// libFuzzer's corpus, which rereads it once a second; one that needs another input layout
    /// (pointer slots of another shape, nondet calls of several sizes to trace, or a longer
    /// input than libFuzzer's `-max_len`) ends the search with [`FuzzEnd::Reseed`].
    pub seeds_since: Option<&'a (dyn Fn(usize) -> Vec<Witness> + Sync)>,
    /// The nice value of libFuzzer's scheduling group, given how long it has gone without new
    /// coverage (its last `NEW` unit, or its start): applied to the running process.
    pub nice: Option<&'a (dyn Fn(Duration) -> i32 + Sync)>,
}

/// How often a running search looks at [`Live`] (new seeds, libFuzzer's log, its priority).
const STEER_INTERVAL: Duration = Duration::from_millis(50);
/// How far into the future a live search's corpus directory is dated before libFuzzer starts
/// (see [`Session::feed`]): past the end of any search.
const CORPUS_DATED_AHEAD: Duration = Duration::from_secs(30 * 24 * 3600);

/// The fuzzing executable of one analysed program, built once ([`Fuzzer::build`]); `Sync`:
/// searches on several threads share it (each gets its own sandbox directory).
pub struct Fuzzer {
    dir: tempfile::TempDir,
    exe: PathBuf,
    layout: InputLayout,
    /// The interpreter and shared libraries of a dynamically linked `exe`, for each session's
    /// jail: pairs of (a copy in `dir`, its path in the jail); empty for a static one.
    libraries: Vec<(PathBuf, PathBuf)>,
    sessions: AtomicU32,
    keep_temps: bool,
    /// The last session's corpus, which the next session starts from (see [`Carried`]).
    carried: std::sync::Mutex<Carried>,
}

/// A session's corpus at its end, for the next session of the same fuzzer: a new round (new
/// seeds from the APC) goes on from the coverage reached instead of starting over, and with
/// a seed of its own instead of replaying the last round's first mutations (the runs repeat,
/// so that replay was exact). Only for inputs that decode the same way: the seeds' shapes
/// (buffer sizes) decide the layout.
#[derive(Default)]
struct Carried {
    shape: Vec<u64>,
    entries: Vec<Vec<u8>>,
}

/// The first entries of `corpus` in name order, within [`CARRIED_ENTRIES`] and
/// [`CARRIED_BYTES`].
fn carried_entries(corpus: &[(String, Vec<u8>)]) -> Vec<Vec<u8>> {
    let mut sorted: Vec<&(String, Vec<u8>)> = corpus.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut bytes = 0;
    let mut entries = vec![];
    for (_, b) in sorted.into_iter().take(CARRIED_ENTRIES) {
        if bytes + b.len() <= CARRIED_BYTES {
            bytes += b.len();
            entries.push(b.clone());
        }
    }
    entries
}

/// Most corpus entries carried from one session to the next, and most bytes.
const CARRIED_ENTRIES: usize = 4096;
const CARRIED_BYTES: usize = 16 << 20;

impl Drop for Fuzzer {
    fn drop(&mut self) {
        crate::cleanup::release(self.dir.path());
    }
}


/// Most names read from a directory the program wrote (its tmpfs holds at most 16384 files).
const MAX_NAMES: usize = 1 << 15;


/// libFuzzer's runtime archive. Linked by path rather than with `-fsanitize=fuzzer`, which
/// would also link its interceptors: they find the real `strcmp` & co. with `dlsym`, which a
/// static executable does not have (they crash at start-up). Asked of clang once per process
/// (a batch builds many fuzzers).
fn fuzzer_runtime() -> Result<PathBuf> {
    static RUNTIME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(p) = RUNTIME.get() {
        return Ok(p.clone());
    }
    // Where clang's resource directory normally is (`<bin>/../lib/clang/<version>/lib/linux`):
    // asking clang itself costs a process start (30–100 ms) that a run which ends sooner
    // then waits for.
    if let Some(found) = installed_runtime(&clang_path()) {
        return Ok(RUNTIME.get_or_init(|| found).clone());
    }
    let out = run_tool(&clang_path(), &["-print-file-name=libclang_rt.fuzzer-x86_64.a".as_ref()], &std::env::temp_dir())?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if path.is_absolute() && path.is_file() {
        Ok(RUNTIME.get_or_init(|| path).clone())
    } else {
        Err(Error::internal(format!("libFuzzer's runtime libclang_rt.fuzzer-x86_64.a was not found (Debian package {RUNTIME_PACKAGE})")))
    }
}

/// libFuzzer's runtime in the resource directory of the clang installation at `clang`, when
/// exactly one version directory has it.
fn installed_runtime(clang: &Path) -> Option<PathBuf> {
    let bin = std::fs::canonicalize(clang).ok()?;
    let versions = bin.parent()?.parent()?.join("lib/clang");
    let found: Vec<PathBuf> = std::fs::read_dir(versions)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("lib/linux/libclang_rt.fuzzer-x86_64.a"))
        .filter(|p| p.is_file())
        .collect();
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// The soname of libFuzzer's shared object ([`shared_runtime`]): the name a fuzzing
/// executable asks the dynamic loader for, and the file's name in a session's jail.
const SHARED_RUNTIME_NAME: &str = "libapcfuzz.so";

/// libFuzzer's runtime archive linked into a shared object of the toolchain cache (once per
/// machine and runtime; `None` without the cache or when that link fails), with libstdc++ and
/// libgcc inside, so that a jail needs only the C library beside it. `-Bsymbolic` binds
/// libFuzzer's references to its own globals at link time, as in a static executable (its
/// tracing hooks run at every comparison of the program).
fn shared_runtime(archive: &Path) -> Option<&'static Path> {
    static SHARED: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    SHARED
        .get_or_init(|| {
            let soname = format!("-Wl,-soname,{SHARED_RUNTIME_NAME}");
            let mut args = crate::replay::dynamic_link_args();
            args.extend([
                soname.as_ref(),
                "-Wl,--whole-archive".as_ref(),
                archive.as_os_str(),
                "-Wl,--no-whole-archive".as_ref(),
                "-Wl,-Bstatic".as_ref(),
                "-lstdc++".as_ref(),
                "-Wl,-Bdynamic".as_ref(),
                "-static-libgcc".as_ref(),
                "-lm".as_ref(),
                "-lpthread".as_ref(),
                "-Wl,-Bsymbolic".as_ref(),
                "-Wl,--gc-sections".as_ref(),
            ]);
            crate::replay::toolchain::kept_shared_object("libapcfuzz", &args)
        })
        .as_deref()
}

impl Fuzzer {
    /// Builds the fuzzing executable: the instrumented bitcode compiled with coverage and
    /// compare tracing, its exit/abort/compare calls and data sections renamed for the driver
    /// (see [`cdriver`]), linked statically with the driver and libFuzzer. Functions nobody
    /// defines get stubs returning 0, as in replay.
    pub fn build(loaded: &Loaded, keep_temps: bool) -> Result<Fuzzer> {
        let start = Instant::now();
        let mut dir = crate::scratch::tempdir("apc-fuzz-")?;
        if keep_temps {
            dir.disable_cleanup(true);
        } else {
            crate::cleanup::register(dir.path());
        }
        let spec = DriverSpec {
            function: &loaded.program.function,
            call_name: &loaded.replay_function,
            declared: &loaded.declared_functions,
            targets: &loaded.target_blocks,
            functions: &loaded.function_table,
        };
        let layout = InputLayout::new(&spec);
        let runtime = fuzzer_runtime()?;
        let clang = clang_path();
        let d = dir.path();
        let (bc, obj, renamed) = (d.join("program.bc"), d.join("program.o"), d.join("program-fuzz.o"));
        write(&bc, &loaded.instrumented_bitcode)?;
        let driver = d.join("fuzz-driver.c");
        let driver_o = d.join("fuzz-driver.o");
        let exe = d.join("fuzz");
        // Functions nobody defines get stubs (appended to the driver) from the start, as in
        // replay (see `replay::stubs`); a link that still misses some gets them added.
        let mut stubbed = crate::replay::stubs::predicted(&loaded.declared_functions);
        let driver_source = cdriver::generate(&spec, &layout);
        let build_driver = |stubbed: &[String]| -> Result<()> {
            let mut source = driver_source.clone();
            source.push_str(&crate::replay::stubs::source(stubbed));
            write(&driver, source.as_bytes())?;
            let args: [&std::ffi::OsStr; 7] =
                ["-O1".as_ref(), "-w".as_ref(), "-c".as_ref(), "--target=x86_64-pc-linux-gnu".as_ref(), driver.as_os_str(), "-o".as_ref(), driver_o.as_os_str()];
            let out = crate::replay::toolchain::compile_generated(&args, source.as_bytes(), &driver_o, d)?;
            if out.status.success() { Ok(()) } else { Err(Error::internal(format!("compiling the fuzzing driver failed: {}", first_error(&out.stderr)))) }
        };
        // The program (instrumented, then its symbols renamed) and the driver compile at once
        // on two cores; then one static link, with lld when it is installed. The program's
        // code generation runs on this thread, the one whose priority drops while the APC's
        // quick check runs (`engine::fuzz`); on a thread of its own it kept the base priority
        // (the driver's compile is mostly a hit of the toolchain cache).
        let program = || -> Result<()> {
            // In this process first (see `codegen::compile_fuzz_object`); clang and objcopy when
            // that fails.
            let rename: Vec<(String, String)> = cdriver::redirects(&loaded.declared_functions).into_iter().map(|(old, new, _)| (old, new)).collect();
            match crate::replay::codegen::compile_fuzz_object(&loaded.instrumented_bitcode, &renamed, &rename, cdriver::DATA_SECTIONS, cdriver::WORK_TICK) {
                Ok(()) => return Ok(()),
                Err(e) => debug!("in-process code generation for fuzzing failed, clang compiles instead: {e}"),
            }
            let out = run_tool(
                &clang,
                &[
                    "-O0".as_ref(),
                    "-w".as_ref(),
                    "-c".as_ref(),
                    "-fsanitize=fuzzer-no-link".as_ref(),
                    "--target=x86_64-pc-linux-gnu".as_ref(),
                    bc.as_os_str(),
                    "-o".as_ref(),
                    obj.as_os_str(),
                ],
                d,
            )?;
            if !out.status.success() {
                return Err(Error::internal(format!("compiling the program for fuzzing failed: {}", first_error(&out.stderr))));
            }
            let mut objcopy_args: Vec<String> = vec![];
            for (old, new, _) in cdriver::redirects(&loaded.declared_functions) {
                objcopy_args.push(format!("--redefine-sym={old}={new}"));
            }
            for (old, new) in cdriver::DATA_SECTIONS {
                objcopy_args.push(format!("--rename-section={old}={new}"));
            }
            let mut args: Vec<&std::ffi::OsStr> = objcopy_args.iter().map(|a| a.as_ref()).collect();
            args.extend([obj.as_os_str(), renamed.as_os_str()]);
            let objcopy = llvm_tool("llvm-objcopy");
            let out = run_tool(&objcopy, &args, d)?;
            if out.status.success() { Ok(()) } else { Err(Error::internal(format!("{} failed: {}", objcopy.display(), first_error(&out.stderr)))) }
        };
        crate::replay::at_once(|| build_driver(&stubbed), program)?;
        // libFuzzer as the shared object of the toolchain cache when there is one (a link of
        // about 10 ms instead of 50; its libraries then go into every session's jail), else
        // linked statically.
        let mut shared = shared_runtime(&runtime);
        for attempt in 0..3 {
            let mut args = match shared {
                Some(_) => crate::replay::dynamic_link_args(),
                None => crate::replay::static_link_args(),
            };
            args.extend([driver_o.as_os_str(), renamed.as_os_str()]);
            match shared {
                // `-no-pie`: the program's object may come from clang, compiled without PIC.
                Some(so) => args.extend(["-no-pie".as_ref(), so.as_os_str()]),
                None => args.extend([runtime.as_os_str(), "-lstdc++".as_ref()]),
            }
            args.extend(["-lm".as_ref(), "-lpthread".as_ref(), "-o".as_ref(), exe.as_os_str()]);
            let out = crate::replay::toolchain::link(&args, d)?;
            if out.status.success() {
                let libraries = match shared {
                    None => vec![],
                    Some(so) => match crate::replay::libraries::gather(&exe, &d.join("lib"), &[(SHARED_RUNTIME_NAME, so)]) {
                        Ok(libraries) => libraries,
                        Err(e) => {
                            debug!("the fuzzer's shared libraries were not found, libFuzzer is linked statically: {e}");
                            shared = None;
                            continue;
                        }
                    },
                };
                info!(elapsed = ?start.elapsed(), exe = %exe.display(), shared = shared.is_some(), "fuzzer built");
                return Ok(Fuzzer { dir, exe, layout, libraries, sessions: AtomicU32::new(0), keep_temps, carried: Default::default() });
            }
            let missing = crate::replay::stubs::undefined_in_link_errors(&String::from_utf8_lossy(&out.stderr));
            if missing.is_empty() && shared.is_some() {
                debug!(stderr = %String::from_utf8_lossy(&out.stderr), "the dynamic link of the fuzzer failed, libFuzzer is linked statically");
                shared = None;
                continue;
            }
            if attempt == 2 || missing.is_empty() || missing.iter().all(|m| stubbed.contains(m)) {
                return Err(Error::internal(format!("linking the fuzzer failed: {}", first_error(&out.stderr))));
            }
            debug!(?missing, "stubbing functions the link missed for fuzzing");
            stubbed.extend(missing);
            build_driver(&stubbed)?;
        }
        Err(Error::internal("linking the fuzzer failed"))
    }

    /// Where the executable and the sessions' directories live.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The input format (without seed shapes).
    pub fn layout(&self) -> &InputLayout {
        &self.layout
    }

    /// Fuzzes from `seeds` (witnesses, replayed or not: each becomes a corpus entry) with
    /// `dictionary` entries (see [`constant_entries`]) until an input reaches the target and
    /// `replay` confirms it, `limits.deadline` passes or `cancel` is set; fed new seeds and
    /// steered in priority while it runs by `live` (`Live::default()`: neither).
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &self,
        seeds: &[Witness],
        dictionary: &[Vec<u8>],
        fills: &[u64],
        limits: &FuzzLimits,
        cancel: &AtomicBool,
        replay: &(dyn Fn(&Witness) -> bool + Sync),
        live: &Live,
    ) -> (FuzzEnd, FuzzStats) {
        let mut stats = FuzzStats::default();
        let start = Instant::now();
        let end = match Session::new(self, seeds) {
            Ok(mut s) => {
                s.fills = fills.to_vec();
                let shape = s.layout.shape_words();
                let carried = {
                    let mut c = self.carried.lock().unwrap_or_else(|e| e.into_inner());
                    if c.shape == shape { std::mem::take(&mut c.entries) } else { vec![] }
                };
                let end = s.search(seeds, dictionary, &carried, limits, cancel, replay, live, &mut stats).unwrap_or_else(|e| FuzzEnd::GaveUp(format!("fuzzing failed: {e}")));
                stats.trace_runs = s.traces;
                // Kept for a next round only when this one may be followed by one.
                let keep = !matches!(end, FuzzEnd::Reached(_)) && !cancel.load(Ordering::Relaxed);
                stats.corpus_size = s.corpus.len() as u64;
                let entries = if keep { carried_entries(&s.corpus) } else { vec![] };
                *self.carried.lock().unwrap_or_else(|e| e.into_inner()) = Carried { shape, entries };
                if !self.keep_temps {
                    let _ = std::fs::remove_dir_all(&s.work);
                }
                end
            }
            Err(e) => FuzzEnd::GaveUp(format!("fuzzing failed: {e}")),
        };
        info!(elapsed = ?start.elapsed(), ?stats, reached = matches!(end, FuzzEnd::Reached(_)), "fuzzing ended");
        (end, stats)
    }
}

/// What a traced run of one input showed.
struct Trace {
    /// Byte sizes of the nondet calls, in order.
    calls: Vec<u8>,
    /// Whether the marker was reached.
    hit: bool,
}

/// One search's sandbox directory: `jail/` holds the executable, its libraries, `shape`, `dict`
/// and `work` (where each run's tmpfs goes), none of it writable by the program; the logs are
/// beside it. Each run's tmpfs gets `corpus/`, `art/` (libFuzzer's artifacts) and `t/` (traced
/// inputs), written and read by the tool only through a descriptor ([`crate::jailfs`]); the
/// corpus is kept here between runs.
struct Session {
    work: PathBuf,
    jail: PathBuf,
    /// The corpus the next run starts from (file names and contents): the seeds, then what
    /// the last run left in its corpus directory.
    corpus: Vec<(String, Vec<u8>)>,
    layout: InputLayout,
    logs: u32,
    /// Values of the constant-fill seeds (see [`InputLayout::fill_seed`]).
    fills: Vec<u64>,
    /// Which session of its fuzzer this is (0 first): libFuzzer's seeds differ by session.
    number: u32,
    /// Traced runs so far ([`Session::trace`]).
    traces: u64,
}

/// What a search steering its running libFuzzer ([`Live`]) keeps between looks.
struct Steering {
    /// When it last looked (at most every [`STEER_INTERVAL`]).
    last_look: Option<Instant>,
    /// Bytes of the run's log read so far (up to its last whole line).
    log_read: u64,
    /// When the run last added coverage (a `NEW` line), or started.
    last_new: Instant,
    /// The nice value given to the run's scheduling group, if any.
    nice: Option<i32>,
    /// Seeds known: those the search started from and those fed since.
    known: usize,
    /// Seeds fed to the running libFuzzer.
    fed: u64,
    /// The modification time (whole seconds since the epoch) last given to the corpus
    /// directory (see [`Session::feed`]).
    stamp: u64,
}

impl Steering {
    /// Steering for a search that starts from `known` seeds, its corpus dated `stamp`.
    fn new(known: usize, stamp: u64) -> Steering {
        Steering { last_look: None, log_read: 0, last_new: Instant::now(), nice: None, known, fed: 0, stamp }
    }

    /// For a new libFuzzer run: a new log, a look at once, and a new scheduling group, which
    /// the sandbox starts at this thread's nice value (or 0, a new group's, below it).
    fn restart(&mut self) {
        self.last_look = None;
        self.log_read = 0;
        self.last_new = Instant::now();
        self.nice = Some(crate::priority::current().max(0));
    }
}

/// The number of `NEW` lines (units that added coverage) in the log at `path` past `read`
/// bytes, whose whole lines it then counts as read.
fn new_units_in_log(path: &Path, read: &mut u64) -> usize {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return 0 };
    let mut text = vec![];
    if f.seek(SeekFrom::Start(*read)).is_err() || f.read_to_end(&mut text).is_err() {
        return 0;
    }
    let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |k| k + 1);
    *read += whole as u64;
    text[..whole].split(|b| *b == b'\n').filter(|l| l.starts_with(b"#") && l.windows(5).any(|w| w == b"\tNEW ")).count()
}

/// Adds `bytes` to the running libFuzzer's corpus. libFuzzer (`-reload=1`) rereads the
/// corpus directory once a second, but only when the directory's modification time, in
/// whole seconds, is past the one it last saw (at its start, then at each reread), and then
/// only the files not older than that. The directory starts [`CORPUS_DATED_AHEAD`] in the
/// future: libFuzzer's own new entries, which set its time to the clock's, are never
/// reread (a reread runs again every file of the last second it does not hold, such as the
/// longer versions of the inputs it has since reduced, which the fuzzer alone does not run:
/// the portfolio's fuzzer would take another path). Each fed file
/// and the directory get the next second past the last one given. The file is written
/// aside (in `t/`) and renamed in, so that it is never read half-written; all of it through
/// the descriptor of the run's tmpfs, `work`.
fn feed(work: &Dir, bytes: &[u8], st: &mut Steering) -> std::io::Result<()> {
    st.stamp += 1;
    let (aside, corpus) = (work.dir("t")?, work.dir("corpus")?);
    aside.write("live", bytes, Some(st.stamp))?;
    aside.rename_to("live", &corpus, &format!("live-{:04}", st.fed + 1))?;
    corpus.set_modified(st.stamp)
}

/// Sets the nice value of the scheduling group (autogroup) of the session `pid` leads; false
/// when the system refused (no autogroups, not allowed, or rate-limited: then again later).
fn set_group_nice(pid: libc::pid_t, nice: i32) -> bool {
    std::fs::write(format!("/proc/{pid}/autogroup"), format!("{nice}\n")).is_ok()
}

impl Session {
    /// One look at the running libFuzzer (its init `pid`, its log at `log`): its priority
    /// follows [`Live::nice`], and new seeds go into its corpus. `false`: a seed needs a new
    /// search (see [`FuzzEnd::Reseed`]).
    fn steer(&self, st: &mut Steering, live: &Live, pid: libc::pid_t, work: Option<&Dir>, log: &Path, max_len: usize) -> bool {
        let now = Instant::now();
        if st.last_look.is_some_and(|t| now.duration_since(t) < STEER_INTERVAL) {
            return true;
        }
        st.last_look = Some(now);
        if let Some(nice) = live.nice {
            if new_units_in_log(log, &mut st.log_read) > 0 {
                st.last_new = now;
            }
            let want = nice(now.duration_since(st.last_new));
            if st.nice != Some(want) && set_group_nice(pid, want) {
                debug!(nice = want, "the fuzzer's priority changed");
                st.nice = Some(want);
            }
        }
        let Some(since) = live.seeds_since else { return true };
        let Some(work) = work else { return true };
        if st.fed > 0 {
            // libFuzzer's own new entries set the directory's time back to the clock's, which
            // hides a fed file from its next reread (see `Session::feed`): the time is given
            // again at every look (once libFuzzer has read it, it is the time it last saw, and
            // hides nothing more).
            if let Err(e) = work.dir("corpus").and_then(|c| c.set_modified(st.stamp)) {
                debug!("dating the fuzzing corpus: {e}");
            }
        }
        for w in since(st.known) {
            let fits = (self.layout.uniform_calls || w.nondet.is_empty())
                && self.layout.with_shapes_of(std::slice::from_ref(&w)).shape_words() == self.layout.shape_words();
            let bytes = self.layout.encode_seed(&w, None);
            if !fits || bytes.len() > max_len {
                debug!(fits, len = bytes.len(), "a new seed needs a new fuzzing search");
                return false;
            }
            match feed(work, &bytes, st) {
                Ok(()) => st.fed += 1,
                Err(e) => debug!("a new seed could not be fed to the fuzzer: {e}"),
            }
            st.known += 1;
        }
        true
    }

    fn new(fuzzer: &Fuzzer, seeds: &[Witness]) -> Result<Session> {
        let n = fuzzer.sessions.fetch_add(1, Ordering::Relaxed);
        let work = fuzzer.dir.path().join(format!("session{n}"));
        // Not after the end of the run (or its interruption), whose cleanup is removing the
        // fuzzer's directory: `create_dir_all` below would make it again, and it would stay.
        if crate::cleanup::finished() {
            return Err(Error::internal("the analysis has ended"));
        }
        std::fs::create_dir(&work).map_err(|e| Error::internal(format!("creating {}: {e}", work.display())))?;
        let jail = work.join("jail");
        std::fs::create_dir_all(jail.join("work")).map_err(|e| Error::internal(format!("creating {}: {e}", jail.display())))?;
        // Readable by the runs' uid; writable by nobody else (the run sees it read-only).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&jail, std::fs::Permissions::from_mode(0o755)).map_err(|e| Error::internal(format!("chmod {}: {e}", jail.display())))?;
        let exe = jail.join(sandbox::EXE);
        if std::fs::hard_link(&fuzzer.exe, &exe).is_err() {
            std::fs::copy(&fuzzer.exe, &exe).map_err(|e| Error::internal(format!("copying the fuzzer: {e}")))?;
        }
        crate::replay::libraries::install(&fuzzer.libraries, &jail)?;
        let layout = fuzzer.layout.with_shapes_of(seeds);
        let words: Vec<u8> = layout.shape_words().iter().flat_map(|w| w.to_le_bytes()).collect();
        write(&jail.join(cdriver::SHAPE_PATH.trim_start_matches('/')), &words)?;
        Ok(Session { work, jail, corpus: vec![], layout, logs: 0, fills: vec![], number: n, traces: 0 })
    }

    fn log_path(&mut self, kind: &str) -> PathBuf {
        self.logs += 1;
        self.work.join(format!("{kind}{}.log", self.logs))
    }

    /// Runs the fuzz executable once on `bytes` with the call trace on.
    fn trace(&mut self, bytes: &[u8], deadline: Instant, cancel: &AtomicBool) -> Result<Trace> {
        self.traces += 1;
        let mut args = vec![cdriver::TRACE_FLAG.to_string(), "-artifact_prefix=/work/t/".into(), format!("-timeout={INPUT_TIMEOUT_SECS}")];
        args.extend(own_signals());
        args.push("/work/t/input".into());
        let prepare = |work: &Dir| work.make_dir("t", 0o700, sandbox::owner())?.write("input", bytes, None);
        let limits = Limits { wall: TRACE_WALL, cpu_seconds: TRACE_WALL.as_secs() + 1, ..Limits::default() };
        let log = self.log_path("trace");
        // A trace decides whether a found input is replayed: it may run a little past the
        // deadline (bounded by TRACE_WALL), never past cancellation.
        let deadline = deadline.max(Instant::now() + Duration::from_millis(500));
        let out = sandbox::run(&self.jail, &args, limits, &log, deadline, cancel, &prepare, None).map_err(|e| Error::internal(format!("fuzz trace: {e}")))?;
        let calls = trace_calls(&out.trace);
        let hit = out.trace.contains(&b'H');
        debug!(status = %out.status, calls = calls.len(), hit, "traced an input");
        Ok(Trace { calls, hit })
    }

    /// A seed's bytes. With nondet functions of several sizes, the sizes of its calls are
    /// found by tracing: encode with the sizes known so far, run, and repeat until the run
    /// makes the calls the encoding assumed.
    fn seed_bytes(&mut self, w: &Witness, deadline: Instant, cancel: &AtomicBool) -> Result<Vec<u8>> {
        if self.layout.uniform_calls || w.nondet.is_empty() {
            return Ok(self.layout.encode_seed(w, None));
        }
        let mut calls: Vec<u8> = vec![];
        let mut bytes = self.layout.encode_seed(w, Some(&calls));
        for _ in 0..SEED_TRACE_ROUNDS {
            let mut traced = self.trace(&bytes, deadline, cancel)?.calls;
            traced.truncate(w.nondet.len());
            if traced == calls {
                break;
            }
            calls = traced;
            bytes = self.layout.encode_seed(w, Some(&calls));
        }
        Ok(bytes)
    }

    /// Removes the corpus entries holding exactly `bytes`.
    fn drop_from_corpus(&mut self, bytes: &[u8]) {
        self.corpus.retain(|(name, b)| {
            let drop = b == bytes;
            if drop {
                debug!(entry = %name, "dropping a corpus entry that stops libFuzzer");
            }
            !drop
        });
    }

    /// Fills a run's fresh tmpfs `work`: the corpus (its directory dated `stamp`, see [`feed`],
    /// when given), and empty `art/` and `t/`, all the program's to write.
    fn prepare(&self, work: &Dir, stamp: Option<u64>) -> std::io::Result<()> {
        let owner = sandbox::owner();
        let corpus = work.make_dir("corpus", 0o700, owner)?;
        for (name, bytes) in &self.corpus {
            corpus.write(name, bytes, None)?;
        }
        if let Some(at) = stamp {
            corpus.set_modified(at)?;
        }
        work.make_dir("art", 0o700, owner)?;
        work.make_dir("t", 0o700, owner)?;
        Ok(())
    }

    /// After a run: its corpus directory becomes the corpus the next run starts from (kept as
    /// it was if the program made it unreadable), and its new artifacts come back, with their
    /// contents, in name order (libFuzzer names them by their hash). Files of `limit` bytes at
    /// most (longer ones are cut: libFuzzer reads no more of an input than `-max_len`).
    fn collect(&mut self, work: &Dir, handled: &BTreeSet<String>, limit: usize) -> Vec<(String, Vec<u8>)> {
        if let Ok(dir) = work.dir("corpus") {
            if let Ok(names) = dir.names(MAX_NAMES) {
                self.corpus = names.into_iter().filter_map(|n| dir.read(&n, limit).ok().map(|b| (n, b))).collect();
            }
        }
        let Ok(art) = work.dir("art") else { return vec![] };
        let mut found: Vec<String> = art.names(MAX_NAMES).unwrap_or_default();
        found.retain(|n| !handled.contains(n));
        found.sort();
        found.into_iter().filter_map(|n| art.read(&n, limit).ok().map(|b| (n, b))).collect()
    }

    fn search(
        &mut self,
        seeds: &[Witness],
        dictionary: &[Vec<u8>],
        carried: &[Vec<u8>],
        limits: &FuzzLimits,
        cancel: &AtomicBool,
        replay: &(dyn Fn(&Witness) -> bool + Sync),
        live: &Live,
        stats: &mut FuzzStats,
    ) -> Result<FuzzEnd> {
        // The corpus: one file per distinct seed encoding.
        let mut encoded: BTreeSet<Vec<u8>> = BTreeSet::new();
        for w in seeds {
            if cancel.load(Ordering::Relaxed) {
                return Ok(FuzzEnd::GaveUp("cancelled".into()));
            }
            let bytes = self.seed_bytes(w, limits.deadline, cancel)?;
            if encoded.insert(bytes.clone()) {
                self.corpus.push((format!("seed-{:04}", encoded.len()), bytes.clone()));
            }
        }
        let seed_entries = encoded.len() as u64;
        stats.seeds_used = seed_entries;
        // Constant-fill seeds (see `InputLayout::fill_seed`) after the models: cheap, and
        // libFuzzer runs every corpus entry once before it mutates.
        for v in &self.fills {
            let bytes = self.layout.fill_seed(*v, FILL_CALLS);
            if encoded.insert(bytes.clone()) {
                self.corpus.push((format!("fill-{:04}", encoded.len()), bytes.clone()));
            }
        }
        // Zero-data fills: each fill value in the integers, the buffers all zeros.
        if self.layout.has_buffers() {
            for v in &self.fills {
                let bytes = self.layout.zero_data_seed(*v, FILL_CALLS);
                if encoded.insert(bytes.clone()) {
                    self.corpus.push((format!("zfill-{:04}", encoded.len()), bytes.clone()));
                }
            }
        }
        // Byte fills: each character the program compares with in every buffer byte, beside
        // each fill value in the integers (a length bounded by a small constant).
        if self.layout.has_char_buffers() {
            for b in byte_fills(&self.fills) {
                for v in self.fills.iter().take(MAX_BYTE_FILL_VALUES) {
                    let bytes = self.layout.byte_fill_seed(b, *v, FILL_CALLS);
                    if encoded.insert(bytes.clone()) {
                        self.corpus.push((format!("bfill-{:04}", encoded.len()), bytes.clone()));
                    }
                }
            }
        }
        // The last session's corpus after the new seeds (libFuzzer runs them all first).
        for bytes in carried {
            if encoded.insert(bytes.clone()) {
                self.corpus.push((format!("prev-{:04}", encoded.len()), bytes.clone()));
            }
        }
        let max_seed = encoded.iter().map(Vec::len).max().unwrap_or(0);
        let dict_text = dict::render(dictionary);
        if !dict_text.is_empty() {
            write(&self.jail.join("dict"), dict_text.as_bytes())?;
        }
        let max_len = (2 * max_seed).max(4096);
        let clock = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let steer = RefCell::new(Steering::new(seeds.len(), clock + CORPUS_DATED_AHEAD.as_secs()));
        let memory_mb = Limits::default().memory_bytes >> 20;
        let mut handled: BTreeSet<String> = BTreeSet::new();
        let mut crashes = 0u32;
        let mut mismatches = 0u32;
        for restart in 0u64.. {
            if cancel.load(Ordering::Relaxed) {
                return Ok(FuzzEnd::GaveUp("cancelled".into()));
            }
            let remaining = limits.deadline.saturating_duration_since(Instant::now());
            if remaining < Duration::from_millis(200) {
                return Ok(FuzzEnd::GaveUp(format!(
                    "no input reached the target before the deadline ({} executions, {crashes} other crashes)",
                    stats.executions
                )));
            }
            // libFuzzer's seed is a nonzero 32-bit number (0 would mean "from the clock").
            let seed = limits.seed.wrapping_add(restart).wrapping_add(1000 * self.number as u64) % 0xffff_fffe + 1;
            let mut args = vec![
                format!("-seed={seed}"),
                "-use_value_profile=1".into(),
                "-artifact_prefix=/work/art/".into(),
                // Rounded up: the engine stops libFuzzer at the deadline itself (SIGINT, for
                // its statistics), so that it does not stop early and restart on a new seed.
                format!("-max_total_time={}", remaining.as_secs_f64().ceil().max(1.0) as u64),
                format!("-timeout={INPUT_TIMEOUT_SECS}"),
                format!("-rss_limit_mb={}", memory_mb * 3 / 4),
                format!("-malloc_limit_mb={}", memory_mb / 2),
                format!("-max_len={max_len}"),
                // Live seeds come as new files of the corpus directory (see `Session::feed`).
                format!("-reload={}", u8::from(live.seeds_since.is_some())),
                "-print_final_stats=1".into(),
            ];
            args.extend(own_signals());
            if !dict_text.is_empty() {
                args.push("-dict=/dict".into());
            }
            args.push("/work/corpus".into());
            let run_limits = Limits { wall: remaining + Duration::from_secs(1), cpu_seconds: remaining.as_secs() + 2, ..Limits::default() };
            let log = self.log_path("fuzz");
            debug!(seed, ?remaining, "starting libFuzzer");
            steer.borrow_mut().restart();
            // The time libFuzzer starts from (see `feed`), also after a restart.
            let stamp = live.seeds_since.is_some().then(|| steer.borrow().stamp);
            let this = &*self;
            let prepare = |work: &Dir| this.prepare(work, stamp);
            let watch = |pid: libc::pid_t, work: Option<&Dir>| this.steer(&mut steer.borrow_mut(), live, pid, work, &log, max_len);
            let watching = live.seeds_since.is_some() || live.nice.is_some();
            let out = sandbox::run(&self.jail, &args, run_limits, &log, limits.deadline, cancel, &prepare, watching.then_some(&watch as &dyn Fn(libc::pid_t, Option<&Dir>) -> bool))
                .map_err(|e| Error::internal(format!("fuzzer: {e}")))?;
            stats.seeds_used = seed_entries + steer.borrow().fed;
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            let executed = executions_in(&log_text);
            stats.executions += executed;
            debug!(status = %out.status, executed, "libFuzzer ended");
            // Crashing inputs, in name order, and the corpus the next run starts from.
            let found = match &out.work {
                Some(work) => self.collect(work, &handled, max_len),
                None => vec![],
            };
            drop(out.work);
            let new_artifacts = found.len();
            // libFuzzer stops at its first crash: when that was a target hit, the driver wrote
            // the input's call sizes and 'H' (see `cdriver`), and the one new crash is it.
            let mut hit_trace = match (found.iter().filter(|(n, _)| n.starts_with("crash-")).count(), out.trace.iter().position(|b| *b == b'H')) {
                (1, Some(at)) => Some(Trace { calls: trace_calls(&out.trace[..at]), hit: true }),
                _ => None,
            };
            for (name, bytes) in found {
                handled.insert(name.clone());
                // A corpus entry that crashes or hangs would stop every restart at start-up.
                self.drop_from_corpus(&bytes);
                if !name.starts_with("crash-") {
                    debug!(%name, "libFuzzer stopped on a hang or out of memory");
                    continue;
                }
                crashes += 1;
                let trace = match hit_trace.take() {
                    Some(t) => t,
                    None => {
                        let t_trace = Instant::now();
                        let trace = self.trace(&bytes, limits.deadline, cancel)?;
                        debug!(elapsed = ?t_trace.elapsed(), hit = trace.hit, "crash traced");
                        trace
                    }
                };
                if !trace.hit {
                    debug!(%name, "a crash that is not the target");
                    continue;
                }
                let w = self.layout.decode(&bytes, Some(&trace.calls));
                if replay(&w) {
                    info!(%name, executions = stats.executions, "fuzzing reached the target; replay confirmed it");
                    return Ok(FuzzEnd::Reached(w));
                }
                debug!(%name, "an input reached the target under the fuzzer but not in replay");
                mismatches += 1;
                if mismatches >= MAX_REPLAY_MISMATCHES {
                    return Ok(FuzzEnd::GaveUp(format!(
                        "{mismatches} inputs reached the target under the fuzzer but not natively (the program may read memory outside its inputs)"
                    )));
                }
            }
            match out.stopped {
                Some(sandbox::Stopped::Cancelled) => return Ok(FuzzEnd::GaveUp("cancelled".into())),
                Some(sandbox::Stopped::Deadline) => continue,
                Some(sandbox::Stopped::Asked) => return Ok(FuzzEnd::Reseed),
                None => {}
            }
            if executed == 0 && new_artifacts == 0 && !out.status.starts_with("signal") {
                let tail: Vec<&str> = log_text.lines().rev().take(3).collect();
                return Ok(FuzzEnd::GaveUp(format!("libFuzzer stopped at start-up ({}): {}", out.status, tail.join(" / "))));
            }
        }
        unreachable!("the restart loop only ends by returning")
    }
}

/// The nondet call sizes of a trace (see [`cdriver`]'s `--apc-trace`).
fn trace_calls(trace: &[u8]) -> Vec<u8> {
    trace.iter().filter(|b| (b'1'..=b'8').contains(b)).map(|b| b - b'0').take(input::MAX_TRACED_CALLS).collect()
}

/// The flags leaving the driver's signals to it (see [`cdriver::OWN_SIGNALS`]).
fn own_signals() -> impl Iterator<Item = String> {
    cdriver::OWN_SIGNALS.iter().map(|s| format!("-handle_{s}=0"))
}

/// Inputs a libFuzzer log reports as run: its final `stat::number_of_executed_units`, else the
/// last `#N` progress line.
fn executions_in(log: &str) -> u64 {
    let mut n = 0u64;
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("stat::number_of_executed_units:") {
            n = n.max(rest.trim().parse().unwrap_or(0));
        } else if let Some(rest) = line.strip_prefix('#') {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            n = n.max(digits.parse().unwrap_or(0));
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime found next to clang is the one clang itself names.
    #[test]
    fn runtime_lookup_agrees_with_clang() {
        let clang = clang_path();
        let out = std::process::Command::new(&clang).arg("-print-file-name=libclang_rt.fuzzer-x86_64.a").output().expect("clang runs");
        let named = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let named = std::fs::canonicalize(&named).unwrap_or(named);
        assert_eq!(installed_runtime(&clang).map(|p| std::fs::canonicalize(&p).unwrap()), named.is_file().then_some(named));
    }

    /// Only whole `NEW` lines count, each once: a line still being written is read at the
    /// next look.
    #[test]
    fn new_units_are_counted_from_whole_new_lines_of_the_log() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("fuzz1.log");
        std::fs::write(&log, "INFO: Seed: 2\n#2\tINITED cov: 3\n#10\tNEW    cov: 4 ft: 5\n#12\tREDUCE cov: 4\n#40\tNE").unwrap();
        let mut read = 0;
        assert_eq!(new_units_in_log(&log, &mut read), 1);
        assert_eq!(new_units_in_log(&log, &mut read), 0);
        std::fs::write(&log, format!("{}W    cov: 6\n#64\tpulse  cov: 6\n#70\tNEW    cov: 7\n", std::fs::read_to_string(&log).unwrap())).unwrap();
        assert_eq!(new_units_in_log(&log, &mut read), 2);
        assert_eq!(new_units_in_log(&d.path().join("missing.log"), &mut read), 0);
    }

    #[test]
    fn executions_come_from_the_final_stats_or_the_last_progress_line() {
        let log = "INFO: Seed: 1\n#2\tINITED cov: 3 ft: 3 corp: 1/1b exec/s: 0 rss: 25Mb\n#1024\tpulse  cov: 5\n#1500\tNEW    cov: 6 corp: 3/5b\n";
        assert_eq!(executions_in(log), 1500);
        assert_eq!(executions_in(&format!("{log}stat::number_of_executed_units: 1733\nstat::average_exec_per_sec:     866\n")), 1733);
        assert_eq!(executions_in("garbage\n#\n"), 0);
    }
}
