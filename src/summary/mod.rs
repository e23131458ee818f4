//! Loop summaries: what happens to the symbolic state between the first and the last visit of a
//! loop's entry node.
//!
//! For now this is the coarsest sound summary: every value the loop can change and every object
//! it can write becomes ⋆, and the looping condition is `true`. The APC stays a necessary
//! condition; the path-counter summaries of the APC paper (section 3) refine it.

use crate::cfg::{Loop, Node};
use crate::expr::{ExprPool, Sort};
use crate::ir::{Callee, InstKind, Program};
use crate::symex::{Inputs, State, SymVal};

/// Applies the havoc summary of loop `l` to `st` (already standing at the loop's entry node,
/// with the entry's phi nodes executed).
pub fn havoc_loop(program: &Program, pool: &mut ExprPool, inputs: &Inputs, st: &mut State, l: &Loop) {
    let f = &program.function;
    // Loop-carried values: the phi nodes of the entry block.
    for inst in &f.block(l.entry).insts {
        if let (InstKind::Phi { .. }, Some(r)) = (&inst.kind, inst.result) {
            let v = match &inst.ty {
                crate::ir::Ty::Int(1) => SymVal::Int(pool.star(Sort::Bool)),
                crate::ir::Ty::Int(w) => SymVal::Int(pool.star(Sort::Bv(*w))),
                _ => SymVal::Unknown,
            };
            st.values.insert(r, v);
        }
    }
    let mut writes_memory = false;
    let mut reads_input_stream = false;
    for &b in &l.blocks {
        for inst in &f.block(b).insts {
            match &inst.kind {
                InstKind::Store { .. } | InstKind::Unknown { .. } => writes_memory = true,
                InstKind::Call { callee: Callee::Direct(name), .. } => {
                    if name.starts_with("__VERIFIER_nondet_") {
                        reads_input_stream = true;
                    } else if name != "__VERIFIER_assume" && !name.starts_with("llvm.dbg") {
                        writes_memory = true;
                    }
                }
                InstKind::Call { .. } => writes_memory = true,
                _ => {}
            }
        }
    }
    if writes_memory {
        st.havoc_all(pool, inputs);
    }
    if reads_input_stream {
        st.nondet_index = pool.star(Sort::Bv(64));
    }
    let _ = Node::Block;
}
