//! Loading on demand: the analysed copy keeps only the functions that can run.
//!
//! A library file holds hundreds of functions; the analysed function reaches a handful. What
//! can run during a call of it: the functions it reaches by direct calls (dispatchers call the
//! candidates of a call through a pointer directly, see `devirt`); the functions whose address
//! that code hands on (a `qsort` comparator, an `atexit` handler); when that code still calls
//! through a pointer the dispatchers do not cover, or the module has constructors or
//! destructors, every function whose address the program takes; the functions the C library
//! may call under their names (a program's own `malloc`); the `--call` target and the `--pure`
//! functions; and what those reach. Every other function is deleted from the copy before
//! normalisation, inlining and the bounds pass, so their cost no longer grows with the module.
//! The copy kept for replay is written before this, whole.

use super::llvm;
use super::target;
use llvm_sys::prelude::LLVMModuleRef;
use llvm_sys::LLVMOpcode;
use std::collections::HashSet;

/// Deletes from `m` every defined function no call of `function` can run (see the module
/// doc); `also` names more roots. Returns how many functions were deleted.
pub fn keep_what_can_run(m: LLVMModuleRef, function: &str, also: &[&str]) -> usize {
    let all = llvm::functions(m);
    let defined: Vec<llvm::Value> = all.iter().copied().filter(|&f| !llvm::is_declaration(f)).collect();
    let address_taken: Vec<llvm::Value> = defined.iter().copied().filter(|&f| llvm::address_taken(f)).collect();
    let mut pending: Vec<llvm::Value> = defined
        .iter()
        .copied()
        .filter(|&f| {
            let name = llvm::value_name(f);
            name == function || also.contains(&name.as_str()) || super::clib::c_library_defines(&name) == Some(true)
        })
        .collect();
    let mut all_taken = llvm::has_constructors(m) || llvm::has_destructors(m);
    if all_taken {
        pending.extend(address_taken.iter().copied());
    }
    let mut live: HashSet<llvm::Value> = HashSet::new();
    while let Some(root) = pending.pop() {
        if live.contains(&root) {
            continue;
        }
        for f in target::reachable_functions(root) {
            if !live.insert(f) {
                continue;
            }
            for i in llvm::blocks(f).into_iter().flat_map(llvm::instructions) {
                let is_call = llvm::opcode(i) == LLVMOpcode::LLVMCall;
                if is_call && !all_taken {
                    let callee = llvm::called_value(i);
                    if !llvm::is_a_function(callee) && !llvm::is_a_inline_asm(callee) && !llvm::has_metadata(i, super::devirt::UNMATCHED) {
                        all_taken = true;
                        pending.extend(address_taken.iter().copied());
                    }
                }
                // A function's address handed on (an argument, a stored value): it may run.
                let operands = if is_call { llvm::call_arg_count(i) } else { llvm::num_operands(i) };
                for k in 0..operands {
                    let o = llvm::operand(i, k);
                    if llvm::is_a_function(o) && !llvm::is_declaration(o) && !live.contains(&o) {
                        pending.push(o);
                    }
                }
            }
        }
    }
    tracing::trace!(live = ?live.iter().map(|&f| llvm::value_name(f)).collect::<Vec<_>>(), all_taken, "functions a call can run");
    // Their bodies go first (dead functions may call each other in cycles), then the functions
    // nothing refers to any more (a table in a global keeps its entries, as `unreachable`).
    for &f in &defined {
        if !live.contains(&f) {
            llvm::gut_function(f);
        }
    }
    let mut deleted = 0;
    loop {
        let before = deleted;
        for f in llvm::functions(m) {
            if !llvm::is_declaration(f) && !live.contains(&f) && llvm::users(f).is_empty() {
                llvm::delete_function(f);
                deleted += 1;
            }
        }
        if deleted == before {
            return deleted;
        }
    }
}
