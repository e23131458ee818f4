//! Calls through function pointers become comparisons and direct calls.
//!
//! A real caller may hand the function under analysis any function of the program (a callback
//! parameter, an allocator hook in a struct, a table of handlers), or NULL. Each indirect call
//! reachable from the function is replaced by a call of a small dispatcher:
//!
//! ```text
//! if (fp == f1) return f1(args); else if (fp == f2) return f2(args); ... else return fp(args);
//! ```
//!
//! over the functions of the module whose type matches the call's. Inlining then puts each
//! candidate's body behind its comparison, so every engine sees which function a path calls and
//! chooses the pointer like any other input; targets inside functions run only through pointers
//! become targets of the analysed function (`--call`, `--line`, `--block FUNC:LABEL`); a call of
//! `--call F` through a pointer is a direct call in the branch where the pointer is F, so its
//! marker fires natively exactly then. The dispatcher is kept in the code that replay runs: it
//! calls what the pointer would have called. The last branch keeps the indirect call, so a
//! pointer outside the candidates (NULL, a function of another module) is handled as before.

use super::llvm;
use super::target;
use llvm_sys::prelude::LLVMModuleRef;
use llvm_sys::LLVMOpcode;
use std::collections::BTreeSet;
use tracing::debug;

/// Name prefix of the dispatchers.
pub const DISPATCH_PREFIX: &str = "__apc_dispatch.";
/// Most functions one call site is compared with: each one's body is inlined behind its test.
const MAX_CANDIDATES: usize = 8;
/// Most call sites replaced in one module: every site copies its candidates' bodies.
const MAX_SITES: usize = 64;
/// A function that does nothing, called at the start of a dispatcher whose candidates are every
/// function of the module a caller's pointer may hold, with the pointer and the candidates:
/// it tells the engines that a pointer a caller passed is one of them when the call goes on
/// (NULL, or a data buffer, faults at the call). Never inlined.
pub const FUNCTION_POINTER_FACT: &str = "__apc_function_pointer";
/// Metadata on a dispatcher's last call when the candidates are every function of the module
/// a pointer of that type may hold (see `ir::Callee::Unmatched`).
pub const UNMATCHED: &str = "apc.unmatched";

/// Functions of type `fnty` that a pointer may hold, most likely first: those whose address
/// the program takes (tables, hooks, defaults such as `malloc`), then functions a caller could
/// pass (external linkage, and the C library's functions the program declares). At most
/// [`MAX_CANDIDATES`], and whether they are all of them; `None` when more than that have their
/// address taken (the call then stays indirect).
fn candidates(all: &[llvm::Value], fnty: llvm::Type) -> Option<(Vec<llvm::Value>, bool)> {
    let usable = |f: &llvm::Value| {
        let name = llvm::value_name(*f);
        llvm::function_type(*f) == fnty && !llvm::is_intrinsic(*f) && !name.starts_with("__apc") && !name.starts_with("__VERIFIER") && !name.starts_with(DISPATCH_PREFIX)
    };
    let passable = |f: &llvm::Value| llvm::address_taken(*f) || !llvm::is_internal(*f);
    let taken: Vec<llvm::Value> = all.iter().copied().filter(usable).filter(|&f| llvm::address_taken(f)).collect();
    if taken.len() > MAX_CANDIDATES {
        return None;
    }
    let mut out = taken;
    let rest = all.iter().copied().filter(usable).filter(passable).filter(|f| !out.contains(f));
    let (defined, declared): (Vec<_>, Vec<_>) = rest.partition(|&f| !llvm::is_declaration(f));
    let rest: Vec<llvm::Value> = defined.into_iter().chain(declared).collect();
    let complete = out.len() + rest.len() <= MAX_CANDIDATES;
    out.extend(rest.into_iter().take(MAX_CANDIDATES.saturating_sub(out.len())));
    Some((out, complete))
}

/// Replaces the indirect calls reachable from `function` (and from the candidates they bring
/// in) by dispatchers. Returns how many call sites were replaced.
pub fn devirtualize(m: LLVMModuleRef, function: &str) -> usize {
    let Some(root) = llvm::function_named(m, function) else { return 0 };
    let all = llvm::functions(m);
    let mut replaced = 0;
    let mut done: BTreeSet<usize> = BTreeSet::new();
    // Each round follows the direct calls the last one made (a candidate may call through a
    // pointer itself).
    loop {
        let mut sites = vec![];
        for f in target::reachable_functions(root) {
            if !done.insert(f as usize) || llvm::value_name(f).starts_with(DISPATCH_PREFIX) {
                continue;
            }
            for b in llvm::blocks(f) {
                for i in llvm::instructions(b) {
                    if llvm::opcode(i) != LLVMOpcode::LLVMCall {
                        continue;
                    }
                    let callee = llvm::called_value(i);
                    if llvm::is_a_function(callee) || llvm::is_a_inline_asm(callee) {
                        continue;
                    }
                    sites.push(i);
                }
            }
        }
        if sites.is_empty() {
            break;
        }
        for call in sites {
            if replaced >= MAX_SITES {
                debug!("more indirect calls than are replaced; the rest stay indirect");
                return replaced;
            }
            let fnty = llvm::called_function_type(call);
            if llvm::is_var_arg(fnty) || llvm::call_has_abi_attributes(call) {
                continue;
            }
            let Some((cands, complete)) = candidates(&all, fnty) else { continue };
            // A candidate that leads back to the caller would make the call recursive (with
            // opaque pointers, `int (*)(void *, void *)` matches many functions): it stays
            // behind the indirect call, and the dispatcher is then not complete.
            let caller = llvm::function_of(call);
            let (cands, recursive): (Vec<llvm::Value>, Vec<llvm::Value>) = cands.into_iter().partition(|&g| !target::reachable_functions(g).contains(&caller));
            let complete = complete && recursive.is_empty();
            if cands.is_empty() {
                continue;
            }
            llvm::replace_with_dispatcher(m, call, &format!("{DISPATCH_PREFIX}{replaced}"), &cands, complete.then_some(UNMATCHED));
            replaced += 1;
        }
    }
    if replaced > 0 {
        debug!(replaced, "indirect calls compared with the functions they may call");
    }
    replaced
}
