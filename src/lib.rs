//! apc-llvm: can execution reach this basic block, and with which input?
//!
//! The pipeline (see `ARCHITECTURE.md`):
//! [`load`] → [`ir`] → [`cfg`](mod@cfg) → symbolic execution and loop summaries → APC → solve → witness →
//! replay → [`report`]. [`analysis::run`] drives it.

pub mod analysis;
pub mod apc;
pub mod backstop;
pub mod cfg;
pub mod chc;
pub mod cleanup;
pub mod config;
pub mod dse;
pub mod engine;
pub mod error;
pub mod expr;
pub mod fuzz;
pub mod ir;
pub mod jailfs;
pub mod load;
pub mod ops;
pub mod priority;
pub mod replay;
pub mod report;
pub mod scratch;
pub mod solve;
pub mod summary;
pub mod symex;
pub mod witness;

pub use config::Config;
pub use error::{Error, Result};
