//! apc-llvm: can execution reach this basic block, and with which input?
//!
//! The library's API is its front door ([`analyse`], [`Session`], [`Config`], [`Target`],
//! [`Report`], [`Verdict`], [`Witness`], [`Error`]); see the [`api`] module for an example.
//! The other modules are the pipeline's (`ARCHITECTURE.md`: load → ir → cfg → symbolic
//! execution and loop summaries → APC → solve → witness → replay → report), public for the
//! command line and the tests; they are not a stable interface.

pub mod api;
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

pub use api::{analyse, Config, Error, Report, Result, Session, Target, Verdict, Witness};
