//! The witness-search and proof engines, and the portfolio that races them within `--timeout`.
//!
//! Every engine answers the same question (is the target reachable?) its own way: `apc` solves
//! the abstract path condition (a proof when unsatisfiable, models to replay otherwise); `dse`
//! executes paths exactly, pruned by the APC; `fuzz` mutates inputs natively. They run side by
//! side, each on its own thread, and the first *definite* finding wins and cancels the rest:
//! a witness that a native replay confirmed entered the target, or a proof of unreachability.
//! No engine says `reachable` on its own: [`Context::replay`] is the only way to a
//! [`Finding::Reached`].

pub mod apc;
pub mod chc;
mod context;
pub mod dse;
pub mod fuzz;
pub mod nav;
pub mod pending;
mod race;
mod schedule;
mod types;

pub use crate::report::{EngineSummary, Invariant};
pub use context::{Context, SeedBoard};
pub use race::{race, wait_for_stopping_engines, PortfolioResult};
pub use schedule::Late;
pub use types::{Attempt, Engine, EngineKind, EngineResult, Finding};
