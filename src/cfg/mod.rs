//! The flowgraph of the analysed function, pruned towards the target, with its backbones and
//! loops as the APC paper defines them (section 2.1). Loops are found per backbone prefix, not as
//! natural loops, so irreducible control flow (a `goto` into a loop) comes out right.

pub mod dot;
mod flowgraph;
mod structure;

pub use flowgraph::{Flowgraph, Node};
pub use structure::{acyclic_paths, Backbone, Limits, Loop, LoopId, Structure};
