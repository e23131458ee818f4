//! Native replay: compile the instrumented program with a generated driver for x86-64, run it in
//! a sandbox on a witness, and observe whether a target block was entered.

pub mod driver;
pub mod sandbox;

pub use sandbox::{Limits, RunOutcome};

use crate::error::{Error, Result};
use crate::ir::Function;
use crate::load::{clang_path, Loaded};
use crate::witness::Witness;
use std::path::{Path, PathBuf};
use std::process::Command;
use tracing::debug;

/// Compiles the instrumented program once and replays witnesses against it.
pub struct Replayer {
    dir: tempfile::TempDir,
    object: PathBuf,
    function: Function,
    call_name: String,
    declared: Vec<String>,
    targets: Vec<String>,
    /// Stubs for functions the program calls but nobody defines (found at the first link).
    stubs: std::cell::RefCell<Option<String>>,
    runs: std::cell::Cell<u32>,
    pub limits: Limits,
}

fn run_clang(args: &[&std::ffi::OsStr]) -> Result<std::process::Output> {
    let clang = clang_path();
    Command::new(&clang)
        .args(args)
        .output()
        .map_err(|e| Error::internal(format!("cannot run {}: {e}", clang.display())))
}

impl Replayer {
    /// Writes the instrumented bitcode and compiles it to an x86-64 object.
    pub fn new(loaded: &Loaded, keep_temps: bool) -> Result<Replayer> {
        let mut dir = tempfile::Builder::new()
            .prefix("apc-replay-")
            .tempdir()
            .map_err(|e| Error::internal(format!("cannot create a temporary directory: {e}")))?;
        if keep_temps {
            dir.disable_cleanup(true);
        }
        let bc = dir.path().join("program.bc");
        std::fs::write(&bc, &loaded.instrumented_bitcode).map_err(|e| Error::internal(format!("writing {}: {e}", bc.display())))?;
        let object = dir.path().join("program.o");
        let out = run_clang(&["-c".as_ref(), "-O0".as_ref(), "-w".as_ref(), "--target=x86_64-pc-linux-gnu".as_ref(), bc.as_os_str(), "-o".as_ref(), object.as_os_str()])?;
        if !out.status.success() {
            return Err(Error::internal(format!(
                "clang could not compile the instrumented program: {}",
                String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("")
            )));
        }
        Ok(Replayer {
            dir,
            object,
            function: loaded.program.function.clone(),
            call_name: loaded.replay_function.clone(),
            declared: loaded.declared_functions.clone(),
            targets: loaded.target_blocks.clone(),
            stubs: Default::default(),
            runs: Default::default(),
            limits: Limits::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The driver source for `w` (also the standalone regression test).
    pub fn driver_source(&self, w: &Witness) -> String {
        let spec = driver::DriverSpec {
            function: &self.function,
            call_name: &self.call_name,
            declared: &self.declared,
            targets: &self.targets,
        };
        let mut src = driver::generate(&spec, w);
        if let Some(stubs) = self.stubs.borrow().as_ref() {
            src.push_str(stubs);
        }
        src
    }

    /// Links driver + program statically into `exe`; undefined external functions get stubs
    /// returning 0 (the analysis treats their results as unknown anyway).
    fn link(&self, w: &Witness, work: &Path, exe: &Path) -> Result<()> {
        for attempt in 0..2 {
            let driver = work.join("driver.c");
            std::fs::write(&driver, self.driver_source(w)).map_err(|e| Error::internal(format!("writing driver: {e}")))?;
            let out = run_clang(&[
                "-O0".as_ref(),
                "-w".as_ref(),
                "-static".as_ref(),
                driver.as_os_str(),
                self.object.as_os_str(),
                "-lm".as_ref(),
                "-o".as_ref(),
                exe.as_os_str(),
            ])?;
            if out.status.success() {
                return Ok(());
            }
            let stderr = String::from_utf8_lossy(&out.stderr);
            let missing: std::collections::BTreeSet<String> = stderr
                .lines()
                .filter_map(|l| l.split("undefined reference to `").nth(1))
                .filter_map(|r| r.split('\'').next())
                .map(str::to_string)
                .collect();
            if attempt == 1 || missing.is_empty() {
                return Err(Error::internal(format!(
                    "linking the replay driver failed: {}",
                    stderr.lines().find(|l| l.contains("error")).unwrap_or("")
                )));
            }
            let stubs: String = missing.iter().map(|m| format!("long {m}() {{ return 0; }}\n")).collect();
            debug!(?missing, "stubbing undefined functions for replay");
            *self.stubs.borrow_mut() = Some(stubs);
        }
        unreachable!()
    }

    /// Builds and runs the program on `w` in a fresh sandbox directory.
    pub fn run(&self, w: &Witness) -> Result<RunOutcome> {
        let n = self.runs.get();
        self.runs.set(n + 1);
        let work = self.dir.path().join(format!("run{n}"));
        std::fs::create_dir_all(&work).map_err(|e| Error::internal(format!("creating {}: {e}", work.display())))?;
        let jail = work.join("jail");
        std::fs::create_dir_all(&jail).map_err(|e| Error::internal(format!("creating {}: {e}", jail.display())))?;
        let exe = jail.join("prog");
        self.link(w, &work, &exe)?;
        // The run's uid ("nobody") must be able to write its own directory.
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&jail, std::fs::Permissions::from_mode(0o777));
        let out = sandbox::run(&jail, self.limits).map_err(|e| Error::internal(format!("replay: {e}")))?;
        debug!(run = n, ?out, "replayed");
        Ok(out)
    }
}
