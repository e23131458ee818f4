//! The library's front door: analyse one target of a C function and get its [`Report`].
//!
//! ```no_run
//! use apc_llvm::{analyse, Config, Session, Target, Verdict};
//!
//! let session = Session::new();
//! let mut config = Config::new("parser.c", "parse", Target::Line { file: "parser.c".into(), line: 42, col: None });
//! config.timeout = std::time::Duration::from_secs(10);
//! let report = analyse(&session, &config)?;
//! match report.verdict {
//!     Verdict::Reachable => println!("reached with {:?}", report.witness.map(|w| w.inputs)),
//!     Verdict::Unreachable => println!("proved unreachable: {}", report.reason),
//!     Verdict::Unknown => println!("no answer: {}", report.reason),
//! }
//! drop(session); // before `main` returns
//! # Ok::<(), apc_llvm::Error>(())
//! ```
//!
//! Everything else the crate exports is the command line's and the tests' and may change.

pub use crate::config::Config;
pub use crate::error::{Error, Result};
pub use crate::load::TargetSpec as Target;
pub use crate::report::{Report, Verdict};
pub use crate::witness::Witness;

/// The process-wide state analyses leave behind, owned: background builds and fuzzers a
/// verdict came before, their temporary directories, engine threads still stopping after a
/// race. Dropping the session stops and removes them all; drop it before `main` returns (the
/// C++ static destructors of LLVM and Z3 must not run under a thread still inside them).
pub struct Session {
    _private: (),
}

impl Session {
    /// Starts a session (one at a time per process).
    pub fn new() -> Session {
        crate::cleanup::restart();
        Session { _private: () }
    }
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        crate::engine::wait_for_stopping_engines();
        crate::cleanup::finish();
    }
}

/// Analyses `config`'s target: loads and compiles the input, races the engines within
/// `config.timeout`, and replays any witness natively. `Unreachable` is a proof for every input
/// the input model allows (see [`Report::assumptions`]); `Reachable` comes only from a native
/// run that entered the target. Bad input (no such function or target, C that does not
/// compile) is an [`Error`] whose [`Error::exit_status`] is 2.
pub fn analyse(_session: &Session, config: &Config) -> Result<Report> {
    crate::analysis::run(config)
}
