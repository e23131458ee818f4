//! Native replay: the instrumented program is compiled and linked once per analysis, with a
//! generated driver that reads each witness from fd 4 ([`driver::generate_replay`]); a replay is
//! then one sandboxed exec on a witness, observing whether a target block was entered.

pub mod driver;
pub mod sandbox;
pub mod pure;
pub mod stubs;
pub mod ub;
pub(crate) mod codegen;
pub(crate) mod elf;
pub(crate) mod libraries;
pub(crate) mod toolchain;

pub use sandbox::{Limits, RunOutcome};

use crate::error::{Error, Result};
use crate::ir::Function;
use crate::load::{clang_path, Loaded};
use crate::witness::Witness;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use tracing::debug;

/// The program built once for replay: an executable that runs any witness of the analysed
/// function. `Sync`: engines on several threads replay through one `Replayer`.
pub struct Replayer {
    dir: tempfile::TempDir,
    exe: PathBuf,
    function: Function,
    call_name: String,
    declared: Vec<String>,
    targets: Vec<String>,
    functions: Vec<String>,
    /// Stubs for functions the program calls but nobody defines (found at the first link).
    stubs: Option<String>,
    /// The functions `stubs` defines.
    stubbed: Vec<String>,
    runs: AtomicU32,
    keep_temps: bool,
    flavour: Flavour,
    /// Shared libraries every run's jail gets (the sanitized flavour is linked dynamically):
    /// the copy in the build directory, and where the jail has it.
    libraries: Vec<(PathBuf, PathBuf)>,
}

/// How the replay program is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// Statically linked, buffers in one arena: what every engine replays with.
    Plain,
    /// AddressSanitizer and UndefinedBehaviorSanitizer (see [`ub`]): the bitcode must come from
    /// C compiled with `-fsanitize=address,undefined` and without LLVM passes (so that the ASan
    /// pass runs once, here); every buffer is an allocation of its own. ASan's runtime cannot
    /// be linked statically, so the program is linked dynamically and each run's jail gets the
    /// shared libraries it needs.
    Sanitized,
}

fn run_clang(args: &[&std::ffi::OsStr], tmp: &Path) -> Result<std::process::Output> {
    run_tool(&clang_path(), args, tmp)
}

/// Runs a build tool (clang, an LLVM tool); it dies with an interrupted analysis, its temporary
/// files go to `tmp`.
pub(crate) fn run_tool(tool: &Path, args: &[&std::ffi::OsStr], tmp: &Path) -> Result<std::process::Output> {
    crate::cleanup::output(Command::new(tool).args(args), tmp).map_err(|e| Error::internal(format!("cannot run {}: {e}", tool.display())))
}

/// The first line of a failed tool's stderr that says what went wrong.
pub(crate) fn first_error(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines().find(|l| l.contains("error")).or_else(|| text.lines().next()).unwrap_or("").to_string()
}

/// Writes a build input, any failure an internal error naming the file.
pub(crate) fn write(path: &Path, content: &[u8]) -> Result<()> {
    std::fs::write(path, content).map_err(|e| Error::internal(format!("writing {}: {e}", path.display())))
}

/// The first arguments of a native build's static link for x86-64, with lld when it is
/// installed (static links take about half the time of GNU ld's), on one thread: these links
/// are small and run beside the engines, and lld's default of a thread per core cost a fifth
/// more CPU (23 ms against 19 for a static link of an empty `main`) in thread start-ups and
/// wake-ups.
pub(crate) fn static_link_args() -> Vec<&'static std::ffi::OsStr> {
    static LLD: OnceLock<bool> = OnceLock::new();
    let mut args: Vec<&std::ffi::OsStr> = vec!["-static".as_ref(), "--target=x86_64-pc-linux-gnu".as_ref()];
    if *LLD.get_or_init(|| Path::new("/usr/lib/llvm-19/bin/ld.lld").is_file()) {
        args.push("-fuse-ld=lld".as_ref());
        args.push("-Wl,--threads=1".as_ref());
    }
    args
}

/// The sanitizers of the [`Flavour::Sanitized`] build.
const SANITIZE: &str = "-fsanitize=address,undefined";

/// [`static_link_args`] for a dynamically linked program.
pub(crate) fn dynamic_link_args() -> Vec<&'static std::ffi::OsStr> {
    let mut args = static_link_args();
    args.retain(|a| *a != "-static");
    args
}

/// Runs the two compile steps of a native build at once (`first` on a thread of its own):
/// about 30 ms each, on two cores.
pub(crate) fn at_once(first: impl FnOnce() -> Result<()> + Send, second: impl FnOnce() -> Result<()>) -> Result<()> {
    std::thread::scope(|s| {
        let first = s.spawn(first);
        let second = second();
        first.join().unwrap_or_else(|_| Err(Error::internal("a compile thread panicked"))).and(second)
    })
}

impl Replayer {
    /// Builds the replay executable: the instrumented bitcode and the replay driver, linked
    /// statically; functions nobody defines get stubs returning 0 (the analysis treats their
    /// results as unknown anyway).
    pub fn new(loaded: &Loaded, keep_temps: bool) -> Result<Replayer> {
        Replayer::build(loaded, keep_temps, Flavour::Plain)
    }

    /// Builds the replay executable of `flavour`.
    pub fn build(loaded: &Loaded, keep_temps: bool, flavour: Flavour) -> Result<Replayer> {
        let started = std::time::Instant::now();
        let mut dir = crate::scratch::tempdir("apc-replay-")?;
        if keep_temps {
            dir.disable_cleanup(true);
        } else {
            crate::cleanup::register(dir.path());
        }
        let mut rp = Replayer {
            exe: dir.path().join("prog"),
            dir,
            function: loaded.program.function.clone(),
            call_name: loaded.replay_function.clone(),
            declared: loaded.declared_functions.clone(),
            targets: loaded.target_blocks.clone(),
            functions: loaded.function_table.clone(),
            stubs: None,
            stubbed: vec![],
            runs: AtomicU32::new(0),
            keep_temps,
            flavour,
            libraries: vec![],
        };
        // The sanitized program: ASan instruments the program's code (the pass runs on the
        // bitcode's `sanitize_address` functions), the driver is plain C that allocates its
        // buffers one by one; the link brings both runtimes.
        let (program_flags, driver_flags, link_flags): (&[&str], &[&str], &[&str]) = match flavour {
            Flavour::Plain => (&[], &[], &[]),
            Flavour::Sanitized => (&[SANITIZE], &["-DAPC_SANITIZED"], &[SANITIZE]),
        };
        let bc = rp.dir.path().join("program.bc");
        write(&bc, &loaded.instrumented_bitcode)?;
        let driver = rp.dir.path().join("driver.c");
        // Functions nobody defines get stubs from the start (see `stubs`); a link that still
        // misses some gets them added and runs once more.
        let predicted = stubs::predicted(&rp.declared);
        if !predicted.is_empty() {
            debug!(?predicted, "stubbing undefined functions for replay");
            rp.stubs = Some(stubs::source(&predicted));
            rp.stubbed = predicted;
        }
        // The program and the driver compile at once on two cores (about 30 ms each), then the
        // static link (with lld when it is installed: faster than GNU ld).
        let (program_o, driver_o) = (rp.dir.path().join("program.o"), rp.dir.path().join("driver.o"));
        let failed = |out: &std::process::Output| {
            let stderr = String::from_utf8_lossy(&out.stderr);
            Error::internal(format!("building the replay program failed: {}", stderr.lines().find(|l| l.contains("error")).unwrap_or("")))
        };
        // `generated`: the source of a generated driver, whose object the toolchain cache keeps.
        let compile = |src: &Path, obj: &Path, flags: &[&str], generated: Option<&[u8]>| -> Result<()> {
            let mut args: Vec<&std::ffi::OsStr> = vec!["-O0".as_ref(), "-w".as_ref(), "-c".as_ref(), "--target=x86_64-pc-linux-gnu".as_ref()];
            args.extend(flags.iter().map(std::ffi::OsStr::new));
            args.extend([src.as_os_str(), "-o".as_ref(), obj.as_os_str()]);
            let out = match generated {
                Some(source) => toolchain::compile_generated(&args, source, obj, rp.dir.path())?,
                None => run_clang(&args, rp.dir.path())?,
            };
            if out.status.success() { Ok(()) } else { Err(failed(&out)) }
        };
        // The driver with the stubs known so far.
        let build_driver = |rp: &Replayer| -> Result<()> {
            let mut source = driver::generate_replay(&rp.spec());
            if let Some(stubs) = &rp.stubs {
                source.push_str(stubs);
            }
            write(&driver, source.as_bytes())?;
            compile(&driver, &driver_o, driver_flags, Some(source.as_bytes()))
        };
        // The plain program is compiled in-process (see `codegen`); clang when that fails or
        // when sanitizer flags ask for clang's passes.
        let compile_program = || {
            if program_flags.is_empty() {
                match codegen::compile_object(&loaded.instrumented_bitcode, &program_o) {
                    Ok(()) => return Ok(()),
                    Err(e) => debug!("in-process code generation failed, clang compiles instead: {e}"),
                }
            }
            compile(&bc, &program_o, program_flags, None)
        };
        at_once(compile_program, || build_driver(&rp))?;
        debug!(elapsed = ?started.elapsed(), "replay objects compiled");
        for attempt in 0..2 {
            if attempt > 0 {
                build_driver(&rp)?;
            }
            let mut args = match flavour {
                Flavour::Plain => static_link_args(),
                Flavour::Sanitized => dynamic_link_args(),
            };
            args.extend(link_flags.iter().map(std::ffi::OsStr::new));
            args.extend([driver_o.as_os_str(), program_o.as_os_str(), "-lm".as_ref(), "-o".as_ref(), rp.exe.as_os_str()]);
            let out = toolchain::link(&args, rp.dir.path())?;
            if out.status.success() {
                if flavour == Flavour::Sanitized {
                    rp.libraries = libraries::gather(&rp.exe, &rp.dir.path().join("lib"), &[])?;
                }
                debug!(elapsed = ?started.elapsed(), ?flavour, "replay program built");
                return Ok(rp);
            }
            let missing = stubs::undefined_in_link_errors(&String::from_utf8_lossy(&out.stderr));
            if attempt == 1 || missing.is_empty() {
                return Err(failed(&out));
            }
            debug!(?missing, "stubbing functions the link missed for replay");
            rp.stubbed.extend(missing);
            rp.stubs = Some(stubs::source(&rp.stubbed));
        }
        unreachable!("the loop returns on its second attempt")
    }

    /// Starts [`Replayer::new`] on a thread of its own: the native build runs while the APC is
    /// built and solved.
    pub fn build_in_background(loaded: &Loaded, keep_temps: bool) -> NativeBuild {
        let loaded = loaded.clone();
        let handle = std::thread::Builder::new()
            .name("native-build".into())
            .spawn(move || Replayer::new(&loaded, keep_temps))
            .map_err(|e| format!("cannot start the native build: {e}"));
        NativeBuild { handle: Mutex::new(Some(handle)), result: OnceLock::new() }
    }

    /// The executable (outside any jail).
    pub fn exe_path(&self) -> &Path {
        &self.exe
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Functions without a definition that the replay program got stubs for (they return 0).
    pub fn stubbed(&self) -> &[String] {
        &self.stubbed
    }

    fn spec(&self) -> driver::DriverSpec<'_> {
        driver::DriverSpec { function: &self.function, call_name: &self.call_name, declared: &self.declared, targets: &self.targets, functions: &self.functions }
    }

    /// The standalone driver source for `w` (the regression test of `--emit-tests`).
    pub fn driver_source(&self, w: &Witness) -> String {
        let w = &self.fitted(w);
        let mut src = driver::generate(&self.spec(), w);
        if let Some(stubs) = &self.stubs {
            src.push_str(stubs);
        }
        src
    }

    /// `w` with the buffers the user sized (`--arg-size`) at exactly their sizes, whichever
    /// engine made it.
    fn fitted<'w>(&self, w: &'w Witness) -> std::borrow::Cow<'w, Witness> {
        if self.function.params.iter().any(|p| p.buffer_bytes.is_some()) {
            let mut w = w.clone();
            w.fit_buffers(&self.function.params);
            std::borrow::Cow::Owned(w)
        } else {
            std::borrow::Cow::Borrowed(w)
        }
    }

    /// Runs the program on `w` with the default limits.
    pub fn run(&self, w: &Witness) -> Result<RunOutcome> {
        self.run_with(w, Limits::default())
    }

    /// Runs the program on `w` in a fresh sandbox directory (removed afterwards unless temporary
    /// files are kept).
    pub fn run_with(&self, w: &Witness, limits: Limits) -> Result<RunOutcome> {
        self.run_observed(w, limits, None)
    }

    /// [`Replayer::run_with`], with the program's standard error written to `stderr`.
    pub fn run_observed(&self, w: &Witness, limits: Limits, stderr: Option<&std::fs::File>) -> Result<RunOutcome> {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let (work, jail) = jail_for(self.dir.path(), n, &self.exe, "prog")?;
        libraries::install(&self.libraries, &jail)?;
        let witness = work.join("witness");
        let token = random_token();
        write(&witness, &driver::encode(&self.spec(), &self.fitted(w), token))?;
        let input = std::fs::File::open(&witness).map_err(|e| Error::internal(format!("opening {}: {e}", witness.display())))?;
        // ASan reserves terabytes of address space for its shadow: the sanitized program's
        // heap is bounded by ASan itself instead (`driver::asan_options`).
        let limits = if self.flavour == Flavour::Sanitized { Limits { memory_bytes: u64::MAX, ..limits } } else { limits };
        let out = sandbox::run_with_stderr(&jail, limits, Some(&input), Some(token), stderr).map_err(|e| Error::internal(format!("replay: {e}")));
        if !self.keep_temps {
            let _ = std::fs::remove_dir_all(&work);
        }
        let out = out?;
        debug!(run = n, ?out, "replayed");
        Ok(out)
    }
}

impl Drop for Replayer {
    fn drop(&mut self) {
        crate::cleanup::release(self.dir.path());
    }
}

/// The directory of run `n` under `dir` (returned first, for the run's own files) and its jail
/// (second): `exe` linked in as `name`, an empty `work` where the run's tmpfs is mounted.
/// Nobody else may write the jail (the executable cannot be swapped); the run sees it read-only.
pub(crate) fn jail_for(dir: &Path, n: u32, exe: &Path, name: &str) -> Result<(PathBuf, PathBuf)> {
    let work = dir.join(format!("run{n}"));
    let jail = work.join("jail");
    // Not once the run's end (or its interruption) is removing `dir`: `create_dir_all` would
    // make it again, and it would stay (an engine whose run the cleanup killed went on to its
    // next run meanwhile).
    if crate::cleanup::finished() {
        return Err(Error::internal("the analysis has ended"));
    }
    std::fs::create_dir(&work).map_err(|e| Error::internal(format!("creating {}: {e}", work.display())))?;
    std::fs::create_dir_all(jail.join("work")).map_err(|e| Error::internal(format!("creating {}: {e}", jail.display())))?;
    let target = jail.join(name);
    if std::fs::hard_link(exe, &target).is_err() {
        std::fs::copy(exe, &target).map_err(|e| Error::internal(format!("copying {}: {e}", exe.display())))?;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&jail, std::fs::Permissions::from_mode(0o755)).map_err(|e| Error::internal(format!("chmod {}: {e}", jail.display())))?;
    Ok((work, jail))
}

/// A fresh random 64-bit token (the kernel's random source; never 0).
fn random_token() -> u64 {
    let mut b = [0u8; 8];
    let got = unsafe { libc::getrandom(b.as_mut_ptr().cast(), 8, 0) };
    let t = u64::from_le_bytes(b);
    if got == 8 && t != 0 {
        t
    } else {
        // No randomness: still distinct per run, if guessable.
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64 | 1)
    }
}

/// A native build under way ([`Replayer::build_in_background`]); [`NativeBuild::get`] waits for it.
pub struct NativeBuild {
    handle: Mutex<Option<std::result::Result<JoinHandle<Result<Replayer>>, String>>>,
    result: OnceLock<std::result::Result<Arc<Replayer>, String>>,
}

impl NativeBuild {
    /// A build that is not there (replays fail with `reason`).
    pub fn unavailable(reason: &str) -> NativeBuild {
        NativeBuild { handle: Mutex::new(Some(Err(reason.to_string()))), result: OnceLock::new() }
    }

    /// The replayer, once built (the first caller waits for the build).
    pub fn get(&self) -> Result<Arc<Replayer>> {
        let r = self.result.get_or_init(|| {
            let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner()).take();
            match handle {
                Some(Ok(h)) => match h.join() {
                    Ok(Ok(rp)) => Ok(Arc::new(rp)),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("the native build panicked".into()),
                },
                Some(Err(e)) => Err(e),
                None => Err("the native build was already collected".into()),
            }
        });
        r.clone().map_err(Error::internal)
    }

    /// Whether the build has finished (successfully or not) without waiting for it.
    pub fn is_done(&self) -> bool {
        self.result.get().is_some()
            || self.handle.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|h| h.as_ref().map_or(true, |h| h.is_finished()))
    }
}
